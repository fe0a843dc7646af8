"""Self-contained HTML reports: one page per audit run, and a trend page over many nights.

Pages use inline CSS and inline SVG only (no scripts, fonts or images from the network), so they open from a
file, an artifact store or an e-mail attachment. Every figure says what it is: the valid bound is labelled
with its confidence, selection strategy, method (an fdp row written before kappa as the legacy Gaussian
reading), delta, kappa and the reference calibration; the paper's statistic is labelled optimistic (DESIGN.md,
"Statistical contract"); PASS is explained as "no evidence of a violation", not "private". Results and rows
written before kappa (a total-variation tau instead) are labelled legacy; their tau is never shown as a kappa.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from auditing.atomic_files import write_text_atomically
from auditing.errors import LabelDPInputError
from auditing.guardrail import INCONCLUSIVE, PASS, VIOLATION, guardrail_status
from auditing.names import check_name, parse_date, require_date, resolve_data_root
from auditing.report import svg
from auditing.report.reference_panel import (
    REFERENCE_CSS,
    calibration_text,
    gdp_text,
    is_flagged,
    is_legacy,
    kappa_text,
    method_label,
    misfit_sentence,
    odds_factor,
    reference_banner_headline,
    reference_panel,
)
from auditing.report.risk_panel import RISK_CSS, risk_panel
from auditing.report.robustness_panel import ROBUSTNESS_CSS, robustness_panel
from auditing.report.svg import esc

REPORTS = "reports"
VERDICTS = {
    VIOLATION: "The valid lower bound exceeds the claimed epsilon: the claim is disproved at the stated "
               "confidence (under the audit's assumptions, e.g. that the reference misjudges no audited row's "
               "click odds by more than a factor e^κ, at the stated κ).",
    PASS: "No evidence of a violation: the audit could have disproved the claim and did not. This is not a "
          "proof of privacy.",
    INCONCLUSIVE: "Even a perfect attacker could not have disproved the claimed epsilon with this many examples "
                  "and this selection strategy: the audit had no power here.",
}
LEGACY_VIOLATION = ("The bound exceeds the claimed epsilon under the assumptions of the code that wrote this "
                    "result before κ existed (see the legacy labels): no verdict at any κ.")
_LINEAGE_ORDER = ("model_id", "partition_date", "model_uri", "model_fingerprint", "reference_model",
                  "partition_fingerprint", "code_version", "flow_run_id", "started_at", "finished_at", "durations")

CSS = """
:root { --ink:#1d2939; --muted:#667085; --line:#e4e7ec; --bg:#f8f9fb; --card:#fff; --accent:#2f6fde;
        --bad:#c0362c; --good:#17804d; --warn:#b7791f; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
       font:15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", "Liberation Sans",
       "DejaVu Sans", sans-serif; }
main { max-width: 980px; margin: 0 auto; padding: 28px 24px 48px; }
main.wide { max-width: 1280px; }
header { margin-bottom: 20px; }
.eyebrow { color:var(--muted); font-size:13px; letter-spacing:.04em; text-transform:uppercase; margin:0; }
h1 { font-size: 26px; margin: 4px 0 10px; }
h2 { font-size: 18px; margin: 0 0 10px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:18px 20px;
        margin: 0 0 18px; box-shadow: 0 1px 2px rgba(16,24,40,.04); }
