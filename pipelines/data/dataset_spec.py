"""What a day's click log looks like: the dataset spec, the one owner of column names, types and their checks.

A dataset is described by a small JSON file (``infra/datasets/criteo.json`` is the built-in default and
describes the Criteo-like partitions exactly)::

    {"name": "clicks", "label": "clicked", "classes": 2, "row_key": "impression_id",
     "numeric": ["f1", "f2"], "categorical": ["country", "slot"], "carry": ["campaign"],
     "numeric_type": "float64", "categorical_format": "any"}

- ``label``: the column holding the secret label, whole numbers in ``0..classes-1`` (clicks: 0/1).
- ``row_key``: a unique integer per row of a day (it keys the game's randomness and the join with logged
  predictions); integers only, so that the same row gets the same coins on every runner.
- ``numeric`` / ``categorical``: the model's features, in the order a model reads them. Numeric values are
  stored as ``numeric_type`` (``int64`` or ``float64``; integers are widened, floats in an int64 column are
  refused); categorical values may be strings or integers (integers are stored as their decimal text) and
  are stored as ``dictionary<int32, string>``. ``categorical_format`` ``hex8`` (Criteo only) also requires
  8 lowercase hex digits.
- ``carry``: columns kept in the partition (as text) but never fed to a model (e.g. a campaign id for
  slicing).
- ``groups``: columns whose equal values tie rows' labels together (a user, a device, a session; features or
  carried columns). ``feature_rows``: ``group`` (the default: rows with the same feature vector form a group)
  or ``independent`` (a coarse feature space where equal features do not mean the same event). A row enters the
  game only when it is alone in its groups (`pipelines.scoring.row_grouping`, docs/soundness.md section 9).

Names reach file paths, SQL and HTML, so they are checked here, at the edge: a dataset name is a registry
name (``labeldp.names.check_name``); a column name is a letter or underscore followed by letters, digits or
underscores (at most 64). Anything else (quotes, ``<``, ``/``, spaces, dots) is refused with the spec's path.

A partition written for a spec other than the default records it as ``_dataset.json`` beside its files
(`write_dataset_record`); `dataset_of` reads it back (no record: the Criteo spec, so data roots written before
specs existed read as they always did).

Inside the pipelines the row key and the label travel under the fixed names ``row_id`` and ``label``
(`DatasetSpec.internal_names`); the features keep their names. A spec may therefore use ``row_id`` or
``label`` only for its row key and label.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditing.game.row_groups import FEATURE_ROWS, FEATURE_ROWS_GROUPED
from labeldp.codec import NOT_STORED, OMIT_DEFAULT, encode
from labeldp.errors import LabelDPInputError
from labeldp.names import NAME_RULE, check_name
from labeldp.settings import setting

SPEC_FILE = Path(__file__).resolve().parents[2] / "infra" / "datasets" / "criteo.json"
RECORD_FILE = "_dataset.json"
INTERNAL_ROW_ID = "row_id"
INTERNAL_LABEL = "label"
NUMERIC_TYPES = ("int64", "float64")
CATEGORICAL_FORMATS = ("any", "hex8")
MAX_CLASSES = 127  # labels are int8
# A column name; SPEC_KEYS / REQUIRED_KEYS are a spec file's keys. Public because flows/plan_schema.py generates
# the spec's JSON Schema (infra/datasets/dataset.schema.json) from them.
COLUMN_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
_COLUMN_RE = re.compile(COLUMN_PATTERN)
SPEC_KEYS = frozenset({"name", "description", "label", "classes", "row_key", "numeric", "categorical", "carry",
                       "numeric_type", "categorical_format", "groups", "feature_rows"})
REQUIRED_KEYS = ("name", "label", "classes", "row_key")


def check_column_name(name: Any, where: str) -> str:
    """``name`` if it is a safe column name (letter or underscore, then letters, digits, underscores; <= 64
    characters), else LabelDPInputError naming ``where``."""
    if not isinstance(name, str) or not _COLUMN_RE.fullmatch(name):
        raise LabelDPInputError(f"{where}: {name!r} is not a valid column name (a letter or underscore followed by "
                                f"letters, digits or underscores, at most 64 characters)")
    return name


@dataclass(frozen=True)
class DatasetSpec:
    """A validated dataset spec (see the module docstring). Frozen and picklable: the Beam job ships it to its
    workers. ``source`` is where it was read from (messages only; not part of its identity)."""

    name: str = setting(help=f"the dataset's registry name: {NAME_RULE}")
    label: str = setting(help="the column holding the secret label, whole numbers in 0..classes-1")
    classes: int = setting(help="number of label values", minimum=2, maximum=MAX_CLASSES)
    row_key: str = setting(help="a unique integer per row of a day (keys the game's randomness and joins logged "
                                "predictions)")
    numeric: tuple[str, ...] = setting((), help="numeric feature columns, in the order a model reads them")
    categorical: tuple[str, ...] = setting((), help="categorical feature columns (strings or integers), after the "
                                                    "numeric ones")
    carry: tuple[str, ...] = setting((), help="columns kept in the partition as text but never fed to a model")
    numeric_type: str = setting("float64", help="how numeric values are stored", choices=lambda: NUMERIC_TYPES)
    categorical_format: str = setting("any", help="hex8 (Criteo only) requires 8 lowercase hex digits",
                                      choices=lambda: CATEGORICAL_FORMATS)
    description: str = setting("", help="free text")
    # groups and feature_rows are stored only when set, so that the fingerprints of specs written before they
    # existed do not change.
    groups: tuple[str, ...] = setting((), help="feature or carry columns whose equal values tie rows' labels "
                                               "together (a user, a device, a session): such rows are kept out of "
                                               "the game (docs/soundness.md section 9)", metadata=OMIT_DEFAULT)
    feature_rows: str = setting(FEATURE_ROWS_GROUPED, help="group: rows with the same feature vector form a group "
                                                           "(the default); independent: a coarse feature space "
                                                           "where equal features are not the same event",
                                choices=lambda: FEATURE_ROWS, metadata=OMIT_DEFAULT)
    source: str = field(default="", compare=False, metadata=NOT_STORED)

    def __post_init__(self):
        where = self.source or "dataset spec"
        try:
            check_name(self.name, "name")
        except LabelDPInputError as exc:
            raise LabelDPInputError(f"{where}: {exc}") from None
        for key in ("numeric", "categorical", "carry", "groups"):
            value = getattr(self, key)
            if isinstance(value, str) or not isinstance(value, list | tuple):
                raise LabelDPInputError(f"{where}: {key} must be a list of column names; got {value!r}")
            object.__setattr__(self, key, tuple(value))
        check_column_name(self.label, f"{where}: label")
        check_column_name(self.row_key, f"{where}: row_key")
        for key in ("numeric", "categorical", "carry"):
            for name in getattr(self, key):
                check_column_name(name, f"{where}: {key}")
        if isinstance(self.classes, bool) or not isinstance(self.classes, int) or not 2 <= self.classes <= MAX_CLASSES:
            raise LabelDPInputError(f"{where}: classes must be a whole number in 2..{MAX_CLASSES}; got {self.classes!r}")
        if self.numeric_type not in NUMERIC_TYPES:
            raise LabelDPInputError(f"{where}: numeric_type must be one of {list(NUMERIC_TYPES)}; got "
                                    f"{self.numeric_type!r}")
        if self.categorical_format not in CATEGORICAL_FORMATS:
            raise LabelDPInputError(f"{where}: categorical_format must be one of {list(CATEGORICAL_FORMATS)}; got "
                                    f"{self.categorical_format!r}")
        if not isinstance(self.description, str):
            raise LabelDPInputError(f"{where}: description must be text")
        if self.feature_rows not in FEATURE_ROWS:
            raise LabelDPInputError(f"{where}: feature_rows must be one of {list(FEATURE_ROWS)}; got "
                                    f"{self.feature_rows!r}")
        # the registry's own spelling, so that a default read from a file is the default (`OMIT_DEFAULT`)
        object.__setattr__(self, "feature_rows", FEATURE_ROWS[FEATURE_ROWS.index(self.feature_rows)])
        unknown = [name for name in self.groups if name not in (*self.numeric, *self.categorical, *self.carry)]
        if unknown:
            raise LabelDPInputError(f"{where}: groups {unknown} must name feature or carry columns")
        if not self.features:
            raise LabelDPInputError(f"{where}: needs at least one numeric or categorical feature column")
        columns = self.columns
        repeated = sorted({name for name in columns if columns.count(name) > 1})
        if repeated:
            raise LabelDPInputError(f"{where}: column(s) {repeated} appear more than once (row_key, label, numeric, "
                                    f"categorical and carry must be distinct)")
        reserved = [name for name in (*self.features, *self.carry) if name in (INTERNAL_ROW_ID, INTERNAL_LABEL)]
        if reserved:
            raise LabelDPInputError(f"{where}: {reserved} may only name the row_key or the label (the pipelines "
                                    f"carry those under these names)")

    # ------------------------------------------------------------------ columns

    @property
    def features(self) -> tuple[str, ...]:
        """The model's feature columns: numeric, then categorical (CatBoost's column order)."""
        return (*self.numeric, *self.categorical)

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column of a partition, in its stored order."""
        return (self.row_key, self.label, *self.numeric, *self.categorical, *self.carry)

    @property
    def internal_names(self) -> dict[str, str]:
        """Stored name -> the name the pipelines use (only the row key and the label are renamed)."""
        return {self.row_key: INTERNAL_ROW_ID, self.label: INTERNAL_LABEL}

    def stored_name(self, internal: str) -> str:
        """The stored column behind a pipeline name (``row_id`` -> the row key, ``label`` -> the label)."""
        return {INTERNAL_ROW_ID: self.row_key, INTERNAL_LABEL: self.label}.get(internal, internal)

    def to_internal(self, table):
        """``table`` (stored names) with the row key and the label renamed to ``row_id`` and ``label``."""
        names = self.internal_names
        return table.rename_columns([names.get(name, name) for name in table.column_names])

    def partition_schema(self):
        """The Arrow schema of a stored partition."""
        import pyarrow as pa

        numeric = pa.int64() if self.numeric_type == "int64" else pa.float64()
        return pa.schema(
            [pa.field(self.row_key, pa.int64(), nullable=False), pa.field(self.label, pa.int8(), nullable=False)]
            + [pa.field(name, numeric) for name in self.numeric]
            + [pa.field(name, pa.dictionary(pa.int32(), pa.string())) for name in self.categorical]
            + [pa.field(name, pa.string()) for name in self.carry])

    def feature_schema(self) -> list[dict[str, str]]:
        """The registry's ``feature_schema`` of a model reading this dataset's features."""
        return ([{"name": name, "kind": "numeric"} for name in self.numeric]
                + [{"name": name, "kind": "categorical"} for name in self.categorical])

    # ------------------------------------------------------------------ identity

    def fingerprint(self) -> str:
        """``sha256:<hex>`` of the spec's canonical JSON (`labeldp.codec.encode`, keys sorted) without its
        description (what the data looks like)."""
        identity = {key: value for key, value in encode(self).items() if key != "description"}
        return "sha256:" + hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()

    def describe(self) -> str:
        return self.source or self.name


