"""The power planner (auditing/verdict/power.py): its night gap is the gap the capacity check's exact test confirms
about 90% of the time under the planner's own model (simulated here with the exact test, not the normal
approximation the planner solves), more check rows confirm smaller gaps, and a holdout too small to ever confirm a
claim is said so. Its command, `labeldp-audit plan power`: tests/flows/commands/test_plan.py; the preflight's
warning: tests/flows/test_preflight.py."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from scipy import special

from auditing.bounds.misfit_test import check_p_value
from auditing.result import CapacityCheck
from auditing.verdict.power import (
    MATCHED_SHARE,
    NightShares,
    can_ever_confirm,
    measured_power_plan,
    measured_shares,
    power_plan,
    rows_of_day,
    with_holdouts,
)
from labeldp.errors import LabelDPInputError


def test_the_night_gap_is_confirmed_about_ninety_percent_of_the_time():
    """At the planned gap, 600 nights drawn from the planner's model (matched audited guesses right
    sigmoid(claim + gap) of the time, matched check guesses half of the time) are vouched for by the exact test on
    85% to 97% of them; at half the gap on far fewer."""
    audited, check = rows_of_day(60_000, 0.2, correction_share=0.1)
    plan = power_plan(audited, check, 1.0)
    n_bound, n_check = int(0.1 * audited / 2), int(0.1 * MATCHED_SHARE * check)
    rng = np.random.default_rng(0)

    def confirmed(gap: float, nights: int = 600) -> float:
        hits = rng.binomial(n_bound, special.expit(1.0 + gap), nights)
        checks = rng.binomial(n_check, 0.5, nights)
        # epsilon_check exceeds the claim exactly when the exact test's p-value at the claim is at most 5%
        return float(np.mean([check_p_value(int(c), n_bound, int(h), n_check, 1.0) <= 0.05
                              for c, h in zip(hits, checks, strict=True)]))

    assert 0.85 <= confirmed(plan.night_gap) <= 0.97, plan
    assert confirmed(plan.night_gap / 2) < 0.6


def test_more_check_rows_confirm_smaller_gaps_and_a_family_less_than_a_night():
    small, large = power_plan(40_000, 2_000, 1.0), power_plan(40_000, 20_000, 1.0)
    assert large.night_gap < small.night_gap and large.family_gap < small.family_gap
    assert small.family_gap < small.night_gap
    assert not can_ever_confirm(40_000, 0, 1.0, 0.95) and not power_plan(40_000, 0, 1.0).can_ever_confirm
    assert power_plan(40_000, 0, 1.0).night_gap is None
    with pytest.raises(LabelDPInputError, match="guess_share must be in"):
        power_plan(1000, 100, 1.0, guess_share=0.0)
    assert rows_of_day(1000, 0.2, correction_share=0.1) == (720, 200)
    assert rows_of_day(1000, 0.2) == (800, 200)


def test_the_planned_gap_grows_as_the_shares_fall():
    """Fewer guesses where the leak shows (a real model's 1.3% against the default 10%), or fewer of them kept by
    the matching, leave fewer comparisons: the gap a night and a family confirm grows."""
    audited, check = rows_of_day(100_000, 0.2, correction_share=0.1)
    assumed, real = power_plan(audited, check, 0.25), power_plan(audited, check, 0.25, guess_share=0.013)
    assert real.night_gap > 2 * assumed.night_gap and real.family_gap > 2 * assumed.family_gap
    halved = power_plan(audited, check, 0.25, guess_share=0.013, matched_share=0.25)
    assert halved.night_gap > real.night_gap and halved.family_gap > real.family_gap
    # every check guess kept: smaller than at the assumed half
    assert power_plan(audited, check, 0.25, guess_share=0.013, matched_share=1.0).night_gap < real.night_gap
    with pytest.raises(LabelDPInputError, match=r"matched_share must be in \(0, 1\]"):
        power_plan(audited, check, 0.25, matched_share=0.0)


def test_other_holdouts_are_the_same_plan_on_the_day_split_again():
    """`with_holdouts` plans the same claim, shares and settings at each other holdout share of the day: each entry
    is `power_plan` on the day split at that share, the plan's own share is left out, and in the check-limited
    regime (a tenth to a third held out) more check rows confirm smaller gaps."""
    audited, check = rows_of_day(100_000, 0.2, correction_share=0.1)
    plan = power_plan(audited, check, 0.5, guess_share=0.05, matched_share=0.8, nights=5)
    swept = with_holdouts(plan, 100_000, 0.2, correction_share=0.1)
    assert [o.holdout for o in swept.other_holdouts] == [0.1, 0.3, 0.4, 0.5]
    for other in swept.other_holdouts:
        rows = rows_of_day(100_000, other.holdout, correction_share=0.1)
        alone = power_plan(*rows, 0.5, guess_share=0.05, matched_share=0.8, nights=5)
        assert (other.audited_rows, other.check_rows) == rows
        assert (other.night_gap, other.family_gap) == (alone.night_gap, alone.family_gap)
    tenth, third = swept.other_holdouts[0], swept.other_holdouts[1]
    assert tenth.night_gap > plan.night_gap > third.night_gap
    assert swept.night_gap == plan.night_gap and plan.other_holdouts == ()
    # a share that can never confirm has no gap, whatever the simulation would say
    tiny = with_holdouts(power_plan(*rows_of_day(2_000, 0.2), 3.0), 2_000, 0.2, holdouts=(0.01,))
    assert tiny.other_holdouts[0].night_gap is None and tiny.other_holdouts[0].family_gap is None


def _check(check_rows: int, check_guesses: int, matched: int, **fields) -> CapacityCheck:
    return CapacityCheck(checked=True, reason=None, confidence=0.95, audited_rows=10_000, check_rows=check_rows,
                         check_guesses=check_guesses, matched_check_guesses=matched, rule="stratified", **fields)


def test_measured_shares_are_the_median_of_the_latest_nights():
    days = [dt.date(2026, 9, d) for d in range(9, 0, -1)]  # latest first
    guesses = [130, 260, 90, 400, 150, 200, 110, 5000, 5000]  # the two oldest are left out at last=7
    nights = [NightShares.of_check(day, _check(20_000, g, g // 2 + i))
              for i, (day, g) in enumerate(zip(days, guesses, strict=True))]
    shares = measured_shares("deep", nights)
    assert shares.nights == tuple(nights[:7]) and [n.partition_date for n in shares.nights] == days[:7]
    assert shares.guess_share == pytest.approx(150 / 20_000)
    assert shares.matched_share == pytest.approx(float(np.median([(g // 2 + i) / g for i, g in enumerate(guesses[:7])])))
    assert measured_shares("deep", nights, last=1).guess_share == pytest.approx(130 / 20_000)
    plan = measured_power_plan(*rows_of_day(100_000, 0.2), 0.25, shares)
    assert (plan.source, plan.model_id, plan.measured_nights) == ("measured", "deep", shares.nights)
    assert (plan.guess_share, plan.matched_share) == (shares.guess_share, shares.matched_share)
    # a check that did not run, or one computed before strata, measured nothing
    assert NightShares.of_check(days[0], None) is None
    assert NightShares.of_check(days[0], _check(0, 0, 0)) is None
    assert NightShares.of_check(days[0], CapacityCheck(False, "no check rows", 0.95, 10_000, 0)) is None
    assert NightShares.of_check(days[0], CapacityCheck(True, None, 0.95, 10_000, 500, check_guesses=50)) is None
    with pytest.raises(LabelDPInputError, match="no stored night of deep"):
        measured_shares("deep", [])
    with pytest.raises(LabelDPInputError, match="guessed on no check row"):
        measured_shares("deep", [NightShares(days[0], 500, 0, 0)])
