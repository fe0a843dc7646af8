"""The risk command (flows/commands/risk.py): JSON and text output, bad input as one line and exit 2, the help."""

from __future__ import annotations

import json

import pytest
from scipy.stats import norm

from auditing.risk.column_bound import column_bound
from flows.cli import main as cli_main
from tests.support.ctr_priors import ctr_priors


def test_cli_json_and_text(capsys, tmp_path):
    assert cli_main(["risk", "--epsilon", "1", "--prior", "0.1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["posterior_ceiling"] == pytest.approx(0.231969, abs=5e-7)
    assert out["mia_advantage_bound"] == pytest.approx(0.462117, abs=5e-7)
    assert out["aia_advantage_bound"] == pytest.approx(0.231059, abs=5e-7)
    assert cli_main(["risk", "--epsilon", "1", "--priors", "0.5,0.1,0.9", "--at-least", "2", "--max-risk",
                     "0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["column_tail_bound"] == pytest.approx(0.768946, abs=5e-7) and out["column_method"] == "exact"
    assert out["column_expected"] == pytest.approx(1.9237576, abs=1e-6)
    assert column_bound(out["eps_protect"], [0.5, 0.1, 0.9], 2).tail == pytest.approx(0.5, abs=1e-5)
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "priors.parquet"
    pq.write_table(pa.table({"p": ctr_priors(20_000)}), path)
    assert cli_main(["risk", "--epsilon", "0.5", "--priors-file", str(path), "--prior-col", "p", "--at-least",
                     "19000"]) == 0
    text = capsys.readouterr().out
    assert "P[at least 19,000 rows right]" in text and "saddlepoint, priors bucketed" in text
    assert cli_main(["risk", "--epsilon", "2", "--delta", "1e-5", "--classes", "10"]) == 0
    text = capsys.readouterr().out
    assert "Gaussian mechanism, mu =" in text and "posterior ceiling: a guess right 10%" in text


@pytest.mark.parametrize("argv, message", [
    (["--epsilon", "-0.5"], "--epsilon must be >= 0 (1 bad value)"),
    (["--epsilon", "nan"], "--epsilon must be >= 0 (1 bad value)"),
    (["--epsilon", "1", "--delta", "1.5"], "--delta must be a finite number in [0, 1); got 1.5"),
    (["--epsilon", "1", "--priors", "0.5,1.5,nan,0"], "--priors must lie in the open interval (0, 1): 3 of 4"),
    (["--epsilon", "1", "--priors", ","], "--priors: empty"),
    (["--epsilon", "1", "--priors", "0.2,x"], "--priors: 1 of 2 value(s) are not numbers"),
    (["--epsilon", "1", "--priors", "0.2,0.3", "--at-least", "5"], "--at-least must be a whole number in 1..2"),
    (["--epsilon", "1", "--classes", "1"], "--classes must be a whole number >= 2"),
    (["--epsilon", "1", "--priors-file", "/nonexistent.parquet", "--prior-col", "p"], "no such file"),
    (["--epsilon", "1", "--prior", "0.2", "--max-risk", "2"], "--max-risk must be in (0, 1)"),
])
def test_cli_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert cli_main(["risk", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("labeldp-audit risk: error:")


def test_cli_priors_file_column_errors(capsys, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "priors.parquet"
    pq.write_table(pa.table({"p": [0.1, 1.2, -0.3], "name": ["a", "b", "c"]}), path)
    assert cli_main(["risk", "--epsilon", "1", "--priors-file", str(path), "--prior-col", "q"]) == 2
    assert "no column 'q'" in capsys.readouterr().err
    assert cli_main(["risk", "--epsilon", "1", "--priors-file", str(path), "--prior-col", "p"]) == 2
    assert "2 of 3 value(s) are outside it" in capsys.readouterr().err
    assert cli_main(["risk", "--epsilon", "1", "--priors-file", str(path), "--prior-col", "name"]) == 2
    assert "is not numeric" in capsys.readouterr().err


def test_cli_help_teaches(capsys):
    with pytest.raises(SystemExit):
        cli_main(["risk", "--help"])
    text = capsys.readouterr().out
    for needle in ("posterior ceiling", "sigmoid(eps + logit P)", "Thm 4.9", "eps_protect", "Examples:"):
        assert needle in text
    assert norm.cdf(0) == 0.5  # scipy present for the reference computations above
