"""Plain-text renderings for the command line: one audit result, the results table of the flows, and the
sentences a nightly / guardrail / backfill run ends with (one per exit code that applied).

Renderers only: every figure comes from an audit result or a `Verdict` computed elsewhere (`auditing.verdict.judge`).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from auditing.result import AuditResult, SliceAudit
from auditing.risk.records import RiskBlock
from auditing.sinks.listing import ListedSlices, ListedVerdict, SkippedTarget
from auditing.sinks.report.wording import (
    DECISION_SHORT,
    INPUTS_REPLACED,
    SLICE_TABLE_ROWS,
    SLICE_VIOLATION_MEANING,
    STATUS_MEANINGS,
    TRUST_MEANINGS,
    TRUST_SHORT,
    capacity_check_clauses,
    claim_words,
    detectability_sentence,
    groups_sentence,
    inputs_replaced_sentence,
    slices_budget_words,
    trust_sentence,
)
from auditing.sinks.warehouse.records import ResultRow
from auditing.sinks.warehouse.spool import SpooledElsewhere
from auditing.verdict.family_evidence import DEFAULT_ALPHA
from auditing.verdict.power import PowerPlan
from auditing.verdict.types import (
    ACT,
    EXITS_UNTRUSTED,
    HEADLINES,
    MEASURED,
    PASS,
    TRUSTED,
    UNCONFIRMED,
    UNTRUSTED,
    VIOLATION,
    WEAK_PASS,
    SliceVerdict,
    TrustFigures,
    Verdict,
)
from labeldp import hints


def power_lines(plan: PowerPlan, nearer: PowerPlan | None = None) -> list[str]:
    """What `labeldp-audit plan power` prints for one claim (`auditing.verdict.power.PowerPlan`): the rows, the
    shares and where they came from (assumed, or measured on the stored nights it names), the gaps. ``nearer``: the
    same claim planned at a guess share nearer a real model's, shown in one line beside an assumed default."""

    def pct(share: float) -> str:  # 1.3%, 48%, 100%
        return f"{share * 100:.2g}%" if share < 0.1 else f"{share * 100:.0f}%"

    def gap(value: float | None) -> str:
        return "none up to +20" if value is None else f"+{value:.2g}"

    of = f" ({plan.model_id})" if plan.model_id is not None else ""
    head = (f"claim {plan.claimed_epsilon:g}{of}: {plan.audited_rows:,} audited and {plan.check_rows:,} check rows, "
            f"{plan.confidence:.0%} confidence, the leak on {pct(plan.guess_share)} of the rows, "
            f"{pct(plan.matched_share)} matched (planning figures)")
    lines = [head]
    if plan.measured_nights:
        nights = plan.measured_nights
        dates = sorted(n.partition_date for n in nights)
        span = dates[0].isoformat() + ("" if len(dates) == 1 else f"..{dates[-1].isoformat()}")
        guesses = [n.guess_share for n in nights]
        matched = [n.matched_share for n in nights if n.matched_share is not None]

        def spread(values: list[float]) -> str:  # the nights' range beside the median
            return "" if len(values) < 2 else f" ({pct(min(values))}-{pct(max(values))})"

        lines.append(f"  planned from {len(nights)} night{'s' if len(nights) != 1 else ''} of {plan.model_id}, {span} "
                     f"(the median): guess share {pct(plan.guess_share)}{spread(guesses)} of the check rows, matched "
                     f"{pct(plan.matched_share)}{spread(matched)} of the check guesses")
    else:
        lines.append("  shares assumed, not measured (--from-warehouse measures them on stored nights); a real model's "
                     "guess share is nearer 1% (docs/soundness.md 8.9)")
    if not plan.can_ever_confirm:
        lines.append("  no night can confirm a violation of this claim: even an attacker right on every guess could "
                     "not be vouched for with these check rows; hold out a larger share of the day")
    else:
        def confirms(who: str, value: float | None) -> str:
            if value is None:
                return f"  {who}: no leak up to eps {plan.claimed_epsilon + 20:g} with {plan.power:.0%} power"
            return f"  {who}: a leak at eps {plan.claimed_epsilon + value:.3g} (+{value:.2g}) with {plan.power:.0%} power"

        lines += [confirms("a night confirms", plan.night_gap),
                  confirms(f"a family confirms within {plan.nights} nights", plan.family_gap)]
    if plan.other_holdouts:
        lines.append(f"  at other holdout shares of the day (the gap a night / a family within {plan.nights} nights "
                     "confirms):")
        lines += [f"    {pct(o.holdout):>3}: {o.audited_rows:,} audited, {o.check_rows:,} check rows: "
                  f"{gap(o.night_gap)} / {gap(o.family_gap)}" for o in plan.other_holdouts]
    if nearer is not None:
        lines.append(f"  at a guess share of {pct(nearer.guess_share)}: " + (
            f"a night confirms {gap(nearer.night_gap)}, a family within {nearer.nights} nights "
            f"{gap(nearer.family_gap)} above the claim" if nearer.can_ever_confirm
            else "no night can confirm a violation of this claim"))
    return lines


