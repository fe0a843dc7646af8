"""Plain-text renderings for the command line: one audit result, the results table of the flows, and the
sentences a nightly / guardrail / backfill run ends with (one per exit code that applied).

Renderers only: every figure comes from an audit result or a `Verdict` computed elsewhere (`auditing.judging`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from auditing import hints


def format_audit_result(result: Mapping, demonstrated: Mapping | None = None) -> str:
    """A short summary: the valid bound with its labels first, then the paper's statistic, then context.

    Args:
        result: `AuditResult.to_dict()`, with the verdict's ``status``, ``claimed_epsilon`` and
            ``breaking_kappa`` merged in when a claim was judged.
        demonstrated: `auditing.judging.demonstrated_risk` of the result (None: no line about it).
    """
    kind = "OPTIMISTIC (not a valid bound)" if result["optimistic"] else f"valid at {result['confidence']:.0%} confidence"
    lines = [
        f"epsilon lower bound: {result['epsilon_lower_bound']:.4f}   [{kind}]",
        f"  method={result['method']}  strategy={result['strategy']}  delta={result['delta']:g}  kappa={result['kappa']:g}"
        f"  per-point confidence={result['point_confidence']:.6g}",
        f"  selected: {result['selected_correct']} correct of {result['selected_guesses']} guesses"
        f" (m={result['selected_m']}, grid of {result['grid_size']} points, {result['grid']})",
        f"  largest bound this audit could certify (perfect attacker): {result['max_certifiable_epsilon']:.4f}",
        *_verdict_lines(result),
        f"paper's statistic over {result['repetitions']} repetitions (optimistic: max over the sweep, uncorrected):",
        f"  mean {result['epsilon_mean']:.4f}  std {result['epsilon_std']:.4f}  median {result['epsilon_median']:.4f}",
        f"  m={result['m']}  seed={result['seed']}  score={result['score']} (t={result['score_power']:g})"
        f"  config={result['config_hash']}",
    ]
    if demonstrated:
        lines.append(_demonstrated_line(demonstrated))
    return "\n".join(lines)


def _verdict_lines(result: dict) -> list[str]:
    """The verdict against a claim (audit-scores --claimed-epsilon) and the f-DP method's Gaussian reading."""
    lines = []
    if result.get("status") is not None:
        kappa = result["breaking_kappa"]
        meaning = (f"the counts disprove the claim unless the reference misjudges some row's click odds by more "
                   f"than a factor {math.exp(kappa):.3g}" if kappa > 0 else "the counts do not disprove the claim")
        lines.append(f"  status against the claimed eps {result['claimed_epsilon']:g} at kappa {result['kappa']:g}: "
                     f"{result['status']}; breaking kappa {kappa:.4g} ({meaning})")
    if result.get("gdp_mu_lower_bound") is not None:
        lines.append(f"  Gaussian reading: not mu-GDP for any mu below {result['gdp_mu_lower_bound']:.4f} "
                     "(a statement about mu only; not an epsilon bound)")
    return lines


def _demonstrated_line(block: Mapping) -> str:
    """What the valid bound demonstrates (`auditing.judging.demonstrated_risk`)."""
    return (f"what eps_lb demonstrates (no guarantee beats these ceilings; priors: the reference's probabilities): "
            f"a guess right {block['prior_p90']:.1%} of the time beforehand can be right up to "
            f"{block['posterior_ceiling_p90']:.1%}; membership advantage up to {block['mia_advantage_bound']:.3f} "
            f"({hints.EXPLAIN_RISK.line().strip('`')} explains each figure)")


