"""Self-contained HTML reports: one page per audit run, and a trend page over many nights.

Pages use inline CSS and inline SVG only (no scripts, fonts or images from the network), so they open from a
file, an artifact store or an e-mail attachment. Every figure says what it is: the valid bound is labelled
with its confidence, selection strategy, method (an fdp row written before kappa as the legacy Gaussian
reading), delta, kappa and the reference calibration (the valid bound and kappa: docs/soundness.md); the paper's
statistic is labelled optimistic (docs/concepts.md, "What the numbers mean": Selection, Repetitions); PASS is explained
as "no evidence of a violation", not "private". Results and rows written before kappa (a total-variation tau
instead) are labelled legacy; their tau is never shown as a kappa.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditing.bounds.selection import STRATEGIES_REGISTRY, selection_strategy
from auditing.result import AuditResult
from auditing.sinks.report import svg
from auditing.sinks.report.attack_panel import attack_panel
from auditing.sinks.report.family_panel import family_panel
from auditing.sinks.report.figures_panel import figures_panel
from auditing.sinks.report.html import badge as _badge
from auditing.sinks.report.html import fmt_eps, fmt_g, fmt_int, fmt_pct, status_badge
from auditing.sinks.report.html import page as _page
from auditing.sinks.report.html import table as _table
from auditing.sinks.report.reference_panel import (
    calibration_text,
    gdp_text,
    kappa_text,
    method_label,
    odds_factor,
    reference_panel,
    row_kappa_text,
    row_method_label,
)
from auditing.sinks.report.risk_panel import risk_panel
from auditing.sinks.report.robustness_panel import robustness_panel
from auditing.sinks.report.slice_panel import slice_panel
from auditing.sinks.report.svg import esc
from auditing.sinks.report.trust_panel import (
    TRUST_CLASS,
    control_card,
    decision_card,
    trust_banner,
    trust_card,
)
from auditing.sinks.report.wording import (
    STATUS_MEANINGS,
    TRUST_DETAILS_HINT,
    TRUST_DETAILS_SUMMARY,
    TRUST_SHORT,
    VIOLATION_UNCONFIRMED_TEXT,
    inputs_replaced_sentence,
)
from auditing.sinks.warehouse.records import ResultRow, trust_state
from auditing.verdict.family_evidence import FamilyEvidence
from auditing.verdict.types import ACT, HEADLINES, INCONCLUSIVE, PASS, STATUSES, VIOLATION, WEAK_PASS, Verdict
from labeldp.codec import decode
from labeldp.errors import LabelDPInputError
from labeldp.files import write_text_atomically
from labeldp.names import check_name, require_date, resolve_data_root

REPORTS = "reports"
VERDICTS = {
    VIOLATION: "The valid lower bound exceeds the claimed epsilon: the claim is disproved at the stated "
               "confidence (under the audit's assumptions, e.g. that the reference misjudges no audited row's "
               "click odds by more than a factor e^κ, at the stated κ).",
    PASS: "No evidence of a violation: the audit could have disproved the claim and did not. This is not a "
          "proof of privacy.",
    WEAK_PASS: STATUS_MEANINGS[WEAK_PASS][0].upper() + STATUS_MEANINGS[WEAK_PASS][1:] + ".",
    INCONCLUSIVE: "Even a perfect attacker could not have disproved the claimed epsilon with this many examples "
                  "and this selection strategy: the audit had no power here.",
}
_LINEAGE_ORDER = ("model_id", "partition_date", "model_uri", "model_fingerprint", "reference_model",
                  "partition_fingerprint", "code_version", "flow_run_id", "started_at", "finished_at", "durations")

def _finite(value: Any) -> bool:
    return value is not None and math.isfinite(float(value))


# --------------------------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class ChartHistogram:
    """The attack-score chart's input: k+1 finite, increasing ``edges`` and k counts of correct and of wrong
    guesses per bin (`result_score_histogram`, or a caller's histogram read by `labeldp.codec`), on a log x axis
    when ``log_x``, with its axis label."""

    edges: tuple[float, ...]
    counts_correct: tuple[float, ...]
    counts_wrong: tuple[float, ...]
    log_x: bool = False
    x_label: str | None = None

    def __post_init__(self):
        edges, correct, wrong = self.edges, self.counts_correct, self.counts_wrong
        if len(edges) < 2 or len(correct) != len(edges) - 1 or len(wrong) != len(edges) - 1:
            raise LabelDPInputError(
                f"score_histogram: needs k+1 edges and k counts each; got {len(edges)} edges, "
                f"{len(correct)} counts_correct, {len(wrong)} counts_wrong"
            )
        if any(b <= a for a, b in itertools.pairwise(edges)) or not all(map(math.isfinite, edges)):
            raise LabelDPInputError("score_histogram: edges must be finite and strictly increasing")
        if any(c < 0 or not math.isfinite(c) for c in correct + wrong):
            raise LabelDPInputError("score_histogram: counts must be finite and >= 0")


def _check_histogram(hist: Any) -> ChartHistogram | None:
    return None if hist is None else decode(ChartHistogram, hist, "score_histogram")


def result_score_histogram(result: AuditResult) -> ChartHistogram | None:
    """The chart input from the result's own ``score_histogram`` (repetition 0, |score| per octave,
    `auditing.game.score_histogram`), trimmed to the occupied bins; None when the result has none. The first
    record bin (|score| below 2**LOW, 0 included) is drawn as the octave just below."""
    record = result.score_histogram
    if record is None or not record.rows:
        return None
    rows, hits = list(record.rows), list(record.correct)
    edges = [record.edges[0] / 2, *record.edges, record.edges[-1] * 2]
    used = [i for i, n in enumerate(rows) if n]
    if not used:
        return None
    lo, hi = used[0], used[-1] + 1
    return ChartHistogram(tuple(float(e) for e in edges[lo:hi + 1]), tuple(float(c) for c in hits[lo:hi]),
                          tuple(float(n - c) for n, c in zip(rows[lo:hi], hits[lo:hi], strict=True)), True,
                          "|attack score| of the released label (log scale; lowest bin includes 0)")


def _verdict_text(status: str, decision: str | None = None) -> str:
    """The status's sentence; a VIOLATION that is not to be acted on (decision unconfirmed, or no power on a void
    night) says the bound's fact without claiming a disproof its decision does not carry."""
    if status == VIOLATION and decision not in (None, ACT):
        return VIOLATION_UNCONFIRMED_TEXT
    return VERDICTS.get(status, "")