def format_audit_result(result: AuditResult, demonstrated: RiskBlock | None = None, *,
                        verdict: Verdict | None = None) -> str:
    """A short summary: the valid bound with its labels first, then the paper's statistic, then context.

    Args:
        result: the audit result (its game and bound give the settings shown beside the figures).
        demonstrated: `auditing.verdict.judge.demonstrated_risk` of the result (None: no line about it).
        verdict: the verdict of ``result`` against a claim (`auditing.verdict.judge.judge`; None: no claim was
            judged): its decision, trust, status and breaking kappa, and its slices' statuses.
    """
    game, bound = result.game, result.bound
    kind = "OPTIMISTIC (not a valid bound)" if result.optimistic else f"valid at {bound.confidence:.0%} confidence"
    lines = [
        f"epsilon lower bound: {result.epsilon_lower_bound:.4f}   [{kind}]",
        f"  method={bound.method}  strategy={bound.strategy}  delta={float(bound.delta):g}  kappa={bound.kappa:g}"
        f"  per-point confidence={result.point_confidence:.6g}",
        f"  selected: {result.selected_correct} correct of {result.selected_guesses} guesses"
        f" (m={result.selected_m}, grid of {result.grid_size} points, {game.grid})",
        f"  largest bound this audit could certify (perfect attacker): {result.max_certifiable_epsilon:.4f}",
        *_verdict_lines(result, verdict),
        f"paper's statistic over {game.repetitions} repetitions (optimistic: max over the sweep, uncorrected):",
        f"  mean {result.epsilon_mean:.4f}  std {result.epsilon_std:.4f}  median {result.epsilon_median:.4f}",
        f"  m={result.m}  seed={game.seed}{_night_text(result)}  score={result.score}"
        f" (t={game.score_power:g})"
        f"  config={result.config_hash}",
    ]
    # a judged run shows its slices' verdicts; a claim-free one (or one whose verdict has none) the slices' bounds
    judged = ListedSlices.of_verdict(verdict) if verdict is not None else None
    lines += _result_slice_lines(judged or result.slices)
    if demonstrated:
        lines.append(_demonstrated_line(demonstrated))
    return "\n".join(lines)


def _result_slice_lines(slices: SliceAudit | ListedSlices | None) -> list[str]:
    """The slices of a command's result (claim-free bounds, or judged with a status and trust), the largest bounds
    first."""
    if slices is None:
        return []
    pieces = sorted(slices.slices, key=lambda s: -s.epsilon_lower_bound)
    lines = [f"slices (own budget {slices.budget:.3g} over {slices.declared} slices, each at confidence "
             f"{100 * slices.confidence:.4g}%; a bound per slice, the global one above is judged apart):"]
    for piece in pieces[:SLICE_TABLE_ROWS]:
        status = ""
        if isinstance(piece, SliceVerdict):  # a judged slice: its status, and its trust when not trusted
            status = f"  {piece.status}" if piece.status else ""
            if piece.trust and piece.trust != TRUSTED:
                status += f" ({piece.trust})"
        note = f"  ({piece.note})" if piece.note else ""
        lines.append(f"  {piece.slicing:<22} {piece.name:<28} eps_lb {piece.epsilon_lower_bound:.4f} over "
                     f"{piece.rows} rows{status}{note}")
    if len(pieces) > SLICE_TABLE_ROWS:
        lines.append(f"  {len(pieces) - SLICE_TABLE_ROWS} more slices")
    return lines


def _night_text(result: AuditResult) -> str:
    """The night that keyed the coins with the seed, when one did (results before nights have none)."""
    night = result.game.night
    return f"  night={night.isoformat()}" if night else ""


def _verdict_lines(result: AuditResult, verdict: Verdict | None) -> list[str]:
    """The verdict against a claim (audit-scores --claimed-epsilon) and the f-DP method's Gaussian reading."""
    lines = []
    if verdict is not None:
        decision, trust = verdict.decision, verdict.trust
        if decision is not None:  # the decision first (auditing.verdict.decision), its reason and next step
            step = f"; next: {decision.next_step}" if decision.next_step else ""
            lines.append(f"decision: {decision.headline.upper()}: {decision.reason}{step}")
            if trust.state:
                lines.append(f"  trust: {trust.state}" + (f" ({trust.reason})" if trust.reason else ""))
        kappa = verdict.robustness.breaking_kappa
        meaning = (f"the counts disprove the claim unless the reference misjudges some row's click odds by more "
                   f"than a factor {math.exp(kappa):.3g}" if kappa > 0 else "the counts do not disprove the claim")
        lines.append(f"  status against the claimed eps {verdict.claimed_epsilon:g} at kappa {result.bound.kappa:g}: "
                     f"{verdict.status}; breaking kappa {kappa:.4g} ({meaning})")
    if result.gdp_mu_lower_bound is not None:
        lines.append(f"  Gaussian reading: not mu-GDP for any mu below {result.gdp_mu_lower_bound:.4f} "
                     "(a statement about mu only; not an epsilon bound)")
    return lines


def _demonstrated_line(block: RiskBlock) -> str:
    """What the valid bound demonstrates (`auditing.verdict.judge.demonstrated_risk`)."""
    return (f"what eps_lb demonstrates (no guarantee beats these ceilings; priors: the reference's probabilities): "
            f"a guess right {block.prior_p90:.1%} of the time beforehand can be right up to "
            f"{block.posterior_ceiling_p90:.1%}; membership advantage up to {block.mia_advantage_bound:.3f} "
            f"({hints.EXPLAIN_RISK.line().strip('`')} explains each figure)")


# ------------------------------------------------------------------------------------------ one verdict's trust
# The sentences read a verdict's `TrustFigures` (`Verdict.trust_figures`, or `TrustFigures.read` of a warehouse row
# or an alert payload).


