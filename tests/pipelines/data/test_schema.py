"""The partition schema (pipelines.data.schema): validation of every bad input named in the data contract, writes,
streaming reads and fingerprints (the `data validate` command: tests/flows/commands/test_data.py). The layout's paths and atomic directories:
test_layout.py."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.data import schema
from pipelines.data.day import listed_day
from pipelines.data.layout import partition_dir
from tests.support.schema_days import SCHEMA_DATE as DATE


def _replace(table: pa.Table, name: str, array) -> pa.Table:
    return table.set_column(table.column_names.index(name), name, array)


# ------------------------------------------------------------------------------------------ validation


def test_valid_table_roundtrip(tmp_path, schema_table):
    assert schema_table.schema.equals(schema.PARTITION_SCHEMA)
    directory = schema.write_partition(tmp_path, DATE, schema_table, rows_per_file=250)
    assert sorted(p.name for p in directory.glob("part-*.parquet")) == [
        "part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    back = schema.read_partition(tmp_path, DATE)
    assert back.schema.equals(schema.PARTITION_SCHEMA)
    assert back.equals(schema_table)
    subset = schema.read_partition(tmp_path, DATE, columns=["C2", "label", "row_id"])
    assert subset.column_names == ["row_id", "label", "C2"]  # schema order


def test_safe_casts_are_accepted(schema_table):
    loose = _replace(schema_table, "I1", schema_table.column("I1").cast(pa.int32()))
    loose = _replace(loose, "label", schema_table.column("label").cast(pa.int64()))
    loose = _replace(loose, "row_id", schema_table.column("row_id").cast(pa.uint64()))
    loose = _replace(loose, "C1", schema_table.column("C1").cast(pa.large_string()))
    loose = _replace(loose, "C2", schema_table.column("C2").cast(pa.dictionary(pa.int16(), pa.string())))
    loose = _replace(loose, "I2", pa.nulls(schema_table.num_rows))
    out = schema.validate_table(loose, "loose.parquet")
    assert out.schema.equals(schema.PARTITION_SCHEMA)
    assert out.column("C1").to_pylist() == schema_table.column("C1").to_pylist()
    assert out.column("I2").null_count == schema_table.num_rows


def test_missing_and_extra_columns(schema_table):
    with pytest.raises(LabelDPInputError, match=r"day\.parquet: missing column\(s\) \['C7'\]"):
        schema.validate_table(schema_table.drop(["C7"]), "day.parquet")
    extra = schema_table.append_column("p_click", pa.array(np.zeros(schema_table.num_rows)))
    with pytest.raises(LabelDPInputError, match=r"day\.parquet: unexpected column\(s\) \['p_click'\]"):
        schema.validate_table(extra, "day.parquet")


@pytest.mark.parametrize(
    ("column", "make", "pattern"),
    [
        ("I3", lambda n: pa.array(np.ones(n)), r"column 'I3' has type double.*600 non-null rows"),
        ("I3", lambda n: pa.array(["1"] * n), r"column 'I3' has type string"),
        ("C4", lambda n: pa.array(np.arange(n)), r"column 'C4' has type int64.*600 non-null rows"),
        ("label", lambda n: pa.array(np.zeros(n)), r"column 'label' has type double"),
        ("row_id", lambda n: pa.array([str(i) for i in range(n)]), r"column 'row_id' has type string"),
    ],
)
def test_wrong_types(schema_table, column, make, pattern):
    with pytest.raises(LabelDPInputError, match="f.parquet: " + pattern):
        schema.validate_table(_replace(schema_table, column, make(schema_table.num_rows)), "f.parquet")


def test_labels_outside_classes_and_null_labels(schema_table):
    labels = schema_table.column("label").to_numpy().astype(np.int64)
    labels[:7] = 2
    labels[7:9] = -1
    with pytest.raises(LabelDPInputError, match=r"column 'label': 9 row\(s\) have labels outside the 2 classes"):
        schema.validate_table(_replace(schema_table, "label", pa.array(labels)), "f.parquet")
    assert schema.validate_table(_replace(schema_table, "label", pa.array(labels)).filter(
        pa.array(labels >= 0)), "f", num_classes=3).num_rows == schema_table.num_rows - 2
    nulls = pa.array(labels.clip(0, 1), mask=np.arange(schema_table.num_rows) < 4)
    with pytest.raises(LabelDPInputError, match=r"column 'label': 4 row\(s\) are null"):
        schema.validate_table(_replace(schema_table, "label", nulls), "f.parquet")


def test_out_of_range_integers_are_counted(schema_table):
    huge = np.arange(schema_table.num_rows, dtype=np.uint64)
    huge[:3] = np.uint64(2**63 + 5)
    with pytest.raises(LabelDPInputError, match=r"column 'row_id': 3 row\(s\) do not fit in int64"):
        schema.validate_table(_replace(schema_table, "row_id", pa.array(huge)), "f.parquet")


def test_bad_hex_values_are_counted(schema_table):
    values = schema_table.column("C5").to_pylist()
    values[:5] = ["ABCDEF12", "abc", "0123456g", "012345678", "abcdef12"]  # the last one is fine
    with pytest.raises(LabelDPInputError, match=r"column 'C5': 4 row\(s\) are not 8 lowercase hex digits"):
        schema.validate_table(_replace(schema_table, "C5", pa.array(values)), "f.parquet")


def test_empty_table(schema_table):
    with pytest.raises(LabelDPInputError, match=r"f.parquet: the partition is empty \(0 rows\)"):
        schema.validate_table(schema_table.slice(0, 0), "f.parquet")


def test_duplicate_row_ids(schema_table):
    ids = schema_table.column("row_id").to_numpy().copy()
    ids[10:13] = ids[0]
    ids[20] = ids[1]
    with pytest.raises(LabelDPInputError, match=r"column 'row_id': 4 row\(s\) repeat an earlier row_id "
                                                r"\(2 distinct duplicated value\(s\)"):
        schema.validate_table(_replace(schema_table, "row_id", pa.array(ids)), "f.parquet")


# ------------------------------------------------------------------------------------------ writing


def test_bad_input_writes_nothing(tmp_path, schema_table):
    ids = schema_table.column("row_id").to_numpy().copy()
    ids[-1] = ids[0]
    bad_batches = [schema_table.slice(0, 300), _replace(schema_table, "row_id", pa.array(ids)).slice(300)]  # dup across batches
    with pytest.raises(LabelDPInputError, match=r"1 row\(s\) repeat an earlier row_id"):
        schema.write_partition(tmp_path, DATE, bad_batches, rows_per_file=100)
    assert not (tmp_path / "partitions").exists()
    with pytest.raises(LabelDPInputError, match="empty"):
        schema.write_partition(tmp_path, DATE, [schema_table.slice(0, 0)])
    assert not (tmp_path / "partitions").exists()
    # An existing partition is refused without replace, and survives a failed rewrite with it.
    schema.write_partition(tmp_path, DATE, schema_table)
    before = schema.partition_fingerprint(tmp_path, DATE)
    with pytest.raises(LabelDPInputError, match=r"already exists at .*; pass replace to replace it"):
        schema.write_partition(tmp_path, DATE, schema_table.slice(1))
    with pytest.raises(LabelDPInputError, match="missing column"):
        schema.write_partition(tmp_path, DATE, schema_table.drop(["I1"]), replace=True)
    assert schema.partition_fingerprint(tmp_path, DATE) == before
    assert sorted(os.listdir(tmp_path / "partitions")) == [f"date={DATE}"]


def test_streamed_write_and_batches(tmp_path, schema_table):
    schema.write_partition(tmp_path, DATE, schema_table.to_batches(max_chunksize=77), rows_per_file=200,
                           provenance=lambda: {"source": "test"})
    assert schema.read_provenance(tmp_path, DATE) == {"source": "test"}
    batches = list(schema.iter_partition_batches(listed_day(tmp_path, DATE), batch_size=64))
    assert all(b.num_rows <= 64 for b in batches)
    assert pa.Table.from_batches(batches).equals(schema_table)
    some = list(schema.iter_partition_batches(listed_day(tmp_path, DATE), batch_size=1000, columns=["label", "C9"]))
    assert some[0].schema.names == ["label", "C9"]
    with pytest.raises(LabelDPInputError, match="batch_size"):
        list(schema.iter_partition_batches(listed_day(tmp_path, DATE), batch_size=0))


def test_duplicates_across_files_are_found_on_read(tmp_path, schema_table):
    directory = schema.write_partition(tmp_path, DATE, schema_table, rows_per_file=300)
    # Make the second file repeat the first file's row_ids (as a hand-edited partition might).
    first = pq.read_table(directory / "part-00000.parquet")
    pq.write_table(first, directory / "part-00001.parquet")
    with pytest.raises(LabelDPInputError, match=r"date=2024-02-01: column 'row_id': 300 row\(s\) repeat"):
        schema.read_partition(tmp_path, DATE)
    with pytest.raises(LabelDPInputError, match=r"300 row\(s\) repeat"):
        next(schema.iter_partition_batches(listed_day(tmp_path, DATE), batch_size=100))


def _write_ids(tmp_path, table, files) -> Path:
    """A partition of ``table``'s rows whose files hold the row ids ``files`` (a list of arrays), as written by hand
    (no uniqueness check on write)."""
    directory = schema.write_partition(tmp_path, DATE, table)
    for path in directory.glob(schema.PART_GLOB):
        path.unlink()
    start = 0
    for index, ids in enumerate(files):
        rows = table.take(np.arange(start, start + len(ids)) % table.num_rows)
        pq.write_table(_replace(rows, "row_id", pa.array(np.asarray(ids, dtype=np.int64))),
                       directory / f"part-{index:05d}.parquet", row_group_size=37)
        start += len(ids)
    return directory


def _check(tmp_path) -> int:
    """The first row id the partition's batches yield (after the uniqueness check)."""
    return next(schema.iter_partition_batches(listed_day(tmp_path, DATE), batch_size=100)).column("row_id")[0].as_py()