def spec_from_dict(data: Any, source: str) -> DatasetSpec:
    """A `DatasetSpec` from parsed JSON; errors name ``source`` and the key."""
    if not isinstance(data, dict):
        raise LabelDPInputError(f"{source}: a dataset spec is a JSON object")
    unknown = sorted(set(data) - SPEC_KEYS)
    if unknown:
        raise LabelDPInputError(f"{source}: unknown key(s) {unknown}; allowed: {sorted(SPEC_KEYS)}")
    missing = [key for key in REQUIRED_KEYS if key not in data]
    if missing:
        raise LabelDPInputError(f"{source}: missing key(s) {missing}")
    return DatasetSpec(**{key: data[key] for key in data}, source=source)


def load_spec(path: str | os.PathLike | None) -> DatasetSpec:
    """The spec in the JSON file ``path`` (None: the built-in Criteo spec). Errors name the file."""
    if path is None:
        return criteo()
    from pipelines.data.layout import refuse_empty_file

    path = Path(path)
    refuse_empty_file(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LabelDPInputError(f"{path}: no such dataset spec file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelDPInputError(f"{path}: cannot read the dataset spec ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LabelDPInputError(f"{path}: not valid JSON ({exc})") from None
    return spec_from_dict(data, str(path))


@functools.cache
def criteo() -> DatasetSpec:
    """The built-in Criteo-like spec (``infra/datasets/criteo.json``)."""
    return load_spec(SPEC_FILE)


def is_default(spec: DatasetSpec) -> bool:
    """The spec describes the built-in Criteo data (its description aside)."""
    return spec.fingerprint() == criteo().fingerprint()


# ---------------------------------------------------------------------------------------- the partition's record


def write_dataset_record(directory: Path, spec: DatasetSpec) -> None:
    """Writes ``_dataset.json`` (the spec and its fingerprint) into a partition directory being written; nothing
    for the default spec."""
    if is_default(spec):
        return
    record = {**encode(spec), "fingerprint": spec.fingerprint()}
    (Path(directory) / RECORD_FILE).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def dataset_of(root: str | os.PathLike, date: dt.date) -> DatasetSpec:
    """The spec a day's partition was written with (its ``_dataset.json``; none: the Criteo spec)."""
    from pipelines.data.layout import partition_record, read_json_object

    path = partition_record(root, date, RECORD_FILE)
    if not path.is_file():
        return criteo()
    data = read_json_object(path)
    data.pop("fingerprint", None)
    return spec_from_dict(data, str(path))


def check_same_dataset(expected: DatasetSpec, found: DatasetSpec, what: str, fix: str) -> None:
    """LabelDPInputError when ``found`` (a partition's or a model's spec) is not ``expected`` (the plan's, the one
    given); ``fix``: what to do, in the words of the command that met it (a flag only where it has one)."""
    if expected.fingerprint() != found.fingerprint():
        raise LabelDPInputError(f"{what} was written for dataset {found.name!r} ({found.describe()}), not for "
                                f"{expected.name!r} ({expected.describe()}); {fix}")


__all__ = [
    "CATEGORICAL_FORMATS",
    "COLUMN_PATTERN",
    "INTERNAL_LABEL",
    "INTERNAL_ROW_ID",
    "NUMERIC_TYPES",
    "RECORD_FILE",
    "REQUIRED_KEYS",
    "SPEC_FILE",
    "SPEC_KEYS",
    "DatasetSpec",
    "check_column_name",
    "check_same_dataset",
    "criteo",
    "dataset_of",
    "is_default",
    "load_spec",
    "spec_from_dict",
    "write_dataset_record",
]
