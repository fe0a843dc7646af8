"""auditing/sinks/report/text.py: the command line's words for published verdicts: the run summary's exit lines
(trusted and untrusted VIOLATIONs), the run's table with each verdict's attack figures, family evidence and slices
(and the --json row's slices beside it)."""

from __future__ import annotations

import dataclasses

import numpy as np

from auditing.audit import run_audit
from auditing.game.config import GameConfig
from auditing.verdict.judge import judge
from labeldp.codec import encode
from tests.support.report_pages import CLAIMED
from tests.support.report_pages import five_night_family as _family
from tests.support.report_pages import listed_verdict as _summary_row


def test_the_run_summary_names_untrusted_violations_beside_trusted_ones(checked):
    """exit 1 names the trusted VIOLATION with its epsilon_check and, beside it, the untrusted one (not acted on);
    exit 4 names the untrusted verdicts with why, and the trusted VIOLATION that stands."""
    from flows import exit_codes

    rows = [_summary_row("leaky", judge(checked["leaky"], 0.5)), _summary_row("drift", judge(checked["misfit"], 0.1)),
            _summary_row("rr", judge(run_audit(np.full(3000, 0.7), np.full(3000, 0.5), np.ones(3000, dtype=int),
                                               game=GameConfig(repetitions=1)), 50.0))]
    assert [(r.row.status, r.row.trust) for r in rows] == [("VIOLATION", "trusted"), ("VIOLATION", "untrusted"),
                                                           ("INCONCLUSIVE", "reference unchecked")]
    outcome = exit_codes.Outcome(rows=rows, untrusted=[r.row.untrusted_reason for r in rows[1:]],
                                 fail_on_violation=True)
    first, second = exit_codes.summary_lines(outcome, "nightly", "")
    leaky = rows[0].row.epsilon_check
    assert first.startswith("labeldp-audit nightly: exit 1: 1 VIOLATION: the claimed epsilon is disproved for "
                            f"leaky@2024-01-14 (valid eps_lb {rows[0].row.epsilon_lower_bound:.4g} > claimed 0.5 at 95% "
                            f"confidence; trusted: epsilon_check {leaky:.4g} > claim too, without kappa; report "
                            "/r/leaky.html); beside it, 1 untrusted VIOLATION(s), not acted on as a violation (exit 4): "
                            "drift@2024-01-14 (")
    assert "untrusted: the reference's misfit can explain it: epsilon_check 0 <= claim 0.1" in first
    assert second.startswith("labeldp-audit nightly: also 4: UNTRUSTED: 1 VIOLATION(s) not trusted, do not act on "
                             "them as violations: drift@2024-01-14 (")
    assert ("1 other verdict(s) not trusted, read them as unknown: rr@2024-01-14 (INCONCLUSIVE, reference unchecked: "
            "no check rows") in second
    assert f"beside them the VIOLATION(s) leaky@2024-01-14 stand (trusted: epsilon_check {leaky:.4g}" in second
    assert second.count("the reference's misfit can explain it") == 1  # each reason once, with its verdict
    alone = exit_codes.summary_lines(exit_codes.Outcome(rows=rows[:1], fail_on_violation=True), "guardrail", "")
    assert len(alone) == 1 and "leaky@2024-01-14" in alone[0] and "beside" not in alone[0]


def test_a_runs_table_has_the_attack_and_the_familys_evidence_per_verdict(run):
    """A published verdict: the run's table prints its attack figures at the verdict's bootstrap confidence and its
    family's evidence after the night with the nights counted (the run knows them), FLAGGED; a verdict without a
    family (a guardrail) has no family line."""
    from auditing.sinks.listing import ListedVerdict
    from auditing.sinks.report.text import format_rows
    from auditing.sinks.warehouse import audit_record

    family, verdict = _family(), judge(run["result"], CLAIMED)
    curve = verdict.result.attack_curve
    row, _ = audit_record(verdict, model_id="leaky", partition_date="2024-01-05", run_kind="nightly",
                          family=family.nights[-1])
    guard, _ = audit_record(verdict, model_id="guard", partition_date="2024-01-05", run_kind="guardrail")
    table = format_rows([ListedVerdict(row, verdict=verdict, family_nights=len(family.nights)),
                         ListedVerdict(guard, verdict=verdict)], wide=True).splitlines()
    attack = next(line for line in table if line.startswith("leaky@2024-01-05 attack ("))
    assert attack.endswith(f"AUROC {curve.auroc:.3f} [{curve.auroc_lower:.3f}, {curve.auroc_upper:.3f}] "
                           f"({100 * curve.bootstrap_confidence:g}% percentile bootstrap intervals)")
    assert f"TPR {100 * curve.tpr_at_fpr_0_01:.1f}% at 1% FPR [" in attack and "not a bound on eps" in attack
    assert ("leaky@2024-01-05 family across nights after 5 nights: the check's evidence 81 (kappa-free, this night's "
            "e-value") in "\n".join(table)
    assert ("CONFIRMED: a leak, act (both evidences reached 1/alpha = 20, anytime-valid at alpha 0.05); kappa-based "
            "evidence 162 (at 1/alpha): secondary, it holds only if kappa covers") in "\n".join(table)
    assert any(line.startswith("guard@2024-01-05 attack (") for line in table)
    assert not any(line.startswith("guard@2024-01-05 family") for line in table)


def test_a_runs_table_and_json_carry_the_slices(run, sliced_verdict):
    """A published verdict with slices: the run's --json row has the slices object (budget, declared, confidence,
    design, every slice verdict, the largest bound first), its table lists the largest bounds under it with what a
    slice VIOLATION means; a verdict without slices has "slices": null and no slice lines. Slices change no exit
    code: the global verdict is judged separately."""
    from auditing.sinks.report.text import format_rows
    from auditing.sinks.report.wording import SLICE_VIOLATION_MEANING
    from flows import exit_codes

    audit = sliced_verdict.result.slices
    rows = [_summary_row("sliced", sliced_verdict), _summary_row("plain", judge(run["result"], CLAIMED))]
    record = encode(exit_codes.Outcome(rows=rows))["rows"]
    assert record[0]["slices"] == {"budget": audit.budget, "declared": 12, "confidence": audit.confidence,
                                   "design": audit.design, "slices": [encode(s) for s in sliced_verdict.slices]}
    assert record[1]["slices"] is None
    table = format_rows(rows)
    assert (f"sliced@2024-01-14 slices (own budget {audit.budget:.3g} over 12 slices, each at confidence "
            f"{100 * audit.confidence:.4g}%); claim eps 1:") in table
    assert "plain@2024-01-14 slices" not in table and table.count(SLICE_VIOLATION_MEANING) == 1
    assert exit_codes.Outcome(rows=rows[:1], fail_on_violation=True).codes() == \
        exit_codes.Outcome(rows=[dataclasses.replace(rows[0], verdict=dataclasses.replace(
            sliced_verdict, slices=()))], fail_on_violation=True).codes()