@pytest.fixture
def small_reads(monkeypatch):
    """Batches of the uniqueness check across row groups and files, and many spill buckets."""
    from pipelines.data import key_buckets

    monkeypatch.setattr(schema, "UNIQUE_CHECK_BATCH_ROWS", 53)
    monkeypatch.setattr(key_buckets, "BUCKET_ROWS", 40)
    monkeypatch.setattr(key_buckets, "_FLUSH_ROWS", 90)
    spills = []
    original = key_buckets.KeyBuckets

    def recorded(buckets, columns, parent=None):
        spills.append(original(buckets, columns, parent))
        return spills[-1]

    monkeypatch.setattr(key_buckets, "KeyBuckets", recorded)
    yield spills
    assert not any(spill.directory.exists() for spill in spills)  # removed, also after an error


def _buckets(spills) -> list[int]:
    return [spill.buckets for spill in spills]


def test_increasing_ids_are_checked_without_a_spill(tmp_path, schema_table, small_reads):
    ids = np.cumsum(np.random.default_rng(3).integers(1, 9, 600)) - 2_000  # increasing, gaps, negatives
    _write_ids(tmp_path, schema_table, [ids[:250], ids[250:260], ids[260:]])
    assert _check(tmp_path) == ids[0]
    assert small_reads == []  # the one pass in file order was enough