# --------------------------------------------------------------------------------------------- charts
def curve_chart(result: AuditResult, claimed: float) -> str:
    """eps_lb vs c' (log x axis) with the selected point and the claimed epsilon marked."""
    curve = [p for p in result.curve if p.guesses >= 1]
    if not curve:
        return '<p class="missing">No sweep points were recorded for this audit.</p>'
    xs = [float(p.guesses) for p in curve]
    ys = [float(p.epsilon_lower_bound) for p in curve]
    selected = (float(result.selected_guesses), result.epsilon_lower_bound)
    y_hi = max([*ys, selected[1], claimed if math.isfinite(claimed) else 0.0, 0.1])
    # headroom above the highest point for the settings line and the selected point's label (never on the frame)
    plot = svg.Plot(svg.LogScale.nice(min([*xs, max(selected[0], 1)]), max([*xs, selected[0]])),
                    svg.LinearScale.nice(0.0, y_hi * 1.3), height=340)
    parts = [svg.open_svg(plot, "valid epsilon lower bound versus number of guesses", "curve-chart"),
             svg.axes(plot, x_label="number of guesses c′ (log scale)", y_label="ε lower bound")]
    if math.isfinite(claimed):
        parts.append(svg.hline(plot, claimed, "claimed-line", f"claimed ε = {fmt_g(claimed)}"))
    parts.append(svg.polyline(plot, list(zip(xs, ys, strict=True)), "curve-line"))
    for p, x, y in zip(curve, xs, ys, strict=True):
        parts.append(svg.marker(plot, x, y, "curve-point",
                                f"c′ = {fmt_int(p.guesses)}, c = {fmt_int(p.correct)}, ε_lb = {fmt_eps(y)}"))
    parts.append(svg.marker(plot, *selected, "selected-point", "selected point", radius=6, shape="diamond"))
    sx, sy = plot.px(selected[0]), plot.py(selected[1])
    anchor = "end" if sx > (plot.x0 + plot.x1) / 2 else "start"
    parts.append(svg.label(sx + (-12 if anchor == "end" else 12), max(sy - 10, plot.y1 + 32),
                           f"selected: c′ = {fmt_int(result.selected_guesses)}, c = "
                           f"{fmt_int(result.selected_correct)} → ε_lb = {fmt_eps(selected[1])}",
                           "selected-label", anchor))
    parts.append(svg.label(plot.x0 + 10, plot.y1 + 14, _settings_line(result), "chart-label"))
    parts.append(svg.close_svg())
    return "".join(parts)


