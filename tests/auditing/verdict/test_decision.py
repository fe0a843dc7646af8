"""One decision per target (auditing/verdict/decision.py): docs/decisions.md's tables are the code's (every row's
inputs, built with the real records and rules, get the decision the row names; each decision's exit code is the
table's), the order of the rules (tonight's trusted VIOLATION leads, then the family, then a void night), and what
would confirm an unconfirmed leak (its check-row figure measured against the exact test it plans for)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import math
from pathlib import Path

import numpy as np
import pytest

from auditing.bounds.misfit_test import exact_epsilon_lower
from auditing.result import CapacityCheck
from auditing.verdict.capacity_check import NO_CHECK_ROWS, unchecked
from auditing.verdict.control_check import ControlCheck
from auditing.verdict.controls import NEGATIVE, POSITIVE
from auditing.verdict.decision import check_rows_to_confirm, decide
from auditing.verdict.family_evidence import CheckCounts, FamilyEvidence, NightCounts, family_evidence
from auditing.verdict.split_test import split_test
from auditing.verdict.trust import NightTrust, night_trust, verdict_trust
from auditing.verdict.types import (
    ACCEPTED_UNCHECKED,
    ACT,
    DECISIONS,
    INCONCLUSIVE,
    NO_EVIDENCE,
    NO_POWER,
    PASS,
    STATUSES,
    TRUSTED,
    UNCHECKED,
    UNCONFIRMED,
    UNTRUSTED,
    VIOLATION,
    VOID,
    WEAK_PASS,
)
from flows import exit_codes

DOCS = Path(__file__).resolve().parents[3] / "docs" / "decisions.md"
CLAIM, KAPPA, CONFIDENCE = 1.0, 0.1, 0.95
NIGHT = dt.date(2026, 1, 5)


def _table(after: str) -> list[list[str]]:
    """The cells of the first markdown table after the line ``after`` in docs/decisions.md (header and rule left
    out)."""
    text = DOCS.read_text()
    text = text[text.index(after):]
    lines = text[text.index("\n|") + 1:].split("\n\n")[0].splitlines()
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines[2:]]


def _head(cell: str) -> str:
    """A cell's words before its first parenthesis or colon (the whole cell when that leaves nothing)."""
    return cell.split("(")[0].split(":")[0].strip() or cell


# ------------------------------------------------------------------------------------------ the records


@functools.cache
def _check(bound_correct: int, bound_guesses: int, check_correct: int, check_guesses: int, rows: int,
           slack: float = 0.0) -> CapacityCheck:
    """A stratified check that ran, with these matched counts: its epsilon_check is the exact test's, as
    `auditing.verdict.capacity_check.capacity_check` computes it."""
    epsilon = exact_epsilon_lower(bound_correct, bound_guesses, check_correct, check_guesses, 1.0 - CONFIDENCE, slack)
    return CapacityCheck(checked=True, reason=None, confidence=CONFIDENCE, audited_rows=20_000, check_rows=rows,
                         epsilon_check=epsilon, misfit_kappa_upper=0.3, check_misfit_kappa=0.0, rule="stratified",
                         strata=2, matched_bound_guesses=bound_guesses, matched_bound_correct=bound_correct,
                         matched_check_guesses=check_guesses, matched_check_correct=check_correct,
                         composition_slack=slack)


def vouches() -> CapacityCheck:  # the check's own bound (about 2) is above the claim
    return _check(1800, 2000, 500, 1000, 4000)


def misfit() -> CapacityCheck:  # epsilon_check 0.90 <= the claim; more check rows would confirm it
    return _check(1800, 2000, 70, 100, 4000)


def explained() -> CapacityCheck:  # the check rows are right as often as the audited guesses: no rows would confirm
    return _check(1800, 2000, 90, 100, 4000)


def none_held_out() -> CapacityCheck:
    return unchecked(NO_CHECK_ROWS, confidence=CONFIDENCE, audited_rows=20_000)


def _control(kind: str, passed: bool, bound: float, floor: float | None, ceiling: float) -> ControlCheck:
    return ControlCheck(control=kind, passed=passed, epsilon_lower_bound=bound, floor=floor, ceiling=ceiling,
                        message=f"{kind} control: eps_lb {bound:g}")