@pytest.mark.parametrize("order", ["shuffled", "files_swapped", "one_step_back"])
def test_unique_ids_out_of_order_pass_through_the_buckets(tmp_path, schema_table, small_reads, order):
    ids = np.arange(600, dtype=np.int64) * 7 - 1_000
    if order == "shuffled":
        ids = np.random.default_rng(4).permutation(ids)
    elif order == "files_swapped":
        ids = np.concatenate([ids[300:], ids[:300]])
    else:
        ids[[400, 401]] = ids[[401, 400]]  # increasing but for one pair, deep in the second file
    _write_ids(tmp_path, schema_table, [ids[:300], ids[300:]])
    assert _check(tmp_path) == ids[0]
    assert _buckets(small_reads) == [15]  # 600 rows at 40 a bucket


@pytest.mark.parametrize("where", ["within_a_file", "across_files", "adjacent_in_order", "sorted_then_back"])
def test_repeated_ids_get_the_whole_day_message(tmp_path, schema_table, small_reads, where):
    """However the ids are laid out, the error is the one `check_row_ids_unique` gives for the day's ids: the extra
    rows, the distinct repeated values and the smallest of them, naming the partition directory."""
    rng = np.random.default_rng(5)
    ids = np.arange(600, dtype=np.int64) * 3 - 900
    if where == "within_a_file":
        ids = rng.permutation(ids)
        ids[[10, 50, 90]] = ids[200]
        ids[[120, 250]] = ids[5]
        files = [ids[:300], ids[300:]]
    elif where == "across_files":
        ids = rng.permutation(ids)
        ids[300:320] = ids[:20]  # 20 values, each once more
        ids[599] = ids[0]  # a third copy of one of them
        files = [ids[:300], ids[300:450], ids[450:]]
    elif where == "adjacent_in_order":
        ids[401] = ids[400]  # sorted but not strictly: the one pass must not accept it
        files = [ids[:300], ids[300:]]
    else:
        files = [ids[:300], ids[300:], ids[-3:]]  # in order, then the last three again in a file of their own
        ids = np.concatenate(files)
    directory = _write_ids(tmp_path, schema_table, files)
    with pytest.raises(LabelDPInputError) as expected:
        schema.check_row_ids_unique(ids, directory, "row_id")
    with pytest.raises(LabelDPInputError) as raised:
        _check(tmp_path)
    assert str(raised.value) == str(expected.value)
    assert _buckets(small_reads) == [-(-ids.size // 40)]


def test_repeated_ids_message_in_full(tmp_path, schema_table, small_reads):
    ids = np.random.default_rng(6).permutation(np.arange(600, dtype=np.int64) + 10)
    ids[100:103] = ids[0]  # 3 extra rows of one value
    ids[500] = -77  # -77 twice: the smallest repeated value
    ids[400] = -77
    directory = _write_ids(tmp_path, schema_table, [ids[:300], ids[300:]])
    with pytest.raises(LabelDPInputError) as raised:
        _check(tmp_path)
    assert str(raised.value) == (f"{directory}: column 'row_id': 4 row(s) repeat an earlier row_id (2 distinct "
                                 f"duplicated value(s), e.g. -77); row_id must be unique within a day")


def test_the_check_still_casts_every_row_id(tmp_path, schema_table, small_reads):
    directory = _write_ids(tmp_path, schema_table, [np.arange(300), np.arange(300, 600)])
    wide = pa.array(np.arange(300, 600, dtype=np.uint64))
    wide = pa.array(np.where(np.arange(300) % 100 == 7, np.uint64(2**63 + 1), wide.to_numpy()))
    pq.write_table(_replace(schema_table.slice(300), "row_id", wide), directory / "part-00001.parquet",
                   row_group_size=37)
    with pytest.raises(LabelDPInputError, match=r"part-00001\.parquet: column 'row_id': \d+ row\(s\) do not fit"):
        _check(tmp_path)
    narrow = pa.array(np.arange(300, 600, dtype=np.int32))  # another width in one file: cast, then compared
    pq.write_table(_replace(schema_table.slice(300), "row_id", narrow), directory / "part-00001.parquet")
    assert _check(tmp_path) == 0
    pq.write_table(_replace(schema_table.slice(300), "row_id", pa.array(np.arange(300, 600) + 0.5)),
                   directory / "part-00001.parquet")
    with pytest.raises(LabelDPInputError, match=r"part-00001\.parquet: column 'row_id' has type double"):
        _check(tmp_path)


def test_keyed_sample_read_streams_the_same_rows(tmp_path, schema_table, monkeypatch):
    """`read_keyed_sample`: the rows `keyed_sample` chooses among the selected ids of the whole day, in the
    partition's order, with the day's and the selected counts, whatever the batches."""
    from pipelines.data import splits
    from pipelines.data.dataset_spec import criteo

    ids = np.random.default_rng(7).permutation(np.arange(600, dtype=np.int64) * 11 - 3_000)
    _write_ids(tmp_path, schema_table, [ids[:250], ids[250:]])
    dataset = criteo()
    whole = dataset.to_internal(schema.read_partition(tmp_path, DATE, dataset=dataset))
    among = lambda row_ids: row_ids % 3 != 0  # noqa: E731
    selected = ids[among(ids)]
    for batch_rows in (29, 100, 1_000):
        monkeypatch.setattr(schema, "SAMPLE_BATCH_ROWS", batch_rows)
        for max_rows, pick in ((50, among), (5_000, among), (123, None), (600, None)):
            rows, day, chosen_from = schema.read_keyed_sample(listed_day(tmp_path, DATE), dataset, max_rows, among=pick)
            pool = selected if pick is not None else ids
            sample = splits.keyed_sample(pool, max_rows)
            keep = np.isin(ids, pool if sample is None else sample)
            assert (day, chosen_from) == (600, pool.size)
            assert _decoded(rows).equals(_decoded(whole.filter(pa.array(keep))))
            for column in rows.columns:  # only the dictionary entries the rows use are kept
                for chunk in column.chunks if pa.types.is_dictionary(column.type) else ():
                    assert len(chunk.dictionary) == len(pc.unique(chunk.indices).drop_null())


def _decoded(table: pa.Table) -> pa.Table:
    """``table`` with its dictionary columns decoded (the values, whatever the dictionaries)."""
    return pa.table({name: column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column
                     for name, column in zip(table.column_names, table.columns, strict=True)})


def test_bad_file_on_disk_is_named(tmp_path, schema_table):
    directory = schema.write_partition(tmp_path, DATE, schema_table, rows_per_file=300)
    labels = schema_table.column("label").to_numpy().astype(np.int8)
    labels[:2] = 5
    pq.write_table(_replace(schema_table, "label", pa.array(labels)).slice(0, 300), directory / "part-00000.parquet")
    with pytest.raises(LabelDPInputError, match=r"part-00000\.parquet: column 'label': 2 row\(s\) have labels"):
        schema.read_partition(tmp_path, DATE)


@pytest.mark.parametrize("damage", ["garbage", "truncate"])
def test_corrupt_parquet_is_named(tmp_path, schema_table, damage):
    directory = schema.write_partition(tmp_path, DATE, schema_table, rows_per_file=300)
    target = directory / "part-00001.parquet"
    data = target.read_bytes()
    target.write_bytes(b"not parquet at all" if damage == "garbage" else data[: len(data) // 2])
    with pytest.raises(LabelDPInputError, match=r"part-00001\.parquet: not a readable Parquet file"):
        schema.read_partition(tmp_path, DATE)
    with pytest.raises(LabelDPInputError, match=r"part-00001\.parquet"):
        list(schema.iter_partition_batches(listed_day(tmp_path, DATE), batch_size=100))


def test_missing_partition_names_the_path(tmp_path):
    with pytest.raises(LabelDPInputError, match=r"no partition at .*partitions/date=2024-02-01"):
        schema.read_partition(tmp_path, DATE)
    (partition_dir(tmp_path, DATE)).mkdir(parents=True)
    with pytest.raises(LabelDPInputError, match=r"holds no part-\*\.parquet files"):
        schema.partition_fingerprint(tmp_path, DATE)


def test_fingerprint_is_stable_and_sensitive(tmp_path, schema_table):
    schema.write_partition(tmp_path / "a", DATE, schema_table)
    schema.write_partition(tmp_path / "b", DATE, schema_table)
    fingerprint = schema.partition_fingerprint(tmp_path / "a", DATE)
    assert fingerprint.startswith("sha256:")
    assert fingerprint == schema.partition_fingerprint(tmp_path / "b", DATE)
    labels = schema_table.column("label").to_numpy().copy()
    labels[0] = 1 - labels[0]
    schema.write_partition(tmp_path / "b", DATE, _replace(schema_table, "label", pa.array(labels)), replace=True)
    assert schema.partition_fingerprint(tmp_path / "b", DATE) != fingerprint


def test_oracle_roundtrip_and_checks(tmp_path):
    oracle = pa.table({"row_id": pa.array([3, 1, 2], pa.int64()), "p_click": pa.array([0.1, 0.0, 1.0])})
    schema.write_oracle(tmp_path, DATE, oracle)
    assert schema.read_oracle(tmp_path, DATE).equals(oracle.cast(schema.ORACLE_SCHEMA))
    bad = pa.table({"row_id": pa.array([1], pa.int64()), "p_click": pa.array([1.5])})
    with pytest.raises(LabelDPInputError, match=r"'p_click': 1 row\(s\) are outside \[0, 1\]"):
        schema.write_oracle(tmp_path, dt.date(2024, 2, 2), bad)
    with pytest.raises(LabelDPInputError, match="no oracle at"):
        schema.read_oracle(tmp_path, dt.date(2024, 2, 2))


def test_a_day_written_without_an_oracle_over_a_synthetic_one_takes_its_oracle_away(tmp_path, schema_table):
    """Ingested rows replacing a synthetic day: its oracle was drawn for the old rows, so it goes with them."""
    row_ids = schema_table.column("row_id").to_numpy()
    oracle = pa.table({"row_id": pa.array(row_ids, pa.int64()), "p_click": pa.array(np.full(row_ids.size, 0.2))})
    schema.write_partition(tmp_path, DATE, schema_table, oracle=oracle)
    assert schema.read_oracle(tmp_path, DATE).num_rows == row_ids.size
    schema.write_partition(tmp_path, DATE, schema_table.slice(0, 300), replace=True)
    with pytest.raises(LabelDPInputError, match="no oracle at"):
        schema.read_oracle(tmp_path, DATE)
    assert schema.read_partition(tmp_path, DATE).num_rows == 300
