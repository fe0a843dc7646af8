"""The run report's "Every stored figure" section (`auditing.sinks.report.figures_panel`): every figure a record of
the verdict declares with `labeldp.stored.stored` is listed (column, comment verbatim, value by kind), a record
stored under a prefix under each of its prefixes, and a field added to a record shows with no other change."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from html.parser import HTMLParser

import pytest

from auditing.risk.records import CLAIMED, DEMONSTRATED, RiskBlock
from auditing.sinks.report import render_run_report
from auditing.sinks.report.figures_panel import MISSING, figure_text, figures_panel
from auditing.sinks.warehouse.rows import audit_record
from auditing.sinks.warehouse.schema import stored_declarations
from auditing.verdict.capacity_check import NO_CHECK_ROWS, unchecked
from auditing.verdict.judge import judge
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.types import Decision
from labeldp.codec import decode
from labeldp.stored import AS_LARGEST, COUNT, FLAG, NUMBER, SMALL_COUNT, TEXT, Stored, stored, stored_fields
from tests.support import checked_audits


@pytest.fixture(scope="module")
def verdict():
    """A trusted VIOLATION (a valid bound above the claim, so both risk blocks), its decision, its capacity check,
    its attack curve and a night's reference check with the label-blind control's figures."""
    check = decode(ReferenceCheck, {"calibration": "none", "checked": True, "note": None, "calibration_figures": None,
                                    "label_blind": {"epsilon_lower_bound": 0.0, "misfit_kappa": 0.0,
                                                    "flagged": False}}, "reference_check")
    found = judge(checked_audits.leaky(), 0.5, reference_check=check)
    assert found.status == "VIOLATION" and found.risk.demonstrated is not None and found.decision is not None
    return found


class _Section(HTMLParser):
    """The rows of the section ``stored-figures``: (record heading, column, comment, value) each, as a reader
    sees them (entities decoded)."""

    def __init__(self):
        super().__init__()
        self.rows: list[tuple[str, str, str, str]] = []
        self.headings: list[str] = []
        self.open: bool | None = None  # the section's <details> has the open attribute
        self._depth = 0  # <details> nesting inside the section
        self._heading: list[str] | None = None
        self._cells: list[list[str]] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "details" and attrs.get("id") == "stored-figures":
            self.open, self._depth = "open" in attrs, 1
        elif not self._depth:
            return
        elif tag == "details":
            self._depth += 1
        elif tag == "h3":
            self._heading = []
        elif tag == "tr":
            self._cells = []
        elif tag == "td" and self._cells is not None:
            self._cells.append([])

    def handle_endtag(self, tag):
        if not self._depth:
            return
        if tag == "details":
            self._depth -= 1
        elif tag == "h3" and self._heading is not None:
            self.headings.append(" ".join(part.strip() for part in self._heading if part.strip()))
            self._heading = None
        elif tag == "tr" and self._cells is not None:
            (column, comment), (value,) = self._cells
            self.rows.append((self.headings[-1], column, comment, value))
            self._cells = None

    def handle_data(self, data):
        if not self._depth:
            return
        if self._heading is not None:
            self._heading.append(data)
        elif self._cells:
            self._cells[-1].append(data)


def _section(html_text: str) -> _Section:
    parsed = _Section()
    parsed.feed(html_text)
    assert parsed.open is not None, "no stored-figures section"
    return parsed


def _listed(html_text: str) -> dict[str, tuple[str, str, str]]:
    """column -> (its record's heading, comment, value) as the section lists it (each column once)."""
    rows = _section(html_text).rows
    columns = [column for _, column, _, _ in rows]
    assert len(columns) == len(set(columns)), "a column listed twice"
    return {column: (heading, comment, value) for heading, column, comment, value in rows}


def _expected(record, prefix=None) -> dict[str, tuple[str, str]]:
    """column -> (comment, value text) of each stored field of ``record`` (under ``prefix``), from the declarations."""
    return {column: (declaration.comment, figure_text(declaration, getattr(record, name)))
            for name, column, declaration in stored_fields(type(record), prefix=prefix)}


# --------------------------------------------------------------------------------------------- every figure
def test_every_stored_figure_of_the_verdicts_records_is_listed_with_its_comment_and_value(verdict):
    listed = _listed(figures_panel(verdict))
    result = verdict.result
    records = [(verdict, None), (result, None), (result.capacity_check, None), (result.attack_curve, None),
               (verdict.risk, None), (verdict.risk.claimed, CLAIMED), (verdict.risk.demonstrated, DEMONSTRATED),
               (verdict.reference_check, None), (verdict.reference_check.label_blind, None),
               (verdict.decision, None), (verdict.trust_figures(), None)]
    expected = {column: figures for record, prefix in records for column, figures in _expected(record, prefix).items()}
    assert len(expected) > 60  # the records above declare that many; an empty oracle would pass anything
    for column, (comment, value) in expected.items():
        assert column in listed, column
        assert listed[column][1:] == (comment, value), column
    # the kinds are all there: flags, counts, numbers and texts
    kinds = {declaration.kind.check for record, prefix in records
             for _, _, declaration in stored_fields(type(record), prefix=prefix)}
    assert kinds == {"flag", "count", "number", "text"}


def test_every_column_the_warehouse_row_fills_reaches_the_section(verdict):
    """The warehouse row of the same verdict (`audit_record`) is the oracle: each stored column it fills (not
    NULL) is in the section. A column of the family's evidence is NULL here: the family is not part of a verdict."""
    row, _ = audit_record(verdict, model_id="leaky", partition_date="2024-01-14", run_kind="nightly")
    filled = {column for column in stored_declarations() if getattr(row, column) is not None}
    assert len(filled) > 40  # an empty oracle would pass anything
    missing = filled - set(_listed(figures_panel(verdict)))
    assert not missing, sorted(missing)


def test_each_record_is_headed_by_its_type_and_where_the_verdict_holds_it(verdict):
    listed = _listed(figures_panel(verdict))
    assert listed["risk_headline"][0] == "RiskAssessment verdict.risk"
    assert listed["decision"][0] == "Decision verdict.decision"
    assert listed["trust"][0] == "TrustFigures verdict.trust_figures()"
    assert listed["label_blind_bound"][0] == "LabelBlindFigures verdict.reference_check.label_blind"


# --------------------------------------------------------------------------------------------- prefixes
def test_a_risk_block_is_listed_under_each_of_its_prefixes(verdict):
    listed = _listed(figures_panel(verdict))
    for prefix, block, field in ((CLAIMED, verdict.risk.claimed, "claimed"),
                                 (DEMONSTRATED, verdict.risk.demonstrated, "demonstrated")):
        heading = f"RiskBlock verdict.risk.{field}, stored under {prefix.column} ({prefix.comment})"
        for name, column, declaration in stored_fields(RiskBlock):
            assert listed[prefix.column + column] == (
                heading, f"{prefix.comment}: {declaration.comment}", figure_text(declaration, getattr(block, name)))
        assert not set(listed) & {column for _, column, _ in stored_fields(RiskBlock)}  # never unprefixed
    assert verdict.risk.claimed.mia_advantage_bound != verdict.risk.demonstrated.mia_advantage_bound
    assert listed["risk_mia_advantage_bound"][2] != listed["risk_lb_mia_advantage_bound"][2]


# --------------------------------------------------------------------------------------------- a new figure
@dataclass(frozen=True)
class DecisionWithFigures(Decision):
    """A decision with three figures added, as a new stored field would be."""

    tonight_flag: bool = stored(FLAG, "a flag added for this test <b>&amp;</b>", default=True)
    tonight_count: int = stored(COUNT, "a count added for this test", default=1_234_567)
    tonight_number: float = stored(NUMBER, "a number added for this test", infinite=AS_LARGEST, default=math.inf)


@dataclass(frozen=True)
class RiskBlockWithFigure(RiskBlock):
    """A risk block with one figure added."""

    tonight_share: float = stored(NUMBER, "a share added for this test", high=1.0, default=0.123456)


def _as(cls, record, **extra):
    return cls(**{item.name: getattr(record, item.name) for item in dataclasses.fields(record)}, **extra)


def test_a_field_added_to_a_record_is_listed_with_no_other_change(verdict):
    changed = dataclasses.replace(verdict, decision=_as(DecisionWithFigures, verdict.decision))
    before, after = _listed(figures_panel(verdict)), _listed(figures_panel(changed))
    heading = "DecisionWithFigures verdict.decision"
    assert after["tonight_flag"] == (heading, "a flag added for this test <b>&amp;</b>", "yes")
    assert after["tonight_count"] == (heading, "a count added for this test", "1,234,567")
    assert after["tonight_number"] == (heading, "a number added for this test", "∞")
    assert set(after) - set(before) == {"tonight_flag", "tonight_count", "tonight_number"}
    # the comment is written escaped (its markup is text), and read back verbatim
    assert "a flag added for this test &lt;b&gt;&amp;amp;&lt;/b&gt;" in figures_panel(changed)


def test_a_field_added_to_a_prefixed_record_is_listed_under_each_prefix(verdict):
    risk = dataclasses.replace(verdict.risk, claimed=_as(RiskBlockWithFigure, verdict.risk.claimed),
                               demonstrated=_as(RiskBlockWithFigure, verdict.risk.demonstrated, tonight_share=0.5))
    listed = _listed(figures_panel(dataclasses.replace(verdict, risk=risk)))
    assert listed["risk_tonight_share"][1:] == ("at the claimed eps: a share added for this test", "0.1235")
    assert listed["risk_lb_tonight_share"][1:] == ("at the valid eps_lb: a share added for this test", "0.5")
    assert "tonight_share" not in listed


# --------------------------------------------------------------------------------------------- values
def test_no_value_shows_as_the_missing_mark_and_a_flag_as_yes_or_no(verdict):
    listed = _listed(figures_panel(verdict))
    assert verdict.decision.confirm_nights is None and listed["confirm_nights"][2] == MISSING == "–"
    assert verdict.trust_figures().accepted_unchecked is False and listed["accepted_unchecked"][2] == "no"
    assert verdict.reference_check.checked is True and listed["reference_checked"][2] == "yes"
    assert verdict.untrusted_reason is None and listed["untrusted_reason"][2] == MISSING


@pytest.mark.parametrize(("kind", "value", "text"), [
    (FLAG, True, "yes"), (FLAG, 0, "no"), (COUNT, 1_234_567, "1,234,567"), (SMALL_COUNT, 12, "12"),
    (NUMBER, 0.123456, "0.1235"), (NUMBER, 1234.5678, "1235"), (NUMBER, 2.5e-7, "2.5e-07"), (NUMBER, math.inf, "∞"),
    (NUMBER, -math.inf, "-∞"), (NUMBER, 3, "3"), (TEXT, "as < is", "as < is"), (TEXT, None, "–"), (NUMBER, None, "–"),
    (FLAG, None, "–"),
])
def test_a_value_is_written_by_its_kind(kind, value, text):
    assert figure_text(Stored(kind, "comment"), value) == text


# --------------------------------------------------------------------------------------------- on the page
def test_the_run_report_has_the_section_closed_between_the_trust_details_and_the_lineage(verdict):
    page = render_run_report(verdict, {"model_id": "leaky", "partition_date": "2024-01-14"}, [], None)
    assert _section(page).open is False
    assert page.index('id="trust-details"') < page.index('id="stored-figures"') < page.index('id="lineage"')
    assert "Every stored figure" in page and "as its records declare them" in page


# ------------------------------------------------------------------------------------------ the row's values
def test_each_value_is_the_one_the_warehouse_row_stores():
    """The section shows the row's value, not the record's where the row's own rule differs: a capacity check that
    did not run keeps its record's rule ("pooled" by default) but the row stores NULL, and so shows the section.
    Every other column the row has is shown as the row stores it, read back by its kind."""
    result = dataclasses.replace(checked_audits.leaky(), capacity_check=unchecked(NO_CHECK_ROWS, confidence=0.95))
    found = judge(result, 0.5)
    assert found.result.capacity_check.rule and not found.result.capacity_check.checked
    row, _ = audit_record(found, model_id="leaky", partition_date="2024-01-14", run_kind="nightly")
    assert row.check_rule is None
    listed = _listed(figures_panel(found))
    assert listed["check_rule"][2] == MISSING
    declarations = stored_declarations()
    compared = 0
    for column, (_, _, shown) in listed.items():
        if column in declarations:
            stored_value = declarations[column].read(getattr(row, column))
            assert shown == figure_text(declarations[column], stored_value), column
            compared += 1
    assert compared > 60
