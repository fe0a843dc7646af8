"""The stored-figure declarations (`labeldp.stored`): a field's `Stored` says its column's kind, comment, name and
range; `Stored.value` / `Stored.read` turn a record's value into its stored value and back; `Prefix` stores a
record's columns under a prefix; `stored_fields`, `stored_values` and `from_stored` walk a record's declarations.
The warehouse's use of them (the table's columns and the row's checks): tests/architecture/test_stored_columns.py."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field

import pytest

from labeldp.stored import (
    AS_LARGEST,
    AS_NONE,
    COUNT,
    FLAG,
    KINDS,
    NUMBER,
    REFUSE,
    SMALL_COUNT,
    STORED,
    TEXT,
    Part,
    Prefix,
    Stored,
    StoredKind,
    from_stored,
    prefix_of,
    stored,
    stored_fields,
    stored_metadata,
    stored_of,
    stored_under,
    stored_values,
)

INF = float("inf")

@dataclass(frozen=True)
class _Figures:
    flagged: bool = stored(FLAG, "a flag", default=False)
    evidence: float = stored(NUMBER, "an evidence", column="toy_evidence", infinite=AS_LARGEST, default=1.0)
    upper: float | None = stored(NUMBER, "an upper limit", low=-float("inf"), infinite=AS_NONE, default=None)


def test_a_record_is_stored_by_its_declarations_and_none_without_a_record():
    assert stored_values(_Figures, _Figures(True, float("inf"), float("inf"))) == {
        "flagged": 1, "toy_evidence": 1.7976931348623157e308, "upper": None}
    assert stored_values(_Figures, _Figures(False, 2.0, -1.5)) == {"flagged": 0, "toy_evidence": 2.0, "upper": -1.5}
    assert stored_values(_Figures, None) == {"flagged": None, "toy_evidence": None, "upper": None}


def test_a_declaration_refuses_an_unknown_kind_or_infinity_rule():
    with pytest.raises(ValueError, match="stored kind"):
        Stored("text", "a comment")
    with pytest.raises(ValueError, match="infinite"):
        Stored(NUMBER, "a comment", infinite="zero")


def test_a_record_is_read_back_from_its_stored_columns():
    row = type("Row", (), {"flagged": 1, "toy_evidence": 2.5, "upper": None})()
    assert from_stored(_Figures, row) == {"flagged": True, "evidence": 2.5, "upper": None}


def test_a_record_under_two_prefixes_is_two_sets_of_columns_each_comment_led_by_its_prefix():
    claimed, shown = Prefix("toy_", "at the claim"), Prefix("toy_lb_", "at the bound")
    record = _Figures(True, 2.0, None)
    assert stored_values(_Figures, record, shown) == {"toy_lb_flagged": 1, "toy_lb_toy_evidence": 2.0,
                                                     "toy_lb_upper": None}
    assert [(column, declaration.comment) for _, column, declaration in Part(_Figures, "", claimed).fields()] == [
        ("toy_flagged", "at the claim: a flag"), ("toy_toy_evidence", "at the claim: an evidence"),
        ("toy_upper", "at the claim: an upper limit")]


def test_a_required_declaration_is_a_not_null_column_and_an_open_range_excludes_its_ends():
    @dataclass(frozen=True)
    class _Share:
        share: float = stored(NUMBER, "a share", high=1.0, low_open=True, high_open=True, required=True)

    (_, _, declaration), = stored_fields(_Share)
    assert [declaration.in_range(v) for v in (0.0, 0.5, 1.0)] == [False, True, False]
    assert declaration.range_text() == "in (0, 1)"
    assert Stored(NUMBER, "x", high=1.0, high_open=True).range_text() == "in [0, 1)"
    assert Stored(NUMBER, "x", low_open=True).range_text() == "> 0"


# ------------------------------------------------------------------------------------------------ a value, per kind
def test_a_flag_is_stored_as_the_whole_number_0_or_1_and_read_back_as_a_bool():
    flag = Stored(FLAG, "a flag")
    stored_ = [flag.value(v) for v in (True, False, 1, 0, 2)]
    assert stored_ == [1, 0, 1, 0, 1]
    assert all(type(v) is int for v in stored_)  # an integer column: never a Python bool
    assert [flag.read(v) for v in (1, 0)] == [True, False]
    assert all(type(flag.read(v)) is bool for v in (1, 0))


@pytest.mark.parametrize("kind", KINDS)
def test_no_value_is_stored_and_read_as_none_whatever_the_kind(kind):
    declaration = Stored(kind, "a figure", infinite=AS_LARGEST if kind is NUMBER else REFUSE)
    assert declaration.value(None) is None
    assert declaration.read(None) is None


@pytest.mark.parametrize(("infinite", "expected"), [
    (REFUSE, INF),  # kept: the row's check refuses it, naming the column
    (AS_NONE, None),
    (AS_LARGEST, sys.float_info.max),
])
def test_an_infinite_number_is_stored_as_declared(infinite, expected):
    assert Stored(NUMBER, "a number", infinite=infinite).value(INF) == expected


@pytest.mark.parametrize("infinite", [REFUSE, AS_NONE, AS_LARGEST])
def test_a_finite_number_is_stored_unchanged_whatever_the_infinity_rule(infinite):
    declaration = Stored(NUMBER, "a number", infinite=infinite)
    assert declaration.value(2.5) == 2.5
    assert declaration.value(sys.float_info.max) == sys.float_info.max
    assert declaration.value(3) == 3 and type(declaration.value(3)) is int


@pytest.mark.parametrize("kind", [TEXT, COUNT, SMALL_COUNT])
def test_text_and_counts_are_stored_and_read_unchanged(kind):
    declaration = Stored(kind, "a figure", infinite=AS_NONE)  # the infinity rule is a number's only
    for value in ("binomial", 0, 7, INF):
        assert declaration.value(value) == value
        assert declaration.read(value) == value


def test_a_number_is_read_back_as_stored():
    declaration = Stored(NUMBER, "a number", infinite=AS_LARGEST)
    assert declaration.read(2.5) == 2.5
    assert declaration.read(0) == 0 and type(declaration.read(0)) is int


# ----------------------------------------------------------------------------------------------------- refusals
def test_a_declaration_refusing_a_kind_lists_the_kinds_and_names_what_it_got():
    with pytest.raises(ValueError) as refused:
        Stored(StoredKind("date", "date"), "a day")
    assert str(refused.value) == ("stored kind must be one of ['text', 'count', 'count', 'flag', 'number']; "
                                  "got StoredKind(check='date', column='date')")


def test_a_declaration_refusing_an_infinity_rule_lists_the_rules_and_names_what_it_got():
    with pytest.raises(ValueError) as refused:
        Stored(NUMBER, "a number", infinite="zero")
    assert str(refused.value) == "infinite must be 'refuse', 'none' or 'largest'; got 'zero'"
    with pytest.raises(ValueError, match="infinite must be"):
        Stored(NUMBER, "a number", infinite=None)


def test_a_declaration_is_frozen():
    declaration = Stored(TEXT, "a text")
    with pytest.raises(dataclasses.FrozenInstanceError):
        declaration.comment = "another"


def test_the_defaults_are_a_nullable_column_of_the_fields_name_from_zero_refusing_infinity():
    declaration = Stored(NUMBER, "a number")
    assert (declaration.column, declaration.choices, declaration.low, declaration.high, declaration.infinite,
            declaration.group, declaration.blank, declaration.required, declaration.low_open,
            declaration.high_open) == (None, None, 0.0, None, REFUSE, "", True, False, False, False)


# ------------------------------------------------------------------------------------------------------ ranges
def test_a_closed_range_includes_both_ends_and_no_upper_limit_has_none():
    closed = Stored(NUMBER, "a share", high=1.0)
    assert [closed.in_range(v) for v in (-0.1, 0.0, 0.5, 1.0, 1.1)] == [False, True, True, True, False]
    assert closed.range_text() == "in [0, 1]"
    unbounded = Stored(COUNT, "a count")
    assert [unbounded.in_range(v) for v in (-1, 0, 10**12, INF)] == [False, True, True, True]
    assert unbounded.range_text() == ">= 0"


def test_an_open_low_end_alone_excludes_only_the_low_end():
    share = Stored(NUMBER, "a share", high=1.0, low_open=True)
    assert [share.in_range(v) for v in (0.0, 1e-12, 1.0)] == [False, True, True]
    assert share.range_text() == "in (0, 1]"
    positive = Stored(COUNT, "a count", low=1.0, low_open=True)
    assert [positive.in_range(v) for v in (1, 2)] == [False, True]
    assert positive.range_text() == "> 1"


def test_a_negative_low_end_and_an_infinite_one_are_written_in_the_range():
    assert Stored(NUMBER, "a shift", low=-1.0, high=2.5).range_text() == "in [-1, 2.5]"
    anything = Stored(NUMBER, "a shift", low=-INF)
    assert anything.in_range(-1e300) and anything.range_text() == ">= -inf"


# ------------------------------------------------------------------------------------------------------- a prefix
def test_a_prefix_leads_the_column_and_the_comment_and_keeps_the_rest_of_the_declaration():
    declaration = Stored(NUMBER, "the ceiling", high=1.0, infinite=AS_NONE, group="risk", required=True,
                         high_open=True)
    column, under = Prefix("risk_lb_", "at the valid eps_lb").of("ceiling", declaration)
    assert column == "risk_lb_ceiling"
    assert under.comment == "at the valid eps_lb: the ceiling"
    assert under == dataclasses.replace(declaration, comment="at the valid eps_lb: the ceiling")
    assert declaration.comment == "the ceiling"  # the declaration itself is unchanged


def test_a_field_holding_a_record_says_its_prefix_and_a_plain_field_none():
    claimed = Prefix("risk_", "at the claim")

    @dataclass(frozen=True)
    class _Holder:
        at_claim: object = field(default=None, metadata=stored_under(claimed))
        plain: object = None

    held, plain = dataclasses.fields(_Holder)
    assert prefix_of(held) is claimed
    assert prefix_of(plain) is None
    assert stored_under(claimed) == {"labeldp.stored.under": claimed}


# ------------------------------------------------------------------------------------------ a record's fields
@dataclass(frozen=True)
class _Mixed:
    """Stored fields of two groups between fields that are not stored."""

    name: str = stored(TEXT, "a name", default="x")
    note: str = "not stored"
    count: int = stored(COUNT, "a count", column="row_count", default=0)
    ratio: float = stored(NUMBER, "a ratio", group="extra", default=0.5)
    flagged: bool = stored(FLAG, "a flag", group="extra", default=False)
    items: tuple = stored(TEXT, "items", default_factory=tuple, metadata={"other": 1})


def test_stored_fields_lists_only_stored_fields_in_field_order_under_their_column_names():
    assert [(name, column) for name, column, _ in stored_fields(_Mixed)] == [
        ("name", "name"), ("count", "row_count"), ("ratio", "ratio"), ("flagged", "flagged"), ("items", "items")]
    assert [declaration.comment for _, _, declaration in stored_fields(_Mixed)] == [
        "a name", "a count", "a ratio", "a flag", "items"]


def test_stored_fields_of_a_group_are_only_that_groups_and_the_empty_group_is_the_records_own():
    assert [name for name, _, _ in stored_fields(_Mixed, "extra")] == ["ratio", "flagged"]
    assert [name for name, _, _ in stored_fields(_Mixed, "")] == ["name", "count", "items"]
    assert stored_fields(_Mixed, "missing") == []


def test_stored_fields_under_a_prefix_prefix_the_declared_column_name():
    fields = stored_fields(_Mixed, "", Prefix("p_", "at p"))
    assert [(name, column, declaration.comment) for name, column, declaration in fields] == [
        ("name", "p_name", "at p: a name"), ("count", "p_row_count", "at p: a count"),
        ("items", "p_items", "at p: items")]


def test_a_part_is_its_records_stored_fields_of_its_group_under_its_prefix():
    prefix = Prefix("p_", "at p")
    assert Part(_Mixed).fields() == stored_fields(_Mixed, "")
    assert Part(_Mixed, "extra", prefix).fields() == stored_fields(_Mixed, "extra", prefix)
    assert [column for _, column, _ in Part(_Mixed, "extra", prefix).fields()] == ["p_ratio", "p_flagged"]


def test_a_record_without_stored_fields_has_none():
    @dataclass
    class _Plain:
        a: int = 0

    assert stored_fields(_Plain) == [] and stored_values(_Plain, _Plain()) == {}


def test_stored_keeps_the_fields_default_factory_and_other_metadata():
    record = _Mixed()
    assert (record.name, record.count, record.items) == ("x", 0, ())
    items = {f.name: f for f in dataclasses.fields(_Mixed)}["items"]
    assert items.metadata["other"] == 1
    assert stored_of(items) == Stored(TEXT, "items")
    assert stored_of({f.name: f for f in dataclasses.fields(_Mixed)}["note"]) is None
    assert stored_metadata(COUNT, "a count", column="c") == {STORED: Stored(COUNT, "a count", column="c")}


def test_a_record_is_stored_and_read_back_to_the_keywords_that_rebuild_it():
    record = _Mixed(name="n", count=3, ratio=INF, flagged=True, items=("a",))
    values = stored_values(_Mixed, record)
    assert values == {"name": "n", "row_count": 3, "ratio": INF, "flagged": 1, "items": ("a",)}
    row = type("Row", (), values)()
    assert from_stored(_Mixed, row) == {"name": "n", "count": 3, "ratio": INF, "flagged": True, "items": ("a",)}
    assert _Mixed(**from_stored(_Mixed, row)) == record
    assert type(values["flagged"]) is int and type(from_stored(_Mixed, row)["flagged"]) is bool


def test_a_row_is_read_by_the_declared_column_name_not_the_field_name():
    row = type("Row", (), {"name": "n", "row_count": 4, "ratio": 0.5, "flagged": 0, "items": ()})()
    assert from_stored(_Mixed, row)["count"] == 4
    with pytest.raises(AttributeError, match="row_count"):
        from_stored(_Mixed, type("Row", (), {"name": "n", "count": 4, "ratio": 0.5, "flagged": 0, "items": ()})())
