"""Evidence across nights (auditing.verdict.family_evidence, docs/soundness.md section 10): each night's likelihood
ratio is an e-value under the claim, the family's product crosses 1/alpha in at most alpha of compliant families
even when looked at every night, a family just above its claim is flagged within a few nights while single nights
miss it, and a variant that takes the best band (not an e-value) fails the same null test.

The truth is simulated here: per night, m ranked rows each guessed right with a known probability; the counts at
the grid points are the top-c' sums, as the game's sweep makes them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math

import numpy as np
import pytest
from scipy import special, stats

from auditing.bounds.binomial import pure_epsilon_lower_bounds
from auditing.bounds.e_values import log_likelihood_ratio, null_rate, plug_in_alternative
from auditing.bounds.misfit_test import calibrated_e_value
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.sweep import guess_grid
from auditing.verdict.family_evidence import BANDS, NightCounts, band_of, family_evidence
from labeldp.errors import LabelDPInputError

DAY0 = dt.date(2026, 1, 1)
M = 2000
GRID = guess_grid(M, kind="log", points=30, min_fraction=1e-3)


def _night(rng, day: int, claim: float, right, kappa: float = 0.0) -> NightCounts:
    """One night: row i (ranked by the attack's confidence) is right with probability right[i]."""
    hits = np.cumsum(rng.random(M) < right)
    date = DAY0 + dt.timedelta(days=day)
    return NightCounts(date, claim, kappa, 0.0, M, tuple(int(c) for c in GRID), tuple(int(hits[c - 1]) for c in GRID),
                       coins_night=date)


def _families(rng, families: int, nights: int, claim: float, right) -> list[list[NightCounts]]:
    return [[_night(rng, t, claim, right) for t in range(nights)] for _ in range(families)]


def test_compliant_families_cross_at_most_alpha_when_checked_every_night():
    """400 families x 30 nights at the boundary of the claim (every guess right with probability exactly q0):
    the share ever flagged is not significantly above alpha (one-sided binomial test at 1%)."""
    rng = np.random.default_rng(20261127)
    claim, alpha = 1.0, 0.05
    q0 = null_rate(claim, 0.0)
    flagged = sum(family_evidence(f, alpha).flagged for f in _families(rng, 400, 30, claim, np.full(M, q0)))
    assert stats.binomtest(flagged, 400, alpha, alternative="greater").pvalue > 0.01, flagged


def test_taking_the_best_band_is_not_an_e_value_and_fails_the_same_null():
    """The control: the running maximum over bands of each band's product (a max, not a mean) flags compliant
    families far more often than alpha on the same kind of data; the mean (the library's) does not."""
    rng = np.random.default_rng(7)
    claim, alpha, families = 1.0, 0.05, 300
    q0 = null_rate(claim, 0.0)
    best, mean = 0, 0
    for family in _families(rng, families, 30, claim, np.full(M, q0)):
        log_band = np.zeros(BANDS)
        past_c, past_g = np.zeros(BANDS), np.zeros(BANDS)
        crossed = False
        for night in family:
            g, c = np.asarray(night.guesses, float), np.asarray(night.correct, float)
            bands = band_of(g, M)
            lr = log_likelihood_ratio(c, g, q0, plug_in_alternative(q0, past_c, past_g)[bands])
            for b in np.unique(bands):
                log_band[b] += np.max(lr[bands == b])  # the invalid choice: the best point of each band
            np.add.at(past_c, bands, c)
            np.add.at(past_g, bands, g)
            crossed = crossed or log_band.max() >= -math.log(alpha)
        best += crossed
        mean += family_evidence(family, alpha).flagged
    assert stats.binomtest(best, families, alpha, alternative="greater").pvalue < 1e-3, best
    assert stats.binomtest(mean, families, alpha, alternative="greater").pvalue > 0.01, mean


def test_a_family_just_above_its_claim_is_flagged_while_single_nights_miss_it():
    """Every night the top 10% of rows are right with probability sigmoid(eps + 0.3) (the rest at chance): each
    night's valid bound (Bonferroni over the grid, 95%) stays below the claim on most nights (14% above it here),
    and the family is flagged within 20 nights in at least 90% of 60 families (median 6.5 nights)."""
    rng = np.random.default_rng(3)
    claim = 1.0
    right = np.where(np.arange(M) < M // 10, special.expit(claim + 0.3), 0.5)
    families = _families(rng, 60, 20, claim, right)
    confidence = 1 - 0.05 / GRID.size
    single = [float(np.max(pure_epsilon_lower_bounds(n.correct, n.guesses, confidence=confidence))) > claim
              for f in families for n in f]
    assert np.mean(single) < 0.25
    flagged = [family_evidence(f).flagged_on for f in families]
    assert sum(d is not None for d in flagged) >= 54, flagged


def test_nights_that_do_not_count_and_the_running_product():
    rng = np.random.default_rng(1)
    q0 = null_rate(1.0, 0.0)
    nights = [_night(rng, 0, 1.0, np.full(M, 0.95)),
              NightCounts(DAY0 + dt.timedelta(days=1), 1.0, 0.0, 1e-6, M, (10,), (10,)),
              NightCounts(DAY0 + dt.timedelta(days=2), math.inf, 0.0, 0.0, M, (10,), (10,)),
              _night(rng, 3, 1.0, np.full(M, q0))]
    out = family_evidence(nights)
    assert [n.reason is None for n in out.nights] == [True, False, False, True]
    assert out.nights[1].e_value == 1.0 and "delta" in out.nights[1].reason
    assert "infinite" in out.nights[2].reason
    assert out.nights[0].evidence == pytest.approx(out.nights[0].e_value)
    assert out.nights[3].evidence == pytest.approx(math.prod(n.e_value for n in out.nights), rel=1e-9)
    assert out.flagged and out.flagged_on == DAY0
    # the kappa-based flag is secondary and says so; with no check counts nothing is confirmed
    assert not out.confirmed and "not confirmed" in out.sentence() and "holds only if kappa" in out.sentence()
    assert all("stratified capacity check" in n.check_reason for n in out.nights if n.reason is None)
    assert family_evidence([]).evidence == 1.0 and not family_evidence([]).flagged
    with pytest.raises(LabelDPInputError, match="alpha"):
        family_evidence(nights, alpha=1.0)


def test_a_night_whose_coins_were_not_keyed_by_its_day_enters_no_family():
    """Where row ids restart daily, a game keyed by the seed alone redraws another night's coins: such a night is
    excluded from both tests, and the reason names it."""
    rng = np.random.default_rng(3)
    keyed = _night(rng, 0, 1.0, np.full(M, 0.95))
    seed_alone = dataclasses.replace(keyed, coins_night=None)
    other = dataclasses.replace(keyed, coins_night=DAY0 + dt.timedelta(days=5))
    out = family_evidence([seed_alone, other, keyed])
    assert [n.reason is None for n in out.nights] == [False, False, True]
    assert "by the seed alone" in out.nights[0].reason and "by another night (2026-01-06)" in out.nights[1].reason
    assert out.nights[0].e_value == 1.0 and out.nights[0].check_e_value == 1.0


def test_night_counts_from_a_stored_audit_for_both_strategies():
    from auditing.audit import run_audit
    from auditing.bounds.rr_validation import gaussian_mixture, randomized_response, true_posterior

    rng = np.random.default_rng(5)
    x, y = gaussian_mixture(4000, 2, rng)
    target = randomized_response(y, 2, 2.0, rng).astype(float)
    reference = true_posterior(x, 2)[:, 1]
    plain = run_audit(target, reference, y, game=GameConfig(repetitions=1))
    night = NightCounts.of_result(DAY0, 1.0, plain)
    assert night.guesses == tuple(p.guesses for p in plain.curve) and night.m == plain.m
    split = run_audit(target, reference, y, game=GameConfig(repetitions=1), bound=BoundConfig(strategy="split"))
    halves = split.split_halves
    night = NightCounts.of_result(DAY0, 1.0, split)
    assert night.m == halves.selection.m + halves.bound.m == split.m
    assert night.correct[-1] == halves.selection.correct[-1] + halves.bound.correct[-1]


# ------------------------------------------------------------------ the check's e-process (section 10.2)
def _check_night(rng, day: int, claim: float, misfit: float, leak: float = 0.0, *, audited: int = 300,
                 checked: int = 80, m: int = 600) -> NightCounts:
    """A night simulated at the check's null boundary (or ``leak`` above it): the check's matched guesses right
    with the misfit-only accuracy a = sigmoid(misfit), the audited ones with sigmoid(claim + leak + misfit) (what
    a model at eps = claim + leak shows where misfit alone buys a); the audit's own grid counts at the same
    accuracy, so the kappa-based test (kappa 0) sees the misfit as leakage."""
    from auditing.verdict.family_evidence import CheckCounts

    a = special.expit(misfit)
    q = special.expit(claim + leak + misfit)
    date = DAY0 + dt.timedelta(days=day)
    hits = np.cumsum(rng.random(m) < q)
    grid = guess_grid(m, kind="log", points=20, min_fraction=1e-2)
    check = CheckCounts(int(rng.binomial(audited, q)), audited, int(rng.binomial(checked, a)), checked)
    return NightCounts(date, claim, 0.0, 0.0, m, tuple(int(c) for c in grid),
                       tuple(int(hits[c - 1]) for c in grid), coins_night=date, check=check)


def test_compliant_families_with_misfit_beyond_kappa_are_confirmed_at_most_alpha():
    """200 families x 100 nights, every night at the check's null boundary with a reference that misfits by 0.3
    (beyond kappa 0): the share whose check evidence ever reaches 1/alpha is not significantly above alpha, while
    the kappa-based evidence (the control: small misfit compounds across nights) flags most of them."""
    rng = np.random.default_rng(20261128)
    families, nights, alpha = 200, 100, 0.05
    confirmed = flagged = crossed = 0
    for _ in range(families):
        test = family_evidence([_check_night(rng, t, 1.0, 0.3) for t in range(nights)], alpha)
        confirmed += test.confirmed
        flagged += test.flagged
        crossed += any(n.log_check_evidence >= -math.log(alpha) for n in test.nights)
    assert stats.binomtest(crossed, families, alpha, alternative="greater").pvalue > 0.01, crossed
    assert confirmed <= crossed
    assert flagged >= families // 2, flagged


def test_a_leak_too_small_for_one_night_is_confirmed_within_a_few_nights():
    """A model 0.35 above its claim on nights whose reference misfits by 0.3: one night's own test vouches for it
    on a minority of nights (about 4 in 10), and the family is confirmed within 7 nights in most families."""
    rng = np.random.default_rng(11)
    families, within, single = 40, 0, 0
    for _ in range(families):
        family = [_check_night(rng, t, 1.0, 0.3, leak=0.35) for t in range(7)]
        single += sum(n.check.e_value(1.0) >= calibrated_e_value(0.05) for n in family)
        within += family_evidence(family).confirmed
    assert single < 0.5 * 7 * families, single
    assert within >= 0.7 * families, within


def test_the_family_alert_pages_on_a_confirmation_and_says_what_it_means():
    """A family confirmed (both evidences at 1/alpha) alerts FAMILY_CONFIRMED, which pages: its decision is to act;
    the kappa-based evidence alone sends no alert kind of its own."""
    from auditing.sinks.alerts.webhook import (
        ALERT_KINDS,
        FAMILY_CONFIRMED,
        PAGES,
        alert_event_payload,
        family_payload,
    )

    rng = np.random.default_rng(2)
    family = family_evidence([_check_night(rng, t, 1.0, 0.0, leak=3.0) for t in range(2)])
    assert family.confirmed and FAMILY_CONFIRMED in ALERT_KINDS and FAMILY_CONFIRMED in PAGES
    payload = family_payload(family, model_id="m", partition_date=family.confirmed_on.isoformat(), report="/r.html")
    body = alert_event_payload(FAMILY_CONFIRMED, payload)["payload"]
    assert body["page"] is True and body["nights_counted"] == 2 and body["decision"] == "act"
    assert body["family_check_evidence"] == family.check_evidence
    assert body["text"] == (f"[labeldp-audit] FAMILY_CONFIRMED: model m, partition {family.confirmed_on}: "
                            f"{family.sentence()}")
    assert "CONFIRMED since" in family.sentence()
    assert not any("FLAG" in kind for kind in ALERT_KINDS)
