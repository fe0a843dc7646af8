"""Evidence across nights (auditing.verdict.family_evidence, docs/soundness.md section 10): each night's likelihood
ratio is an e-value under the claim, the family's product crosses 1/alpha in at most alpha of compliant families
even when looked at every night, a family just above its claim is flagged within a few nights while single nights
miss it, and a variant that takes the best band (not an e-value) fails the same null test.

The truth is simulated here: per night, m ranked rows each guessed right with a known probability; the counts at
the grid points are the top-c' sums, as the game's sweep makes them."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest
from scipy import special, stats

from auditing.bounds.binomial import pure_epsilon_lower_bounds
from auditing.bounds.e_values import log_likelihood_ratio, null_rate, plug_in_alternative
from auditing.game.sweep import guess_grid
from auditing.verdict.family_evidence import BANDS, NightCounts, band_of, family_evidence
from labeldp.errors import LabelDPInputError

DAY0 = dt.date(2026, 1, 1)
M = 2000
GRID = guess_grid(M, kind="log", points=30, min_fraction=1e-3)


def _night(rng, day: int, claim: float, right, kappa: float = 0.0) -> NightCounts:
    """One night: row i (ranked by the attack's confidence) is right with probability right[i]."""
    hits = np.cumsum(rng.random(M) < right)
    return NightCounts(DAY0 + dt.timedelta(days=day), claim, kappa, 0.0, M, tuple(int(c) for c in GRID),
                       tuple(int(hits[c - 1]) for c in GRID))


def _families(rng, families: int, nights: int, claim: float, right) -> list[list[NightCounts]]:
    return [[_night(rng, t, claim, right) for t in range(nights)] for _ in range(families)]


def test_the_likelihood_ratio_is_an_e_value_exactly_and_needs_the_clamp():
    """E[LR] under Binomial(c', p) for p <= q0 is at most 1 (exact sums); with q1 < q0 it exceeds 1 at p = 0."""
    for guesses, q0 in ((1, 0.6), (40, 0.731), (500, 0.9)):
        k = np.arange(guesses + 1)
        for q1 in (q0, q0 + 0.5 * (1 - q0), 1 - 1e-6):
            lr = np.exp(log_likelihood_ratio(k, np.full_like(k, guesses), q0, q1))
            for p in (0.0, 0.3, q0 / 2, q0):
                assert float(np.sum(stats.binom.pmf(k, guesses, p) * lr)) <= 1 + 1e-9
    with pytest.raises(LabelDPInputError, match="q0 <= q1"):
        log_likelihood_ratio([0], [10], 0.7, 0.6)
    # why: below q0 a wrong guess weighs more than 1, so an attacker that is never right would "win"
    assert (1 - 0.6) / (1 - 0.7) > 1
    assert null_rate(1.0, 0.25) == pytest.approx(special.expit(1.25))
    q1 = plug_in_alternative(0.7, [0.0, 90.0, 10.0], [0.0, 100.0, 100.0])
    assert q1[0] == pytest.approx(special.expit(special.logit(0.7) + 0.5)) and q1[1] > q1[0] and q1[2] == 0.7


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
    assert out.flagged and out.flagged_on == DAY0 and "FLAGGED since 2026-01-01" in out.sentence()
    assert family_evidence([]).evidence == 1.0 and not family_evidence([]).flagged
    with pytest.raises(LabelDPInputError, match="alpha"):
        family_evidence(nights, alpha=1.0)


def test_night_counts_from_a_stored_audit_for_both_strategies():
    from auditing.audit import run_audit
    from auditing.bounds.rr_validation import gaussian_mixture, randomized_response, true_posterior
    from auditing.config import AuditConfig

    rng = np.random.default_rng(5)
    x, y = gaussian_mixture(4000, 2, rng)
    target = randomized_response(y, 2, 2.0, rng).astype(float)
    reference = true_posterior(x, 2)[:, 1]
    plain = run_audit(target, reference, y, config=AuditConfig(repetitions=1))
    night = NightCounts.of_result(DAY0, 1.0, plain.to_dict())
    assert night.guesses == tuple(p.guesses for p in plain.curve) and night.m == plain.m
    split = run_audit(target, reference, y, config=AuditConfig(repetitions=1, strategy="split"))
    halves = split.split_halves
    night = NightCounts.of_result(DAY0, 1.0, split)
    assert night.m == halves.selection.m + halves.bound.m == split.m
    assert night.correct[-1] == halves.selection.correct[-1] + halves.bound.correct[-1]


def test_the_family_alert_says_what_the_flag_means():
    from auditing.sinks.alerts.webhook import ALERT_KINDS, FAMILY_FLAGGED, PAGES, _body, family_payload

    rng = np.random.default_rng(2)
    family = family_evidence([_night(rng, t, 1.0, np.full(M, 0.8)) for t in range(3)])
    assert family.flagged and FAMILY_FLAGGED in ALERT_KINDS and FAMILY_FLAGGED not in PAGES
    payload = family_payload(family, model_id="m", partition_date=family.flagged_on.isoformat(), report="/r.html")
    body = _body(FAMILY_FLAGGED, "m", payload["partition_date"], payload)
    assert body["page"] is False and body["nights_counted"] == 3 and body["family_evidence"] == family.evidence
    assert body["text"] == f"[labeldp-audit] FAMILY_FLAGGED: model m, partition {family.flagged_on}: {family.sentence()}"