def _settings_line(result: AuditResult) -> str:
    """The settings a bound rests on."""
    bound = result.bound
    return (f"{bound.strategy} selection · {fmt_pct(bound.confidence)} confidence · δ = {fmt_g(bound.delta)} · "
            f"{kappa_text(result)} · {calibration_text(result)} · {method_label(result)}")


def histogram_chart(hist: ChartHistogram) -> str:
    """Attack scores of correct and wrong guesses, side by side in each bin (log x axis for |score| octaves)."""
    edges, correct, wrong, log_x = hist.edges, hist.counts_correct, hist.counts_wrong, hist.log_x
    x_scale = svg.LogScale(edges[0], edges[-1]) if log_x else svg.LinearScale(edges[0], edges[-1])
    plot = svg.Plot(x_scale, svg.LinearScale.nice(0.0, max([*correct, *wrong, 1.0]) * 1.05), height=300)
    parts = [svg.open_svg(plot, "distribution of attack scores", "histogram-chart"),
             svg.axes(plot, x_label=hist.x_label or "attack score", y_label="rows")]
    for lo, hi, c, w in zip(edges, edges[1:], correct, wrong, strict=False):
        mid = math.sqrt(lo * hi) if log_x else (lo + hi) / 2
        parts.append(svg.bar(plot, lo, mid, c, "hist-correct", f"score {lo:.3g}–{hi:.3g}: {c:,.0f} correct"))
        parts.append(svg.bar(plot, mid, hi, w, "hist-wrong", f"score {lo:.3g}–{hi:.3g}: {w:,.0f} wrong"))
    parts.append(svg.legend(plot, [("hist-correct", "guess correct"), ("hist-wrong", "guess wrong")],
                            x=plot.x1 - 140))
    parts.append(svg.close_svg())
    return "".join(parts)


def _trend_points(rows: Sequence[ResultRow]) -> list[dict]:
    points = []
    for row in rows:
        points.append({"date": row.partition_date, "bound": row.epsilon_lower_bound, "claimed": row.claimed_epsilon,
                       "status": row.status, "config": row.audit_config_hash, "run_kind": row.run_kind or "-",
                       "row": row})
    return sorted(points, key=lambda p: (p["date"], p["run_kind"], p["config"]))


def _headroom(plot_height: int, legend_entries: int) -> float:
    """How much to stretch a chart's top value so that no point sits under its legend (stacked in the top-left
    corner, 18 px an entry) or on the frame."""
    usable = plot_height - svg.Plot.top - svg.Plot.bottom
    return usable / max(usable - 18 * legend_entries - 12, usable / 2)


def trend_chart(points: Sequence[Mapping], *, label: str = "valid ε lower bound by night") -> str:
    """The valid eps_lb per night against the claimed eps (a dashed step line); VIOLATION nights in red."""
    if not points:
        return '<p class="missing">No audits of this model are in the warehouse yet.</p>'
    ords = [p["date"].toordinal() for p in points]
    finite_claims = [p["claimed"] for p in points if _finite(p["claimed"])]
    y_hi = max([p["bound"] for p in points] + finite_claims + [0.1])
    lo, hi = min(ords), max(ords)
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    entries = [("trend-line", "valid ε lower bound"), ("claimed-line", "claimed ε")]
    if any(p["status"] == VIOLATION for p in points):
        entries.append(("violation", "VIOLATION night"))
    plot = svg.Plot(svg.LinearScale(lo - 0.5, hi + 0.5),
                    svg.LinearScale.nice(0.0, y_hi * _headroom(320, len(entries))), height=320)
    distinct = sorted(set(ords))
    stride = max(1, math.ceil(len(distinct) / 7))
    ticks = [float(d) for d in distinct[::stride]]
    parts = [svg.open_svg(plot, label, "trend-chart"),
             svg.axes(plot, x_label="partition date", y_label="ε lower bound", x_ticks=ticks,
                      x_format=lambda v: dt.date.fromordinal(int(v)).strftime("%b %d"))]
    # One series per run kind and audit config (a rejudge or a guardrail is never joined to the nightly's line); the
    # claim of each series drawn across the whole chart, so that one night has its line too.
    claims = [(float(o), p["claimed"]) for o, p in zip(ords, points, strict=True) if _finite(p["claimed"])]
    for kind in sorted({p["run_kind"] for p in points}):
        steps = sorted({(float(o), p["claimed"]) for o, p in zip(ords, points, strict=True)
                        if p["run_kind"] == kind and _finite(p["claimed"])})
        if steps:
            edge_lo, edge_hi = plot.x.lo, plot.x.hi
            parts.append(svg.step_line(plot, [(edge_lo, steps[0][1]), *steps, (edge_hi, steps[-1][1])],
                                       "claimed-line"))
    for kind, config in sorted({(p["run_kind"], p["config"]) for p in points}):
        series = [(float(o), p["bound"]) for o, p in zip(ords, points, strict=True)
                  if (p["run_kind"], p["config"]) == (kind, config)]
        parts.append(svg.polyline(plot, series, "trend-line"))
    for o, p in zip(ords, points, strict=True):
        status = p["status"] or "unknown"
        trust = trust_state(p["row"].trust, p["row"].untrusted_reason)
        tooltip = (f"{p['date']} ({p['run_kind']}): ε_lb = {fmt_eps(p['bound'])}, claimed ε = "
                   f"{fmt_eps(p['claimed'])}, {status}"
                   + (f", {TRUST_SHORT[trust]}" if trust else "") + (f" (config {p['config']})" if p["config"] else ""))
        shape = "square" if status == VIOLATION else "circle"
        parts.append(svg.marker(plot, float(o), p["bound"], f"trend-point status-{status.lower()}", tooltip,
                                radius=5 if status == VIOLATION else 4, shape=shape))
    parts.append(svg.legend(plot, entries))
    if not claims:
        parts.append(svg.label(plot.x1 - 4, plot.y1 + 14, "claimed ε = ∞ (non-private): no line", "note", "end"))
    parts.append(svg.close_svg())
    return "".join(parts)


