"""Stored figures declared once: a record's field that the warehouse keeps as a column says so on the field itself
(`stored`): the column's kind, its comment, its name when it differs from the field's, and what a value must be.
The warehouse reads everything else from there: the table's columns (`auditing.sinks.warehouse.schema`), the row's
values taken from the record (`Stored.value`) and the checks on a row before it is written
(`auditing.sinks.warehouse.rows`). A record stored more than once in a row (a risk block at the claim and at the
bound) is declared once and stored under a `Prefix` each time, which the field holding it names (`stored_under`). A
new figure of such a record is one field here plus one migration (docs/warehouse.md: adding a stored figure).

Pure Python (the standard library only), so every layer, the data-only records included, can declare its stored
fields with it; it knows nothing of SQL or of any table.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

STORED = "labeldp.stored"
UNDER = "labeldp.stored.under"  # a field holding a record stored under a `Prefix`


@dataclass(frozen=True)
class StoredKind:
    """What a stored value is: ``check`` names the row check it gets (text | count | flag | number), ``column`` the
    column's logical type (`auditing.sinks.warehouse.schema.Column.kind`)."""

    check: str
    column: str


TEXT = StoredKind("text", "text")
COUNT = StoredKind("count", "bigint")  # a whole number >= 0
SMALL_COUNT = StoredKind("count", "integer")  # a whole number >= 0 in a 32-bit column
FLAG = StoredKind("flag", "integer")  # a bool, stored 0 or 1
NUMBER = StoredKind("number", "double")  # a finite number in [low, high]
KINDS = (TEXT, COUNT, SMALL_COUNT, FLAG, NUMBER)

# How an infinite number is stored: refused by the row's check, as no value (NULL), or as the largest double.
REFUSE, AS_NONE, AS_LARGEST = "refuse", "none", "largest"


@dataclass(frozen=True)
class Stored:
    """A stored field's column. comment: the column's comment, verbatim. column: its name (None: the field's).
    choices: the names a text may be (read when checked: a registry's current names). low / high: a number's range
    (high None: no upper limit). infinite: how an infinite number is stored (`REFUSE`, `AS_NONE`, `AS_LARGEST`).
    group: the block of columns it belongs to when a record's stored fields are not all in one block of the table
    ("" : the record's own). blank: a text may be empty or blank. required: the column is NOT NULL (a row without a
    value is refused). low_open / high_open: the range excludes ``low`` / ``high`` (a count's range: ``low`` only)."""

    kind: StoredKind
    comment: str
    column: str | None = None
    choices: Callable[[], Sequence[str]] | None = None
    low: float = 0.0
    high: float | None = None
    infinite: str = REFUSE
    group: str = ""
    blank: bool = True
    required: bool = False
    low_open: bool = False
    high_open: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"stored kind must be one of {[k.check for k in KINDS]}; got {self.kind!r}")
        if self.infinite not in (REFUSE, AS_NONE, AS_LARGEST):
            raise ValueError(f"infinite must be {REFUSE!r}, {AS_NONE!r} or {AS_LARGEST!r}; got {self.infinite!r}")

    def in_range(self, value: float) -> bool:
        """True when the number ``value`` is in [low, high] (an open end excluded; high None: no upper limit)."""
        above = value > self.low if self.low_open else value >= self.low
        return above and (self.high is None or (value < self.high if self.high_open else value <= self.high))

    def range_text(self) -> str:
        """The range in words for a message: ``>= 0``, ``in [0, 1]``, ``in (0, 1)``."""
        if self.high is None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        return f"in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"

    def value(self, value: Any) -> Any:
        """The record's ``value`` as stored: a flag as 0 or 1, an infinite number as declared; None stays None."""
        if value is None:
            return None
        if self.kind is FLAG:
            return int(bool(value))
        if self.kind is NUMBER and isinstance(value, float) and math.isinf(value):
            if self.infinite == AS_NONE:
                return None
            if self.infinite == AS_LARGEST:
                return float(sys.float_info.max)
        return value

    def read(self, value: Any) -> Any:
        """A stored ``value`` as the record holds it: a flag as a bool; None stays None."""
        if value is None:
            return None
        return bool(value) if self.kind is FLAG else value


