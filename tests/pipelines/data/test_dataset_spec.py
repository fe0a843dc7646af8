"""Dataset specs (pipelines.data.dataset_spec): validation of spec files, the built-in Criteo spec against the
partition schema, the fingerprint, and the naming rule that keeps spec names out of paths, SQL and HTML."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest

from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from pipelines.data import schema
from pipelines.data.dataset_spec import (
    RECORD_FILE,
    SPEC_FILE,
    DatasetSpec,
    criteo,
    dataset_of,
    is_default,
    load_spec,
    spec_from_dict,
    write_dataset_record,
)
from pipelines.data.layout import partition_dir

# The built-in spec's fingerprint is recorded by models and partitions: it must never change by accident.
CRITEO_FINGERPRINT = "sha256:f819dd3a188ee8b535aa157268cbafaedf5a2f9d503a662484903151b4f273d3"

BASE = {"name": "clicks", "label": "clicked", "classes": 2, "row_key": "impression_id",
        "numeric": ["f1", "f2"], "categorical": ["country", "slot"], "carry": ["site"]}


def _write(tmp_path, data, name="spec.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def _refused(tmp_path, data, *needles):
    path = _write(tmp_path, data)
    with pytest.raises(LabelDPInputError) as info:
        load_spec(path)
    message = str(info.value)
    assert str(path) in message, message
    for needle in needles:
        assert needle in message, message
    return message


def test_a_valid_spec_loads_with_defaults(tmp_path):
    spec = load_spec(_write(tmp_path, BASE))
    assert spec.columns == ("impression_id", "clicked", "f1", "f2", "country", "slot", "site")
    assert spec.features == ("f1", "f2", "country", "slot")
    assert (spec.numeric_type, spec.categorical_format, spec.description) == ("float64", "any", "")
    assert spec.internal_names == {"impression_id": "row_id", "clicked": "label"}
    internal = spec.to_internal(pa.table({name: [1] for name in spec.columns}))
    assert internal.column_names == ["row_id", "label", "f1", "f2", "country", "slot", "site"]
    assert spec.stored_name("row_id") == "impression_id" and spec.stored_name("f1") == "f1"
    stored = spec.partition_schema()
    assert stored.field("impression_id").type == pa.int64() and not stored.field("impression_id").nullable
    assert stored.field("clicked").type == pa.int8() and stored.field("f1").type == pa.float64()
    assert stored.field("country").type == schema.CATEGORICAL_TYPE and stored.field("site").type == pa.string()
    assert spec.feature_schema()[0] == {"name": "f1", "kind": "numeric"}
    assert spec.feature_schema()[-1] == {"name": "slot", "kind": "categorical"}
    assert spec_from_dict(encode(spec), "copy") == spec


@pytest.mark.parametrize(("change", "needles"), [
    ({"colour": "red"}, ["unknown key", "colour"]),
    ({"classes": 1}, ["classes", "2..127"]),
    ({"classes": 128}, ["classes", "2..127"]),
    ({"classes": True}, ["classes"]),
    ({"classes": "2"}, ["classes"]),
    ({"classes": 2.0}, ["classes"]),
    ({"numeric": ["f1", "f1"]}, ["more than once", "f1"]),
    ({"carry": ["country"]}, ["more than once", "country"]),
    ({"categorical": ["clicked"]}, ["more than once", "clicked"]),
    ({"numeric": ["row_id"]}, ["row_id", "may only name the row_key or the label"]),
    ({"carry": ["label"]}, ["label", "may only name the row_key or the label"]),
    ({"numeric": "f1"}, ["numeric must be a list"]),
    ({"numeric": [], "categorical": []}, ["at least one"]),
    ({"numeric_type": "int32"}, ["numeric_type"]),
    ({"categorical_format": "hex"}, ["categorical_format"]),
    ({"description": 5}, ["description"]),
])
def test_bad_specs_are_refused_naming_the_file(tmp_path, change, needles):
    _refused(tmp_path, {**BASE, **change}, *needles)


@pytest.mark.parametrize("key", ["name", "label", "classes", "row_key"])
def test_a_missing_required_key_is_named(tmp_path, key):
    _refused(tmp_path, {k: v for k, v in BASE.items() if k != key}, "missing key", key)


def test_unreadable_spec_files(tmp_path):
    with pytest.raises(LabelDPInputError, match="no such dataset spec file"):
        load_spec(tmp_path / "absent.json")
    _refused(tmp_path, "{not json", "not valid JSON")
    _refused(tmp_path, "[1, 2]", "JSON object")


def test_row_id_and_label_may_name_the_key_and_label():
    spec = DatasetSpec(name="x", label="label", classes=3, row_key="row_id", numeric=["a"])
    assert spec.internal_names == {"row_id": "row_id", "label": "label"}


def test_builtin_criteo_spec_is_the_partition_schema():
    spec = criteo()
    assert load_spec(None) is spec and is_default(spec) and spec.source == str(SPEC_FILE)
    assert spec.name == "criteo" and spec.classes == 2
    assert spec.row_key == schema.ROW_ID == "row_id" and spec.label == schema.LABEL == "label"
    assert list(spec.numeric) == schema.NUMERIC_COLUMNS == [f"I{i}" for i in range(1, 14)]
    assert list(spec.categorical) == schema.CATEGORICAL_COLUMNS == [f"C{i}" for i in range(1, 27)]
    assert spec.carry == ()
    assert list(spec.columns) == schema.ALL_COLUMNS and list(spec.features) == schema.FEATURE_COLUMNS
    assert (spec.numeric_type, spec.categorical_format) == ("int64", "hex8")
    stored = spec.partition_schema()
    assert stored.equals(schema.PARTITION_SCHEMA, check_metadata=True)
    assert [(f.name, f.type, f.nullable) for f in stored] == [
        (f.name, f.type, f.nullable) for f in schema.PARTITION_SCHEMA]
    assert stored.field("I1").type == schema.NUMERIC_TYPE and stored.field("C1").type == schema.CATEGORICAL_TYPE


def test_fingerprint_is_stable_and_sensitive(tmp_path):
    assert criteo().fingerprint() == CRITEO_FINGERPRINT
    spec = load_spec(_write(tmp_path, BASE))
    # Key order in the file, the description and where it was read from do not change what the data is.
    reordered = _write(tmp_path, dict(reversed(list({**BASE, "description": "other words"}.items()))), "b.json")
    assert load_spec(reordered).fingerprint() == spec.fingerprint()
    assert spec.fingerprint().startswith("sha256:") and len(spec.fingerprint()) == len("sha256:") + 64
    variants = [
        {"name": "clicks2"}, {"label": "click"}, {"classes": 3}, {"row_key": "imp"},
        {"numeric": ["f2", "f1"]}, {"numeric": ["f1"], "categorical": ["f2", "country", "slot"]},
        {"carry": []}, {"numeric_type": "int64"}, {"categorical_format": "hex8"},
        {"categorical": ["slot", "country"]},
    ]
    prints = {spec.fingerprint()} | {spec_from_dict({**BASE, **change}, "v").fingerprint() for change in variants}
    assert len(prints) == len(variants) + 1


def test_record_round_trip_and_default_has_none(tmp_path):
    spec = load_spec(_write(tmp_path, BASE))
    day = dt.date(2024, 1, 2)
    directory = partition_dir(tmp_path / "root", day)
    directory.mkdir(parents=True)
    assert dataset_of(tmp_path / "root", day) == criteo()  # no record: the Criteo spec
    write_dataset_record(directory, criteo())
    assert not (directory / RECORD_FILE).exists()
    write_dataset_record(directory, spec)
    record = json.loads((directory / RECORD_FILE).read_text())
    assert record["fingerprint"] == spec.fingerprint()
    assert dataset_of(tmp_path / "root", day) == spec
    (directory / RECORD_FILE).write_text("{broken")
    with pytest.raises(LabelDPInputError, match=RECORD_FILE):
        dataset_of(tmp_path / "root", day)


# ------------------------------------------------------------------------------- names reach paths, SQL, HTML

HOSTILE_COLUMNS = ['f"1', "f'1", "<script>alert(1)</script>", "../etc", "f 1", "f.1", "naïve", "Ω", "f-1", "",
                   "1f", "x" * 65, "f1;DROP TABLE audit_results"]
HOSTILE_NAMES = ['click"s', "click's", "<script>alert(1)</script>", "../clicks", "..", ".hidden", "my clicks",
                 "clicks/x", "clïcks", "数据", "", "x" * 129]


@pytest.mark.parametrize("key", ["label", "row_key", "numeric", "categorical", "carry"])
@pytest.mark.parametrize("bad", HOSTILE_COLUMNS)
def test_hostile_column_names_are_refused_with_the_spec_path(tmp_path, key, bad):
    data = dict(BASE)
    data[key] = [*BASE[key], bad] if isinstance(BASE[key], list) else bad
    _refused(tmp_path, data, "column name")


@pytest.mark.parametrize("bad", HOSTILE_NAMES)
def test_hostile_dataset_names_are_refused_with_the_spec_path(tmp_path, bad):
    _refused(tmp_path, {**BASE, "name": bad}, "name")


@pytest.mark.parametrize("where", ["name", "numeric"])
def test_a_trailing_newline_is_refused(tmp_path, where):
    data = {**BASE, "name": "clicks\n"} if where == "name" else {**BASE, "numeric": ["f1\n"]}
    _refused(tmp_path, data)


# What the hand-written DatasetSpec.to_dict gave before the codec (tests/pipelines/data/fixtures/): its dict, the
# fingerprint, the partition's _dataset.json and what a model's metadata stores, for spec files as users write them.
SPEC_BEFORE = json.loads((Path(__file__).parent / "fixtures" / "dataset_spec_before.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(SPEC_BEFORE))
def test_a_spec_encodes_as_its_to_dict_wrote_it_and_keeps_its_fingerprint(name, tmp_path):
    before = SPEC_BEFORE[name]
    spec = criteo() if before["input"] is None else spec_from_dict(before["input"], before["source"])
    assert encode(spec) == before["to_dict"] == before["metadata_spec"]
    assert json.dumps(encode(spec), sort_keys=True) == json.dumps(before["to_dict"], sort_keys=True)
    assert spec.fingerprint() == before["fingerprint"]
    write_dataset_record(tmp_path, spec)
    record = tmp_path / RECORD_FILE
    assert (record.read_text(encoding="utf-8") if record.exists() else None) == before["record_file"]
    assert spec_from_dict(before["to_dict"], "again") == spec
    assert decode(DatasetSpec, before["to_dict"], "spec") == spec and "source" not in encode(spec)