# --------------------------------------------------------------------------------------------- sections
def _summary_rows(result: AuditResult, claimed: float, status: str, decision: str | None = None
                  ) -> list[tuple[str, str]]:
    confidence = result.bound.confidence
    grid = result.grid_size or len(result.curve)
    selection = (selection_strategy(result.bound.strategy).describe(grid, fmt_pct(result.point_confidence))
                 if result.bound.strategy in STRATEGIES_REGISTRY else f"strategy {result.bound.strategy}")
    valid_label = "" if not result.optimistic else ' <span class="optimistic">(optimistic: not valid)</span>'
    rows = [
        ("Status", f"{status_badge(status, decision)}<span class=\"labels\">{esc(_verdict_text(status, decision))}"
                   "</span>"),
        ("Valid ε lower bound",
         f"<span class=\"value\">{fmt_eps(result.epsilon_lower_bound)}</span>{valid_label}"
         f"<span class=\"labels\">valid at {fmt_pct(confidence)} confidence (γ = {fmt_g(1 - confidence)}) · "
         f"{esc(selection)} · method {esc(method_label(result))} · δ = {fmt_g(result.bound.delta)} · "
         f"{esc(kappa_text(result))} · {esc(calibration_text(result))}</span>"),
        ("Claimed ε", f"<span class=\"value\">{fmt_eps(claimed)}</span>"),
        ("Max certifiable ε",
         f"{fmt_eps(result.max_certifiable_epsilon)}<span class=\"labels\">the largest valid bound a perfect "
         "attacker (every guess right) could have produced with this audit's size and strategy</span>"),
        ("Selected point",
         f"c′ = {fmt_int(result.selected_guesses)} guesses, c = {fmt_int(result.selected_correct)} correct, "
         f"of m = {fmt_int(result.selected_m)} examples"),
    ]
    gdp = gdp_text(result.gdp_mu_lower_bound)
    if gdp is not None:
        rows.append(("Gaussian reading",
                     f"<span id=\"gdp-reading\">{esc(gdp)}</span><span class=\"labels\">f-DP method, at the "
                     "selected point: the largest μ the counts reject for a Gaussian mechanism; a statement about "
                     "μ only, never an ε, and not the verdict</span>"))
    if result.epsilon_mean is not None:
        label = result.paper_statistic_label or "paper's statistic (optimistic)"
        rows.append((
            "Paper's statistic",
            f"<span class=\"optimistic\">{fmt_eps(result.epsilon_mean)} ± {fmt_eps(result.epsilon_std)}"
            f" (median {fmt_eps(result.epsilon_median)}) over {fmt_int(result.game.repetitions)} "
            f"repetitions — optimistic</span><span class=\"labels\">{esc(label)}; shown for comparison with "
            "the paper, never used for the verdict</span>",
        ))
    game = result.game
    config = esc(" · ".join(f"{k} {v}" for k, v in (("score", result.score), ("grid", game.grid),
                                                     ("repetitions", game.repetitions), ("seed", game.seed))))
    if game.night is not None:  # the night that keyed the coins with the seed
        config += esc(f" · night {game.night.isoformat()}")
    if result.config_hash:
        config += f" · config <code>{esc(result.config_hash)}</code>"
    rows.append(("Audit settings", config))
    return rows


