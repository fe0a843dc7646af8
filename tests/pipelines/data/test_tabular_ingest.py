"""Ingest of tabular click logs under a dataset spec (pipelines.data.tabular_ingest), mostly through `labeldp-audit
data ingest`: real CSV, gzip TSV and Parquet files written here, read back through the partition schema. The command
ingesting a CSV and validating it, and its refusal of a future date: tests/flows/commands/test_data.py."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from pipelines.data import schema
from pipelines.data.dataset_spec import load_spec
from pipelines.data.layout import partition_dir
from pipelines.data.tabular_ingest import ingest_table_files
from tests.support.tabular_logs import TABULAR_COLUMNS as COLUMNS
from tests.support.tabular_logs import TABULAR_DATE as DATE
from tests.support.tabular_logs import TABULAR_ROWS as ROWS
from tests.support.tabular_logs import TABULAR_SPEC as SPEC
from tests.support.tabular_logs import data_command as _cli
from tests.support.tabular_logs import text_lines as _lines
from tests.support.tabular_logs import write_parquet as _parquet
from tests.support.tabular_logs import write_text as _write_text

# Small reading pieces, so that every file spans many blocks and batches.
SMALL = {"block_bytes": 8192, "batch_rows": 700}


def test_the_function_returns_the_counts(tmp_path, tabular_source):
    seen = []
    report = ingest_table_files(tmp_path, DATE, [tabular_source["csv"]], tabular_source["spec"], progress=seen.append, **SMALL)
    assert report["rows_read"] == report["rows_written"] == ROWS
    assert report["bad_lines_skipped"] == 0 and report["partition"] == str(partition_dir(tmp_path, DATE))
    assert len(seen) > 5 and seen[-1]["rows_read"] == ROWS and seen[-1]["file"] == str(tabular_source["csv"])
    assert schema.read_partition(tmp_path, DATE).num_rows == ROWS


def test_csv_gzip_tsv_parquet_and_split_files_give_identical_partitions(tmp_path, tabular_source):
    ingest_table_files(tmp_path / "csv", DATE, [tabular_source["csv"]], tabular_source["spec"], **SMALL)
    report = ingest_table_files(tmp_path / "tsv", DATE, [tabular_source["tsv"]], tabular_source["spec"], header=False, **SMALL)
    assert report["files"][0]["compression"] == "gzip" and report["files"][0]["delimiter"] == "\t"
    ingest_table_files(tmp_path / "pq", DATE, [tabular_source["parquet"]], tabular_source["spec"], **SMALL)
    # The same rows in three files of different formats (gzip recognised by its bytes, no .gz in the name).
    lines = _lines(tabular_source["data"])
    first = _write_text(tmp_path / "a.csv", lines[:1001])
    second = _write_text(tmp_path / "b.tsv", [line.replace(",", "\t") for line in [lines[0], *lines[1001:2001]]],
                         compress=True)
    rest = {name: values[2000:] for name, values in tabular_source["data"].items()}
    third = _parquet(tmp_path / "c.parquet", rest)
    ingest_table_files(tmp_path / "split", DATE, [first, second, third], tabular_source["spec"], **SMALL)
    prints = {name: schema.partition_fingerprint(tmp_path / name, DATE) for name in ("csv", "tsv", "pq", "split")}
    assert len(set(prints.values())) == 1, prints
    assert schema.read_partition(tmp_path / "split", DATE).equals(schema.read_partition(tmp_path / "csv", DATE))


def _spoiled(source, tmp_path):
    """The CSV with bad lines at known line numbers (line 1 is the header); returns (path, {line: reason})."""
    lines = _lines(source["data"])

    def set_field(line: int, column: str, value: str) -> None:
        fields = lines[line - 1].split(",")
        fields[COLUMNS.index(column)] = value
        lines[line - 1] = ",".join(fields)

    lines[5] += ",surplus"  # line 6
    lines[99] = ""  # line 100
    set_field(250, "impression_id", "12.5")
    set_field(400, "impression_id", "0x1f")
    set_field(777, "clicked", "2")
    set_field(1500, "clicked", "yes")
    set_field(2200, "f4", "n/a")
    set_field(2900, "f2", "inf")
    set_field(2901, "f3", "NaN")  # a missing value, not a bad line
    set_field(2902, "f3", "null")
    expected = {6: "wrong number of fields (13 instead of 12)", 100: "empty line",
                250: "impression_id is not an integer", 400: "impression_id is not an integer",
                777: "clicked is not an integer in 0..1", 1500: "clicked is not an integer in 0..1",
                2200: "f4 is not a finite number", 2900: "f2 is not a finite number"}
    return _write_text(tmp_path / "spoiled.csv", lines), expected


def test_bad_lines_are_skipped_counted_and_capped(tmp_path, tabular_source, capsys):
    path, expected = _spoiled(tabular_source, tmp_path)
    report = ingest_table_files(tmp_path / "ok", DATE, [path], tabular_source["spec"], max_bad_lines=8, **SMALL)
    assert report["bad_lines_skipped"] == 8 and report["rows_written"] == ROWS - 8 and report["rows_read"] == ROWS
    assert report["bad_lines_by_reason"] == {"wrong number of fields (13 instead of 12)": 1, "empty line": 1,
                                             "impression_id is not an integer": 2,
                                             "clicked is not an integer in 0..1": 2, "f4 is not a finite number": 1,
                                             "f2 is not a finite number": 1}
    assert [(item["line"], item["reason"]) for item in report["first_bad_lines"]] == sorted(expected.items())[:5]
    assert schema.read_provenance(tmp_path / "ok", DATE)["bad_lines_skipped"] == 8
    table = schema.read_partition(tmp_path / "ok", DATE)
    kept = table.column("impression_id").to_pylist()
    skipped = {tabular_source["data"]["impression_id"][line - 2] for line in expected}
    assert kept == [key for key in tabular_source["data"]["impression_id"] if key not in skipped]
    f3 = dict(zip(kept, table.column("f3").to_pylist(), strict=True))
    assert f3[tabular_source["data"]["impression_id"][2899]] is None and f3[tabular_source["data"]["impression_id"][2900]] is None

    with pytest.raises(LabelDPInputError) as info:
        ingest_table_files(tmp_path / "over", DATE, [path], tabular_source["spec"], max_bad_lines=7, **SMALL)
    message = str(info.value)
    assert message.startswith(f"{path}: line 6: wrong number of fields") and "8 bad line(s)" in message
    assert "more than the 7 allowed" in message
    assert not (tmp_path / "over").exists()
    # The default allows none; the CLI exits 2 and writes nothing.
    root = tmp_path / "cli"
    assert _cli("ingest", path, "--dataset", tabular_source["spec"], "--date", DATE, "--data-root", root) == 2
    assert "line 6" in capsys.readouterr().err and not partition_dir(root, DATE).exists()
    assert _cli("ingest", path, "--dataset", tabular_source["spec"], "--date", DATE, "--max-bad-lines", "8",
                "--data-root", root) == 0
    assert "8 bad lines skipped" in capsys.readouterr().out


def test_bad_rows_in_parquet_are_counted_by_row(tmp_path, tabular_source):
    data = {name: list(values[:500]) for name, values in tabular_source["data"].items()}
    data["clicked"][9] = 3
    data["impression_id"][99] = None
    path = _parquet(tmp_path / "bad.parquet", data)
    report = ingest_table_files(tmp_path / "root", DATE, [path], tabular_source["spec"], max_bad_lines=2)
    assert report["rows_written"] == 498
    assert [(item["row"], item["reason"]) for item in report["first_bad_lines"]] == [
        (10, "clicked is not an integer in 0..1"), (100, "impression_id is missing")]


def test_a_spec_column_missing_from_the_file_exits_2_naming_spec_file_and_column(tmp_path, tabular_source, capsys):
    spec = tmp_path / "wider.json"
    spec.write_text(json.dumps({**SPEC, "numeric": [*SPEC["numeric"], "f6"]}))
    root = tmp_path / "root"
    for path, extra in ((tabular_source["csv"], []), (tabular_source["tsv"], ["--no-header"]), (tabular_source["parquet"], [])):
        code = _cli("ingest", path, *extra, "--dataset", spec, "--date", DATE, "--data-root", root)
        err = capsys.readouterr().err
        if extra:  # without a header the spec's 13 columns meet 12 fields: every line is bad
            assert code == 2 and "wrong number of fields (12 instead of 13)" in err, err
            assert str(spec) in err and str(path) in err and "'f6'" in err, err
        else:
            assert code == 2 and str(spec) in err and str(path) in err and "['f6']" in err, err
        assert not partition_dir(root, DATE).exists() and not root.exists()


def test_extra_columns_are_refused_unless_dropped(tmp_path, tabular_source, capsys):
    data = dict(tabular_source["data"], debug=["x"] * ROWS, note=["y"] * ROWS)
    path = _write_text(tmp_path / "wide.csv", _lines(data, columns=[*COLUMNS[:3], "debug", *COLUMNS[3:], "note"]))
    root = tmp_path / "root"
    assert _cli("ingest", path, "--dataset", tabular_source["spec"], "--date", DATE, "--data-root", root) == 2
    err = capsys.readouterr().err
    assert "['debug', 'note']" in err and "--drop-extra-columns" in err and not root.exists()
    assert _cli("ingest", path, "--dataset", tabular_source["spec"], "--date", DATE, "--drop-extra-columns",
                "--data-root", root) == 0
    assert "2 extra column(s) dropped" in capsys.readouterr().out
    assert schema.read_provenance(root, DATE)["extra_columns_dropped"] == 2
    ingest_table_files(tmp_path / "ref", DATE, [tabular_source["csv"]], tabular_source["spec"])
    assert schema.partition_fingerprint(root, DATE) == schema.partition_fingerprint(tmp_path / "ref", DATE)


def test_duplicate_keys_across_files_exit_2_and_write_nothing(tmp_path, tabular_source, capsys):
    lines = _lines(tabular_source["data"])
    first = _write_text(tmp_path / "a.csv", lines[:1501])
    second = _write_text(tmp_path / "b.csv", [lines[0], *lines[1500:]])  # line 1501 is in both
    root = tmp_path / "root"
    assert _cli("ingest", first, second, "--dataset", tabular_source["spec"], "--date", DATE, "--data-root", root) == 2
    err = capsys.readouterr().err
    assert "impression_id" in err and "repeat" in err and str(first) in err and str(second) in err
    assert not root.exists()
    # An existing day is left exactly as it was.
    ingest_table_files(root, DATE, [first], tabular_source["spec"])
    before = schema.partition_fingerprint(root, DATE)
    assert _cli("ingest", first, second, "--dataset", tabular_source["spec"], "--date", DATE, "--data-root", root) == 2
    assert schema.partition_fingerprint(root, DATE) == before


def test_text_stays_text_and_keys_stay_integers(tmp_path, tabular_source):
    lines = ["impression_id,clicked,f1,f2,f3,f4,f5,country,device,slot,campaign,site",
             "9007199254740993,1,1e-3,,+2,-0.5,.25,007,0,12,4,0x1f",
             "-5,0,3,4,5,6,7,US,tablet,01,spring,",
             "9223372036854775807,0,1,1,1,1,1,840,1,2,x,\"a,b\""]
    report = ingest_table_files(tmp_path / "r", DATE, [_write_text(tmp_path / "t.csv", lines)], tabular_source["spec"])
    table = schema.read_partition(tmp_path / "r", DATE)
    assert report["rows_written"] == 3
    assert table.column("impression_id").to_pylist() == [9007199254740993, -5, 2**63 - 1]  # exact, beyond 2^53
    assert table.column("country").to_pylist() == ["007", "US", "840"]  # leading zeros kept
    assert table.column("slot").to_pylist() == ["12", "01", "2"]
    assert table.column("site").to_pylist() == ["0x1f", None, "a,b"]
    assert table.column("f1").to_pylist() == [0.001, 3.0, 1.0] and table.column("f2").to_pylist()[0] is None
    assert table.column("f3").to_pylist()[0] == 2.0 and table.column("f5").to_pylist()[0] == 0.25
    # A key beyond int64 is a bad line, not a wrapped number.
    over = _write_text(tmp_path / "o.csv", [lines[0], "9223372036854775808,1,1,1,1,1,1,a,b,c,d,e", lines[2]])
    with pytest.raises(LabelDPInputError, match="line 2: impression_id is not an integer"):
        ingest_table_files(tmp_path / "o", DATE, [over], tabular_source["spec"])


def test_int64_numeric_spec_and_typed_parquet(tmp_path, tabular_source):
    spec = load_spec(tabular_source["spec"])
    counts = type(spec)(**{**encode(spec), "numeric_type": "int64"}, source="counts spec")
    data = {name: values[:200] for name, values in tabular_source["data"].items()}
    data.update({f"f{j}": [None if i % 7 == 0 else float(i * j) for i in range(200)] for j in range(1, 6)})
    data["clicked"] = [bool(v) for v in data["clicked"]]  # a 0/1 label stored as booleans
    path = _parquet(tmp_path / "counts.parquet", data)
    ingest_table_files(tmp_path / "r", DATE, [path], counts)
    table = schema.read_partition(tmp_path / "r", DATE)
    assert table.schema.field("f2").type == pa.int64()
    assert table.column("f2").to_pylist() == [None if i % 7 == 0 else 2 * i for i in range(200)]
    assert table.column("clicked").to_pylist() == [int(v) for v in data["clicked"]]
    data["f1"][3] = 2.5
    with pytest.raises(LabelDPInputError, match=r"row 4: f1 is not an integer"):
        ingest_table_files(tmp_path / "bad", DATE, [_parquet(tmp_path / "half.parquet", data)], counts)
    data["impression_id"] = [float(v) for v in data["impression_id"]]
    with pytest.raises(LabelDPInputError, match="'impression_id' has type double"):
        ingest_table_files(tmp_path / "bad", DATE, [_parquet(tmp_path / "float.parquet", data)], counts)


def test_formats_delimiters_and_arguments(tmp_path, tabular_source, capsys):
    lines = _lines(tabular_source["data"], ";")
    odd = _write_text(tmp_path / "day.txt", lines)
    spec = tabular_source["spec"]
    with pytest.raises(LabelDPInputError, match=r"\(delimiter\)"):
        ingest_table_files(tmp_path / "r", DATE, [odd], spec)
    ingest_table_files(tmp_path / "semi", DATE, [odd], spec, delimiter=";")
    ingest_table_files(tmp_path / "csv", DATE, [tabular_source["csv"]], spec)
    assert schema.partition_fingerprint(tmp_path / "semi", DATE) == schema.partition_fingerprint(tmp_path / "csv", DATE)
    fake = tmp_path / "day.csv.gz"
    fake.write_text("not gzip")
    with pytest.raises(LabelDPInputError, match="not gzip data"):
        ingest_table_files(tmp_path / "r", DATE, [fake], spec)
    with pytest.raises(LabelDPInputError, match="given twice"):
        ingest_table_files(tmp_path / "r", DATE, [tabular_source["csv"], tabular_source["csv"]], spec)
    with pytest.raises(LabelDPInputError, match="no such file"):
        ingest_table_files(tmp_path / "r", DATE, [tmp_path / "absent.csv"], spec)
    with pytest.raises(LabelDPInputError, match="max_bad_lines"):
        ingest_table_files(tmp_path / "r", DATE, [tabular_source["csv"]], spec, max_bad_lines=-1)
    empty = _write_text(tmp_path / "empty.csv", [COLUMNS[0] + "," + ",".join(COLUMNS[1:])])
    with pytest.raises(LabelDPInputError, match="empty"):
        ingest_table_files(tmp_path / "r", DATE, [empty], spec)
    tab = _write_text(tmp_path / "tab.dat", _lines(tabular_source["data"], "\t"))
    for args, code in ((["--delimiter", "tab"], 0), (["--delimiter", "::"], 2), (["--max-bad-lines", "x"], 2)):
        assert _cli("ingest", tab, "--dataset", spec, "--date", DATE, *args, "--data-root", tmp_path / "t") == code
    assert _cli("ingest", tab, "--dataset", tmp_path / "nope.json", "--date", DATE) == 2
    assert "nope.json" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------------------------------ what a user means


def test_a_day_of_one_label_value_is_refused_at_ingest(tmp_path, tabular_source, capsys):
    """The audit refuses a day whose rows all have one label (nothing to audit): the ingest refuses it first, from
    every input, naming the file and the column, and writes nothing; an existing day is left as it was."""
    data = dict(tabular_source["data"], clicked=[0] * ROWS)
    root = tmp_path / "root"
    for path in (_write_text(tmp_path / "zeros.csv", _lines(data)), _parquet(tmp_path / "zeros.parquet", data)):
        assert _cli("ingest", path, "--dataset", tabular_source["spec"], "--date", DATE, "--data-root", root) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(path) in err, err
        assert f"column 'clicked': all {ROWS} row(s) have the label 0; nothing to audit" in err, err
        assert not root.exists()
    ingest_table_files(root, DATE, [tabular_source["csv"]], tabular_source["spec"])
    before = schema.partition_fingerprint(root, DATE)
    assert _cli("ingest", tmp_path / "zeros.csv", "--dataset", tabular_source["spec"], "--date", DATE,
                "--data-root", root) == 2
    assert schema.partition_fingerprint(root, DATE) == before

    from pipelines.data.criteo_ingest import ingest_criteo, write_criteo_tsv
    from pipelines.data.synth import generate_day

    day = generate_day(DATE, rows=500).table
    day = day.set_column(day.schema.get_field_index("label"), "label", pa.array(np.ones(500, dtype=np.int8)))
    tsv = write_criteo_tsv(day, tmp_path / "ones.tsv")
    with pytest.raises(LabelDPInputError, match="all 500 row\\(s\\) have the label 1; nothing to audit"):
        ingest_criteo(tsv, tmp_path / "criteo", DATE)
    assert not (tmp_path / "criteo").exists()


def test_labels_written_as_whole_floats_are_their_integers(tmp_path, tabular_source):
    """'0.0'/'1.0' (the usual CSV export of a 0/1 column) and a float64 Parquet column give the same partition as
    the integers; a label that is not a whole number stays a bad line."""
    data = tabular_source["data"]
    floats = dict(data, clicked=[float(v) for v in data["clicked"]])
    text = _write_text(tmp_path / "floats.csv", _lines(floats))
    assert "1.0" in text.read_text().splitlines()[1 + data["clicked"].index(1)]
    parquet = _parquet(tmp_path / "floats.parquet", floats)
    assert pq.read_schema(parquet).field("clicked").type == pa.float64()
    ingest_table_files(tmp_path / "ints", DATE, [tabular_source["csv"]], tabular_source["spec"])
    expected = schema.partition_fingerprint(tmp_path / "ints", DATE)
    for path in (text, parquet):
        ingest_table_files(tmp_path / path.stem, DATE, [path], tabular_source["spec"], replace=True)
        assert schema.partition_fingerprint(tmp_path / path.stem, DATE) == expected, path
    floats["clicked"][4] = 0.5
    for path in (_write_text(tmp_path / "half.csv", _lines(floats)), _parquet(tmp_path / "half.parquet", floats)):
        with pytest.raises(LabelDPInputError, match=r"(line 6|row 5): clicked is not an integer in 0\.\.1"):
            ingest_table_files(tmp_path / "half", DATE, [path], tabular_source["spec"])
    assert not (tmp_path / "half").exists()


def test_a_pandas_index_in_parquet_is_not_a_column_of_the_log(tmp_path, tabular_source):
    """A frame filtered in pandas keeps its row numbers as an index, which to_parquet stores as the column
    __index_level_0__ (named in the file's pandas metadata): it is ignored, not refused as an extra column."""
    import pandas as pd

    frame = pd.DataFrame({name: tabular_source["data"][name] for name in COLUMNS})
    kept = frame[frame["impression_id"] % 3 != 0]
    path = tmp_path / "filtered.parquet"
    kept.to_parquet(path)
    file_schema = pq.read_schema(path)
    assert "__index_level_0__" in file_schema.names and file_schema.pandas_metadata["index_columns"] == [
        "__index_level_0__"]
    report = ingest_table_files(tmp_path / "root", DATE, [path], tabular_source["spec"])
    assert report["rows_written"] == len(kept) and report["extra_columns_dropped"] == 0
    table = schema.read_partition(tmp_path / "root", DATE)
    assert table.column_names == COLUMNS
    assert table.column("impression_id").to_pylist() == kept["impression_id"].tolist()
    # A column the spec names is read even when pandas stored it as the index.
    kept.set_index("impression_id").to_parquet(tmp_path / "keyed.parquet")
    ingest_table_files(tmp_path / "keyed", DATE, [tmp_path / "keyed.parquet"], tabular_source["spec"])
    assert schema.partition_fingerprint(tmp_path / "keyed", DATE) == schema.partition_fingerprint(
        tmp_path / "root", DATE)


@pytest.mark.parametrize("name", ["empty.csv", "empty.tsv.gz", "empty.parquet", "spec.json"])
def test_an_empty_file_is_called_empty(tmp_path, tabular_source, capsys, name):
    empty = tmp_path / name
    empty.write_bytes(b"")
    files, spec = ([tabular_source["csv"]], empty) if name == "spec.json" else ([empty], tabular_source["spec"])
    assert _cli("ingest", *files, "--dataset", spec, "--date", DATE, "--data-root", tmp_path / "root") == 2
    assert capsys.readouterr().err.endswith(f"error: {empty}: the file is empty (0 bytes)\n")
    assert not (tmp_path / "root").exists()


# ------------------------------------------------------------------------------------------ hints


def test_a_comma_separated_file_named_tsv_is_told_to_pass_the_delimiter(tmp_path, tabular_source, capsys):
    """Read at tabs, a comma-separated header is one column, so every spec column is missing: the refusal says
    the file is comma-separated and names the flag; with it, the file is the CSV's day."""
    misnamed = _write_text(tmp_path / "day.tsv", _lines(tabular_source["data"]))
    root = tmp_path / "root"
    assert _cli("ingest", misnamed, "--dataset", tabular_source["spec"], "--date", DATE, "--data-root", root) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "are missing" in err and "pass --delimiter ," in err, err
    assert "--no-header" not in err and not root.exists()
    assert _cli("ingest", misnamed, "--dataset", tabular_source["spec"], "--date", DATE, "--delimiter", ",",
                "--data-root", root) == 0
    ingest_table_files(tmp_path / "ref", DATE, [tabular_source["csv"]], tabular_source["spec"])
    assert schema.partition_fingerprint(root, DATE) == schema.partition_fingerprint(tmp_path / "ref", DATE)
    # A header missing a column for another reason keeps the advice it had.
    spec = tmp_path / "wider.json"
    spec.write_text(json.dumps({**SPEC, "numeric": [*SPEC["numeric"], "f6"]}))
    with pytest.raises(LabelDPInputError) as info:
        ingest_table_files(tmp_path / "r", DATE, [tabular_source["csv"]], spec)
    assert "no_header" in str(info.value) and "delimiter" not in str(info.value)


@pytest.mark.parametrize("source_kind", ["csv", "parquet"])
def test_labels_written_yes_and_no_are_told_to_be_mapped_to_0_and_1(tmp_path, tabular_source, capsys, source_kind):
    data = dict(tabular_source["data"], clicked=["yes" if x else "no" for x in tabular_source["data"]["clicked"]])
    path = (_write_text(tmp_path / "words.csv", _lines(data)) if source_kind == "csv"
            else _parquet(tmp_path / "words.parquet", data))
    root = tmp_path / "root"
    assert _cli("ingest", path, "--dataset", tabular_source["spec"], "--date", DATE, "--data-root", root) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "clicked is not an integer in 0..1" in err, err
    assert "the labels are written as words (no, yes): write them as the integers 0..1" in err, err
    assert not root.exists()
    # A label that is a bad number, not a word, gets no such advice.
    data = dict(tabular_source["data"], clicked=[7, *tabular_source["data"]["clicked"][1:]])
    assert _cli("ingest", _write_text(tmp_path / "seven.csv", _lines(data)), "--dataset", tabular_source["spec"], "--date",
                DATE, "--data-root", root) == 2
    assert "words" not in capsys.readouterr().err