.verdict { display:flex; gap:14px; align-items:center; }
.verdict p { margin:0; }
.badge { display:inline-block; padding:4px 12px; border-radius:999px; font-weight:700; font-size:14px;
         letter-spacing:.03em; color:#fff; white-space:nowrap; }
.badge.VIOLATION { background:var(--bad); } .badge.PASS { background:var(--good); }
.badge.INCONCLUSIVE { background:var(--warn); } .badge.NONE { background:var(--muted); }
.badge.small { font-size:12px; padding:2px 9px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align:left; padding:7px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { color:var(--muted); font-weight:600; width: 30%; }
table.grid { font-size:14px; }
table.grid th { width:auto; background:#f2f4f7; font-size:13px; }
table.grid td { font-variant-numeric: tabular-nums; white-space:nowrap; }
table.grid code { word-break: normal; }
table.grid td.wrap { white-space: normal; min-width: 12em; }
.scroll { overflow-x: auto; }
td .labels { color:var(--muted); font-size:13px; display:block; }
.value { font-weight:700; font-variant-numeric: tabular-nums; }
.optimistic { color:var(--warn); font-weight:600; }
.note, .caption { color:var(--muted); font-size:13px; }
.caption { margin: 6px 0 0; }
.missing { color:var(--muted); font-style:italic; margin: 4px 0; }
code { font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
       word-break: break-all; }
svg.chart { display:block; width:100%; height:auto; font-size:12px; }
svg .grid { stroke:#eef0f3; } svg .grid.minor { stroke:#f5f6f8; }
svg .axis { stroke:#98a2b3; } svg .tick { fill:var(--muted); } svg .axis-title { fill:var(--ink); font-weight:600; }
svg .note { fill:var(--muted); } svg .chart-label { fill:var(--ink); font-weight:600; }
svg .curve-line { fill:none; stroke:var(--accent); stroke-width:2; }
svg .curve-point { fill:var(--accent); stroke:#fff; stroke-width:1; }
svg .selected-point { fill:#f79009; stroke:#7a2e0e; stroke-width:1.5; }
svg .selected-label { fill:#7a2e0e; font-weight:700; }
svg .claimed-line line, svg polyline.claimed-line, svg g.claimed-line line { stroke:var(--bad); stroke-width:1.5; stroke-dasharray:6 4;
       fill:none; }
svg .claimed-line text { fill:var(--bad); font-weight:600; }
svg .hist-correct { fill:var(--accent); fill-opacity:.75; } svg .hist-wrong { fill:#98a2b3; fill-opacity:.75; }
svg .key-hist-correct { fill:var(--accent); } svg .key-hist-wrong { fill:#98a2b3; }
svg .key-violation { fill:var(--bad); }
svg .trend-line, svg g.trend-line line { fill:none; stroke:var(--accent); stroke-width:2; }
svg .trend-point { fill:var(--accent); stroke:#fff; stroke-width:1; }
svg .trend-point.status-violation { fill:var(--bad); stroke:#5c120d; }
svg .trend-point.status-inconclusive { fill:#fff; stroke:var(--warn); stroke-width:2; }
footer { color:var(--muted); font-size:12px; margin-top: 24px; }
.banner.untrusted { background:#fef3f2; border:2px solid var(--bad); color:#7a271a; border-radius:10px;
                    padding:12px 16px; margin:0 0 18px; }
.control-passed { color:var(--good); } .control-failed { color:var(--bad); }
""" + RISK_CSS + ROBUSTNESS_CSS + REFERENCE_CSS


# --------------------------------------------------------------------------------------------- formatting
def fmt_eps(value: Any) -> str:
    if value is None:
        return "–"
    value = float(value)
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if math.isnan(value):
        return "NaN"
    return f"{value:.3f}"


def fmt_int(value: Any) -> str:
    return "–" if value is None else f"{int(value):,}"


def fmt_pct(value: float) -> str:
    text = f"{100 * value:.4f}".rstrip("0").rstrip(".")
    return f"{text}%"


def fmt_g(value: Any) -> str:
    return "–" if value is None else f"{float(value):g}"


def _date(value: Any, name: str) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    return parse_date(value, name)


def _finite(value: Any) -> bool:
    return value is not None and math.isfinite(float(value))


def _badge(status: str, small: bool = False) -> str:
    css = status if status in VERDICTS else "NONE"
    return f'<span class="badge {css}{" small" if small else ""}">{esc(status)}</span>'


def _page(title: str, body: str, *, wide: bool = False) -> str:
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    main = '<main class="wide">' if wide else "<main>"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>{main}{body}"
        f"<footer>Generated by labeldp-audit at {esc(generated)}. Self-contained page: no network access "
        "needed.</footer></main></body></html>\n"
    )


def _table(rows: Sequence[tuple[str, str]]) -> str:
    return "<table>" + "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


# --------------------------------------------------------------------------------------------- inputs
def _result_dict(result: Any) -> dict:
    data = result.to_dict() if hasattr(result, "to_dict") else result
    if not isinstance(data, Mapping):
        raise LabelDPInputError(f"result must be an AuditResult or its to_dict(); got {type(result).__name__}")
    needed = ("epsilon_lower_bound", "confidence", "method", "strategy", "delta", "m",
              "selected_guesses", "selected_correct", "max_certifiable_epsilon")
    missing = [k for k in needed if k not in data]
    if "kappa" not in data and "tau" not in data:
        missing.append("kappa (or tau, for a result written before kappa)")
    if missing:
        raise LabelDPInputError(f"result: missing field(s) {missing} (expected AuditResult.to_dict())")
    return dict(data)


def _check_histogram(hist: Any) -> dict | None:
    if hist is None:
        return None
    if not isinstance(hist, Mapping):
        raise LabelDPInputError(f"score_histogram must be a dict or None; got {type(hist).__name__}")
    try:
        edges = [float(v) for v in hist["edges"]]
        correct = [float(v) for v in hist["counts_correct"]]
        wrong = [float(v) for v in hist["counts_wrong"]]
    except KeyError as exc:
        raise LabelDPInputError(f"score_histogram: missing {exc.args[0]!r} (needs edges, counts_correct, "
                                "counts_wrong)") from None
    except (TypeError, ValueError) as exc:
        raise LabelDPInputError(f"score_histogram: values must be numbers ({exc})") from None
    if len(edges) < 2 or len(correct) != len(edges) - 1 or len(wrong) != len(edges) - 1:
        raise LabelDPInputError(
            f"score_histogram: needs k+1 edges and k counts each; got {len(edges)} edges, "
            f"{len(correct)} counts_correct, {len(wrong)} counts_wrong"
        )
    if any(b <= a for a, b in itertools.pairwise(edges)) or not all(map(math.isfinite, edges)):
        raise LabelDPInputError("score_histogram: edges must be finite and strictly increasing")
    if any(c < 0 or not math.isfinite(c) for c in correct + wrong):
        raise LabelDPInputError("score_histogram: counts must be finite and >= 0")
    return {"edges": edges, "counts_correct": correct, "counts_wrong": wrong, "log_x": bool(hist.get("log_x")),
            "x_label": hist.get("x_label")}


def result_score_histogram(data: Mapping) -> dict | None:
    """The chart input from the result's own ``score_histogram`` (repetition 0, |score| per octave,
    `auditing.score_histogram`), trimmed to the occupied bins; None when the result has none. The first
    record bin (|score| below 2**LOW, 0 included) is drawn as the octave just below."""
    record = data.get("score_histogram") or {}
    if not record.get("rows"):
        return None
    rows, hits = [int(v) for v in record["rows"]], [int(v) for v in record["correct"]]
    first_edge = float(record["edges"][0])
    edges = [first_edge / 2, *[float(v) for v in record["edges"]], float(record["edges"][-1]) * 2]
    used = [i for i, n in enumerate(rows) if n]
    if not used:
        return None
    lo, hi = used[0], used[-1] + 1
    return {"edges": edges[lo:hi + 1], "counts_correct": hits[lo:hi],
            "counts_wrong": [n - c for n, c in zip(rows[lo:hi], hits[lo:hi], strict=True)], "log_x": True,
            "x_label": "|attack score| of the released label (log scale; lowest bin includes 0)",
            "rows_total": sum(rows)}


def _verdict_text(status: str, data: Mapping) -> str:
    if status == VIOLATION and is_legacy(data):
        return LEGACY_VIOLATION
    return VERDICTS.get(status, "")


def _status_of(data: Mapping, claimed: float) -> str:
    if data.get("optimistic"):
        return "NO VERDICT (optimistic figure)"
    return guardrail_status(float(data["epsilon_lower_bound"]), claimed, float(data["max_certifiable_epsilon"]))


# --------------------------------------------------------------------------------------------- charts
def curve_chart(data: Mapping, claimed: float) -> str:
    """eps_lb vs c' (log x axis) with the selected point and the claimed epsilon marked."""
    curve = [p for p in data.get("curve") or [] if p.get("guesses", 0) >= 1]
    if not curve:
        return '<p class="missing">No sweep points were recorded for this audit.</p>'
    xs = [float(p["guesses"]) for p in curve]
    ys = [float(p["epsilon_lower_bound"]) for p in curve]
    selected = (float(data["selected_guesses"]), float(data["epsilon_lower_bound"]))
    y_hi = max([*ys, selected[1], claimed if math.isfinite(claimed) else 0.0, 0.1])
    plot = svg.Plot(svg.LogScale.nice(min([*xs, max(selected[0], 1)]), max([*xs, selected[0]])),
                    svg.LinearScale.nice(0.0, y_hi * 1.08), height=340)
    parts = [svg.open_svg(plot, "valid epsilon lower bound versus number of guesses", "curve-chart"),
             svg.axes(plot, x_label="number of guesses c′ (log scale)", y_label="ε lower bound")]
    if math.isfinite(claimed):
        parts.append(svg.hline(plot, claimed, "claimed-line", f"claimed ε = {fmt_g(claimed)}"))
    parts.append(svg.polyline(plot, list(zip(xs, ys, strict=True)), "curve-line"))
    for p, x, y in zip(curve, xs, ys, strict=True):
        parts.append(svg.marker(plot, x, y, "curve-point",
                                f"c′ = {fmt_int(p['guesses'])}, c = {fmt_int(p.get('correct'))}, ε_lb = {fmt_eps(y)}"))
    parts.append(svg.marker(plot, *selected, "selected-point", "selected point", radius=6, shape="diamond"))
    sx, sy = plot.px(selected[0]), plot.py(selected[1])
    anchor = "end" if sx > (plot.x0 + plot.x1) / 2 else "start"
    parts.append(svg.label(sx + (-12 if anchor == "end" else 12), max(sy - 10, plot.y1 + 12),
                           f"selected: c′ = {fmt_int(data['selected_guesses'])}, c = "
                           f"{fmt_int(data['selected_correct'])} → ε_lb = {fmt_eps(selected[1])}",
                           "selected-label", anchor))
    parts.append(svg.label(plot.x0 + 10, plot.y1 + 14, _settings_line(data, short=True), "chart-label"))
    parts.append(svg.close_svg())
    return "".join(parts)


def _settings_line(data: Mapping, *, short: bool = False) -> str:
    """The settings a bound rests on; ``short`` (the chart's label) abbreviates a legacy row's labels."""
    head = f"{data['strategy']} selection · {fmt_pct(float(data['confidence']))} confidence · δ = {fmt_g(data['delta'])}"
    if short and is_legacy(data):
        method = "Gaussian reading (legacy)" if data["method"] == "fdp" else str(data["method"])
        return f"{head} · legacy row (written before κ) · {method}"
    return f"{head} · {kappa_text(data)} · {calibration_text(data)} · {method_label(data)}"


def histogram_chart(hist: Mapping) -> str:
    """Attack scores of correct and wrong guesses, side by side in each bin (log x axis for |score| octaves)."""
    edges, correct, wrong = hist["edges"], hist["counts_correct"], hist["counts_wrong"]
    log_x = bool(hist.get("log_x"))
    x_scale = svg.LogScale(edges[0], edges[-1]) if log_x else svg.LinearScale(edges[0], edges[-1])
    plot = svg.Plot(x_scale, svg.LinearScale.nice(0.0, max([*correct, *wrong, 1.0]) * 1.05), height=300)
    parts = [svg.open_svg(plot, "distribution of attack scores", "histogram-chart"),
             svg.axes(plot, x_label=hist.get("x_label") or "attack score", y_label="rows")]
    for lo, hi, c, w in zip(edges, edges[1:], correct, wrong, strict=False):
        mid = math.sqrt(lo * hi) if log_x else (lo + hi) / 2
        parts.append(svg.bar(plot, lo, mid, c, "hist-correct", f"score {lo:.3g}–{hi:.3g}: {c:,.0f} correct"))
        parts.append(svg.bar(plot, mid, hi, w, "hist-wrong", f"score {lo:.3g}–{hi:.3g}: {w:,.0f} wrong"))
    parts.append(svg.legend(plot, [("hist-correct", "guess correct"), ("hist-wrong", "guess wrong")],
                            x=plot.x1 - 140))
    parts.append(svg.close_svg())
    return "".join(parts)


def _trend_points(rows: Sequence[Mapping]) -> list[dict]:
    points = []
    for i, row in enumerate(rows):
        try:
            day = _date(row["partition_date"], f"trend[{i}].partition_date")
            bound = float(row["epsilon_lower_bound"])
        except KeyError as exc:
            raise LabelDPInputError(f"trend[{i}]: missing {exc.args[0]!r}") from None
        claimed = row.get("claimed_epsilon")
        points.append({"date": day, "bound": bound, "claimed": None if claimed is None else float(claimed),
                       "status": str(row.get("status") or ""), "config": str(row.get("audit_config_hash") or ""),
                       "row": row})
    return sorted(points, key=lambda p: (p["date"], p["config"]))


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
    plot = svg.Plot(svg.LinearScale(lo - 0.5, hi + 0.5), svg.LinearScale.nice(0.0, y_hi * 1.12), height=320)
    distinct = sorted(set(ords))
    stride = max(1, math.ceil(len(distinct) / 7))
    ticks = [float(d) for d in distinct[::stride]]
    parts = [svg.open_svg(plot, label, "trend-chart"),
             svg.axes(plot, x_label="partition date", y_label="ε lower bound", x_ticks=ticks,
                      x_format=lambda v: dt.date.fromordinal(int(v)).strftime("%b %d"))]
    claims = [(float(o), p["claimed"]) for o, p in zip(ords, points, strict=True) if _finite(p["claimed"])]
    if claims:
        parts.append(svg.step_line(plot, sorted(set(claims)), "claimed-line"))
    for config in sorted({p["config"] for p in points}):
        series = [(float(o), p["bound"]) for o, p in zip(ords, points, strict=True) if p["config"] == config]
        parts.append(svg.polyline(plot, series, "trend-line"))
    for o, p in zip(ords, points, strict=True):
        status = p["status"] or "unknown"
        tooltip = (f"{p['date']}: ε_lb = {fmt_eps(p['bound'])}, claimed ε = {fmt_eps(p['claimed'])}, {status}"
                   + (f" (config {p['config']})" if p["config"] else ""))
        shape = "square" if status == VIOLATION else "circle"
        parts.append(svg.marker(plot, float(o), p["bound"], f"trend-point status-{status.lower()}", tooltip,
                                radius=5 if status == VIOLATION else 4, shape=shape))
    entries = [("trend-line", "valid ε lower bound"), ("claimed-line", "claimed ε")]
    if any(p["status"] == VIOLATION for p in points):
        entries.append(("violation", "VIOLATION night"))
    parts.append(svg.legend(plot, entries))
    if not claims:
        parts.append(svg.label(plot.x1 - 4, plot.y1 + 14, "claimed ε = ∞ (non-private): no line", "note", "end"))
    parts.append(svg.close_svg())
    return "".join(parts)


# --------------------------------------------------------------------------------------------- sections
def _summary_rows(data: Mapping, claimed: float, status: str) -> list[tuple[str, str]]:
    confidence = float(data["confidence"])
    grid = data.get("grid_size") or len(data.get("curve") or [])
    selection = {
        "bonferroni": f"c′ chosen over {grid} sweep points, each bounded at "
                      f"{fmt_pct(float(data.get('point_confidence', confidence)))} (Bonferroni)",
        "split": "c′ chosen on one half of the rows, bound computed on the other half",
    }.get(str(data["strategy"]), f"strategy {data['strategy']}")
    valid_label = "" if not data.get("optimistic") else ' <span class="optimistic">(optimistic: not valid)</span>'
    if data["method"] == "fdp" and method_label(data) != "f-DP on the (ε, δ) curve":
        valid_label += (' <span class="optimistic" id="legacy-fdp">(Gaussian reading, legacy: not a valid ε bound '
                        'for non-Gaussian mechanisms)</span>')
    rows = [
        ("Status", f"{_badge(status)}<span class=\"labels\">{esc(_verdict_text(status, data))}</span>"),
        ("Valid ε lower bound",
         f"<span class=\"value\">{fmt_eps(data['epsilon_lower_bound'])}</span>{valid_label}"
         f"<span class=\"labels\">valid at {fmt_pct(confidence)} confidence (γ = {fmt_g(1 - confidence)}) · "
         f"{esc(selection)} · method {esc(method_label(data))} · δ = {fmt_g(data['delta'])} · "
         f"{esc(kappa_text(data))} · {esc(calibration_text(data))}</span>"),
        ("Claimed ε", f"<span class=\"value\">{fmt_eps(claimed)}</span>"),
        ("Max certifiable ε",
         f"{fmt_eps(data['max_certifiable_epsilon'])}<span class=\"labels\">the largest valid bound a perfect "
         "attacker (every guess right) could have produced with this audit's size and strategy</span>"),
        ("Selected point",
         f"c′ = {fmt_int(data['selected_guesses'])} guesses, c = {fmt_int(data['selected_correct'])} correct, "
         f"of m = {fmt_int(data.get('selected_m', data['m']))} examples"),
    ]
    gdp = gdp_text(data.get("gdp_mu_lower_bound"))
    if gdp is not None:
        rows.append(("Gaussian reading",
                     f"<span id=\"gdp-reading\">{esc(gdp)}</span><span class=\"labels\">f-DP method, at the "
                     "selected point: the largest μ the counts reject for a Gaussian mechanism; a statement about "
                     "μ only, never an ε, and not the verdict</span>"))
    if data.get("epsilon_mean") is not None:
        label = data.get("paper_statistic_label") or "paper's statistic (optimistic)"
        rows.append((
            "Paper's statistic",
            f"<span class=\"optimistic\">{fmt_eps(data['epsilon_mean'])} ± {fmt_eps(data.get('epsilon_std'))}"
            f" (median {fmt_eps(data.get('epsilon_median'))}) over {fmt_int(data.get('repetitions'))} "
            f"repetitions — optimistic</span><span class=\"labels\">{esc(label)}; shown for comparison with "
            "the paper, never used for the verdict</span>",
        ))
    config = esc(" · ".join(f"{k} {data[k]}" for k in ("score", "grid", "repetitions", "seed") if k in data))
    if data.get("config_hash"):
        config += f" · config <code>{esc(data['config_hash'])}</code>"
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
def render_run_report(result: Any, lineage: Mapping | None, trend: Sequence[Mapping] | None,
                      score_histogram: Mapping | None, claimed_epsilon: float, *, trust: Mapping | None = None,
                      robustness: Mapping | None = None, reference_check: Mapping | None = None) -> str:
    """The HTML page for one audit run.

    result: ``AuditResult`` or its ``to_dict()``. lineage: model_id, partition_date, model_uri, fingerprints,
    reference_model, code_version, flow_run_id, started_at, finished_at, durations (any subset; other keys
    are shown too). trend: warehouse rows of recent nights (``fetch_results``), including this run if it was
    written. score_histogram: ``{"edges": [...], "counts_correct": [...], "counts_wrong": [...]}`` or None
    (None: the result's own repetition-0 histogram, `result_score_histogram`). trust: the night's controls
    (`trust_sections`): ``kind``, ``untrusted_reason`` (a banner) and, for a control, ``control``
    (`auditing.controls.ControlCheck.to_dict()`). robustness: the row's trust figures (`robustness_panel`:
    audit_rows, breaking_kappa, detection_floor_rows, exposed_rows_floor, shift_diagnostic); missing ones are
    computed here. reference_check: the night's reference check (the shape of
    `auditing.warehouse.rows.check_reference_check`, validated here), or None when none was made; a flagged
    label-blind control heads the untrusted banner with "the reference does not fit day D".
    """
    from auditing.warehouse.rows import check_reference_check

    data = _result_dict(result)
    if reference_check is not None:
        reference_check = check_reference_check(
            reference_check, None if is_legacy(data) else data.get("reference_calibration"))
    lineage = dict(lineage or {})
    try:
        claimed = float(claimed_epsilon)
    except (TypeError, ValueError):
        raise LabelDPInputError(f"claimed_epsilon must be a number; got {claimed_epsilon!r}") from None
    status = _status_of(data, claimed)
    hist = _check_histogram(score_histogram if score_histogram is not None else result_score_histogram(data))
    model = lineage.get("model_id") or data.get("model_id") or "model"
    day = lineage.get("partition_date") or data.get("partition_date") or ""
    title = f"{model} · {day}" if day else str(model)
    points = _trend_points(trend or [])
    split_note = (" For the split strategy the curve is the selection half; the selected c′ is then bounded on "
                  "the other half." if data["strategy"] == "split" else "")
    banner, control_card = trust_sections(trust, reference_check, str(day or "D"), data)
    body = (
        f"{banner}<header><p class=\"eyebrow\">labeldp-audit · audit run report</p><h1>{esc(title)}</h1>"
        f"<div class=\"verdict\">{_badge(status)}<p>{esc(_verdict_text(status, data))}</p></div></header>"
        f"{control_card}"
        f"<section class=\"card\" id=\"summary\"><h2>Summary</h2>{_table(_summary_rows(data, claimed, status))}"
        "</section>"
        f"{robustness_panel(data, claimed, status, robustness)}"
        f"{reference_panel(data, reference_check, str(day or 'D'))}"
        f"{risk_panel(data, claimed)}"
        "<section class=\"card\" id=\"curve\"><h2>Valid ε lower bound vs guesses c′</h2>"
        f"{curve_chart(data, claimed)}<p class=\"caption\">Each point is the bound at one c′ of the sweep "
        f"(repetition 0), at {fmt_pct(float(data.get('point_confidence', data['confidence'])))} per point so "
        f"that the selected maximum holds at {fmt_pct(float(data['confidence']))}; {esc(_settings_line(data))}; "
        f"m = {fmt_int(data['m'])}.{esc(split_note)}</p></section>"
        "<section class=\"card\" id=\"scores\"><h2>Score distribution</h2>"
        + (histogram_chart(hist) + "<p class=\"caption\">Attack scores of the rows (repetition 0, the "
           "pre-registered one), split by whether the attacker's guess was correct; the attacker guesses on the "
           "rows with the largest |score|. Descriptive, not a confidence figure.</p>" if hist else
           "<p class=\"missing\">Score histogram not provided for this run.</p>")
        + "</section>"
        f"<section class=\"card\" id=\"trend\"><h2>Trend over recent nights</h2>{trend_chart(points)}"
        "<p class=\"caption\">The valid bound per night against the claimed ε (dashed). Red squares are "
        "VIOLATION nights; hollow points are INCONCLUSIVE.</p></section>"
        f"<section class=\"card\" id=\"lineage\"><h2>Lineage</h2>{lineage_table(lineage)}</section>"
    )
    return _page(f"labeldp-audit report: {title} ({status})", body)


def trust_sections(trust: Mapping | None, reference_check: Mapping | None = None, day: str = "D",
                   data: Mapping | None = None) -> tuple[str, str]:
    """(banner, control card) HTML: a banner when the night's verdicts are untrusted (a control failed: the
    audit itself is broken; or the label-blind control flagged the reference: it does not fit day D), and for
    a control's own page what it checks and whether it passed."""
    trust = dict(trust or {})
    banner = ""
    if trust.get("untrusted_reason"):
        headline = reference_banner_headline(reference_check, day)
        kappa = None if data is None or is_legacy(data) else float(data["kappa"])
        if headline is not None:
            lead = (f"<strong>{esc(headline)}</strong> The label-blind control flagged it "
                    f"({esc(misfit_sentence(reference_check, kappa))}), so no verdict of this night can be relied "
                    "on.")
        else:
            lead = ("<strong>UNTRUSTED: the audit itself is broken tonight.</strong> A nightly control failed, so no "
                    "verdict of this night can be relied on.")
        reason = str(trust["untrusted_reason"])
        detail = "" if headline and reason.lower().rstrip(".") in headline.lower() else (
            f" <span class=\"labels\">{esc(reason)}</span>")
        banner = f"<div class=\"banner untrusted\" id=\"untrusted\" role=\"alert\">{lead}{detail}</div>"
    control = trust.get("control")
    card = ""
    if trust.get("kind") == "control" and control:
        outcome = "passed" if control.get("passed") else "FAILED"
        what = {
            "positive": "Positive control: a synthetic model that reveals each audited row's label through randomized "
                        "response at a known ε_c (label-DP at exactly ε_c by construction). Its valid bound must "
                        "exceed a pre-registered floor (reached with ≥ 99.9% probability by a working audit at this "
                        "m) and never exceed ε_c.",
            "label-blind": "Label-blind control: a model trained like the targets but only on day D's held-out rows "
                           "that the reference correction did not use. It never saw an audited label (true ε = 0 on "
                           "the audited rows) yet knows the day's rates, so its valid bound must be 0 at the plan's "
                           "κ; a positive bound says the reference does not fit day D.",
        }.get(control.get("control"), "Negative control: a copy of the reference model M′, which never saw this "
                                      "day's labels. Its valid bound must be 0.")
        rows = [("Control", f"{esc(what)}"),
                ("Outcome", f"<span class=\"value control-{esc(outcome.lower())}\">{esc(outcome)}</span>"
                            f"<span class=\"labels\">{esc(control.get('message', ''))}</span>")]
        if control.get("misfit_kappa") is not None:
            misfit = float(control["misfit_kappa"])
            rows.append(("Measured reference misfit",
                         f"κ = {misfit:.4g}<span class=\"labels\">the smallest κ that brings this control's bound "
                         f"to 0: the reference misjudges some row's click odds by up to a factor "
                         f"{odds_factor(misfit)}</span>"))
        if control.get("floor") is not None:
            detail = control.get("floor_detail") or {}
            rows.append(("Pre-registered floor",
                         f"{fmt_eps(control['floor'])}<span class=\"labels\">bound at c′ = "
                         f"{fmt_int(detail.get('guesses'))} with the {fmt_pct(1 - float(detail.get('power', 0.95)))}"
                         f" quantile {fmt_int(detail.get('correct_quantile'))} of Binomial(c′, "
                         f"{fmt_g(detail.get('expected_rate'))}) correct guesses; ceiling ε_c = "
                         f"{fmt_eps(control.get('ceiling'))}</span>"))
        card = f"<section class=\"card\" id=\"control\"><h2>Nightly control</h2>{_table(rows)}</section>"
    return banner, card


def _method_cell(row: Mapping) -> str:
    """A trend row's method (an fdp row without fdp_curve: the legacy Gaussian reading) and kappa (legacy rows:
    labelled so, their TV tau never shown as a kappa), with the Gaussian reading when stored."""
    if row.get("method") is None:
        return "–"
    parts = [esc(method_label(row)), esc(kappa_text(row))]
    if row.get("breaking_kappa") is not None and row.get("status") == VIOLATION:
        parts.append(f"holds up to a factor {esc(odds_factor(row['breaking_kappa']))}")
    gdp = gdp_text(row.get("gdp_mu_lower_bound"))
    if gdp is not None:
        parts.append(esc(gdp))
    return "<br>".join(parts)


def _reference_cell(row: Mapping) -> str:
    """A trend row's reference check: calibration, and the label-blind control's outcome and misfit."""
    from auditing.warehouse.rows import reference_check_from_row

    check = reference_check_from_row(row)
    if check is None:
        return "<span class=\"missing\">not recorded</span>"
    text = f"calibration {esc(check['calibration'])}"
    if not check["checked"]:
        return f"{text}<br><span class=\"missing\" title=\"{esc(check['note'] or '')}\">not checked</span>"
    blind = check["label_blind"]
    if blind is None:
        return f"{text}<br>label-blind control did not run"
    misfit = f"misfit κ = {blind['misfit_kappa']:.3g}"
    if is_flagged(check):
        return f"{text}<br><span class=\"reference-flagged\">FLAGGED</span> ({misfit})"
    return f"{text}<br>fits ({misfit})"


def render_trend_report(rows: Sequence[Mapping], model_id: str) -> str:
    """The HTML trend page of one model over many nights, from warehouse rows (``fetch_results``)."""
    model_id = check_name(model_id, "model_id")
    points = _trend_points(rows)
    counts = {s: sum(p["status"] == s for p in points) for s in (VIOLATION, INCONCLUSIVE, PASS)}
    span = f"{points[0]['date']} – {points[-1]['date']}" if points else "no audits"
    summary = " ".join(f"{_badge(s, small=True)} {n}" for s, n in counts.items())
    table_rows = []
    for p in reversed(points):
        r = p["row"]
        untrusted = (f"<br><span class=\"control-failed\" title=\"{esc(r['untrusted_reason'])}\">untrusted</span>"
                     if r.get("untrusted_reason") else "")
        table_rows.append(
            f"<tr class=\"night\"><td>{esc(p['date'])}</td><td>{_badge(p['status'] or 'unknown', small=True)}"
            f"{untrusted}</td>"
            f"<td class=\"value\">{fmt_eps(p['bound'])}</td><td>{fmt_eps(p['claimed'])}</td>"
            f"<td>{fmt_eps(r.get('max_certifiable_epsilon'))}</td>"
            f"<td class=\"optimistic\">{fmt_eps(r.get('epsilon_mean'))}</td>"
            f"<td>{esc(r.get('strategy', ''))}, {fmt_pct(float(r['confidence'])) if r.get('confidence') else ''}"
            f"</td><td class=\"wrap\">{_method_cell(r)}</td><td class=\"wrap\">{_reference_cell(r)}</td>"
            f"<td>{fmt_int(r.get('m'))}</td><td><code>{esc(p['config'])}</code></td></tr>"
        )
    table = (
        "<div class=\"scroll\"><table class=\"grid\"><tr><th>Date</th><th>Status</th><th>Valid ε_lb</th><th>Claimed ε</th>"
        "<th>Max certifiable ε</th><th>Paper's statistic (optimistic)</th><th>Selection, confidence</th>"
        "<th>Method, κ</th><th>Reference check</th>"
        f"<th>m</th><th>Config</th></tr>{''.join(table_rows)}</table></div>"
        if table_rows else '<p class="missing">No audit results for this model in the selected range.</p>'
    )
    latest = points[-1]["row"] if points else {}
    lineage = {k: latest.get(k) for k in _LINEAGE_ORDER if latest.get(k) is not None}
    body = (
        f"<header><p class=\"eyebrow\">labeldp-audit · trend report</p><h1>{esc(model_id)}</h1>"
        f"<p>{len(points)} audit(s), {esc(span)} &nbsp; {summary}</p></header>"
        f"<section class=\"card\" id=\"trend\"><h2>Valid ε lower bound by night</h2>{trend_chart(points)}"
        "<p class=\"caption\">The statistically valid bound (at each row's confidence, after correcting for the "
        "choice of c′) against the claimed ε (dashed). Red squares are VIOLATION nights. PASS means no "
        "evidence of a violation, not privacy.</p></section>"
        f"<section class=\"card\" id=\"nights\"><h2>Nights (newest first)</h2>{table}"
        "<p class=\"caption\">The paper's statistic is the mean over repetitions of the max over the sweep "
        "without correction: optimistic, not a valid lower bound.</p></section>"
        f"<section class=\"card\" id=\"lineage\"><h2>Lineage of the latest night</h2>{lineage_table(lineage)}"
        "</section>"
    )
    return _page(f"labeldp-audit trend: {model_id}", body, wide=True)


# --------------------------------------------------------------------------------------------- files
def run_report_path(data_root: str | os.PathLike | None, model_id: str, partition_date: dt.date,
                    config_hash: str) -> Path:
    """``<data_root>/reports/<model>/date=YYYY-MM-DD/<config hash>.html`` (``partition_date`` parsed at the edge)."""
    from auditing.warehouse.rows import check_config_hash  # the same rule as the warehouse key

    day = require_date(partition_date, "partition_date").isoformat()
    return (resolve_data_root(data_root) / REPORTS / check_name(model_id, "model_id") / f"date={day}"
            / f"{check_config_hash(config_hash)}.html")


def trend_report_path(data_root: str | os.PathLike | None, model_id: str) -> Path:
    """``<data_root>/reports/<model>/trend.html``."""
    return resolve_data_root(data_root) / REPORTS / check_name(model_id, "model_id") / "trend.html"


def write_report(html_text: str, path: str | os.PathLike) -> Path:
    """Writes the page atomically (temporary file, fsync, rename): a reader never sees half a page."""
    return write_text_atomically(path, html_text)