def format_rows(rows: list[dict]) -> str:
    """The results table printed by the nightly / guardrail / backfill commands (skipped targets, which have no
    verdict, are listed under it with their reason)."""
    skipped = [r for r in rows if r.get("kind") == "skipped"]
    rows = [r for r in rows if r.get("kind") != "skipped"]
    header = (f"{'model':<20} {'date':<10} {'status':<15} {'claimed':>7} {'eps_lb':>7} {'paper mean+-std':>16} "
              f"{'max cert.':>9} {'brk.kap':>8} {'floor':>7} {'exp.fl':>8} {'m':>8} {'rows':<8}  report")
    lines = [header, "-" * len(header)]
    for r in rows:
        claimed = "inf" if math.isinf(r["claimed_epsilon"]) else f"{r['claimed_epsilon']:g}"
        paper = f"{r['epsilon_mean']:.3f}+-{r['epsilon_std']:.3f}" if r.get("epsilon_mean") is not None else "-"
        # A control shows whether it came out as constructed; '!' marks a verdict of an untrusted night.
        status = r["status"] if r.get("kind") != "control" else ("ok" if r.get("control_passed") else "FAILED")
        status = ("control " if r.get("kind") == "control" else "") + status + ("!" if r.get("untrusted_reason") else "")
        breaking = "-" if r.get("breaking_kappa") is None else f"{r['breaking_kappa']:.3g}"
        floor = "-" if r.get("detection_floor_rows") is None else str(r["detection_floor_rows"])
        exposed = "-" if r.get("exposed_rows_floor") is None else str(r["exposed_rows_floor"])
        exposed += "w" if r.get("weak_pass") else ""
        lines.append(f"{r['model_id']:<20} {r['partition_date']:<10} {status:<15} {claimed:>7} "
                     f"{r['epsilon_lower_bound']:>7.3f} {paper:>16} {r['max_certifiable_epsilon']:>9.2f} "
                     f"{breaking:>8} {floor:>7} {exposed:>8} {r['m']:>8} {r.get('audit_rows') or '-':<8}  {r['report']}")
    if rows:
        r = rows[0]
        lines.append(f"eps_lb: valid lower bound at {r['confidence']:.0%} confidence ({r['strategy']} selection, "
                     f"{r['method']}, delta={r['delta']:g}, kappa={_kappa(r)}); paper mean+-std: the paper's "
                     "optimistic statistic, for comparison only.")
        lines.append("brk.kap: largest kappa at which the same counts still exceed the claim, i.e. the verdict "
                     "holds unless the reference misjudges some row's click odds by more than a factor e^brk.kap "
                     "(0: they do not exceed it at kappa = 0); floor: fewest correct guesses (a perfect attacker's fully exposed "
                     "labels) that could flag the claim, a necessary condition (-: none, INCONCLUSIVE); exp.fl: "
                     "fewest fully exposed labels this audit flags with 95% probability in the game (-: not "
                     "computed or none reaches 95%, see --json exposed_rows_floor_note; w: a weak PASS, exp.fl > "
                     "1% of m or none); rows: the audited rows (training: rows whose labels entered training).")
    if any(r.get("kind") == "control" for r in rows):
        lines.append("control: the night's positive control (randomized response at a known eps_c: its bound must "
                     "exceed a pre-registered floor and stay <= eps_c), negative control (a copy of the reference: "
                     "its bound must be 0) and label-blind control (trained only on held-out rows: its bound must be "
                     "0, else the reference does not fit the day).")
    for r in rows:  # what the claimed eps allows and the bound demonstrates
        if r.get("risk_headline") and r.get("kind") != "control":
            lines.append(f"what this means for {r['model_id']} {r['partition_date']}: {r['risk_headline']}")
    untrusted = sorted({r["untrusted_reason"] for r in rows if r.get("untrusted_reason")})
    for reason in untrusted:
        lines.append(f"! UNTRUSTED: {reason}")
    for r in skipped:
        lines.append(f"skipped: {r['model_id']} {r['partition_date']}: {r.get('reason')}")
    return "\n".join(lines)


def _kappa(row: Mapping) -> str:
    # A warehouse row written before kappa has none (its legacy figure is in reference_check_note).
    return "- (a row written before kappa)" if row.get("kappa") is None else f"{row['kappa']:g}"


def stored_rows_for_table(rows: Sequence[Mapping], report: Callable[[Mapping], str | None] | None = None) -> list[dict]:
    """Warehouse rows (``Warehouse.fetch_verdicts``) as the rows ``format_rows`` prints: the partition date as
    YYYY-MM-DD text and ``report`` the path of the row's run report (``report(row)``; '-' when None). The
    weak-PASS mark 'w' is not a stored column: it shows when the caller adds ``weak_pass`` to a row."""
    out = []
    for row in rows:
        date = row["partition_date"]
        out.append({**row, "partition_date": date.isoformat() if isinstance(date, dt.date) else str(date),
                    "report": (report(row) if report is not None else None) or "-"})
    return out