def trust_block_lines(row: ResultRow, indent: str = "  ") -> list[str]:
    """The trust block `results show` prints for a warehouse row: trust, the capacity check, the floors'
    detectability (a PASS), the row groups and why an INCONCLUSIVE had nothing to bound; a row written before them
    shows what it has (the retired label-blind control's figures too)."""
    figures = TrustFigures.read(row)
    lines = [trust_sentence(figures)]
    if row.trust is not None and row.kind != "control":
        clauses = capacity_check_clauses(figures, row.confidence)
        lines += [indent + clauses[0]] + [indent * 2 + clause for clause in clauses[1:]]
        if row.status in (PASS, WEAK_PASS) and detectability_sentence(figures):
            lines.append(indent + detectability_sentence(figures))
    if row.label_blind_bound is not None:  # a row written while the label-blind control ran
        lines.append(indent + f"label-blind control (retired; the capacity check replaced it): valid eps_lb "
                              f"{float(row.label_blind_bound):.4g}, measured misfit kappa "
                              f"{_optional(row.reference_misfit_kappa)}, "
                              + ("flagged" if row.label_blind_flagged else "not flagged"))
    lines.append(indent + groups_sentence(figures))
    if row.inconclusive_reason:
        lines.append(indent + f"nothing to bound: {row.inconclusive_reason}")
    return lines


def _optional(value) -> str:
    return "-" if value is None else f"{float(value):.3g}"


# ------------------------------------------------------------------------------------------ a verdict's slices
_SLICE_COLUMNS = (("slicing", "<"), ("slice", "<"), ("rows", ">"), ("eps_lb", ">"), ("vs claim", "<"),
                  ("max cert.", ">"), ("status", "<"), ("trust", "<"), ("note", "<"))


def slices_design_text(slices: ListedSlices) -> str:
    """'own budget 0.05 over 13 slices, each at confidence 99.62%'."""
    return slices_budget_words(slices.budget, slices.declared, slices.confidence)


def rejudged_slices_lines(carried: Sequence[str], lost: Sequence[str]) -> list[str]:
    """What a re-judging did with the night's slices: carried (bounded again from their stored counts) for
    ``carried``, not carried for ``lost`` (their game was stored before slice counts were kept)."""
    lines = []
    if carried:
        lines.append(f"slices carried for {', '.join(carried)}: each slice bounded again from its stored counts at "
                     "these settings (nothing scored again)")
    if lost:
        lines.append(f"slices NOT carried for {', '.join(lost)}: the night bounded slices, but its game was stored "
                     "before slice counts were kept; score the night again to bound them at other settings")
    return lines


def _versus(bound: float, claimed: float) -> str:
    """Where a slice's bound stands against the claim: '> claim', '<= claim', or '-' for an infinite claim."""
    if math.isinf(claimed):
        return "-"
    return "> claim" if bound > claimed else "<= claim"


def slice_table_lines(slices: ListedSlices, claimed: float, *, limit: int | None = SLICE_TABLE_ROWS,
                      title: str | None = "", indent: str = "  ") -> list[str]:
    """A verdict's slices as a short table: 'slices (own budget B over S slices, each at confidence C); claim X:'
    (``title`` before it; None: no header line), the ``limit`` largest bounds (None: every slice) and how many more
    there are."""
    shown = slices.slices if limit is None else slices.slices[:limit]
    cells = [tuple(name for name, _ in _SLICE_COLUMNS)]
    for piece in shown:
        cells.append((piece.slicing, piece.name, f"{piece.rows:,}", f"{piece.epsilon_lower_bound:.3f}",
                      _versus(piece.epsilon_lower_bound, claimed), f"{piece.max_certifiable_epsilon:.2f}",
                      piece.status, TRUST_SHORT.get(piece.trust, piece.trust), piece.note or "-"))
    widths = [max(len(line[i]) for line in cells) for i in range(len(_SLICE_COLUMNS) - 1)]

    def line(row: Sequence[str]) -> str:
        padded = [f"{cell:{align}{width}}" for cell, (_, align), width in zip(row, _SLICE_COLUMNS, widths,
                                                                               strict=False)]
        return indent + " ".join(padded) + "  " + row[-1]

    lines = [] if title is None else [f"{title}slices ({slices_design_text(slices)}); claim {claim_words(claimed)}:"]
    lines += [line(row) for row in cells]
    rest = slices.slices[len(shown):]
    if rest:
        above = sum(piece.status == VIOLATION for piece in rest)
        lines.append(f"{indent}... {len(rest)} more slice(s), {above} of them VIOLATION (smaller bounds; results "
                     "show and the run report list every slice)")
    return lines


# ------------------------------------------------------------------------------------------ attack curve, family
# The attack's ROC figures (docs/attack-curve.md) and the family's evidence across nights (docs/soundness.md
# section 10) of one stored verdict, each in one sentence; a row stored without them has none.
ATTACK_MEANING = "how well repetition 0's attack separates the labels; descriptive, not a bound on eps"


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def _figure(row: ResultRow, name: str, fmt: Callable[[float], str], at: str = "") -> str:
    """'3.8% at 1% FPR [3.4%, 4.4%]': a stored attack figure, then its bootstrap interval when it has one."""
    lower, upper = getattr(row, f"attack_{name}_lower"), getattr(row, f"attack_{name}_upper")
    text = fmt(getattr(row, f"attack_{name}")) + at
    return text if lower is None or upper is None else f"{text} [{fmt(lower)}, {fmt(upper)}]"


def attack_line(row: ResultRow, confidence: float | None) -> str | None:
    """'attack (...): TPR 3.8% at 1% FPR [3.4%, 4.4%], 0.0% at 0.1% FPR [...], AUROC 0.545 [...] (95% bootstrap)'
    from the row's attack columns; ``confidence``: its bootstrap intervals' (`stored_attack_confidence`). None
    when the row has no attack figures."""
    if row.attack_auroc is None:
        return None
    figures = [_figure(row, name, _percent, f" at {at} FPR")
               for name, at in (("tpr_at_fpr_0_01", "1%"), ("tpr_at_fpr_0_001", "0.1%"))
               if getattr(row, f"attack_{name}") is not None]
    if figures:
        figures[0] = "TPR " + figures[0]
    figures.append(f"AUROC {_figure(row, 'auroc', lambda v: f'{v:.3f}')}")
    at = (f"{100 * confidence:g}% percentile bootstrap intervals" if confidence is not None
          else "bootstrap intervals, confidence not recorded")
    return f"attack ({ATTACK_MEANING}): {', '.join(figures)} ({at})"


