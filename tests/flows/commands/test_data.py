"""The data command (flows/commands/data.py): `data synth` refuses a bad range, count, seed or drift option with one
line and exit 2, writing nothing."""

from __future__ import annotations

import pytest

from flows.cli import main


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