def _night(**controls: ControlCheck) -> NightTrust:
    return night_trust(controls, {name: c.control for name, c in controls.items()}, date=NIGHT.isoformat())


VOID_NIGHT = _night(**{"control-negative": _control(NEGATIVE, False, 0.3, None, 0.0)})
ABOVE_TRUTH = _night(**{"control-positive": _control(POSITIVE, False, 2.6, 0.8, 2.0)})
BELOW_FLOOR = _night(**{"control-positive": _control(POSITIVE, False, 0.5, 0.8, 2.0)})


def refused_split():
    """A team's split whose check rows are the afternoon of audited morning rows: the split test refuses it."""
    hour = np.arange(400) % 24
    return split_test({"hour": hour[hour < 12].astype(float)}, {"hour": hour[hour >= 12].astype(float)})


def _family(*bound_correct: int) -> FamilyEvidence:
    """A family of one night per count: claim 1 at kappa 0, the night's audited guesses right 99% of the time, and
    its check's matched audited guesses right ``bound_correct`` of 1,000 against 500 of 1,000 check guesses."""
    nights = []
    for day, correct in enumerate(bound_correct):
        date, grid = NIGHT - dt.timedelta(days=len(bound_correct) - 1 - day), (10, 100, 1000)
        nights.append(NightCounts(date, CLAIM, 0.0, 0.0, 1000, grid, tuple(round(0.99 * g) for g in grid),
                                  coins_night=date, check=CheckCounts(correct, 1000, 500, 1000)))
    return family_evidence(nights)


CONFIRMED = _family(990)  # one night: the check's evidence ~2e15, the kappa-based evidence ~9e44
GROWING = _family(760)  # the check's evidence 2.03: about 4 more such nights would confirm it
assert CONFIRMED.confirmed and not GROWING.confirmed and GROWING.nights_to_confirm() == 4


def _decide(status, check, night=None, *, family=None, split=None, claim=CLAIM):
    """The decision of a target's verdict, its trust decided by the real rule (`verdict_trust`)."""
    night = night or NightTrust()
    trust = verdict_trust(status, claim, check, kappa=KAPPA, night=night, split=split)
    return trust, decide(status, trust, claim, check, night=night, family=family, kappa=KAPPA, split=split)


def _cases(statuses, checks, nights, state=None, detectability=None, family=None):
    """Every combination's decision, each checked to have the trust the row names."""
    out = []
    for status in statuses:
        for check in checks:
            for night in nights:
                trust, decision = _decide(status, check, night, family=family)
                assert state is None or trust.state == state, (status, check, night, trust)
                assert detectability is None or trust.detectability == detectability, (status, check, night, trust)
                out.append(((status, check and check.epsilon_check, night), decision))
    return out


def _control_row():
    """A control's own row: judged by its own rule (passed or failed, on a clean or void night), no decision; the
    same result judged as a target has one."""
    from auditing.audit import run_audit
    from auditing.config import BoundConfig
    from auditing.game.config import GameConfig
    from auditing.verdict.judge import judge

    rng = np.random.default_rng(0)
    labels = (rng.random(2000) < 0.3).astype(np.int64)
    result = run_audit(np.where(labels == 1, 0.99, 0.01), np.full(2000, 0.3), labels, np.arange(2000),
                       GameConfig(repetitions=1, reference_calibration="none"), BoundConfig())
    assert judge(result, CLAIM, kind="target").decision.decision == UNCONFIRMED  # a VIOLATION nothing checked
    passed, failed = _control(POSITIVE, True, 4.0, 0.8, 5.0), _control(POSITIVE, False, 4.0, 0.8, 2.0)
    return [((control, night), judge(result, CLAIM, kind="control", control=control, night=night).decision)
            for control in (passed, failed) for night in (NightTrust(), VOID_NIGHT)]