def _evidence(value: float) -> str:
    """A stored family figure (an evidence beyond the largest double is stored as the largest double)."""
    return f">= {sys.float_info.max:.3g}" if value >= sys.float_info.max else f"{value:.3g}"


def family_line(row: ResultRow, nights: int | None = None, alpha: float = DEFAULT_ALPHA) -> str | None:
    """The family's evidence after the row's night, the kappa-free confirmation first (docs/soundness.md section
    10), then the kappa-based evidence labelled with its condition, and the command that shows each night;
    ``nights``: the night's place in its family (None: not said). None when the row has no family figures (a
    control, a guardrail, a row written before them)."""
    if row.family_evidence is None:
        return None
    after = "" if nights is None else f" after {nights} night{'s' if nights != 1 else ''}"
    kappa = (f"kappa-based evidence {_evidence(row.family_evidence)}"
             + (" (at 1/alpha)" if row.family_flagged else "")
             + ": secondary, it holds only if kappa covers every night's reference (a small misfit beyond it "
               "compounds across nights)")
    if row.family_check_evidence is None:  # a row written before the check's evidence
        head = f"family across nights{after}: {kappa}"
    else:
        state = (f"CONFIRMED: a leak, act (both evidences reached 1/alpha = {1 / alpha:g}, anytime-valid at alpha "
                 f"{alpha:g})" if row.family_confirmed else f"not confirmed (1/alpha = {1 / alpha:g})")
        e_value = "" if row.check_e_value is None else f", this night's e-value {_evidence(row.check_e_value)}"
        head = (f"family across nights{after}: the check's evidence {_evidence(row.family_check_evidence)} "
                f"(kappa-free{e_value}), {state}; {kappa}")
    return f"{head}; {hints.FAMILY_NIGHTS.line(model=row.model_id)} shows each night"


# The backfill's skip rule, stated once (`backfill --help`, the day's line, docs), followed by
# `flows.steps.day_is_complete`.
BACKFILL_SKIP_RULE = ("a day is skipped when every target of the plan has a verdict of a nightly or backfill run on "
                      "that day, at the plan's audit configuration, judged on the day's partition as it is now "
                      "(trusted or not: a run on identical inputs would change nothing), on a night no control "
                      "voided; a day ingested again since, or voided, is audited again, and --force audits every "
                      "day")


def later_run_line(first: ResultRow, later: ResultRow, changed: Sequence[str]) -> str:
    """A family night that a later run judged on other inputs (`auditing.sinks.family.later_runs`): which run, what it
    found, what changed, and that the family counts the night's first run."""
    what = ", ".join(changed) if changed else "the first run recorded no input fingerprints"
    return (f"{later.partition_date.isoformat()}: a later run ({later.run_id}: {later.status}, eps_lb "
            f"{later.epsilon_lower_bound:.4g}) saw other inputs ({what}); the family counts the night's first run "
            f"({first.run_id}: {first.status}, eps_lb {first.epsilon_lower_bound:.4g})")


def partition_replaced_line(day: dt.date, entry: Mapping, marked: int) -> str:
    """What `data ingest|ingest-criteo|synth --replace` prints after replacing a day's partition of other bytes."""
    rows = "" if entry.get("rows") is None else f", {entry['rows']} rows"
    return (f"replaced the partition of {day.isoformat()} ({str(entry['fingerprint'])[:19]}...{rows}): its verdicts "
            f"stay in the warehouse, marked '{INPUTS_REPLACED}' "
            f"({hints.RESULTS_OF_DAY.line(date=day.isoformat())}); {marked} run report(s) marked; a registered "
            "model of the day must be registered again (models register --replace) before it is audited on the new "
            "rows")


def spool_item_line(item) -> str:
    """A spool file as `spool list` and `spool discard` print it (`auditing.sinks.warehouse.spool.SpooledPayload`)."""
    if item.row is None:
        return f"{item.path.name}: {item.error}"
    row = item.row
    to = "no warehouse recorded (an older payload)" if item.destination is None else \
        f"{item.destination.backend} {item.destination.address}"
    when = "" if item.spooled_at is None else \
        f", spooled {dt.datetime.fromtimestamp(item.spooled_at, dt.UTC).isoformat(timespec='seconds')}"
    return (f"{item.path.name}: {row.model_id} {row.partition_date.isoformat()} {row.run_kind} claim "
            f"{row.claimed_epsilon} {row.status} eps_lb {row.epsilon_lower_bound:.4g}, run {row.run_id}, "
            f"for {to}{when}")


def run_lines(row: ResultRow, runs: Sequence[Mapping]) -> list[str]:
    """One line per run of a verdict (``audit_runs``, the first started first): its id, when, its flow run, and
    whether it wrote the row or was recorded against it on identical inputs; a run that computed another status or
    bound than the stored row says so (the row keeps the first run's)."""
    out = []
    for run in runs:
        when = run["started_at"].isoformat() if run.get("started_at") else "start not recorded"
        role = "wrote the row" if run["run_id"] == row.run_id else "identical inputs, recorded; the row unchanged"
        flow = f", flow run {run['flow_run_id']}" if run.get("flow_run_id") else ""
        same = run["status"] == row.status and run["epsilon_lower_bound"] == row.epsilon_lower_bound
        differs = "" if same else (f"; computed {run['status']} eps_lb {run['epsilon_lower_bound']:.4g}, not the "
                                   f"stored {row.status} {row.epsilon_lower_bound:.4g}")
        out.append(f"{run['run_id']} ({when}{flow}): {role}{differs}")
    return out or ["none recorded (a warehouse older than schema version 9, read as it is)"]


