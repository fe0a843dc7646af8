"""The day as a handle (`pipelines.data.day`): resolved and checked once, its bytes hashed at most once, whoever
asks; the handle's fingerprint is the partition's; a handle of another day or root is refused by the scoring
request. Small synthetic days (2,000 rows)."""

from __future__ import annotations

import datetime as dt
import pickle

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from labeldp.errors import LabelDPInputError

DAY = dt.date(2026, 10, 2)


@pytest.fixture
def root(tmp_path):
    from pipelines.data.synth import write_synthetic_day

    write_synthetic_day(tmp_path, DAY, rows=2_000)
    write_synthetic_day(tmp_path, DAY - dt.timedelta(days=1), rows=2_000)
    return tmp_path


@pytest.fixture
def hashes(monkeypatch):
    """Counts whole-partition hashes, by day directory."""
    from pipelines.data import schema

    counted: list[str] = []
    original = schema.files_fingerprint

    def counting(files):
        counted.append(files[0].parent.name)
        return original(files)

    monkeypatch.setattr(schema, "files_fingerprint", counting)
    return counted


def test_a_day_is_resolved_without_hashing_and_hashed_once_whoever_asks(root, hashes):
    from pipelines.data import schema
    from pipelines.data.day import resolve_day

    day = resolve_day(root, DAY)
    assert (day.rows, day.date, day.dataset.name) == (2_000, DAY, "criteo")
    assert [p.name for p in day.files] == [p.name for p in sorted(day.directory.glob("part-*.parquet"))]
    assert hashes == []  # checked from footers and two columns: nothing hashed yet
    first = day.fingerprint
    assert day.fingerprint == first and day.describe()["fingerprint"] == first
    assert hashes == ["date=2026-10-02"]
    assert first == schema.partition_fingerprint(root, DAY)  # the same identity as before handles existed
    again = pickle.loads(pickle.dumps(day))  # as a Beam worker receives it: the fingerprint travels with it
    assert again.fingerprint == first and len(hashes) == 2


def test_the_runs_days_are_listed_and_hashed_once_each(root, hashes):
    from pipelines.data.day import Days, resolve_day

    checked = resolve_day(root, DAY)
    days = Days(root, {DAY: checked})
    assert days[DAY] is checked
    before = DAY - dt.timedelta(days=1)
    assert days[before] is days[before]
    for _ in range(3):  # asked for by three models
        assert days[DAY].fingerprint and days[before].fingerprint
    assert sorted(hashes) == ["date=2026-10-01", "date=2026-10-02"]


def test_a_missing_or_foreign_day_is_named(root, tmp_path):
    from flows.steps import DataMissingError, check_partition
    from pipelines.data.dataset_spec import spec_from_dict
    from pipelines.data.day import PartitionMissing, resolve_day

    with pytest.raises(PartitionMissing, match="partition for 2026-10-05 is missing"):
        resolve_day(root, dt.date(2026, 10, 5))
    with pytest.raises(DataMissingError, match="2026-10-05"):  # the flow's name for it (alerted as DATA_MISSING)
        check_partition(root, dt.date(2026, 10, 5))
    other = spec_from_dict({"name": "team", "row_key": "row_id", "label": "label", "classes": 2,
                            "numeric": ["I1"], "categorical": []}, "test")
    with pytest.raises(LabelDPInputError, match="2026-10-02"):
        resolve_day(root, DAY, other, "fix it")
    # a file whose label column has another type is named with the file
    directory = root / "partitions" / "date=2026-10-02"
    path = sorted(directory.glob("part-*.parquet"))[0]
    table = pq.read_table(path)
    at = table.schema.get_field_index("label")
    pq.write_table(table.set_column(at, "label", pa.array(["x"] * table.num_rows)), path)
    with pytest.raises(LabelDPInputError, match=path.name):
        resolve_day(root, DAY)


def test_the_scoring_request_refuses_a_handle_of_another_day(root):
    from pipelines.data.day import resolve_day
    from pipelines.scoring.beam_request import ScoringRequest

    day = resolve_day(root, DAY)
    other = DAY - dt.timedelta(days=1)
    with pytest.raises(ValueError, match="handle is of"):
        ScoringRequest(data_root=str(root), date=other, model="m", partition=day)
    assert ScoringRequest(data_root=str(root), date=DAY, model="m", partition=day).partition is day