ANY_CHECK = (vouches(), misfit(), None, none_held_out())
# The docs' row (status, trust or the night, each before its first parenthesis or colon) -> its cases. A later row
# wins over an earlier one ("any, unless below"): a family confirmed before a void night still means act.
STATES = {
    ("VIOLATION", "trusted"): lambda: _cases([VIOLATION], [vouches()], [NightTrust()], TRUSTED),
    ("VIOLATION", "reference unchecked, accepted"): lambda: _cases(
        [VIOLATION], [None, none_held_out()], [NightTrust(accept_unchecked=True)], ACCEPTED_UNCHECKED),
    ("VIOLATION", "untrusted"): lambda: [
        *_cases([VIOLATION], [misfit(), explained(), dataclasses.replace(vouches(), rule="pooled")], [NightTrust()],
                UNTRUSTED),
        *_cases([VIOLATION], [vouches()], [ABOVE_TRUTH], UNTRUSTED),
        (("refused split",), _decide(VIOLATION, vouches(), split=refused_split())[1])],
    ("VIOLATION", "reference unchecked"): lambda: _cases([VIOLATION], [None, none_held_out()], [NightTrust()],
                                                         UNCHECKED),
    ("PASS, WEAK_PASS", "any, unless below"): lambda: _cases(
        [PASS, WEAK_PASS], [*ANY_CHECK, explained()], [NightTrust(), ABOVE_TRUTH, NightTrust(accept_unchecked=True)]),
    ("PASS, WEAK_PASS", "the positive control fell below its floor"): lambda: _cases(
        [PASS, WEAK_PASS], ANY_CHECK, [BELOW_FLOOR], detectability=VOID),
    ("INCONCLUSIVE", "any"): lambda: _cases([INCONCLUSIVE], ANY_CHECK, [NightTrust(), BELOW_FLOOR, ABOVE_TRUTH]),
    ("any", "the night is void"): lambda: _cases(STATUSES, ANY_CHECK, [VOID_NIGHT], UNTRUSTED, family=GROWING),
    ("any", "the family is confirmed"): lambda: _cases(STATUSES, ANY_CHECK, [NightTrust(), BELOW_FLOOR, VOID_NIGHT],
                                                       family=CONFIRMED),
    ("a control's own row", "(a control is judged by its own rule)"): _control_row,
}
WORDS = {"act": ACT, "unconfirmed": UNCONFIRMED, "no evidence": NO_EVIDENCE, "no power": NO_POWER,
         "no decision": None}
ROWS = {(_head(status), _head(state)): _head(decision) for status, state, decision in
        _table("## Every status and trust state, and its decision")}


def test_the_docs_table_names_exactly_the_rows_mapped_here():
    """A row the docs gain or lose (or whose status or trust words change) breaks this test until its inputs are
    mapped here."""
    assert set(ROWS) == set(STATES), (set(ROWS) ^ set(STATES))


@pytest.mark.parametrize("row", list(STATES), ids=" | ".join)
def test_every_row_of_the_docs_table_gets_its_decision(row):
    expected = WORDS[ROWS[row]]
    for inputs, decision in STATES[row]():
        assert (decision and decision.decision) == expected, (row, inputs, decision)


# ------------------------------------------------------------------------------------------ exit codes


def _listed(decision: str, trust: str = TRUSTED, **columns):
    """A target's published row with ``decision``, as a run lists it."""
    from auditing.sinks.listing import ListedVerdict
    from auditing.sinks.warehouse.records import upgrade_row

    row = upgrade_row({"model_id": "m", "model_fingerprint": "fp", "partition_date": NIGHT, "run_kind": "nightly",
                       "claimed_epsilon": CLAIM, "audit_config_hash": "abc", "delta": 0.0, "confidence": CONFIDENCE,
                       "gamma": 0.05, "m": 100, "selected_guesses": 10, "selected_correct": 9,
                       "epsilon_lower_bound": 1.5, "strategy": "bonferroni", "method": "binomial",
                       "status": VIOLATION if decision in (ACT, UNCONFIRMED) else PASS, "max_certifiable_epsilon": 5.0, "repetitions": 1, "seed": 0,
                       "result_json": "{}", "kind": "target", "trust": trust, "decision": decision,
                       "decision_reason": "why", **columns})
    return ListedVerdict(row, report=None, warehouse="written")