def _where(r: ListedVerdict | SkippedTarget) -> str:
    row = r if isinstance(r, SkippedTarget) else r.row
    return f"{row.model_id}@{row.partition_date.isoformat()}"


# The results table's columns: header, alignment ("<" left, ">" right); the report path comes last, unpadded.
_COLUMNS = (("decision", "<"), ("model", "<"), ("date", "<"), ("status", "<"), ("run", "<"), ("trust", "<"),
            ("claimed", ">"), ("eps_lb", ">"), ("paper mean+-std", ">"), ("max cert.", ">"), ("brk.kap", ">"),
            ("floor", ">"), ("exp.fl", ">"), ("m", ">"), ("rows", "<"), ("report", "<"))
# The default table's columns (`format_rows`, without ``wide``): the decision first, what a person reads a verdict by.
_NARROW = 8
TABLE_WIDTH = 100  # the default table fits a terminal this wide (a long model name is shortened to fit; --wide not)
_MODEL_MIN = 12


def _cells(listed: ListedVerdict) -> tuple[str, ...]:
    """One row of the results table as text, column by column (`_COLUMNS`)."""
    r = listed.row
    claimed = "inf" if math.isinf(r.claimed_epsilon) else f"{r.claimed_epsilon:g}"
    paper = f"{r.epsilon_mean:.3f}+-{r.epsilon_std:.3f}" if r.epsilon_mean is not None else "-"
    # The stored status, a control's as a target's (one word everywhere: the table, the warehouse, the CSV and --json);
    # whether a control came out as constructed is its trust. '!' marks a verdict that is not trusted.
    status = r.status + ("!" if r.untrusted_reason else "")
    breaking = "-" if r.breaking_kappa is None else f"{r.breaking_kappa:.3g}"
    floor = "-" if r.detection_floor_rows is None else str(r.detection_floor_rows)
    exposed = "-" if r.exposed_rows_floor is None else str(r.exposed_rows_floor)
    exposed += "w" if listed.weak_pass_mark else ""  # a PASS stored before WEAK_PASS existed
    status += "*" if listed.inputs_replaced else ""  # its day's partition was replaced since
    return (DECISION_SHORT.get(r.decision, "-") if r.kind != "control" else "-", r.model_id,
            r.partition_date.isoformat(), status, r.run_kind or "-", TRUST_SHORT.get(listed.trust, "-"), claimed,
            f"{r.epsilon_lower_bound:.3f}", paper, f"{r.max_certifiable_epsilon:.2f}", breaking, floor, exposed,
            str(r.m), r.audit_rows or "-", listed.report or "-")


def decision_line(listed: ListedVerdict, *, report: bool = False) -> str:
    """The decision of a target in one line: its headline, why, and the one next step (``report``: and its page)."""
    r = listed.row
    step = f"; next: {r.decision_next_step}" if r.decision_next_step else ""
    page = f" (report: {listed.report})" if report and listed.report else ""
    return f"{_where(listed)} {HEADLINES.get(r.decision, '-').upper()}: {r.decision_reason or '-'}{step}{page}"


def _table_lines(listed: Sequence[ListedVerdict], wide: bool) -> tuple[list[str], bool]:
    """The header, its rule and one line per verdict: every column (``wide``, each as wide as its longest value, the
    report path last), or the first `_NARROW` columns within `TABLE_WIDTH` (a model name too long for it is shortened
    with '~'; --wide and --json give it whole); and whether a name was shortened."""
    columns = _COLUMNS if wide else _COLUMNS[:_NARROW]
    shortened = False
    table = [tuple(name for name, _ in columns), *(_cells(r)[:len(columns)] for r in listed)]
    padded_columns = columns[:-1] if wide else columns
    widths = [max(len(line[i]) for line in table) for i in range(len(padded_columns))]
    if not wide:
        over = sum(widths) + len(widths) - 1 - TABLE_WIDTH
        if over > 0:
            widths[1] = max(_MODEL_MIN, widths[1] - over)
            shortened = True
            table = [(*line[:1], line[1] if len(line[1]) <= widths[1] else line[1][:widths[1] - 1] + "~", *line[2:])
                     for line in table]

    def line(cells: Sequence[str]) -> str:
        padded = [f"{cell:{align}{width}}" for cell, (_, align), width in zip(cells, padded_columns, widths,
                                                                                 strict=False)]
        return (" ".join(padded) + "  " + cells[-1]) if wide else " ".join(padded).rstrip()

    header = line(table[0])
    return [header, "-" * len(header), *(line(cells) for cells in table[1:])], shortened


