"""Settings declared once: a configuration field's type (its annotation), default, range, choices, unit and help
live in the field itself (`setting`), and everything else is read from there: the checks on construction
(`check_settings`), the JSON Schema of plan and dataset files (`flows.plan_schema`), the command-line options
(`flows.commands.audit_options`) and the settings table in docs/settings.md (`settings_table`).

Pure Python; no import beyond the errors module, so every layer can declare its settings with it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labeldp.errors import LabelDPInputError

SETTING = "labeldp.setting"


@dataclass(frozen=True)
class Setting:
    """What a field means and allows, beyond its annotation and default.

    help: one line of text (the docs, --help and the schema's description). minimum / maximum: the range, each
    excluded when ``open_minimum`` / ``open_maximum``. finite: a number must be finite. choices: the allowed
    names, read when needed (a registry's current names). choices_help: "name: what it does; ..." for a choice.
    unit: the quantity's unit, when it has one. option: offered on the command line as ``--<name with dashes>``.
    hint: a few words a refusal adds after what the value must be. allowed: what the value may be, in words, for
    a field whose type is not a plain JSON value (a list of objects, a file path).
    """

    help: str
    minimum: float | None = None
    maximum: float | None = None
    open_minimum: bool = False
    open_maximum: bool = False
    finite: bool = False
    choices: Callable[[], Sequence[str]] | None = None
    choices_help: Callable[[], str] | None = None
    unit: str | None = None
    option: bool = True
    hint: str | None = None
    allowed: str | None = None


def setting(default: Any = dataclasses.MISSING, *, default_factory: Any = dataclasses.MISSING,
            meaning: Setting | None = None, metadata: Mapping[str, Any] | None = None, **declaration: Any) -> Any:
    """A dataclass field carrying its `Setting`: ``meaning`` (one declared elsewhere and shared), or the
    `Setting` of ``declaration``'s keys; ``metadata``: the field's other metadata (e.g. `labeldp.codec.OMIT_DEFAULT`)."""
    return dataclasses.field(default=default, default_factory=default_factory,
                             metadata={SETTING: meaning or Setting(**declaration), **(metadata or {})})


def setting_of(item: dataclasses.Field) -> Setting | None:
    return item.metadata.get(SETTING)


def declared(cls: type) -> list[tuple[dataclasses.Field, Setting, Any]]:
    """(field, its Setting, its resolved annotation) of each declared setting of ``cls``, in field order."""
    hints = typing.get_type_hints(cls)
    return [(item, setting_of(item), hints[item.name]) for item in dataclasses.fields(cls)
            if setting_of(item) is not None]


def default_of(item: dataclasses.Field) -> Any:
    """A field's default (MISSING when it has none)."""
    if item.default is not dataclasses.MISSING:
        return item.default
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return dataclasses.MISSING


# ------------------------------------------------------------------------------------------ JSON Schema


def type_schema(hint: Any) -> dict[str, Any]:
    """The JSON type of an annotation (bool, int, float, str, tuple[str, ...], X | None)."""
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        parts = [type_schema(arg) for arg in typing.get_args(hint)]
        merged = {key: value for part in parts for key, value in part.items() if key != "type"}
        return {"type": [part["type"] for part in parts], **merged}
    if hint is type(None):
        return {"type": "null"}
    if typing.get_origin(hint) is tuple:
        return {"type": "array", "items": type_schema(typing.get_args(hint)[0])}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if hint in simple:
        return {"type": simple[hint]}
    raise TypeError(f"no JSON type for {hint!r}")  # a new field type: teach type_schema


def range_schema(meaning: Setting) -> dict[str, Any]:
    out = {}
    if meaning.minimum is not None:
        out["exclusiveMinimum" if meaning.open_minimum else "minimum"] = meaning.minimum
    if meaning.maximum is not None:
        out["exclusiveMaximum" if meaning.open_maximum else "maximum"] = meaning.maximum
    return out


def help_text(meaning: Setting) -> str:
    """The setting's help, with its choices' own help when it has some."""
    text = meaning.help + (f" ({meaning.unit})" if meaning.unit else "")
    return f"{text}: {meaning.choices_help()}" if meaning.choices_help else text


def field_schema(meaning: Setting, hint: Any) -> dict[str, Any]:
    """One setting's schema: its type, range, choices and description."""
    schema = {"description": help_text(meaning), **type_schema(hint), **range_schema(meaning)}
    if meaning.choices is not None:
        schema["enum"] = list(meaning.choices())
    return schema


def describe(schema: dict[str, Any]) -> str:
    """What a value must be, in words: "one of [...]", "a whole number >= 1", "a finite number in (0, 1)"."""
    if "enum" in schema:
        return f"one of {list(schema['enum'])}"
    if "const" in schema:
        return json.dumps(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(describe(branch) for branch in schema[key])
    kinds = schema.get("type", ())
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    words = {"integer": "a whole number" + _bounds(schema), "number": "a finite number" + _bounds(schema),
             "boolean": "true or false", "array": "a list", "object": "a JSON object", "null": "null",
             "string": (schema.get("description", f"text matching {schema['pattern']}") if "pattern" in schema
                        else "non-empty text" if schema.get("minLength") else "text")}
    return " or ".join(words[kind] for kind in kinds) or "valid"


def _bounds(schema: dict[str, Any]) -> str:
    low = ("[", schema["minimum"]) if "minimum" in schema else (
        ("(", schema["exclusiveMinimum"]) if "exclusiveMinimum" in schema else None)
    high = ("]", schema["maximum"]) if "maximum" in schema else (
        (")", schema["exclusiveMaximum"]) if "exclusiveMaximum" in schema else None)
    if low and high:
        return f" in {low[0]}{json.dumps(low[1])}, {json.dumps(high[1])}{high[0]}"
    if low:
        return f" {'>=' if low[0] == '[' else '>'} {json.dumps(low[1])}"
    if high:
        return f" {'<=' if high[0] == ']' else '<'} {json.dumps(high[1])}"
    return ""


# ------------------------------------------------------------------------------------------ checks


@functools.cache
def _kinds(hint: Any) -> tuple[str, ...]:
    """The JSON types an annotation allows (cached: the bounds check a setting in their inner loops)."""
    kind = type_schema(hint)["type"]
    return tuple(kind) if isinstance(kind, list) else (kind,)


def check_value(name: str, value: Any, meaning: Setting, hint: Any) -> Any:
    """``value`` as the setting holds it (an int for a whole number, a float for a number), or LabelDPInputError
    "<name> must be <what the declaration allows>; got <value>"."""
    kinds = _kinds(hint)

    def bad() -> LabelDPInputError:
        extra = f" ({meaning.hint})" if meaning.hint else ""
        return LabelDPInputError(f"{name} must be {describe(field_schema(meaning, hint))}{extra}; got {value!r}")

    if value is None:
        if "null" in kinds:
            return None
        raise bad()
    if "boolean" in kinds:
        if not isinstance(value, bool):
            raise bad()
        return value
    if "integer" in kinds or "number" in kinds:
        if isinstance(value, bool) or isinstance(value, str):
            raise bad()
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):  # an int beyond a double's range too
            raise bad() from None
        if math.isnan(number) or (math.isinf(number) and (meaning.finite or "integer" in kinds)):
            raise bad()
        if "integer" in kinds:
            if number != int(number):
                raise bad()
            number = int(number)
        low, high = meaning.minimum, meaning.maximum
        if low is not None and (number < low or (meaning.open_minimum and number == low)):
            raise bad()
        if high is not None and (number > high or (meaning.open_maximum and number == high)):
            raise bad()
        return number
    if "string" in kinds:
        if not isinstance(value, str):
            raise bad()
        if meaning.choices is not None and value not in meaning.choices():
            raise bad()
        return value
    return value


def as_stored(cls: type, values: Mapping[str, Any]) -> Any:
    """An instance of the frozen settings dataclass ``cls`` holding ``values`` (its other fields their defaults)
    without its checks: a configuration read back as a record wrote it, whose names this process's registries need
    not know (e.g. a method a plugin registered where the record was written)."""
    unknown = sorted(set(values) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise TypeError(f"{cls.__name__}: unexpected field(s) {unknown}")
    out = object.__new__(cls)
    for item in dataclasses.fields(cls):
        default = item.default_factory() if item.default_factory is not dataclasses.MISSING else item.default
        object.__setattr__(out, item.name, values.get(item.name, default))
    return out


def check_settings(obj: Any, prefix: str = "") -> None:
    """Checks every declared setting of a (frozen) dataclass instance against its declaration and stores the
    value as checked (`check_value`); the message names ``prefix`` + the field."""
    for item, meaning, hint in declared(type(obj)):
        value = check_value(prefix + item.name, getattr(obj, item.name), meaning, hint)
        object.__setattr__(obj, item.name, value)


# ------------------------------------------------------------------------------------------ docs


def settings_table(cls: type, *, defaults: dict[str, Any] | None = None) -> str:
    """A Markdown table of ``cls``'s settings: name, type and range, default, help."""
    rows = ["| setting | allowed | default | meaning |", "|---|---|---|---|"]
    for item, meaning, hint in declared(cls):
        allowed = meaning.allowed or describe(field_schema(meaning, hint))
        default = (defaults or {}).get(item.name, default_of(item))
        if default is dataclasses.MISSING:
            shown = "required"
        elif meaning.allowed:
            shown = "built in" if item.default is dataclasses.MISSING else f"`{json.dumps(default)}`"
        else:
            shown = f"`{json.dumps(list(default) if isinstance(default, tuple) else default)}`"
        text = help_text(meaning).replace("|", "\\|")
        rows.append(f"| `{item.name}` | {allowed.replace('|', '/')} | {shown} | {text} |")
    return "\n".join(rows)


__all__ = ["SETTING", "Setting", "as_stored", "check_settings", "check_value", "declared", "default_of", "describe",
           "field_schema", "help_text", "range_schema", "setting", "setting_of", "settings_table", "type_schema"]
