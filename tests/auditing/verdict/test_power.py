"""The power planner (auditing/verdict/power.py, `labeldp-audit plan power`, the preflight's warning): its night
gap is the gap the capacity check's exact test confirms about 90% of the time under the planner's own model
(simulated here with the exact test, not the normal approximation the planner solves), more check rows confirm
smaller gaps, and a holdout too small to ever confirm a claim is said so."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import special

from auditing.bounds.misfit_test import check_p_value
from auditing.verdict.power import MATCHED_SHARE, can_ever_confirm, power_plan, rows_of_day
from flows.cli import main
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


def test_plan_power_prints_the_gaps_and_json(capsys):
    assert main(["plan", "power", "--rows", "51000", "--holdout", "0.2", "--claimed-epsilon", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("claim 1: 36,720 audited and 10,200 check rows, 95% confidence")
    assert out[1].startswith("  a night confirms: a leak at eps ") and "90% power" in out[1]
    assert out[2].startswith("  a family confirms within 7 nights: a leak at eps ")
    assert main(["plan", "power", "--rows", "51000", "--holdout", "0.2", "--claimed-epsilon", "1", "--json"]) == 0
    [figures] = json.loads(capsys.readouterr().out)
    assert figures["check_rows"] == 10200 and figures["can_ever_confirm"] and figures["family_gap"] < figures["night_gap"]
    assert main(["plan", "power", "--rows", "2000", "--holdout", "0.01", "--claimed-epsilon", "3"]) == 0
    assert "no night can confirm a violation of this claim" in capsys.readouterr().out
    assert main(["plan", "power", "--rows", "2000", "--holdout", "1.5"]) == 2
    assert "--holdout must be in [0, 1)" in capsys.readouterr().err


def test_the_preflight_warns_when_no_night_can_confirm_the_claim():
    from flows.plan import load_plan
    from flows.preflight import holdout_warnings

    plan = load_plan(None)
    assert holdout_warnings(plan, 1_000_000) == []
    warnings = holdout_warnings(plan, 300)
    assert warnings and all("no night of 300 rows can confirm a violation of claimed eps" in w for w in warnings)
    assert all("labeldp-audit plan power --rows 300" in w for w in warnings)