def format_rows(rows: Sequence[ListedVerdict | SkippedTarget], *, wide: bool = False, explain: bool = False) -> str:
    """The results table printed by the nightly / guardrail / backfill commands and by `results` (skipped
    targets, which have no verdict, are listed under it with their reason): by default the decision first and the
    columns a person reads a verdict by, within `TABLE_WIDTH`; ``wide``: every column, each as wide as its longest
    value. Under it, per verdict, what needs saying (a leak's decision, what the figures mean, why a verdict is not
    trusted, the family, the slices; with ``wide`` the attack's ROC figures too); the legend of the columns, the statuses and the trust states
    only with ``explain``, and a key to the table's marks when a mark is shown."""
    skipped = [r for r in rows if isinstance(r, SkippedTarget)]
    listed = [r for r in rows if isinstance(r, ListedVerdict)]
    lines, shortened = _table_lines(listed, wide)
    lines += [decision_line(v, report=not wide) for v in listed
              if v.is_target and v.row.decision in (ACT, UNCONFIRMED)]
    if listed and not wide and any(v.report for v in listed):
        folder = Path(os.path.commonpath([str(Path(v.report).parent) for v in listed if v.report]))
        lines.append(f"reports: one page per verdict under {folder} (--wide lists each)")
    marks = [text for shown, text in (
        (any(v.row.untrusted_reason for v in listed), "'!' after the status: not trusted (why below)"),
        (any(v.inputs_replaced for v in listed), "'*': its day's inputs were replaced since (below)"),
        (wide and any(v.weak_pass_mark for v in listed),
         f"w (exp.fl): a PASS stored before {WEAK_PASS} was a status whose floors make it one"),
        (shortened, "'~': a model name shortened to fit (--wide shows it whole)"))
        if shown and not explain]
    if marks:
        lines.append("marks: " + "; ".join(marks) + " (--explain prints the legend)")
    if listed and explain:
        r = listed[0].row
        kappa = "- (a row written before kappa)" if r.kappa is None else f"{r.kappa:g}"
        lines.append(f"eps_lb: valid lower bound at {r.confidence:.0%} confidence ({r.strategy} selection, "
                     f"{r.method}, delta={r.delta:g}, kappa={kappa}); paper mean+-std: the paper's "
                     "optimistic statistic, for comparison only.")
        lines.append("brk.kap: largest kappa at which the same counts still exceed the claim, i.e. the verdict "
                     "holds unless the reference misjudges some row's click odds by more than a factor e^brk.kap "
                     "(0: they do not exceed it at kappa = 0); floor: fewest correct guesses (a perfect attacker's fully exposed "
                     "labels) that could flag the claim, a necessary condition (-: none, INCONCLUSIVE); exp.fl: "
                     "fewest fully exposed labels this audit flags with 95% probability in the game (-: not "
                     "computed or none reaches 95%, see --json exposed_rows_floor_note); rows: the audited rows "
                     "(training: rows whose labels entered training); run: the kind of run that wrote the verdict.")
        lines.append("trust: " + "; ".join(f"{TRUST_SHORT[state]}: {TRUST_MEANINGS[state]}"
                                           for state in dict.fromkeys(v.trust for v in listed)
                                           if state in TRUST_SHORT)
                     + ("; -: not recorded (a row written before per-verdict trust)"
                        if any(v.trust is None for v in listed) else "")
                     + "; '!' marks a verdict that is not trusted.")
        for status in dict.fromkeys(v.row.status for v in listed if v.row.kind != "control"):
            if status in STATUS_MEANINGS:
                lines.append(f"{status}: {STATUS_MEANINGS[status]}.")
        if any(v.weak_pass_mark for v in listed):
            lines.append(f"w (exp.fl): a PASS stored before {WEAK_PASS} was a status whose floors make it one.")
    if explain and any(v.row.kind == "control" for v in listed):
        lines.append("control: the night's positive control (randomized response at a known eps_c: its bound must "
                     "exceed a pre-registered floor and stay <= eps_c) and negative control (a copy of the "
                     "reference: its bound must be 0); a control's status is its bound against its own claim (eps_c, "
                     "0), and its trust whether it came out as constructed (trusted) or failed (untrusted, why "
                     "below)"
                     + (" (rows of older nights also show the label-blind control, retired: the capacity check "
                        "replaced it)" if any(v.row.label_blind_bound is not None for v in listed) else "") + ".")
    targets = [v for v in listed if v.row.kind != "control"]
    for v in targets:  # what the claimed eps allows and the bound demonstrates
        if v.row.risk_headline:
            lines.append(f"what this means for {v.row.model_id} {v.row.partition_date.isoformat()}: "
                         f"{v.row.risk_headline}")
    for v in targets:  # why a VIOLATION is trusted; what a PASS's floors are worth; why nothing was bounded
        r = v.row
        if r.status == VIOLATION and r.trust == TRUSTED and r.trust_reason:
            lines.append(f"trusted VIOLATION {_where(v)}: {r.trust_reason}")
        if r.status in (PASS, WEAK_PASS) and r.detectability not in (None, MEASURED):
            lines.append(f"{r.status} {_where(v)}: "
                         + detectability_sentence(TrustFigures(detectability=r.detectability,
                                                               detectability_reason=v.detectability_reason)))
        if r.inconclusive_reason:
            lines.append(f"{r.status} {_where(v)}: nothing to bound: {r.inconclusive_reason}")
    not_trusted: dict[tuple[str, str], list[str]] = {}
    for v in listed:
        if v.row.untrusted_reason:
            not_trusted.setdefault((v.trust or UNTRUSTED, v.row.untrusted_reason), []).append(_where(v))
    for (state, reason), where in not_trusted.items():
        lines.append(f"! {state.upper()} ({', '.join(where)}): {reason}")
    for v in targets:  # the family's evidence across nights; the attack's ROC figures (descriptive) with --wide
        lines += [f"{_where(v)} {line}" for line in (attack_line(v.row, v.attack_confidence) if wide else None,
                                                     family_line(v.row, v.family_nights)) if line]
    sliced = [v for v in targets if v.slices is not None]
    for v in sliced:  # each verdict's declared slices, the largest bounds first
        lines += slice_table_lines(v.slices, v.row.claimed_epsilon, title=f"{_where(v)} ")
    if any(v.slices.violations for v in sliced):
        lines.append(SLICE_VIOLATION_MEANING)
    for v in listed:
        if v.inputs_replaced:
            lines.append(f"* {_where(v)} {v.row.status}: {inputs_replaced_sentence(v.row.partition_fingerprint, v.inputs_replaced)}")
    for r in skipped:
        lines.append(f"skipped: {r.model_id} {r.partition_date.isoformat()}: {r.reason}")
    return "\n".join(lines)


