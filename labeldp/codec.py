"""One codec for every record: a frozen dataclass to its JSON form (`encode`) and back (`decode`), by its fields'
types, so no record writes its own ``to_dict`` / ``from_dict``.

By type, a field's value is written as:

* a nested dataclass: its own record (a dict of its fields, in field order);
* ``tuple[X, ...]``, ``tuple[X, Y]``, ``list[X]``: a JSON list (read back as the annotated container);
* ``dict[str, X]``: a JSON object;
* ``X | None``: null or X (a field marked `EMPTY_IS_NONE` writes None as ``{}`` and reads ``{}`` as None; a field
  marked `OMIT_DEFAULT` is not written while it holds its default, and an absent key reads as that default);
* ``datetime.date`` / ``datetime.datetime``: its ISO string;
* an Enum: its value;
* a float: as is (``json`` writes infinity and NaN as ``Infinity`` / ``NaN``); a field marked `INF_AS_STRING` writes
  an infinity as ``"inf"`` / ``"-inf"``. Reading a float accepts an int and those strings;
* a numpy scalar (encode only): the Python number it holds.

A field marked `NOT_STORED` is no part of the stored form (e.g. where the record was read from, for messages): it is
never written, and a stored key of its name is unknown.

A field marked `OMIT_DEFAULT` whose default is a sentinel (not None, e.g. an "absent" marker distinct from null)
is read by its annotation without the sentinel's type. A field marked ``reader(read)`` is read by
``read(value, name)`` instead of by its type (a rule beyond the type: a range, a canonical spelling, an int that
must stay an int); ``name`` is the field's path, for the message.

Reading is strict: a key that is not a field, or a field without a default that is missing, raises
LabelDPInputError naming the record (its path from the outermost one, e.g. ``result.attack_curve``) and the keys.

Hooks a record class may define (the only per-class code):

* ``_upgrade(cls, value: dict) -> dict`` (classmethod): called on the stored dict before it is read, to turn an old
  shape into the current one (or refuse it with a message saying what to do);
* ``_computed``: a tuple of properties written after the fields (for the reader of the JSON) and dropped when read;
* ``_encoded(self)`` and ``_decoded(cls, value, name)`` (classmethod): for a record whose stored form is not its
  fields (e.g. a sparse array, or nested records stored flat); the codec then writes and reads that form as the
  class says (`encode_fields` and `decode_fields` are the codec's own reading, for a hook that reshapes it).

How a record evolves without breaking what is stored:

* a new field has a default (what an old record means by its absence), or the class's ``_upgrade`` fills it in;
* a field is never renamed without an ``_upgrade`` that moves the old key to the new name;
* a removed field is dropped by an ``_upgrade`` (or the old records stop reading, named by the error);
* a changed meaning gets a new field name, not a new reading of the old key.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import math
import operator
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache, reduce
from typing import Any

from labeldp.errors import LabelDPInputError

# Field metadata: ``field(default=None, metadata=EMPTY_IS_NONE)``.
EMPTY_IS_NONE = {"codec_empty_is_none": True}
INF_AS_STRING = {"codec_inf_as_string": True}
OMIT_DEFAULT = {"codec_omit_default": True}
NOT_STORED = {"codec_not_stored": True}


def reader(read: Callable[[Any, str], Any]) -> dict:
    """Field metadata: the field's stored value is read by ``read(value, name)`` (module docstring)."""
    return {"codec_read": read}

_FLOAT_WORDS = {"inf": math.inf, "-inf": -math.inf, "Infinity": math.inf, "-Infinity": -math.inf, "nan": math.nan,
                "NaN": math.nan}


def encode(obj: Any) -> Any:
    """``obj`` as JSON-able values: dicts with string keys, lists, str, int, float, bool and None."""
    if type(obj).__module__ == "numpy" and getattr(obj, "shape", None) == ():
        return obj.item()
    if obj is None or (isinstance(obj, bool | int | float | str) and not isinstance(obj, enum.Enum)):
        return obj
    if isinstance(obj, enum.Enum):
        return encode(obj.value)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        hook = getattr(obj, "_encoded", None)
        if hook is not None:
            return encode(hook())
        return encode_fields(obj)
    if isinstance(obj, dt.date):  # datetime included
        return obj.isoformat()
    if isinstance(obj, list | tuple):
        return [encode(v) for v in obj]
    if isinstance(obj, Mapping):
        return {str(encode(k)): encode(v) for k, v in obj.items()}
    raise TypeError(f"encode: cannot write a {type(obj).__name__}")


def encode_fields(obj: Any) -> dict:
    """A record's fields (and ``_computed`` properties) as `encode` writes them without the class's ``_encoded``
    hook: for a hook that reshapes them."""
    out = {f.name: _encode_field(f, getattr(obj, f.name)) for f in dataclasses.fields(obj)
           if not (f.metadata.get("codec_omit_default") and getattr(obj, f.name) is f.default)
           and "codec_not_stored" not in f.metadata}
    for name in getattr(obj, "_computed", ()):
        out[name] = encode(getattr(obj, name))
    return out


def _encode_field(f: dataclasses.Field, value: Any) -> Any:
    if value is None and f.metadata.get("codec_empty_is_none"):
        return {}
    if f.metadata.get("codec_inf_as_string") and isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return encode(value)


def decode(cls: type, value: Any, name: str | None = None) -> Any:
    """``value`` (what `encode` wrote, JSON-decoded or not) read as ``cls`` (a dataclass or any annotation the codec
    knows); an instance of ``cls`` is returned as is. ``name``: the record's name in messages (default: the class's)."""
    return _decode(cls, value, name or getattr(cls, "__name__", str(cls)))


