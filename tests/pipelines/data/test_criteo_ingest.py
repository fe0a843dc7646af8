"""Criteo TSV ingest (pipelines.data.criteo_ingest); `labeldp-audit data ingest-criteo`: tests/flows/commands/
test_data.py."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pyarrow as pa
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.data import schema
from pipelines.data.criteo_ingest import ingest_criteo
from pipelines.data.layout import partition_dir
from pipelines.data.synth import generate_day
from tests.support.criteo_sources import CRITEO_DATE as DATE
from tests.support.criteo_sources import CRITEO_ROWS as ROWS
from tests.support.criteo_sources import write_lines as _write_lines

SMALL_BLOCK = 64 * 1024  # ~270 lines per block: exercises block cuts and carried partial lines


def _same_content(a: pa.Table, b: pa.Table) -> None:
    assert a.num_rows == b.num_rows
    for name in schema.ALL_COLUMNS:
        assert a.column(name).to_pylist() == b.column(name).to_pylist(), name


def test_roundtrip_row_ids_are_line_numbers(tmp_path, criteo_source):
    table, plain, _gz, _lines = criteo_source
    report = ingest_criteo(plain, tmp_path, DATE, block_bytes=SMALL_BLOCK)
    assert (report.lines_read, report.rows_written, report.skipped_lines) == (ROWS, ROWS, 0)
    back = schema.read_partition(tmp_path, DATE)
    assert back.column("row_id").to_pylist() == list(range(1, ROWS + 1))
    expected = table.set_column(0, "row_id", pa.array(np.arange(1, ROWS + 1, dtype=np.int64)))
    _same_content(back, expected)
    provenance = schema.read_provenance(tmp_path, DATE)
    assert provenance["source"] == "criteo-tsv" and provenance["lines_read"] == ROWS


def test_gzip_and_plain_identical(tmp_path, criteo_source):
    _table, plain, gz, _lines = criteo_source
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    r1 = ingest_criteo(plain, tmp_path / "plain", DATE, block_bytes=SMALL_BLOCK)
    r2 = ingest_criteo(gz, tmp_path / "gz", DATE, block_bytes=SMALL_BLOCK)
    assert r2.compression == "gzip" and r1.compression == "none"
    assert schema.partition_fingerprint(tmp_path / "plain", DATE) == schema.partition_fingerprint(tmp_path / "gz", DATE)
    # Block size changes only how the bytes are chunked, never the rows.
    ingest_criteo(gz, tmp_path / "big", DATE)
    _same_content(schema.read_partition(tmp_path / "big", DATE), schema.read_partition(tmp_path / "plain", DATE))


def test_multi_member_gzip_and_crlf(tmp_path, criteo_source):
    _table, plain, _gz, lines = criteo_source
    data = plain.read_bytes()
    half = data.index(b"\n", len(data) // 2) + 1
    (tmp_path / "mm.gz").write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:]))
    ingest_criteo(tmp_path / "mm.gz", tmp_path / "mm", DATE, block_bytes=SMALL_BLOCK)
    crlf = _write_lines(tmp_path / "crlf.tsv", lines, end="\r\n")
    ingest_criteo(crlf, tmp_path / "crlf", DATE, block_bytes=SMALL_BLOCK)
    ingest_criteo(plain, tmp_path / "ref", DATE, block_bytes=SMALL_BLOCK)
    reference = schema.read_partition(tmp_path / "ref", DATE)
    _same_content(schema.read_partition(tmp_path / "mm", DATE), reference)
    _same_content(schema.read_partition(tmp_path / "crlf", DATE), reference)
    no_final_newline = tmp_path / "nofinal.tsv"
    no_final_newline.write_bytes(data.rstrip(b"\n"))
    assert ingest_criteo(no_final_newline, tmp_path / "nf", DATE).rows_written == ROWS


def test_negative_and_large_integers(tmp_path, criteo_source):
    lines = criteo_source[3][:5]
    fields = lines[0].split("\t")
    fields[1], fields[2], fields[3] = "-3", "123456789012345678", ""
    lines[0] = "\t".join(fields)
    lines[4] = "1" + lines[4][1:]  # a day of one label is refused (nothing to audit)
    ingest_criteo(_write_lines(tmp_path / "ints.tsv", lines), tmp_path, DATE)
    back = schema.read_partition(tmp_path, DATE)
    assert back.column("I1")[0].as_py() == -3
    assert back.column("I2")[0].as_py() == 123456789012345678
    assert back.column("I3")[0].as_py() is None


def test_sampling_exact_deterministic_and_uniform(tmp_path, criteo_source):
    _table, plain, gz, _lines = criteo_source
    n = 1_000
    r1 = ingest_criteo(plain, tmp_path / "a", DATE, sample_rows=n, seed=1, block_bytes=SMALL_BLOCK)
    ingest_criteo(gz, tmp_path / "b", DATE, sample_rows=n, seed=1)  # other block size, gzip: same sample
    ingest_criteo(plain, tmp_path / "c", DATE, sample_rows=n, seed=2, block_bytes=SMALL_BLOCK)
    assert r1.rows_written == n and r1.lines_read == ROWS
    a, b, c = (schema.read_partition(tmp_path / x, DATE) for x in "abc")
    ids = a.column("row_id").to_numpy()
    assert np.all(np.diff(ids) > 0)  # written in line order
    np.testing.assert_array_equal(ids, b.column("row_id").to_numpy())
    _same_content(a, b)
    assert not np.array_equal(ids, c.column("row_id").to_numpy())
    # Uniform without replacement: the share sampled from the first half of the file is hypergeometric,
    # mean 1/2, sd ~ sqrt(1/4 * (N - n) / (N - 1) / n) ~ 0.013; tolerance 4 sd.
    share_first_half = np.mean(ids <= ROWS // 2)
    assert abs(share_first_half - 0.5) < 4 * np.sqrt(0.25 * (ROWS - n) / (ROWS - 1) / n)
    # Sampled rows are the file's rows, unchanged.
    full = generate_day(DATE, rows=ROWS, seed=9).table
    picked = full.take(pa.array(ids - 1)).set_column(0, "row_id", pa.array(ids))
    _same_content(a, picked)
    # Asking for more rows than lines keeps every line.
    assert ingest_criteo(plain, tmp_path / "all", DATE, sample_rows=10 * ROWS).rows_written == ROWS


@pytest.mark.parametrize(
    ("mutate", "line", "message"),
    [
        (lambda f: f[:-1], 7, r"wrong number of fields \(39 instead of 40\)"),
        (lambda f: [*f, "x"], 7, r"wrong number of fields \(41 instead of 40\)"),
        (lambda f: ["2", *f[1:]], 7, "label is not 0 or 1"),
        (lambda f: ["", *f[1:]], 7, "label is not 0 or 1"),
        (lambda f: [*f[:4], "1.5", *f[5:]], 7, "I4 is not an integer"),
        (lambda f: [*f[:4], "1234567890123456789", *f[5:]], 7, "I4 is not an integer"),
        (lambda f: [*f[:20], "ABCDEF12", *f[21:]], 7, "C7 is not 8 lowercase hex digits"),
        (lambda f: [*f[:20], "abc", *f[21:]], 7, "C7 is not 8 lowercase hex digits"),
    ],
)
def test_bad_line_fails_naming_line_and_writes_nothing(tmp_path, criteo_source, mutate, line, message):
    lines = list(criteo_source[3][:200])
    lines[line - 1] = "\t".join(mutate(lines[line - 1].split("\t")))
    lines[150] = lines[150].split("\t", 1)[1]  # a second bad line (39 fields) further on
    path = _write_lines(tmp_path / "bad.tsv", lines)
    with pytest.raises(LabelDPInputError, match=rf"bad\.tsv: line {line}: {message}.*2 bad line\(s\) among "
                                                rf"the first 200 lines.*skip_bad_lines"):
        ingest_criteo(path, tmp_path / "root", DATE)
    assert not (tmp_path / "root").exists()


def test_skip_bad_lines_reports_counts(tmp_path, criteo_source):
    lines = list(criteo_source[3][:300])
    lines[4] = ""  # blank line
    lines[9] = lines[9].replace("\t", " ", 1)  # 39 fields
    lines[99] = "1" + lines[99][1:].replace("\t", "\tzz", 1)  # I1 not an integer
    path = _write_lines(tmp_path / "bad.tsv", lines)
    report = ingest_criteo(path, tmp_path, DATE, skip_bad_lines=True, block_bytes=SMALL_BLOCK)
    assert report.skipped_lines == 3 and report.rows_written == 297 and report.lines_read == 300
    assert report.first_skipped_lines == [5, 10, 100]
    assert report.skipped_by_reason == {"I1 is not an integer": 1, "wrong number of fields (1 instead of 40)": 1,
                                        "wrong number of fields (39 instead of 40)": 1}
    ids = schema.read_partition(tmp_path, DATE).column("row_id").to_numpy()
    assert 5 not in ids and 10 not in ids and 100 not in ids and len(ids) == 297
    assert schema.read_provenance(tmp_path, DATE)["skipped_lines"] == 3


def test_failed_ingest_keeps_existing_partition(tmp_path, criteo_source):
    _table, plain, _gz, lines = criteo_source
    ingest_criteo(plain, tmp_path, DATE)
    before = schema.partition_fingerprint(tmp_path, DATE)
    bad = list(lines)
    bad[-1] = "oops"  # the very last line: the failure comes after most of the file was processed
    with pytest.raises(LabelDPInputError, match=rf"line {ROWS}: wrong number of fields"):
        ingest_criteo(_write_lines(tmp_path / "bad.tsv", bad), tmp_path, DATE, block_bytes=SMALL_BLOCK, replace=True)
    assert schema.partition_fingerprint(tmp_path, DATE) == before
    assert sorted(os.listdir(partition_dir(tmp_path, DATE).parent)) == [f"date={DATE}"]


def test_unreadable_inputs(tmp_path, criteo_source):
    _table, _plain, gz, _lines = criteo_source
    with pytest.raises(LabelDPInputError, match="no such file"):
        ingest_criteo(tmp_path / "missing.tsv", tmp_path / "r", DATE)
    (tmp_path / "empty.tsv").write_bytes(b"")
    with pytest.raises(LabelDPInputError, match=r"empty\.tsv: the file is empty \(0 bytes\)"):
        ingest_criteo(tmp_path / "empty.tsv", tmp_path / "r", DATE)
    with pytest.raises(LabelDPInputError, match=r"empty\.tsv: the file is empty \(0 bytes\)"):
        ingest_criteo(tmp_path / "empty.tsv", tmp_path / "r", DATE, sample_rows=5)
    data = gz.read_bytes()
    (tmp_path / "cut.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(LabelDPInputError, match=r"cut\.gz: read failed .*truncated or corrupt gzip"):
        ingest_criteo(tmp_path / "cut.gz", tmp_path / "r", DATE)
    (tmp_path / "binary.bin").write_bytes(os.urandom(1 << 16).replace(b"\n", b"x"))
    with pytest.raises(LabelDPInputError, match=r"binary\.bin: .*(line longer than|line 1)"):
        ingest_criteo(tmp_path / "binary.bin", tmp_path / "r", DATE, block_bytes=SMALL_BLOCK)
    assert not (tmp_path / "r").exists()
    with pytest.raises(LabelDPInputError, match=r"^sample_rows must be a whole number >= 1"):
        ingest_criteo(gz, tmp_path / "r", DATE, sample_rows=0)
