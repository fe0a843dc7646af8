"""The report pages' chrome: the style sheet, the page frame, tables, status badges and number formatting."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Any

from auditing.sinks.report.attack_panel import ATTACK_CSS
from auditing.sinks.report.family_panel import FAMILY_CSS
from auditing.sinks.report.reference_panel import REFERENCE_CSS
from auditing.sinks.report.risk_panel import RISK_CSS
from auditing.sinks.report.robustness_panel import ROBUSTNESS_CSS
from auditing.sinks.report.slice_panel import SLICE_CSS
from auditing.sinks.report.svg import esc
from auditing.verdict.types import STATUSES

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
.badge.WEAK_PASS { background:#fff; color:var(--good); box-shadow: inset 0 0 0 2px var(--good); }
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
svg .trend-point.status-weak_pass { fill:#fff; stroke:var(--good); stroke-width:2; }
footer { color:var(--muted); font-size:12px; margin-top: 24px; }
.banner.untrusted { background:#fef3f2; border:2px solid var(--bad); color:#7a271a; border-radius:10px;
                    padding:12px 16px; margin:0 0 18px; }
.control-passed { color:var(--good); } .control-failed { color:var(--bad); }
.banner.accepted { background:#fffaeb; border:2px solid var(--warn); color:#7a4d0b; border-radius:10px;
                   padding:12px 16px; margin:0 0 18px; }
.banner .labels { display:block; font-size:13px; margin-top:4px; opacity:.85; }
.decision { border-radius:10px; padding:12px 16px; margin:0 0 18px; border:2px solid; }
.decision h2 { margin:0 0 4px; font-size:20px; } .decision p { margin:4px 0; }
.decision-act { background:#fef3f2; border-color:var(--bad); color:#7a271a; }
.decision-unconfirmed { background:#fffaeb; border-color:var(--warn); color:#7a4d0b; }
.decision-no_evidence { background:#ecfdf3; border-color:var(--good); color:#05603a; }
.decision-no_power { background:#f2f4f7; border-color:#98a2b3; color:#344054; }
.badge.VIOLATION.unconfirmed { background:#fff; color:var(--bad); box-shadow: inset 0 0 0 2px var(--bad); }
details.card > summary { cursor:pointer; list-style-position: outside; margin-left: 18px; }
details.card > summary h2 { display:inline; margin:0; }
details.card > summary .labels { color:var(--muted); font-size:13px; display:block; }
details.card[open] > summary { margin-bottom: 14px; }
details.card > .card { border:0; box-shadow:none; padding:10px 0 0; border-top:1px solid var(--line); border-radius:0; }
@media (max-width: 600px) { main { padding: 16px 12px 32px; } .verdict { flex-direction:column; align-items:flex-start; }
                            .card { padding: 14px 12px; } }
.decision-word { font-weight:700; } .decision-word.word-act { color:var(--bad); }
.decision-word.word-unconfirmed { color:var(--warn); } .decision-word.word-no_evidence { color:var(--good); }
.trust-state { font-weight:700; } .trust-state.trusted { color:var(--good); }
.trust-state.untrusted, .trust-state.unchecked { color:var(--bad); } .trust-state.accepted { color:var(--warn); }
.detectability-misfit, .detectability-void { color:#b54708; }
""" + RISK_CSS + ROBUSTNESS_CSS + REFERENCE_CSS + ATTACK_CSS + FAMILY_CSS + SLICE_CSS


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


def badge(status: str, small: bool = False) -> str:
    css = status if status in STATUSES else "NONE"
    return f'<span class="badge {css}{" small" if small else ""}">{esc(status)}</span>'


def status_badge(status: str, decision: str | None, small: bool = False) -> str:
    """The status badge beside a decision: a VIOLATION not to be acted on (its decision is not "act") is drawn in
    outline, never as a second red box beside its decision."""
    html = badge(status, small)
    if status == "VIOLATION" and decision not in (None, "act"):
        html = html.replace('class="badge VIOLATION', 'class="badge VIOLATION unconfirmed', 1)
    return html


def page(title: str, body: str, *, wide: bool = False) -> str:
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    main = '<main class="wide">' if wide else "<main>"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>{main}{body}"
        f"<footer>Generated by labeldp-audit at {esc(generated)}. Self-contained page: no network access "
        "needed.</footer></main></body></html>\n"
    )


def table(rows: Sequence[tuple[str, str]]) -> str:
    return "<table>" + "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"