def test_each_decision_exits_with_the_code_of_the_docs_first_table():
    exits = {cells[0].strip("`"): int(cells[3].split()[0]) for cells in _table("# One decision per target")}
    assert set(exits) == set(DECISIONS)
    for decision, code in exits.items():
        assert exit_codes.decision_exit_code(decision) == code, decision
        # the run's code (guardrail, or nightly and backfill with --fail-on-violation)
        assert exit_codes.Outcome(rows=[_listed(decision)], fail_on_violation=True).exit_code() == code, decision
    # act fails nightly and backfill only when asked; a void night's no power exits 4 for its failed control
    assert exit_codes.Outcome(rows=[_listed(ACT)]).exit_code() == exit_codes.OK
    void = _listed(NO_POWER, UNTRUSTED, untrusted_reason=f"the night is void: {VOID_NIGHT.void_reason}")
    assert exit_codes.Outcome(rows=[void]).exit_code() == exit_codes.UNTRUSTED == 4


# ------------------------------------------------------------------------------------------ the order of the rules


def test_a_trusted_violation_leads_with_tonights_check_and_names_the_familys_confirmation_after_it():
    trust, alone = _decide(VIOLATION, vouches())
    assert alone.decision == ACT and alone.reason == trust.reason and not alone.family_confirmed
    _, both = _decide(VIOLATION, vouches(), family=CONFIRMED)
    assert both.decision == ACT and both.family_confirmed
    assert both.reason.startswith(trust.reason + "; the check's evidence over the family's 1 night, ")
    assert f"reached 20 on {NIGHT.isoformat()}" in both.reason and "nights together" not in both.reason
    assert both.next_step == alone.next_step == "hold the release and check the mechanism's privacy accounting"
    assert both.check_e_value == alone.check_e_value > 1


@pytest.mark.parametrize("status, check, night", [(VIOLATION, misfit(), NightTrust()),
                                                  (VIOLATION, vouches(), ABOVE_TRUTH),
                                                  (VIOLATION, None, NightTrust()), (PASS, vouches(), NightTrust()),
                                                  (INCONCLUSIVE, None, NightTrust()), (VIOLATION, vouches(), VOID_NIGHT)])
def test_a_family_confirmed_on_a_night_that_is_not_a_trusted_violation_leads_with_the_family(status, check, night):
    trust, decision = _decide(status, check, night, family=CONFIRMED)
    assert trust.state != TRUSTED or status != VIOLATION
    assert decision.decision == ACT and decision.family_confirmed
    assert decision.reason.startswith("the family's nights together confirm a leak without kappa: the check's "
                                      "evidence over the family's 1 night, ")
    assert decision.next_step.startswith("treat the model family as leaking")


@pytest.mark.parametrize("status", STATUSES)
def test_a_void_night_with_an_unconfirmed_family_has_no_power(status):
    _, decision = _decide(status, vouches(), VOID_NIGHT, family=GROWING)
    assert decision.decision == NO_POWER and not decision.family_confirmed
    assert decision.reason == f"tonight is void: {VOID_NIGHT.void_reason}" and decision.confirm_nights is None


# ------------------------------------------------------------------------------------------ what would confirm it


def test_no_check_rows_figure_without_a_stratified_check_with_matched_guesses():
    for check in (None, none_held_out(), dataclasses.replace(misfit(), rule="pooled"),
                  dataclasses.replace(misfit(), matched_check_guesses=0), dataclasses.replace(misfit(),
                                                                                             matched_check_guesses=None)):
        assert check_rows_to_confirm(check, CLAIM) is None, check
    assert check_rows_to_confirm(misfit(), CLAIM) is not None


def test_no_figure_when_the_audited_accuracy_does_not_exceed_what_the_checks_misfit_explains_at_the_claim():
    assert check_rows_to_confirm(explained(), 0.0) is None  # 90% right on both sides: misfit explains it all
    # logit(0.9) - logit(0.7) = 1.35: a claim just under it has a figure (rows, if enormous), one just over none
    check = _check(1800, 2000, 700, 1000, 4000)
    assert check_rows_to_confirm(check, 1.2) is not None and check_rows_to_confirm(check, 1.36) is None


def test_a_larger_claim_never_needs_fewer_rows():
    for check in (misfit(), _check(4750, 5000, 120, 150, 2000, 0.002), _check(2100, 3000, 220, 400, 5000)):
        figures = [check_rows_to_confirm(check, claim) for claim in np.linspace(0.0, 2.0, 81)]
        known = [f for f in figures if f is not None]
        assert known and known == sorted(known) and all(f >= 1.1 * check.check_rows for f in known)
        assert None not in figures[:len(known)], figures  # once no number of rows would, none ever does again