@dataclass(frozen=True)
class Prefix:
    """A record stored more than once in a row, each time under its own prefix: ``column`` is put before each of its
    columns' names, ``comment`` (then ": ") before each of their comments (e.g. a risk block at the claim,
    ``risk_``, and at the valid bound, ``risk_lb_``)."""

    column: str
    comment: str

    def of(self, column: str, declaration: Stored) -> tuple[str, Stored]:
        """A declared (column, `Stored`) as stored under this prefix."""
        return self.column + column, dataclasses.replace(declaration, comment=f"{self.comment}: {declaration.comment}")


class Part(NamedTuple):
    """One part of a block of columns (`auditing.sinks.warehouse.schema.STORED_BLOCKS`): the stored fields of
    ``record`` in ``group`` (`Stored.group`), each under ``prefix`` (a `Prefix`; None: as declared)."""

    record: type
    group: str = ""
    prefix: Prefix | None = None

    def fields(self) -> list[tuple[str, str, Stored]]:
        """(field name, column name, its `Stored`) of each of the part's fields, in field order."""
        return stored_fields(self.record, self.group, self.prefix)


def stored(kind: StoredKind, comment: str, *, default: Any = dataclasses.MISSING,
           default_factory: Any = dataclasses.MISSING, metadata: dict | None = None, **declaration: Any) -> Any:
    """A dataclass field kept in a warehouse column: its `Stored` (``kind``, ``comment`` and the keys of
    ``declaration``); ``default`` / ``default_factory`` as `dataclasses.field`'s; ``metadata``: its other metadata
    (e.g. `labeldp.codec.INF_AS_STRING`)."""
    return dataclasses.field(default=default, default_factory=default_factory,
                             metadata={**stored_metadata(kind, comment, **declaration), **(metadata or {})})


def stored_metadata(kind: StoredKind, comment: str, **declaration: Any) -> dict:
    """The field metadata `stored` gives, for a field another helper makes (a setting's ``metadata=``,
    `labeldp.settings.setting`)."""
    return {STORED: Stored(kind, comment, **declaration)}


def stored_of(item: dataclasses.Field) -> Stored | None:
    return item.metadata.get(STORED)


def stored_fields(cls: type, group: str | None = None,
                  prefix: Prefix | None = None) -> list[tuple[str, str, Stored]]:
    """(field name, column name, its `Stored`) of each stored field of ``cls`` in field order; ``group``: only those
    of that group (None: all); ``prefix``: each as stored under it (`Prefix.of`)."""
    out = []
    for item in dataclasses.fields(cls):
        declaration = stored_of(item)
        if declaration is not None and (group is None or declaration.group == group):
            column = declaration.column or item.name
            if prefix is not None:
                column, declaration = prefix.of(column, declaration)
            out.append((item.name, column, declaration))
    return out


def stored_under(prefix: Prefix) -> dict[str, Prefix]:
    """The metadata of a dataclass field holding a record whose stored fields the row keeps under ``prefix``
    (`Prefix.of`), ``field(metadata=stored_under(prefix))``: where a record stored more than once says which prefix
    each of its places gets (`RiskAssessment.claimed` is stored under `CLAIMED`), so a reader walking the records
    finds each one's columns."""
    return {UNDER: prefix}


def prefix_of(item: dataclasses.Field) -> Prefix | None:
    """The prefix the record in field ``item`` is stored under (`stored_under`); None: its columns as declared."""
    return item.metadata.get(UNDER)


def stored_values(cls: type, record: object | None, prefix: Prefix | None = None) -> dict[str, Any]:
    """column -> the value stored from ``record`` (`Stored.value`) for each stored field of ``cls`` (under
    ``prefix``, if given); all None when there is no record."""
    return {column: None if record is None else declaration.value(getattr(record, name))
            for name, column, declaration in stored_fields(cls, prefix=prefix)}


def from_stored(cls: type, row: object) -> dict[str, Any]:
    """field -> the value ``row`` (read by attribute) stores for each stored field of ``cls``, as the record holds
    it (`Stored.read`): the keywords that rebuild the stored part of a record."""
    return {name: declaration.read(getattr(row, column)) for name, column, declaration in stored_fields(cls)}
