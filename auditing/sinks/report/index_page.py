"""The page across models: every model at the data root, its latest decision per run kind, its family's state, its
flagged slices, and links to each report. Written at ``<data_root>/reports/index.html`` with every run (the links are
relative, so the page works opened from the data root, served, or copied with its reports).

Renders only: the rows, their slices and the report paths come from the warehouse and the data root.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from auditing.sinks.listing import ListedSlices
from auditing.sinks.report.html import fmt_eps, page, status_badge
from auditing.sinks.report.svg import esc
from auditing.sinks.report.wording import INDEX_CAPTION, INDEX_FAMILY_WORDS, claim_words
from auditing.sinks.warehouse.records import ResultRow
from auditing.verdict.types import HEADLINES
from labeldp.names import resolve_data_root

INDEX = "index.html"


def index_report_path(data_root: str | os.PathLike | None) -> Path:
    """``<data_root>/reports/index.html``."""
    from auditing.sinks.report.pages import REPORTS

    return resolve_data_root(data_root) / REPORTS / INDEX


def _link(path: str | None, text: str, base: Path) -> str:
    if not path:
        return text
    return f'<a href="{esc(Path(os.path.relpath(path, base)).as_posix())}">{text}</a>'


def family_state(rows: Sequence[ResultRow]) -> str:
    """The family's state from the model's newest nightly or backfill row: confirmed, flagged by the kappa-based
    evidence only, watching (its evidence so far), or no family."""
    nights = [r for r in rows if r.run_kind in ("nightly", "backfill") and r.kind != "control"]
    if not nights:
        return INDEX_FAMILY_WORDS["none"]
    latest = max(nights, key=lambda r: r.partition_date)
    if latest.family_confirmed:
        return INDEX_FAMILY_WORDS["confirmed"]
    if latest.family_check_evidence is None and latest.family_evidence is None:
        return INDEX_FAMILY_WORDS["none"]
    state = INDEX_FAMILY_WORDS["flagged"] if latest.family_flagged else INDEX_FAMILY_WORDS["watching"]
    evidence = latest.family_check_evidence
    return state + ("" if evidence is None else f" (check's evidence {float(evidence):.3g})")


def _decision_cell(row: ResultRow, report: str | None, base: Path) -> str:
    decision = ("control: " + ("passed" if row.control_passed else "failed") if row.kind == "control" else
                HEADLINES.get(row.decision, row.decision or "–"))
    css = f"decision-word word-{esc(row.decision or 'none')}"
    return (f"<span class=\"{css}\">{_link(report, esc(decision), base)}</span> {status_badge(row.status, row.decision, small=True)}"
            f"<span class=\"labels\">{esc(row.partition_date.isoformat())} · claim "
            f"{esc(claim_words(row.claimed_epsilon))} · ε_lb {fmt_eps(row.epsilon_lower_bound)}</span>")


def render_index(rows: Sequence[ResultRow], *, data_root: str | os.PathLike | None = None,
                 report: Callable[[ResultRow], str | None] | None = None,
                 slices: Mapping | None = None, trend: Callable[[str], str | None] | None = None) -> str:
    """The index page from the latest verdict of every model and run kind (``Warehouse.fetch_verdicts(latest=True)``):
    one row per model; ``report(row)``: the path of the row's run report (None: none); ``slices``: stored slices by
    the rows' keys (``Warehouse.slices_of``); ``trend(model)``: the path of its trend report (None: none)."""
    base = index_report_path(data_root).parent
    by_model: dict[str, list[ResultRow]] = {}
    for row in rows:
        by_model.setdefault(row.model_id, []).append(row)
    kinds = sorted({row.run_kind or "unrecorded" for row in rows}, key=lambda k: (k != "nightly", k))
    head = ("<tr><th>Model</th>" + "".join(f"<th>Latest {esc(kind)}</th>" for kind in kinds)
            + "<th>Family</th><th>Slices flagged</th><th>Trend</th></tr>")
    body = []
    for model in sorted(by_model):
        latest = {}
        for row in by_model[model]:
            kind = row.run_kind or "unrecorded"
            if kind not in latest or row.partition_date > latest[kind].partition_date:
                latest[kind] = row
        cells = "".join(f"<td class=\"wrap\">{_decision_cell(latest[k], report(latest[k]) if report else None, base)}"
                        "</td>" if k in latest else "<td><span class=\"missing\">–</span></td>" for k in kinds)
        flagged = []
        for row in latest.values():
            listed = ListedSlices.of_stored(row, (slices or {}).get(row.key, ()))
            flagged += [f"{s.slicing}={s.name}" for s in (listed.violations if listed else ())]
        flagged_text = esc(", ".join(dict.fromkeys(flagged))) if flagged else "<span class=\"missing\">none</span>"
        trend_path = trend(model) if trend else None
        body.append(f"<tr class=\"model\"><td><strong>{esc(model)}</strong></td>{cells}"
                    f"<td class=\"wrap\">{esc(family_state(by_model[model]))}</td><td class=\"wrap\">{flagged_text}</td>"
                    f"<td>{_link(trend_path, 'trend', base) if trend_path else '–'}</td></tr>")
    table = (f"<div class=\"scroll\"><table class=\"grid\" id=\"models\">{head}{''.join(body)}</table></div>"
             if body else "<p class=\"missing\">No audit results at this data root yet.</p>")
    content = (f"<header><p class=\"eyebrow\">labeldp-audit · every model</p><h1>{len(by_model)} model(s)</h1>"
               "</header>"
               f"<section class=\"card\" id=\"index\"><h2>Latest decision per run kind</h2>{table}"
               f"<p class=\"caption\">{esc(INDEX_CAPTION)}</p></section>")
    return page("labeldp-audit: every model", content, wide=True)


__all__ = ["family_state", "index_report_path", "render_index"]