@cache
def _hints(cls: type) -> dict:
    """Each field's annotation as it is read (an `OMIT_DEFAULT` field's without its sentinel default's type)."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        sentinel = type(f.default)
        if f.metadata.get("codec_omit_default") and f.default is not None and f.default is not dataclasses.MISSING \
                and sentinel in typing.get_args(hints[f.name]):
            hints[f.name] = reduce(operator.or_, [a for a in typing.get_args(hints[f.name]) if a is not sentinel])
    return hints


def _fields(cls: type) -> dict:
    """The fields a stored record holds (not the `NOT_STORED` ones)."""
    return {f.name: f for f in dataclasses.fields(cls) if "codec_not_stored" not in f.metadata}


def _decode_record(cls: type, value: Any, name: str) -> Any:
    if isinstance(value, cls):
        return value
    hook = getattr(cls, "_decoded", None)
    if hook is not None:
        return hook(value, name)
    return decode_fields(cls, value, name)


def decode_fields(cls: type, value: Any, name: str) -> Any:
    """``value`` read as ``cls`` field by field, as `decode` reads it without the class's ``_decoded`` hook (its
    ``_upgrade`` included): for a hook that reshapes the stored dict first. A value that is already of a field's
    type is taken as is."""
    if not isinstance(value, Mapping):
        raise LabelDPInputError(f"{name}: expected a record (mapping); got {type(value).__name__}")
    upgrade = getattr(cls, "_upgrade", None)
    if upgrade is not None:
        value = upgrade(dict(value))
    computed = getattr(cls, "_computed", ())
    if computed:
        value = {k: v for k, v in value.items() if k not in computed}
    fields = _fields(cls)
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise LabelDPInputError(f"{name}: unknown field(s) {unknown}")
    missing = [n for n, f in fields.items() if n not in value and f.init
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise LabelDPInputError(f"{name}: missing field(s) {missing}")
    hints = _hints(cls)
    kwargs = {}
    for key, raw in value.items():
        f = fields[key]
        if not f.init:
            continue  # computed by the class itself
        if f.metadata.get("codec_empty_is_none") and isinstance(raw, Mapping) and not raw:
            raw = None
        read = f.metadata.get("codec_read")
        kwargs[key] = read(raw, f"{name}.{key}") if read is not None else _decode(hints[key], raw, f"{name}.{key}")
    return cls(**kwargs)


def _decode(tp: Any, value: Any, name: str) -> Any:
    if tp is Any or tp is object:
        return value
    if tp is None or tp is type(None):
        if value is not None:
            raise LabelDPInputError(f"{name}: expected null; got {value!r}")
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _decode(options[0], value, name)
        errors = []
        for option in options:
            try:
                return _decode(option, value, name)
            except (LabelDPInputError, TypeError, ValueError) as exc:
                errors.append(str(exc))
        raise LabelDPInputError(f"{name}: {value!r} is none of {options} ({'; '.join(errors)})")
    if origin is typing.Literal:
        if value not in args:
            raise LabelDPInputError(f"{name}: must be one of {list(args)}; got {value!r}")
        return value
    if origin in (tuple, list) or tp in (tuple, list):
        if not isinstance(value, list | tuple):
            raise LabelDPInputError(f"{name}: expected a list; got {type(value).__name__}")
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(value):
                raise LabelDPInputError(f"{name}: expected {len(args)} items; got {len(value)}")
            return tuple(_decode(a, v, f"{name}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True)))
        item = args[0] if args else Any
        items = [_decode(item, v, f"{name}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if (origin or tp) is tuple else items
    if origin in (dict, Mapping) or tp in (dict, Mapping) or origin is typing.get_origin(Mapping[str, Any]):
        if not isinstance(value, Mapping):
            raise LabelDPInputError(f"{name}: expected a mapping; got {type(value).__name__}")
        key_tp, value_tp = args if args else (Any, Any)
        return {_decode(key_tp, k, name): _decode(value_tp, v, f"{name}.{k}") for k, v in value.items()}
    if isinstance(tp, type):
        if dataclasses.is_dataclass(tp):
            return _decode_record(tp, value, name)
        if issubclass(tp, enum.Enum):
            try:
                return tp(value)
            except ValueError:
                raise LabelDPInputError(
                    f"{name}: must be one of {[m.value for m in tp]}; got {value!r}") from None
        if tp is bool:
            if not isinstance(value, bool):
                raise LabelDPInputError(f"{name}: expected true or false; got {value!r}")
            return value
        if tp is int:
            if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
                raise LabelDPInputError(f"{name}: expected an integer; got {value!r}")
            return int(value)
        if tp is float:
            if isinstance(value, str) and value in _FLOAT_WORDS:
                return _FLOAT_WORDS[value]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise LabelDPInputError(f"{name}: expected a number; got {value!r}")
            return float(value)
        if tp is str:
            if not isinstance(value, str):
                raise LabelDPInputError(f"{name}: expected a string; got {value!r}")
            return value
        if tp is dt.datetime or tp is dt.date:
            if isinstance(value, tp):
                return value
            try:
                return tp.fromisoformat(value)
            except (TypeError, ValueError):
                raise LabelDPInputError(f"{name}: expected an ISO {tp.__name__}; got {value!r}") from None
        if isinstance(value, tp):
            return value
    raise LabelDPInputError(f"{name}: cannot read {value!r} as {tp}")


__all__ = ["EMPTY_IS_NONE", "INF_AS_STRING", "NOT_STORED", "OMIT_DEFAULT", "decode", "decode_fields", "encode", "encode_fields",
           "reader"]
