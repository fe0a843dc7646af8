"""Settings declared once (`labeldp.settings`): a field's `Setting` gives its JSON Schema, its checks on
construction (refusals naming the field and what it must be), its plain construction from a stored record and its
row of the settings table. The real configurations read by the plan schema and the command line:
tests/flows/test_plan_schema.py."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import pytest

from labeldp.errors import LabelDPInputError
from labeldp.settings import (
    SETTING,
    Setting,
    as_stored,
    check_settings,
    check_value,
    declared,
    default_of,
    describe,
    field_schema,
    help_text,
    range_schema,
    setting,
    setting_of,
    settings_table,
    type_schema,
)

INF = float("inf")


def _sides() -> tuple[str, ...]:
    return ("heads", "tails")


@dataclass(frozen=True)
class _Toy:
    """A configuration of every kind of setting, checked on construction."""

    rounds: int = setting(10, help="rounds played", minimum=1)
    share: float = setting(0.5, help="a share", minimum=0, maximum=1, open_minimum=True, open_maximum=True,
                           finite=True, unit="fraction")
    side: str = setting("heads", help="the side | face", choices=_sides, choices_help=lambda: "heads: up; tails: down")
    verbose: bool = setting(False, help="say more", option=False)
    limit: float | None = setting(None, help="an optional limit", minimum=0.0)
    names: tuple[str, ...] = setting(default_factory=tuple, help="names", allowed="a list | of names")
    plain: int = 3  # not a setting

    def __post_init__(self):
        check_settings(self, "toy.")


@dataclass(frozen=True)
class _Required:
    seed: int = setting(help="the seed", minimum=0)


# ---------------------------------------------------------------------------------------------- declarations
def test_setting_puts_its_declaration_in_the_fields_metadata_with_the_other_metadata():
    shared = Setting("shared help", minimum=2)

    @dataclass
    class _Fields:
        a: int = setting(3, meaning=shared, metadata={"other": True})
        b: int = setting(4, help="b's help", maximum=9)

    a, b = dataclasses.fields(_Fields)
    assert setting_of(a) is shared and a.metadata["other"] is True
    assert b.metadata[SETTING] == Setting("b's help", maximum=9)
    assert _Fields() == _Fields(3, 4)


def test_declared_lists_the_settings_in_field_order_with_their_resolved_types():
    assert [(item.name, hint) for item, _, hint in declared(_Toy)] == [
        ("rounds", int), ("share", float), ("side", str), ("verbose", bool), ("limit", float | None),
        ("names", tuple[str, ...])]
    assert [meaning.help for _, meaning, _ in declared(_Toy)][:2] == ["rounds played", "a share"]
    assert setting_of(dataclasses.fields(_Toy)[-1]) is None


def test_default_of_reads_a_default_a_factory_or_missing():
    fields = {item.name: item for item in dataclasses.fields(_Toy)}
    assert default_of(fields["rounds"]) == 10
    assert default_of(fields["limit"]) is None
    assert default_of(fields["names"]) == ()
    assert default_of(dataclasses.fields(_Required)[0]) is dataclasses.MISSING


# ----------------------------------------------------------------------------------------------- JSON Schema
@pytest.mark.parametrize(("hint", "schema"), [
    (bool, {"type": "boolean"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (str, {"type": "string"}),
    (type(None), {"type": "null"}),
    (tuple[str, ...], {"type": "array", "items": {"type": "string"}}),
    (int | None, {"type": ["integer", "null"]}),
    (tuple[int, ...] | None, {"type": ["array", "null"], "items": {"type": "integer"}}),
])
def test_an_annotation_is_its_json_type(hint, schema):
    assert type_schema(hint) == schema


@pytest.mark.parametrize("hint", [dict, list[int], bytes])
def test_an_annotation_without_a_json_type_is_a_type_error_naming_it(hint):
    with pytest.raises(TypeError, match="no JSON type for"):
        type_schema(hint)


def test_a_range_is_inclusive_unless_declared_open():
    assert range_schema(Setting("x")) == {}
    assert range_schema(Setting("x", minimum=1)) == {"minimum": 1}
    assert range_schema(Setting("x", minimum=0, maximum=1, open_minimum=True, open_maximum=True)) == {
        "exclusiveMinimum": 0, "exclusiveMaximum": 1}
    assert range_schema(Setting("x", maximum=5, open_minimum=True)) == {"maximum": 5}


def test_help_text_adds_the_unit_and_the_choices_help():
    assert help_text(Setting("rounds played")) == "rounds played"
    assert help_text(Setting("a share", unit="fraction")) == "a share (fraction)"
    assert help_text(Setting("the side", unit="face", choices_help=lambda: "heads: up")) == (
        "the side (face): heads: up")


def test_a_fields_schema_has_its_description_type_range_and_choices():
    assert field_schema(Setting("a share", minimum=0, maximum=1, open_maximum=True), float) == {
        "description": "a share", "type": "number", "minimum": 0, "exclusiveMaximum": 1}
    assert field_schema(Setting("the side", choices=_sides), str | None) == {
        "description": "the side", "type": ["string", "null"], "enum": ["heads", "tails"]}


@pytest.mark.parametrize(("schema", "words"), [
    ({"enum": ["a", "b"]}, "one of ['a', 'b']"),
    ({"const": "fixed"}, '"fixed"'),
    ({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}, "a whole number >= 1 or null"),
    ({"oneOf": [{"type": "boolean"}, {"type": "string", "minLength": 1}]}, "true or false or non-empty text"),
    ({"type": "integer"}, "a whole number"),
    ({"type": "number", "minimum": 0, "maximum": 1}, "a finite number in [0, 1]"),
    ({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}, "a finite number in (0, 1)"),
    ({"type": "number", "minimum": 0, "exclusiveMaximum": 1.5}, "a finite number in [0, 1.5)"),
    ({"type": "number", "exclusiveMinimum": 0}, "a finite number > 0"),
    ({"type": "integer", "maximum": 9}, "a whole number <= 9"),
    ({"type": "integer", "exclusiveMaximum": 9}, "a whole number < 9"),
    ({"type": ["number", "null"], "minimum": 0}, "a finite number >= 0 or null"),
    ({"type": "array"}, "a list"),
    ({"type": "object"}, "a JSON object"),
    ({"type": "string"}, "text"),
    ({"type": "string", "pattern": "^[a-z]+$"}, "text matching ^[a-z]+$"),
    ({"type": "string", "pattern": "^[a-z]+$", "description": "a safe name"}, "a safe name"),
    ({}, "valid"),
])
def test_a_schema_is_described_in_words(schema, words):
    assert describe(schema) == words


# --------------------------------------------------------------------------------------------------- checks
def test_a_valid_configuration_is_kept_with_whole_numbers_as_int_and_numbers_as_float():
    toy = _Toy(rounds=4.0, limit=3)
    assert (toy.rounds, toy.limit) == (4, 3.0)
    assert type(toy.rounds) is int and type(toy.limit) is float
    assert _Toy(limit=INF).limit == INF  # not declared finite
    assert _Toy() == _Toy(10, 0.5, "heads", False, None, ())


@pytest.mark.parametrize(("changes", "message"), [
    ({"rounds": 0}, "toy.rounds must be a whole number >= 1; got 0"),
    ({"rounds": 2.5}, "toy.rounds must be a whole number >= 1; got 2.5"),
    ({"rounds": True}, "toy.rounds must be a whole number >= 1; got True"),
    ({"rounds": "3"}, "toy.rounds must be a whole number >= 1; got '3'"),
    ({"rounds": None}, "toy.rounds must be a whole number >= 1; got None"),
    ({"rounds": INF}, "toy.rounds must be a whole number >= 1; got inf"),
    ({"rounds": [1]}, "toy.rounds must be a whole number >= 1; got [1]"),
    ({"share": 0.0}, "toy.share must be a finite number in (0, 1); got 0.0"),
    ({"share": 1.0}, "toy.share must be a finite number in (0, 1); got 1.0"),
    ({"share": math.nan}, "toy.share must be a finite number in (0, 1); got nan"),
    ({"share": INF}, "toy.share must be a finite number in (0, 1); got inf"),
    ({"side": "edge"}, "toy.side must be one of ['heads', 'tails']; got 'edge'"),
    ({"side": 1}, "toy.side must be one of ['heads', 'tails']; got 1"),
    ({"verbose": 1}, "toy.verbose must be true or false; got 1"),
    ({"verbose": None}, "toy.verbose must be true or false; got None"),
    ({"limit": -1.0}, "toy.limit must be a finite number >= 0.0 or null; got -1.0"),
    ({"limit": math.nan}, "toy.limit must be a finite number >= 0.0 or null; got nan"),
])
def test_a_value_outside_its_declaration_is_refused_naming_the_field_and_what_it_must_be(changes, message):
    with pytest.raises(LabelDPInputError) as refused:
        _Toy(**changes)
    assert str(refused.value) == message


def test_a_refusal_adds_the_declared_hint():
    meaning = Setting("rounds", minimum=1, hint="use 1 for a single round")
    with pytest.raises(LabelDPInputError) as refused:
        check_value("rounds", 0, meaning, int)
    assert str(refused.value) == "rounds must be a whole number >= 1 (use 1 for a single round); got 0"


def test_an_infinite_number_is_kept_unless_declared_finite():
    assert check_value("x", INF, Setting("x"), float) == INF
    assert check_value("x", -INF, Setting("x"), float) == -INF
    with pytest.raises(LabelDPInputError, match="x must be a finite number; got inf"):
        check_value("x", INF, Setting("x", finite=True), float)


def test_the_ends_of_a_closed_range_are_allowed():
    meaning = Setting("x", minimum=0, maximum=1)
    assert [check_value("x", v, meaning, float) for v in (0, 1)] == [0.0, 1.0]
    with pytest.raises(LabelDPInputError):
        check_value("x", 1.0000001, meaning, float)


def test_a_text_without_choices_refuses_what_is_not_text():
    for value in (3, b"x", None):
        with pytest.raises(LabelDPInputError, match=f"^note must be text; got {value!r}$"):
            check_value("note", value, Setting("note"), str)


def test_a_value_of_no_declared_kind_is_kept_as_it_is():
    names = ("a", "b")
    assert check_value("names", names, Setting("names"), tuple[str, ...]) is names
    assert check_value("text", "", Setting("text"), str) == ""


def test_a_whole_number_accepts_an_integral_float_and_refuses_a_non_number():
    assert check_value("n", 3.0, Setting("n"), int) == 3
    with pytest.raises(LabelDPInputError, match="n must be a whole number; got 'x'"):
        check_value("n", "x", Setting("n"), int)
    with pytest.raises(LabelDPInputError, match=r"n must be a whole number; got \{\}"):
        check_value("n", {}, Setting("n"), int)


def test_check_settings_stores_the_checked_values_and_leaves_other_fields():
    toy = object.__new__(_Toy)
    for name, value in {"rounds": 2.0, "share": 0.25, "side": "tails", "verbose": True, "limit": 3, "names": (),
                        "plain": "anything"}.items():
        object.__setattr__(toy, name, value)
    check_settings(toy)
    assert (toy.rounds, toy.share, toy.limit, toy.plain) == (2, 0.25, 3.0, "anything")
    assert (type(toy.rounds), type(toy.limit)) == (int, float)
    object.__setattr__(toy, "rounds", 0)
    with pytest.raises(LabelDPInputError, match=r"^rounds must be"):
        check_settings(toy)  # no prefix: the field's own name


# --------------------------------------------------------------------------------------- read back unchecked
def test_as_stored_builds_without_the_checks_with_the_other_fields_their_defaults():
    toy = as_stored(_Toy, {"side": "a plugin's side", "rounds": 0})
    assert type(toy) is _Toy
    assert (toy.side, toy.rounds, toy.share, toy.names, toy.plain) == ("a plugin's side", 0, 0.5, (), 3)


def test_as_stored_refuses_unknown_fields_naming_them():
    with pytest.raises(TypeError) as refused:
        as_stored(_Toy, {"rounds": 1, "zeta": 1, "alpha": 2, "mu": 3, "beta": 4, "omega": 5})
    assert str(refused.value) == "_Toy: unexpected field(s) ['alpha', 'beta', 'mu', 'omega', 'zeta']"


def test_as_stored_gives_each_record_its_own_default_from_a_factory():
    @dataclass(frozen=True)
    class _Lists:
        items: list = dataclasses.field(default_factory=list)

    first, second = as_stored(_Lists, {}), as_stored(_Lists, {})
    assert first.items == [] and first.items is not second.items


# ---------------------------------------------------------------------------------------------------- docs
def test_the_settings_table_has_one_row_per_setting_in_field_order():
    assert settings_table(_Toy).splitlines() == [
        "| setting | allowed | default | meaning |",
        "|---|---|---|---|",
        "| `rounds` | a whole number >= 1 | `10` | rounds played |",
        "| `share` | a finite number in (0, 1) | `0.5` | a share (fraction) |",
        "| `side` | one of ['heads', 'tails'] | `\"heads\"` | the side \\| face: heads: up; tails: down |",
        "| `verbose` | true or false | `false` | say more |",
        "| `limit` | a finite number >= 0.0 or null | `null` | an optional limit |",
        "| `names` | a list / of names | built in | names |"]


def test_the_settings_table_shows_a_required_setting_and_the_defaults_given():
    assert settings_table(_Required).splitlines()[2] == "| `seed` | a whole number >= 0 | required | the seed |"
    rows = settings_table(_Toy, defaults={"rounds": 20, "names": ("a", "b")}).splitlines()
    assert rows[2] == "| `rounds` | a whole number >= 1 | `20` | rounds played |"
    assert rows[7] == "| `names` | a list / of names | built in | names |"  # a factory's default: built in


def test_the_settings_table_writes_a_tuple_default_as_a_json_list():
    @dataclass(frozen=True)
    class _Tuple:
        sizes: tuple[int, ...] = setting((1, 2), help="sizes")

    assert settings_table(_Tuple).splitlines()[2] == "| `sizes` | a list | `[1, 2]` | sizes |"


def test_a_whole_number_too_large_for_a_double_is_refused_naming_the_field():
    with pytest.raises(LabelDPInputError, match=r"^toy\.rounds must be a whole number >= 1; got 1000"):
        _Toy(rounds=10**400)
