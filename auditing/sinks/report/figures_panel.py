"""The report's "Every stored figure" section: each figure the verdict's warehouse row keeps, as its records declare
it (`labeldp.stored`): the column's name, its comment and the record's value.

The section lists no figure by name. It walks the `Verdict` and the records reachable from it (and the flat trust
figures it derives, `Verdict.trust_figures`) and shows every field declared with `labeldp.stored.stored`, so a new
stored figure appears here with no change to this module (docs/warehouse.md: adding a stored figure). A record held
in a field declared with `labeldp.stored.stored_under` is shown under that prefix, as the row stores it (a risk block
at the claim and at the valid bound). The values are the row's: the warehouse row is drawn from the verdict by
`auditing.sinks.warehouse.rows.audit_record` under a placeholder key, so a column the row leaves NULL by its own
rule (a capacity check that did not run) shows no value here either; a verdict that makes no row shows the records'
own values. The family's evidence is not part of a verdict and is not listed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import sys
from typing import Any, NamedTuple

from auditing.sinks.report.html import fmt_int
from auditing.sinks.report.svg import esc
from auditing.verdict.types import Verdict
from labeldp.stored import COUNT, FLAG, NUMBER, SMALL_COUNT, Prefix, Stored, prefix_of, stored_fields

FIGURES_SUMMARY = "Every stored figure"
FIGURES_HINT = "the figures this verdict's warehouse row keeps, as its records declare them"
MISSING = "–"  # a figure the record does not have (the report's mark for no value)
# The key the row is drawn under to read its values: no column of the section depends on it.
_PLACEHOLDER_DAY, _PLACEHOLDER_KIND = dt.date(2000, 1, 1), "nightly"


class StoredRecord(NamedTuple):
    """One record with stored fields, found at ``path`` in the verdict (e.g. ``verdict.risk.claimed``), stored
    under ``prefix`` (None: as declared); ``figures``: (column, its `Stored`, the record's value) in field order."""

    record: type
    path: str
    prefix: Prefix | None
    figures: list[tuple[str, Stored, Any]]


def _is_record(value: Any) -> bool:
    """A dataclass instance: the walk descends into records only (not arrays, tuples of rows or classes)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def stored_records(verdict: Verdict) -> list[StoredRecord]:
    """Every record with stored fields reachable from ``verdict`` through its fields (records in records, depth
    first, in field order; a None field is skipped), then the flat trust figures it derives
    (`Verdict.trust_figures`), each with its columns as the row stores them."""
    found: list[StoredRecord] = []
    seen: set[tuple[int, Prefix | None]] = set()

    def visit(record: Any, path: str, prefix: Prefix | None) -> None:
        if (id(record), prefix) in seen:
            return
        seen.add((id(record), prefix))
        figures = [(column, declaration, getattr(record, name))
                   for name, column, declaration in stored_fields(type(record), prefix=prefix)]
        if figures:
            found.append(StoredRecord(type(record), path, prefix, figures))
        for item in dataclasses.fields(record):
            value = getattr(record, item.name, None)
            if _is_record(value):
                visit(value, f"{path}.{item.name}", prefix_of(item))

    visit(verdict, "verdict", None)
    visit(verdict.trust_figures(), "verdict.trust_figures()", None)
    return found


def figure_text(declaration: Stored, value: Any) -> str:
    """A stored value as the section shows it, by its kind: a flag yes / no, a count with thousands separators, a
    number to 4 significant digits (infinity as ∞), a text as it is; no value as `MISSING`. Not escaped."""
    if value is None:
        return MISSING
    kind = declaration.kind
    if kind is FLAG:
        return "yes" if value else "no"
    if kind in (COUNT, SMALL_COUNT):
        return fmt_int(value)
    if kind is NUMBER:
        value = float(value)
        if math.isinf(value):
            return "∞" if value > 0 else "-∞"
        return f"{value:.4g}"
    return str(value)


def row_values(verdict: Verdict) -> dict[str, Any] | None:
    """column -> the value the verdict's warehouse row stores (`auditing.sinks.warehouse.rows.audit_record`, under a
    placeholder key), read back as its record holds it: a flag as a bool, the largest double as infinity. None when
    the verdict makes no row (an optimistic result, a malformed figure): the section then shows the records' own
    values."""
    # the row's own rules, imported when a page is drawn
    from auditing.sinks.warehouse.rows import audit_record
    from labeldp.errors import LabelDPInputError

    try:
        row, _ = audit_record(verdict, model_id="report", partition_date=_PLACEHOLDER_DAY, run_kind=_PLACEHOLDER_KIND)
    except LabelDPInputError:
        return None
    return row.to_dict()


def _stored_value(declaration: Stored, value: Any) -> Any:
    """A value as the row stores it, read back as the record holds it."""
    value = declaration.read(value)
    if declaration.kind is NUMBER and isinstance(value, float) and value == sys.float_info.max:
        return math.inf
    return value


def _record_html(found: StoredRecord, stored: dict[str, Any] | None) -> str:
    where = found.path if found.prefix is None else (
        f"{found.path}, stored under {found.prefix.column} ({found.prefix.comment})")
    rows = "".join(f"<tr><td><code>{esc(column)}</code><span class=\"labels\">{esc(declaration.comment)}</span></td>"
                   f"<td>{esc(figure_text(declaration, value))}</td></tr>"
                   for column, declaration, value in (
                       (column, declaration, _stored_value(declaration, stored[column])
                        if stored is not None and column in stored else value)
                       for column, declaration, value in found.figures))
    return (f"<div class=\"stored-record\"><h3>{esc(found.record.__name__)} <span class=\"note\">{esc(where)}</span>"
            f"</h3><table>{rows}</table></div>")


def figures_panel(verdict: Verdict) -> str:
    """The closed <details> section listing every stored figure of ``verdict`` (`stored_records`), one table per
    record: the column and its comment, then the value."""
    stored = row_values(verdict)
    records = "".join(_record_html(found, stored) for found in stored_records(verdict))
    return (f"<details class=\"card\" id=\"stored-figures\"><summary><h2>{esc(FIGURES_SUMMARY)}</h2>"
            f"<span class=\"labels\">{esc(FIGURES_HINT)}</span></summary>{records}</details>")