def stored_rows_for_table(rows: Sequence[ResultRow], report: Callable[[ResultRow], str | None] | None = None,
                          weak_pass: Callable[[ResultRow], bool | None] | None = None,
                          slices: Mapping | None = None,
                          family_nights: Mapping | None = None,
                          replaced: Callable[[ResultRow], str | None] | None = None) -> list[ListedVerdict]:
    """Warehouse rows (``Warehouse.fetch_verdicts``) as the verdicts ``format_rows`` lists: ``report(row)`` the
    path of the row's run report (None: none). A row stored before WEAK_PASS was a status says PASS:
    ``weak_pass(row)`` says whether its floors make it weak, and the table marks it 'w'. ``slices``: the rows'
    stored slices by key (``Warehouse.slices_of``); ``family_nights``: each night's place in its family by
    (model_id, partition_date) (`auditing.sinks.family.night_numbers`; None: not known); ``replaced(row)``: when the
    partition the row judged was replaced since (None: it was not), marked '*' and said under the table."""
    return [ListedVerdict(row, report=report(row) if report is not None else None,
                          stored_weak_pass=weak_pass(row) if weak_pass is not None else None,
                          stored_slices=ListedSlices.of_stored(row, (slices or {}).get(row.key, ())),
                          family_nights=(family_nights or {}).get((row.model_id, row.partition_date)),
                          inputs_replaced=replaced(row) if replaced is not None else None)
            for row in rows]


# `results show`: a verdict in sections, its figures rounded for people (`results show --json` prints them exact).
SHOW_DIGITS = 4  # significant digits of a stored float in `results show`'s text


def show_number(value) -> str:
    """A stored value as `results show` prints it: NULL, ISO dates and times, inf, a float to `SHOW_DIGITS`
    significant digits (0.050000000000000044 is 0.05), the rest as Python writes it."""
    if value is None:
        return "NULL"
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, float):
        return "inf" if math.isinf(value) and value > 0 else f"{value:.{SHOW_DIGITS}g}"
    return str(value)


def _g(value) -> str:
    return "-" if value is None else show_number(float(value))


def show_heading(row: ResultRow) -> str:
    """The first line of `results show`: which verdict it is."""
    return (f"{row.model_id} {row.partition_date.isoformat()}: {row.run_kind or 'unrecorded'} run, "
            f"claim {claim_words(row.claimed_epsilon)}, {row.kind}")


def show_decision_lines(row: ResultRow, indent: str = "  ") -> list[str]:
    """The decision section: the headline, why, the one next step, what would confirm an unconfirmed leak; a
    control's row has none (it passed or failed: its trust says which)."""
    if row.kind == "control" or row.decision is None:
        return [indent + "none: a control is judged by its own rule (its trust below says whether it came out as "
                         "constructed)"]
    lines = [indent + HEADLINES.get(row.decision, row.decision).upper(), f"{indent}why: {row.decision_reason or '-'}"]
    if row.decision_next_step:
        lines.append(f"{indent}next: {row.decision_next_step}")
    confirm = [f"about {row.confirm_check_rows:,} check rows" if row.confirm_check_rows else "",
               f"about {row.confirm_nights} more night(s)" if row.confirm_nights else ""]
    if any(confirm):
        lines.append(f"{indent}would confirm it: " + " or ".join(c for c in confirm if c))
    return lines


def show_evidence_lines(row: ResultRow, indent: str = "  ") -> list[str]:
    """The evidence section: the status and what it means, the valid bound with its settings, the claim and the
    largest bound this audit could show, the selected point, the paper's statistic, the robustness and the floors."""
    kappa = "- (a row written before kappa)" if row.kappa is None else _g(row.kappa)
    lines = [f"{indent}status: {row.status}" + (f" ({STATUS_MEANINGS[row.status]})" if row.status in STATUS_MEANINGS
                                                else ""),
             f"{indent}valid eps_lb: {_g(row.epsilon_lower_bound)} at {row.confidence:.0%} confidence "
             f"({row.strategy} selection, {row.method}, delta {_g(row.delta)}, kappa {kappa})",
             f"{indent}claim: {claim_words(row.claimed_epsilon)}; max certifiable eps: "
             f"{_g(row.max_certifiable_epsilon)} (what an attacker right on every guess could have shown)",
             f"{indent}selected point: c' = {row.selected_guesses:,} guesses, c = {row.selected_correct:,} correct, of "
             f"m = {row.m:,} audited rows ({row.audit_rows or 'rows not recorded'})"]
    if row.epsilon_mean is not None:
        lines.append(f"{indent}paper's statistic: {_g(row.epsilon_mean)} +- {_g(row.epsilon_std)} over "
                     f"{row.repetitions} repetitions (optimistic: for comparison only, never the verdict)")
    if row.breaking_kappa is not None:
        lines.append(f"{indent}holds up to kappa {_g(row.breaking_kappa)} (the reference misjudging some row's click "
                     f"odds by up to a factor {math.exp(float(row.breaking_kappa)):.3g})")
    floors = [f"{row.detection_floor_rows:,} correct guesses could flag the claim (floor)"
              if row.detection_floor_rows is not None else "",
              f"{row.exposed_rows_floor:,} fully exposed labels are flagged with 95% probability (exp.fl)"
              if row.exposed_rows_floor is not None else ""]
    if any(floors):
        lines.append(f"{indent}floors: " + "; ".join(f for f in floors if f))
    if row.inconclusive_reason:
        lines.append(f"{indent}nothing to bound: {row.inconclusive_reason}")
    return lines