@pytest.mark.parametrize("counts, claim", [
    ((1800, 2000, 70, 100, 4000, 0.0), 0.93),  # epsilon_check 0.90
    ((2100, 3000, 220, 400, 5000, 0.0), 0.54),  # epsilon_check 0.44
    ((1800, 2000, 70, 100, 4000, 0.0), 1.0),  # the normal approximation alone promised 4,609 (1.15x): exact 0.91
    ((4750, 5000, 120, 150, 2000, 0.002), 1.16),  # it promised 2,200 (1.1x): exact 0.99
    ((1800, 2000, 14, 20, 4000, 0.0), 1.0),  # few matched check guesses: it promised 4.3x where 8x is needed
])
def test_the_rows_it_promises_let_the_exact_test_vouch_and_not_many_fewer(counts, claim):
    """Tonight's check does not vouch; with its check side scaled to the rows promised (matched guesses by the
    factor, rounded, at tonight's accuracy rounded up), the exact test that computes epsilon_check vouches; at a
    tenth fewer rows it does not (unless the figure is the estimate's floor, 1.1x tonight's): the figure is neither
    optimistic nor padded."""
    *matched, rows, slack = counts
    tonight = _check(*matched, rows, slack)
    assert not tonight.vouches_for(claim)
    promised = check_rows_to_confirm(tonight, claim)
    bound_correct, bound_guesses, check_correct, check_guesses = matched

    def scaled(factor: float) -> CapacityCheck:  # tonight's check accuracy kept, rounded up
        guesses = round(check_guesses * factor)
        return _check(bound_correct, bound_guesses, math.ceil(check_correct * guesses / check_guesses - 1e-9),
                      guesses, round(factor * rows), slack)

    assert scaled(promised / rows).vouches_for(claim), (promised, scaled(promised / rows).epsilon_check)
    if promised > math.ceil(1.1 * rows):
        assert not scaled(promised / rows / 1.1).vouches_for(claim), promised


def test_what_would_confirm_an_unconfirmed_leak_says_rows_nights_or_neither():
    """The three wordings of the next step, through `decide`, with the figures it stores (and a refused split's:
    only a random holdout would)."""
    _, unchecked_leak = _decide(VIOLATION, None, family=GROWING)
    assert unchecked_leak.next_step.startswith("hold out some of the day's rows from every audited model")
    rows = check_rows_to_confirm(misfit(), CLAIM)
    _, both = _decide(VIOLATION, misfit(), family=GROWING)
    assert (both.decision, both.confirm_check_rows, both.confirm_nights) == (UNCONFIRMED, rows, 4)
    assert both.next_step == (f"would be confirmed by about {rows:,} check rows ({rows / 4000:.1f}x tonight's 4,000; "
                              "a larger holdout share) at tonight's margin or about 4 more night(s) like these in the "
                              "family's evidence")
    _, rows_only = _decide(VIOLATION, misfit())
    assert rows_only.confirm_nights is None and rows_only.next_step.startswith(f"would be confirmed by about {rows:,}")
    assert " or about" not in rows_only.next_step
    _, nights_only = _decide(VIOLATION, explained(), family=GROWING, claim=0.0)
    assert nights_only.confirm_check_rows is None and nights_only.next_step == (
        "would be confirmed by about 4 more night(s) like these in the family's evidence")
    _, split = _decide(VIOLATION, vouches(), family=GROWING, split=refused_split())
    assert split.reason.startswith("the check rows do not stand for the audited rows: hour differs")
    assert split.next_step.startswith("hold out a random share of the day's rows") and split.confirm_nights is None
    for family in (None, _family(500)):  # no family, or one whose evidence is not growing
        _, neither = _decide(VIOLATION, explained(), family=family, claim=0.0)
        assert (neither.confirm_check_rows, neither.confirm_nights) == (None, None)
        assert neither.next_step.startswith("at tonight's accuracies the reference's misfit explains the evidence: "
                                            "no number of check rows would confirm it")