def _durations_text(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return esc(value)
    if not isinstance(value, Mapping):
        return esc(value)
    parts = [f"{esc(stage)} {float(sec):.1f} s" for stage, sec in value.items() if isinstance(sec, int | float)]
    total = sum(float(sec) for sec in value.values() if isinstance(sec, int | float))
    return " · ".join(parts) + (f" · <b>total {total:.1f} s</b>" if parts else "")


def lineage_table(lineage: Mapping) -> str:
    if not lineage:
        return '<p class="missing">No lineage was recorded.</p>'
    keys = [k for k in _LINEAGE_ORDER if k in lineage] + sorted(k for k in lineage if k not in _LINEAGE_ORDER)
    rows = []
    for key in keys:
        value = lineage[key]
        if value is None:
            text = "–"
        elif key == "durations":
            text = _durations_text(value)
        elif isinstance(value, dt.datetime | dt.date):
            text = esc(value.isoformat())
        else:
            text = f"<code>{esc(value)}</code>" if key.endswith(("uri", "fingerprint", "id")) else esc(value)
        rows.append((key.replace("_", " "), text))
    return _table(rows)


# --------------------------------------------------------------------------------------------- pages
def render_run_report(verdict: Verdict, lineage: Mapping | None, trend: Sequence[ResultRow] | None,
                      score_histogram: Mapping | None = None, family: FamilyEvidence | None = None) -> str:
    """The HTML page for one audit run: a rendering of its `Verdict` (`auditing.verdict.judge.judge`).

    lineage: model_id, partition_date, model_uri, fingerprints, reference_model, code_version, flow_run_id,
    started_at, finished_at, durations (any subset; other keys are shown too). trend: warehouse rows of recent
    nights (``fetch_results``), including this run if it was written. score_histogram: ``{"edges": [...],
    "counts_correct": [...], "counts_wrong": [...]}`` or None (None: the result's own repetition-0 histogram,
    `result_score_histogram`). The page leads with the decision: its card (`trust_panel.decision_card`: what it
    means, why, the one next step; a control's banner and card instead), the status in the same words (a VIOLATION
    not to be acted on drawn in outline, never a second red box) and "What this means" (`risk_panel`). Then the
    evidence: the bound and its settings, the curve, the declared slices' bounds against the claim
    (`auditing.sinks.report.slice_panel`), the family's evidence, the trend, the score distribution and the attack's
    ROC curve (descriptive, not a bound; `auditing.sinks.report.attack_panel`). Then, in a <details> section the
    reader opens, why the decision is what it is: the "Trust in this verdict" card (its trust and why, the capacity
    check's figures, a PASS's detectability, the row groups, why nothing was bounded), robustness and floors, and
    the reference check (which must be of the result's reference calibration). family: the model family's evidence
    across nights with this night (`auditing.sinks.family.family_with`; None: not known for this run).

    Raises:
        LabelDPInputError: not a Verdict, or a malformed histogram or reference check.
    """
    if not isinstance(verdict, Verdict):
        raise LabelDPInputError(f"render_run_report needs a Verdict (auditing.verdict.judge.judge); got "
                                f"{type(verdict).__name__}")
    result = verdict.result
    reference_check = verdict.reference_check
    if reference_check is not None:
        reference_check.require_calibration(result.game.reference_calibration)
    lineage = dict(lineage or {})
    claimed, status = verdict.claimed_epsilon, verdict.status
    hist = _check_histogram(score_histogram if score_histogram is not None else result_score_histogram(result))
    model = lineage.get("model_id") or "model"
    day = lineage.get("partition_date") or ""
    title = f"{model} · {day}" if day else str(model)
    points = _trend_points(trend or [])
    split_note = (" For the split strategy the curve is the selection half; the selected c′ is then bounded on "
                  "the other half." if selection_strategy(result.bound.strategy).uses_halves else "")
    decision = None if verdict.decision is None else verdict.decision.decision
    nothing = (f" <strong>Nothing to bound: {esc(result.inconclusive_reason)}.</strong>"
               if result.inconclusive_reason else "")
    details = (f"{trust_card(verdict)}{robustness_panel(verdict)}"
               f"{reference_panel(result, reference_check, str(day or 'D'))}")
    body = (
        # first screen: the decision (what it means, why, the next step), the status in the same words, what the
        # figures mean for people
        f"{_partition_mark(lineage.get('partition_fingerprint'))}"
        f"{decision_card(verdict)}{trust_banner(verdict)}<header><p class=\"eyebrow\">labeldp-audit · audit run "
        "report</p>"
        f"<h1>{esc(title)}</h1>"
        f"<div class=\"verdict\">{status_badge(status, decision)}<p>{esc(_verdict_text(status, decision))}"
        f"{nothing}</p></div></header>"
        f"{control_card(verdict)}"
        f"{risk_panel(verdict)}"
        # then the evidence
        f"<section class=\"card\" id=\"summary\"><h2>Evidence</h2>"
        f"{_table(_summary_rows(result, claimed, status, decision))}</section>"
        "<section class=\"card\" id=\"curve\"><h2>Valid ε lower bound vs guesses c′</h2>"
        f"{curve_chart(result, claimed)}<p class=\"caption\">Each point is the bound at one c′ of the sweep "
        f"(repetition 0), at {fmt_pct(result.point_confidence)} per point so "
        f"that the selected maximum holds at {fmt_pct(result.bound.confidence)}; {esc(_settings_line(result))}; "
        f"m = {fmt_int(result.m)}.{esc(split_note)}</p></section>"
        f"{slice_panel(verdict)}"
        f"{family_panel(family)}"
        f"<section class=\"card\" id=\"trend\"><h2>Trend over recent nights</h2>{trend_chart(points)}"
        "<p class=\"caption\">The valid bound per night against the claimed ε (dashed). Red squares are "
        "VIOLATION nights; hollow points are INCONCLUSIVE, hollow green ones WEAK_PASS.</p></section>"
        "<section class=\"card\" id=\"scores\"><h2>Score distribution</h2>"
        + (histogram_chart(hist) + "<p class=\"caption\">Attack scores of the rows (repetition 0, the "
           "pre-registered one), split by whether the attacker's guess was correct; the attacker guesses on the "
           "rows with the largest |score|. Descriptive, not a confidence figure.</p>" if hist else
           "<p class=\"missing\">Score histogram not provided for this run.</p>")
        + "</section>"
        f"{attack_panel(result)}"
        # then why the decision is what it is, for the reader who opens it
        f"<details class=\"card\" id=\"trust-details\"><summary><h2>{esc(TRUST_DETAILS_SUMMARY)}</h2>"
        f"<span class=\"labels\">{esc(TRUST_DETAILS_HINT)}</span></summary>{details}</details>"
        # then every figure the warehouse row keeps, as the records declare them
        f"{figures_panel(verdict)}"
        f"<section class=\"card\" id=\"lineage\"><h2>Lineage</h2>{lineage_table(lineage)}</section>"
    )
    return _page(f"labeldp-audit report: {title} ({status})", body)


# Where a run report records the partition its verdict judged (read back by `mark_replaced_reports`).
_PARTITION_MARK = re.compile(r"<!--labeldp:partition (sha256:[0-9a-f]+)-->")
# A page written before the mark: its lineage table's row.
_LINEAGE_PARTITION = re.compile(r"partition fingerprint</t[hd]>\s*<td><code>(sha256:[0-9a-f]+)</code>")
_REPLACED_BANNER_ID = "inputs-replaced"


def _partition_mark(fingerprint: Any) -> str:
    return f"<!--labeldp:partition {fingerprint}-->" if isinstance(fingerprint, str) and fingerprint else ""


def replaced_banner(fingerprint: str, since: str) -> str:
    """The banner of a run report whose verdict's partition was replaced since (`wording.inputs_replaced_sentence`)."""
    return (f"<div class=\"banner accepted\" id=\"{_REPLACED_BANNER_ID}\" role=\"alert\"><strong>INPUTS REPLACED "
            f"SINCE {esc(since)}.</strong> <span>{esc(inputs_replaced_sentence(fingerprint, since))}</span></div>")


def mark_replaced_reports(data_root: str | os.PathLike | None, day: dt.date,
                          since: Callable[[str], str | None]) -> int:
    """Adds the "inputs replaced since" banner to every run report of ``day`` whose verdict judged a partition
    that was replaced since (``since(fingerprint)``: when, or None; `pipelines.data.schema.replaced_since`), once;
    returns how many pages it marked. Each page is rewritten atomically; the verdict's row in the warehouse is
    never touched (`results` marks it from the same record). Run after a day is replaced, and by the next nightly
    of the day (a replacement stopped before it marked its pages)."""
    marked = 0
    root = resolve_data_root(data_root) / REPORTS
    for path in sorted(root.glob(f"*/date={require_date(day, 'day').isoformat()}/*.html")):
        try:
            page = path.read_text(encoding="utf-8")
        except OSError:
            continue
        found = _PARTITION_MARK.search(page) or _LINEAGE_PARTITION.search(page)
        when = since(found.group(1)) if found else None
        if when is None or f'id="{_REPLACED_BANNER_ID}"' in page:
            continue
        # after the mark (above the trust banner and the badge), or at the top of <main> on an older page
        at = found.end() if found.re is _PARTITION_MARK else (page.index(">", page.index("<main")) + 1
                                                             if "<main" in page else 0)
        write_text_atomically(path, page[:at] + replaced_banner(found.group(1), when) + page[at:], fault="report.write")
        marked += 1
    return marked


def _method_cell(row: ResultRow) -> str:
    """A trend row's method (an fdp row without fdp_curve: the legacy Gaussian reading) and kappa (legacy rows:
    labelled so, their TV tau never shown as a kappa), with the Gaussian reading when stored."""
    parts = [esc(row_method_label(row)), esc(row_kappa_text(row))]
    if row.breaking_kappa is not None and row.status == VIOLATION:
        parts.append(f"holds up to a factor {esc(odds_factor(row.breaking_kappa))}")
    gdp = gdp_text(row.gdp_mu_lower_bound)
    if gdp is not None:
        parts.append(esc(gdp))
    return "<br>".join(parts)


def _reference_cell(row: ResultRow) -> str:
    """A trend row's reference check: calibration; the label-blind control's outcome and misfit on a night it ran
    (retired: as those rows always showed it); and the capacity check's figures on a row with per-verdict trust."""
    from auditing.sinks.warehouse.reference_columns import reference_check_from_row

    check = reference_check_from_row(row)
    parts = [] if check is None else [f"calibration {esc(check.calibration)}"]
    if check is not None and not check.checked:
        parts.append(f"<span class=\"missing\" title=\"{esc(check.note or '')}\">not checked</span>")
    elif check is not None and check.label_blind is not None:
        misfit = f"misfit κ = {check.label_blind.misfit_kappa:.3g}"
        outcome = "<span class=\"reference-flagged\">FLAGGED</span>" if check.flagged else "fits"
        parts.append(f"{outcome} ({misfit})")
    if row.check_rows:
        upper = row.misfit_kappa_upper
        parts.append(f"capacity check on {fmt_int(row.check_rows)} rows: ε_check {fmt_eps(row.epsilon_check)}"
                     + (f", misfit κ ≤ {float(upper):.3g} (upper)" if upper is not None else ""))
    elif row.trust is not None:
        parts.append("<span class=\"missing\">capacity check did not run</span>")
    return "<br>".join(parts) or "<span class=\"missing\">not recorded</span>"


def _decision_cell(row: ResultRow) -> str:
    """A trend row's decision (its reason on hover); '–' for a control's row, which has none."""
    if row.kind == "control" or row.decision is None:
        return "<span class=\"missing\">–</span>"
    return (f"<span class=\"decision-word word-{esc(row.decision)}\" title=\"{esc(row.decision_reason or '')}\">"
            f"{esc(HEADLINES.get(row.decision, row.decision))}</span>")


def _trust_cell(row: ResultRow) -> str:
    """A trend row's trust (its reason on hover); '–' on a row written before per-verdict trust without one."""
    state = trust_state(row.trust, row.untrusted_reason)
    if state is None:
        return "<span class=\"missing\" title=\"written before per-verdict trust\">–</span>"
    reason = row.trust_reason or row.untrusted_reason or ""
    return (f"<span class=\"trust-state {TRUST_CLASS[state]}\" title=\"{esc(reason)}\">{esc(TRUST_SHORT[state])}"
            "</span>")


def render_trend_report(rows: Sequence[ResultRow], model_id: str) -> str:
    """The HTML trend page of one model over many nights, from warehouse rows (``fetch_results``)."""
    model_id = check_name(model_id, "model_id")
    points = _trend_points(rows)
    order = (VIOLATION, *(s for s in STATUSES if s != VIOLATION))
    counts = {s: sum(p["status"] == s for p in points) for s in order}
    span = f"{points[0]['date']} – {points[-1]['date']}" if points else "no audits"
    summary = " ".join(f"{_badge(s, small=True)} {n}" for s, n in counts.items())
    table_rows = []
    for p in reversed(points):
        r = p["row"]
        table_rows.append(
            f"<tr class=\"night\"><td>{esc(p['date'])}</td><td class=\"run-kind\">{esc(p['run_kind'])}</td>"
            f"<td class=\"decision-cell\">{_decision_cell(r)}</td>"
            f"<td>{status_badge(p['status'] or 'unknown', r.decision, small=True)}</td>"
            f"<td>{_trust_cell(r)}</td>"
            f"<td class=\"value\">{fmt_eps(p['bound'])}</td><td>{fmt_eps(p['claimed'])}</td>"
            f"<td>{fmt_eps(r.max_certifiable_epsilon)}</td>"
            f"<td class=\"optimistic\">{fmt_eps(r.epsilon_mean)}</td>"
            f"<td>{esc(r.strategy)}, {fmt_pct(r.confidence)}"
            f"</td><td class=\"wrap\">{_method_cell(r)}</td><td class=\"wrap\">{_reference_cell(r)}</td>"
            f"<td>{fmt_int(r.m)}</td><td><code>{esc(p['config'])}</code></td></tr>"
        )
    table = (
        "<div class=\"scroll\"><table class=\"grid\"><tr><th>Date</th><th>Run</th><th>Decision</th><th>Status</th>"
        "<th>Trust</th><th>Valid ε_lb</th>"
        "<th>Claimed ε</th>"
        "<th>Max certifiable ε</th><th>Paper's statistic (optimistic)</th><th>Selection, confidence</th>"
        "<th>Method, κ</th><th>Reference check</th>"
        f"<th>m</th><th>Config</th></tr>{''.join(table_rows)}</table></div>"
        if table_rows else '<p class="missing">No audit results for this model in the selected range.</p>'
    )
    latest = points[-1]["row"] if points else None
    lineage = {} if latest is None else {k: getattr(latest, k) for k in _LINEAGE_ORDER
                                         if getattr(latest, k) is not None}
    body = (
        f"<header><p class=\"eyebrow\">labeldp-audit · trend report</p><h1>{esc(model_id)}</h1>"
        f"<p>{len(points)} audit(s), {esc(span)} &nbsp; {summary}</p></header>"
        f"<section class=\"card\" id=\"trend\"><h2>Valid ε lower bound by night</h2>{trend_chart(points)}"
        "<p class=\"caption\">The statistically valid bound (at each row's confidence, after correcting for the "
        "choice of c′) against the claimed ε (dashed), one line per run kind and audit configuration (a rejudge or "
        "a guardrail is never joined to the nightly's line). Red squares are VIOLATION nights. PASS means no "
        "evidence of a violation, not privacy.</p></section>"
        f"<section class=\"card\" id=\"nights\"><h2>Nights (newest first)</h2>{table}"
        "<p class=\"caption\">Trust is decided per verdict (hover for why): a VIOLATION is trusted only when the "
        "capacity check vouches for it (ε_check, a κ-free lower bound at the row's confidence, also exceeds the "
        "claim); – on a row written before per-verdict trust. The paper's statistic is the mean over repetitions of "
        "the max over the sweep without correction: optimistic, not a valid lower bound.</p></section>"
        f"<section class=\"card\" id=\"lineage\"><h2>Lineage of the latest night</h2>{lineage_table(lineage)}"
        "</section>"
    )
    return _page(f"labeldp-audit trend: {model_id}", body, wide=True)


# --------------------------------------------------------------------------------------------- files
def run_report_path(data_root: str | os.PathLike | None, key: Any) -> Path:
    """``<data_root>/reports/<model>/date=YYYY-MM-DD/<key name>.html``: named by the verdict's key
    (`auditing.sinks.warehouse.AuditKey`, its ``partition_date`` a date parsed at the edge; the name is
    '<run kind>__eps-<claim>__<config hash>__in-<inputs fingerprint>', `AuditKey.name`), so a run of another kind,
    claim or inputs never replaces the page. A row written before the key had its inputs has the page its code
    wrote: '<run kind>__eps-<claim>__<config hash>__<model fingerprint>', or before it had a run kind
    ('unrecorded') ``<config hash>.html``."""
    from auditing.sinks.warehouse.rows import as_key  # the same rules as the warehouse key
    from auditing.sinks.warehouse.schema import UNRECORDED

    day = require_date(key.partition_date if hasattr(key, "partition_date") else key["partition_date"],
                       "partition_date")
    key = as_key(key)
    name = key.audit_config_hash if key.run_kind == UNRECORDED else key.name
    return resolve_data_root(data_root) / REPORTS / key.model_id / f"date={day.isoformat()}" / f"{name}.html"


def trend_report_path(data_root: str | os.PathLike | None, model_id: str) -> Path:
    """``<data_root>/reports/<model>/trend.html``."""
    return resolve_data_root(data_root) / REPORTS / check_name(model_id, "model_id") / "trend.html"


def write_report(html_text: str, path: str | os.PathLike) -> Path:
    """Writes the page atomically (temporary file, fsync, rename): a reader never sees half a page."""
    return write_text_atomically(path, html_text, fault="report.write")