def _violation_item(v: ListedVerdict) -> str:
    r = v.row
    return (f"{_where(v)} (valid eps_lb {r.epsilon_lower_bound:.4g} > claimed {r.claimed_epsilon:g} at "
            f"{r.confidence:.0%} confidence; " + _epsilon_check_clause(v) + f"; report {v.report})")


def _epsilon_check_clause(v: ListedVerdict) -> str:
    """A VIOLATION's trust in a clause: trusted with its epsilon_check, accepted unchecked, or why not trusted."""
    state, r = v.trust, v.row
    if state == TRUSTED and r.epsilon_check is not None:
        return f"trusted: epsilon_check {r.epsilon_check:.4g} > claim too, without kappa"
    if state in (TRUSTED, None):
        return "trusted" if state == TRUSTED else "trust not recorded"
    return f"{state}: {r.trust_reason or r.untrusted_reason}"


def violations_summary(rows: Sequence[ListedVerdict], untrusted: Sequence[ListedVerdict] = ()) -> str:
    """'1 VIOLATION: the claimed epsilon is disproved for leaky@2026-10-02 (valid eps_lb 0.815 > claimed 0, ...;
    trusted: epsilon_check ...; report ...)', and the untrusted VIOLATIONs beside them (``untrusted``), which are
    not acted on."""
    plural = "s" if len(rows) != 1 else ""
    text = f"{len(rows)} VIOLATION{plural}: the claimed epsilon is disproved for " + "; ".join(map(_violation_item, rows))
    if untrusted:
        text += (f"; beside {'them' if plural else 'it'}, {len(untrusted)} untrusted VIOLATION(s), not acted on as a "
                 "violation (exit 4): " + "; ".join(map(_violation_item, untrusted)))
    return text


def spooled_summary(paths: Sequence[str], drain_command: str) -> str:
    """Results computed but not written: where they are and the command that writes them."""
    directory = str(Path(paths[0]).parent) if paths else "?"
    names = ", ".join(Path(p).name for p in paths)
    return (f"{len(paths)} result(s) computed but not in the warehouse (it could not be reached): spooled to "
            f"{directory} ({names}); once it is back, write them with `{drain_command}` (every nightly run also "
            "writes the spool first)")


def spool_elsewhere_lines(elsewhere: Sequence[SpooledElsewhere], spool: Path) -> list[str]:
    """One line per other warehouse whose spooled results a drain left in place (``drain_spool``'s
    ``elsewhere``): where they are meant to go and the command that writes them there (``spool``: the data
    root's spool directory)."""

    by_address: dict[tuple[str, str], int] = {}
    for item in elsewhere:
        by_address[(item.backend, item.address)] = by_address.get((item.backend, item.address), 0) + 1
    return [f"{count} spooled result(s) in {spool} are meant for the {backend} warehouse {address}, not this one: "
            f"left in place; write them with {hints.DRAIN_SPOOL_TO.line(root=Path(spool).parent, warehouse=address)}"
            + (" (add your user name to the URL)" if backend == "postgres" else "")
            for (backend, address), count in by_address.items()]


def spool_unaddressed_line(paths: Sequence[str], spool: Path) -> str:
    """Spooled results of an older version, which recorded no warehouse: left until a person names theirs."""
    return (f"{len(paths)} spooled result(s) in {spool} were written by an older labeldp-audit, which did not record "
            "their warehouse: left in place; once you know which warehouse they belong to, write them with "
            f"{hints.DRAIN_UNADDRESSED.line(root=Path(spool).parent)}")


def untrusted_summary(reasons: Sequence[str], rows: Sequence[ListedVerdict | SkippedTarget] = ()) -> str:
    """The verdicts that are not trusted (exit 4), each named with why (``rows``: the run's rows, of which the
    targets not trusted are named, untrusted VIOLATIONs first, and the trusted VIOLATIONs beside them), then any
    reason in ``reasons`` no named row carries."""
    targets = [v for v in rows if isinstance(v, ListedVerdict) and v.is_target]
    named = [v for v in targets if v.trust in EXITS_UNTRUSTED]
    violations = [v for v in named if v.row.status == VIOLATION]
    others = [v for v in named if v.row.status != VIOLATION]
    parts = []
    if violations:
        parts.append(f"{len(violations)} VIOLATION(s) not trusted, do not act on them as violations: "
                     + "; ".join(map(_violation_item, violations)))
    if others:
        parts.append(f"{len(others)} other verdict(s) not trusted, read them as unknown: "
                     + "; ".join(f"{_where(v)} ({v.row.status}, {_epsilon_check_clause(v)})" for v in others))
    trusted = [v for v in targets if v.row.status == VIOLATION and v.trust not in EXITS_UNTRUSTED]
    if trusted and named:
        parts.append("beside them the VIOLATION(s) " + ", ".join(map(_where, trusted)) + " stand ("
                     + "; ".join(_epsilon_check_clause(v) for v in trusted) + ")")
    carried = {v.row.untrusted_reason for v in named}
    parts += [reason for reason in dict.fromkeys(reasons) if reason not in carried]
    return "UNTRUSTED: " + "; ".join(parts)


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
# reference policy from the plan). The command lines are `labeldp.hints`'.


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
