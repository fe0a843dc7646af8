"""The Criteo TSV reader's parts (pipelines/data/criteo_tsv.py): blocks cut at line ends whatever the reads
return, and a block parsed into rows numbered by their lines with the first reason of each bad line. A whole file
ingested (sampling, gzip, every refusal): test_criteo_ingest.py."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.data import criteo_tsv
from pipelines.data.criteo_tsv import FIELDS, parse_block, tsv_blocks


def _line(label="1", ints=None, cats=None) -> str:
    ints = ints if ints is not None else [str(j) for j in range(13)]
    cats = cats if cats is not None else [f"{j:08x}" for j in range(26)]
    return "\t".join([label, *ints, *cats])


def test_a_block_parses_to_rows_numbered_by_line_with_missing_fields_invalid():
    good = _line(ints=["-5", "", *[str(j) for j in range(11)]], cats=["0000abcd", "", *["ffffffff"] * 24])
    bad_twice = _line(label="7", ints=["x", *["1"] * 12])  # the label's reason is the one kept
    parsed = parse_block(f"{good}\r\n{bad_twice}\n{_line(label='0')}\n".encode(), first_line=41)
    rows = parsed.rows
    assert rows.row_id.tolist() == [41, 43] and rows.label.tolist() == [1, 0]
    assert rows.ints[0].tolist() == [-5, 0] and rows.int_valid[1].tolist() == [False, True]
    assert rows.cats[0].tolist() == [0xABCD, 0] and rows.cat_valid[1].tolist() == [False, True]
    assert rows.cats[25, 0] == 0xFFFFFFFF  # the CRLF line's last field without its "\r"
    assert parsed.bad_lines.tolist() == [42] and parsed.bad_reasons.tolist() == ["label is not 0 or 1"]
    short = parse_block(b"1\t2\n", first_line=1)
    assert len(short.rows) == 0 and short.bad_reasons.tolist() == [f"wrong number of fields (2 instead of {FIELDS})"]


class _Trickle:
    """A stream that returns at most ``most`` bytes per read."""

    def __init__(self, data: bytes, most: int):
        self.stream, self.most = pa.BufferReader(data), most

    def read(self, n: int) -> bytes:
        return self.stream.read(min(n, self.most))


def test_blocks_end_at_line_ends_whatever_the_read_sizes_and_the_last_line_gets_its_newline(tmp_path):
    data = b"".join(f"line {i:03d} {'x' * (i % 7)}\n".encode() for i in range(60)) + b"tail without newline"
    cut = [block for block, _ in tsv_blocks(pa.BufferReader(data), tmp_path, 100)]
    assert all(block.endswith(b"\n") for block in cut) and b"".join(cut) == data + b"\n"
    assert [block for block, _ in tsv_blocks(_Trickle(data, 7), tmp_path, 100)] == cut
    totals = [total for _, total in tsv_blocks(pa.BufferReader(data), tmp_path, 100)]
    assert totals[-1] == len(data) and totals == sorted(totals)


def test_a_line_too_long_for_criteo_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(criteo_tsv, "MAX_LINE_BYTES", 50)
    with pytest.raises(LabelDPInputError, match=r"a line longer than 50 bytes near byte \d+; this does not look like"):
        list(tsv_blocks(pa.BufferReader(b"y" * 200 + b"\n"), tmp_path, 20))
    assert np.array_equal([len(b) for b, _ in tsv_blocks(pa.BufferReader(b"y" * 40 + b"\n"), tmp_path, 20)], [41])