def violation_line(row: Mapping) -> str:
    """One line for a guardrail VIOLATION (the release is blocked), from the flows' summary of a verdict."""
    return (f"VIOLATION: {row['model_id']}@{row['partition_date']} valid eps_lb {row['epsilon_lower_bound']:.4f} > "
            f"claimed {row['claimed_epsilon']:g} (confidence {row['confidence']:.0%}, {row['strategy']}, "
            f"{row['method']}, delta={row['delta']:g}, kappa={row['kappa']:g}); report: {row['report']}")


# ------------------------------------------------------------------------------------------ a run's exit summary
# The sentences the nightly / guardrail / backfill commands (and their flows' final states) end with: one per exit
# code that applied. The command line picks which apply and in what order (flows.exit_codes); the words are here.


def violations_summary(rows: Sequence[Mapping]) -> str:
    """'1 VIOLATION: leaky@2026-10-02 (valid eps_lb 0.815 > claimed 0, report ...)'."""
    items = [f"{r['model_id']}@{r['partition_date']} (valid eps_lb {r['epsilon_lower_bound']:.4g} > claimed "
             f"{r['claimed_epsilon']:g} at {r['confidence']:.0%} confidence; report {r['report']})" for r in rows]
    plural = "s" if len(items) != 1 else ""
    return f"{len(items)} VIOLATION{plural}: the claimed epsilon is disproved for " + "; ".join(items)


def spooled_summary(paths: Sequence[str], drain_command: str) -> str:
    """Results computed but not written: where they are and the command that writes them."""
    directory = str(Path(paths[0]).parent) if paths else "?"
    names = ", ".join(Path(p).name for p in paths)
    return (f"{len(paths)} result(s) computed but not in the warehouse (it could not be reached): spooled to "
            f"{directory} ({names}); once it is back, write them with `{drain_command}` (every nightly run also "
            "writes the spool first)")


def untrusted_summary(reasons: Sequence[str]) -> str:
    """The night's verdicts (PASS and VIOLATION alike) cannot be trusted, and why."""
    return "UNTRUSTED: read every verdict of the night as unknown: " + "; ".join(reasons)


def failures_summary(failures: Sequence[str]) -> str:
    """Audits that produced no row: a missing row is not a PASS."""
    return f"{len(failures)} audit(s) failed and wrote no row (a missing row is not a PASS): " + "; ".join(failures)


def bad_input_summary(items: Sequence[str]) -> str:
    return "bad input, nothing written for it: " + "; ".join(items)


def exit_summary(command: str, applied: Sequence[tuple[int, str]]) -> list[str]:
    """One line per exit code that applied, the winning one first: 'labeldp-audit C: exit 3: ...', then
    'labeldp-audit C: also 1: ...'."""
    return [f"labeldp-audit {command}: {'exit' if i == 0 else 'also'} {code}: {sentence}"
            for i, (code, sentence) in enumerate(applied)]


# ------------------------------------------------------------------------------------------ what to do
# The advice of an error met by the nightly (its plan decides, not a flag: the nightly reads its dataset and its
# reference policy from the plan). The command lines are `auditing.hints`'.


def plan_dataset_fix(day: dt.date) -> str:
    """A day's partition was written for another dataset than the plan's."""
    return (f"name its spec file in the plan's \"dataset\" ({hints.CHECK_PLAN.line(plan='PLAN')} prints the one "
            f"in use), or ingest the day again with the plan's spec ({hints.INGEST_DAY.line(date=day.isoformat())})")


def missing_reference(directory: Path, name: str, day: dt.date, registered: bool) -> str:
    """The D-1 reference is missing and the plan says on_missing_reference "fail". A plan of models trained
    elsewhere (``registered``) takes the reference from the same team: it is registered, not trained here."""
    when = day.isoformat()
    if registered:
        how = (f"register the D-1 checkpoint with {hints.REGISTER_REFERENCE.line(name=name, date=when)} (no "
               f"claim: inf)")
    else:
        how = (f"train it with {hints.TRAIN_REFERENCE.line(date=when, name=name)}, or set the plan's "
               f"on_missing_reference to \"train\"")
    return (f"no reference model at {directory} (the D-1 checkpoint the plan's on_missing_reference 'fail' "
            f"requires); {how}")
