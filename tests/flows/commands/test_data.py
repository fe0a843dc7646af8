"""The data command (flows/commands/data.py): `data synth` refuses a bad range, count, seed or drift option with one
line and exit 2, writing nothing; `data validate` on a day (tests/support/schema_days.py, ``schema_table``),
`data ingest-criteo` on a Criteo TSV (tests/support/criteo_sources.py, ``criteo_source``) and `data ingest` on a
tabular log (tests/support/tabular_logs.py, ``tabular_source``), each with its bad input: exit 2, one line."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from flows.cli import main
from pipelines.data import schema
from pipelines.data.dataset_spec import SPEC_FILE, dataset_of, load_spec
from pipelines.data.layout import partition_dir
from tests.support.criteo_sources import CRITEO_DATE, CRITEO_ROWS
from tests.support.criteo_sources import write_lines as _write_lines
from tests.support.schema_days import SCHEMA_DATE
from tests.support.tabular_logs import TABULAR_COLUMNS, TABULAR_DATE, TABULAR_ROWS, TABULAR_SPEC
from tests.support.tabular_logs import data_command as _cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--start", "2024-02-02", "--end", "2024-02-01"], "--end (2024-02-01) is before --start"),
        (["--start", "2024-02-30", "--end", "2024-03-01"], "--start is not a valid calendar date"),
        (["--start", "2024-02-01", "--end", "2024-02-01", "--rows", "-5"], "--rows must be a whole number >= 1"),
        (["--start", "2024-02-01", "--end", "2024-02-01", "--seed", "x"], "--seed must be a whole number"),
    ],
)
def test_cli_synth_bad_input(tmp_path, capsys, args, message):
    assert main(["data", "synth", *args, "--data-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "partitions").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--logit-shift", "0.7"], "--logit-shift needs --shift-days"),
        (["--shift-days", "2024-02-01"], "--shift-days needs a shift"),
        (["--shift-days", "2024-02-03", "--logit-shift", "1"], "--shift-days '2024-02-03' is outside --start..--end"),
        (["--shift-days", "2024-02-31", "--logit-shift", "1"], "--shift-days is not a valid calendar date"),
        (["--shift-days", "2024-02-01", "--logit-shift", "big"], "--logit-shift must be a finite number in -10..10; "
                                                                 "got 'big'"),
        (["--shift-days", "2024-02-01", "--logit-shift", "inf"], "--logit-shift must be a finite number"),
        (["--shift-days", "2024-02-01", "--segment-shift", "C9:0.5"], "--segment-shift must look like Cj=V:X"),
        (["--shift-days", "2024-02-01", "--segment-shift", "C9=rank:3:0.5"],
         "--segment-shift 'C9=rank:3:0.5': segment rank of C9 (3 values) must be a whole number in 0..2; got 3"),
        (["--shift-days", "2024-02-01", "--segment-shift", "C9=00000000:0.5"],
         "--segment-shift 'C9=00000000:0.5': 00000000 is not a value of C9"),
        (["--shift-days", "2024-02-01", "--segment-shift", "I1=rank:0:0.5"],
         "--segment-shift 'I1=rank:0:0.5': segment column must name a categorical column C1..C26; got 'I1'"),
        (["--shift-days", "2024-02-01", "--popularity-shift", "C9:spin=1"], "--popularity-shift must look like"),
        (["--shift-days", "2024-02-01", "--popularity-shift", "C9:rotate=3"],
         "--popularity-shift 'C9:rotate=3': popularity rotation of C9 (3 values) must be a whole number in 0..2"),
        (["--shift-days", "2024-02-01", "--popularity-shift", "C3:exponent=9"],
         "--popularity-shift 'C3:exponent=9': the exponent S must be a finite number in 0..5; got '9'"),
    ],
)
def test_cli_synth_bad_shift(tmp_path, capsys, args, message):
    assert main(["data", "synth", "--start", "2024-02-01", "--end", "2024-02-02", "--rows", "100", *args,
                 "--data-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "partitions").exists()


def test_cli_validate(tmp_path, schema_table, capsys):
    schema.write_partition(tmp_path, SCHEMA_DATE, schema_table)
    assert main(["data", "validate", "--date", SCHEMA_DATE.isoformat(), "--data-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "rows:        600" in out
    assert schema.partition_fingerprint(tmp_path, SCHEMA_DATE) in out


@pytest.mark.parametrize("argv_tail", [["--date", "2024-13-01"], ["--date", "2024-02-09"]])
def test_cli_validate_bad_input_exit_2_one_line(tmp_path, capsys, argv_tail):
    assert main(["data", "validate", *argv_tail, "--data-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("labeldp-audit data validate: error: ")


def test_cli_validate_corrupt_file(tmp_path, schema_table, capsys):
    directory = schema.write_partition(tmp_path, SCHEMA_DATE, schema_table)
    (directory / "part-00000.parquet").write_bytes(b"garbage")
    assert main(["data", "validate", "--date", SCHEMA_DATE.isoformat(), "--data-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "part-00000.parquet" in err


def test_cli_ingest(tmp_path, criteo_source, capsys):
    _table, _plain, gz, _lines = criteo_source
    argv = ["data", "ingest-criteo", str(gz), "--date", CRITEO_DATE.isoformat(), "--sample-rows", "500", "--seed", "3",
            "--data-root", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"{CRITEO_ROWS} lines read (gzip), 500 rows written, 0 bad lines skipped" in out
    assert schema.read_partition(tmp_path, CRITEO_DATE).num_rows == 500


def test_cli_ingest_bad_input_exit_2_one_line(tmp_path, criteo_source, capsys):
    lines = list(criteo_source[3][:50])
    lines[20] = lines[20].rsplit("\t", 2)[0]
    path = _write_lines(tmp_path / "bad.tsv", lines)
    root = tmp_path / "root"
    assert main(["data", "ingest-criteo", str(path), "--date", CRITEO_DATE.isoformat(), "--data-root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.tsv: line 21: wrong number of fields (38 instead of 40)" in err
    assert not root.exists()
    assert main(["data", "ingest-criteo", str(path), "--date", CRITEO_DATE.isoformat(), "--skip-bad-lines",
                 "--data-root", str(root)]) == 0
    assert "skipped: 1 wrong number of fields (38 instead of 40) (first: lines 21)" in capsys.readouterr().out
    assert main(["data", "ingest-criteo", str(path), "--date", "2024/03/05", "--data-root", str(root)]) == 2
    assert main(["data", "ingest-criteo", str(path), "--date", CRITEO_DATE.isoformat(), "--sample-rows", "lots",
                 "--data-root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "--date must be a date" in err and "--sample-rows must be" in err


def test_cli_ingests_a_csv_with_a_header(tmp_path, tabular_source, capsys):
    root = tmp_path / "root"
    assert _cli("ingest", tabular_source["csv"], "--dataset", tabular_source["spec"], "--date", TABULAR_DATE, "--data-root", root) == 0
    out = capsys.readouterr().out
    directory = partition_dir(root, TABULAR_DATE)
    assert f"{TABULAR_ROWS} rows written, 0 bad lines skipped" in out and str(directory) in out
    assert dataset_of(root, TABULAR_DATE) == load_spec(tabular_source["spec"])
    table = schema.read_partition(root, TABULAR_DATE)
    data = tabular_source["data"]
    assert table.column_names == TABULAR_COLUMNS
    types = {field.name: field.type for field in table.schema}
    assert types["impression_id"] == pa.int64() and types["clicked"] == pa.int8()
    assert types["f1"] == pa.float64() and types["site"] == pa.string()
    assert all(types[name] == schema.CATEGORICAL_TYPE for name in TABULAR_SPEC["categorical"])
    assert table.column("impression_id").to_pylist() == data["impression_id"]
    assert table.column("clicked").to_pylist() == data["clicked"]
    for name in ("f1", "f2", "f3", "f4", "f5"):
        assert table.column(name).to_pylist() == data[name], name  # exact floats, None where the cell was empty
    assert table.column("f3").null_count == sum(v is None for v in data["f3"]) > 0
    # Integer categoricals stay text (the same values as their decimal strings); words stay words.
    for name in ("country", "device", "slot"):
        assert table.column(name).to_pylist() == [str(v) for v in data[name]], name
    assert table.column("campaign").to_pylist() == data["campaign"]
    assert table.column("site").to_pylist() == data["site"]
    provenance = schema.read_provenance(root, TABULAR_DATE)
    assert provenance["source"] == "tabular" and provenance["dataset"] == "clicks"
    assert provenance["rows_written"] == TABULAR_ROWS and provenance["bad_lines_skipped"] == 0
    assert provenance["files"][0]["format"] == "csv" and provenance["files"][0]["header"] is True

    assert _cli("validate", "--date", TABULAR_DATE, "--data-root", root) == 0
    out = capsys.readouterr().out
    assert "dataset:     clicks" in out and f"rows:        {TABULAR_ROWS}" in out and "1 file(s)" in out
    assert _cli("validate", "--date", TABULAR_DATE, "--dataset", tabular_source["spec"], "--data-root", root) == 0
    assert _cli("validate", "--date", TABULAR_DATE, "--dataset", SPEC_FILE, "--data-root", root) == 2
    err = capsys.readouterr().err
    assert "written for dataset 'clicks'" in err and "not for 'criteo'" in err


def test_a_date_after_tomorrow_is_refused_unless_allowed(tmp_path, tabular_source, capsys):
    today = dt.datetime.now(dt.UTC).date()
    root = tmp_path / "root"
    tomorrow, later = today + dt.timedelta(days=1), today + dt.timedelta(days=2)
    assert _cli("ingest", tabular_source["csv"], "--dataset", tabular_source["spec"], "--date", tomorrow, "--data-root", root) == 0
    capsys.readouterr()
    for command in (["ingest", tabular_source["csv"], "--dataset", tabular_source["spec"]], ["ingest-criteo", tabular_source["csv"]]):
        assert _cli(*command, "--date", later, "--data-root", root) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--date {later} is after tomorrow ({tomorrow}, UTC)" in err, err
        assert "--allow-future" in err
        assert not partition_dir(root, later).exists()
    assert _cli("ingest", tabular_source["csv"], "--dataset", tabular_source["spec"], "--date", later, "--allow-future",
                "--data-root", root) == 0
    assert partition_dir(root, later).is_dir()
