"""The `bound`, `audit-scores` and `validate-rr` commands: outputs, JSON keys, exit codes, messages."""

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditing.rr_validation import gaussian_mixture, randomized_response, true_posterior
from flows.cli import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_bound_json(capsys):
    code, out, _ = run_cli(capsys, "bound", "--correct", "10", "--guesses", "10", "--m", "100", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["epsilon_lower_bound"] == pytest.approx(1.05186, abs=1e-4)
    for key in ("method", "delta", "confidence", "tau", "m", "guesses", "correct"):
        assert key in data
    assert data["delta"] == 0.0 and data["method"] == "binomial"


def test_bound_text_and_bad_input(capsys):
    code, out, _ = run_cli(capsys, "bound", "--correct", "1500", "--guesses", "2000", "--m", "1000000")
    assert code == 0 and "epsilon lower bound" in out
    code, _, err = run_cli(capsys, "bound", "--correct", "30", "--guesses", "20", "--m", "100")
    assert code == 2 and "correct (c) must satisfy" in err and "Traceback" not in err
    code, _, err = run_cli(capsys, "bound", "--correct", "3", "--guesses", "20", "--m", "100", "--confidence", "1.5")
    assert code == 2 and "confidence" in err


def test_cli_error_has_no_traceback_in_a_real_process():
    proc = subprocess.run([sys.executable, "-m", "flows.cli", "bound", "--correct", "5", "--guesses", "1", "--m", "3"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


@pytest.fixture
def scored_file(tmp_path):
    rng = np.random.default_rng(0)
    n = 20_000
    x, y = gaussian_mixture(n, 2, rng)
    released = randomized_response(y, 2, 4.0, rng)
    path = tmp_path / "scored.parquet"
    pq.write_table(pa.table({
        "row_id": np.arange(n, dtype=np.int64) * 3,
        "label": y.astype(np.int8),
        "p_target": released.astype(np.float64),
        "p_reference": true_posterior(x, 2)[:, 1],
    }), path)
    return path


def test_audit_scores_json(capsys, scored_file):
    code, out, err = run_cli(capsys, "audit-scores", str(scored_file), "--repetitions", "3", "--json")
    assert code == 0
    data = json.loads(out)
    for key in ("epsilon_lower_bound", "epsilon_mean", "epsilon_std", "epsilon_median", "selected_guesses",
                "selected_correct", "strategy", "method", "m", "repetitions", "curve"):
        assert key in data
    assert data["m"] == 20_000 and data["repetitions"] == 3 and 0.5 < data["epsilon_lower_bound"] < 4.0
    assert "repetitions] 3/3" in err  # progress is shown


def test_audit_scores_multiclass_lists(capsys, tmp_path):
    rng = np.random.default_rng(1)
    n, k = 5000, 3
    x, y = gaussian_mixture(n, k, rng)
    released = randomized_response(y, k, 4.0, rng)
    path = tmp_path / "multi.parquet"
    pq.write_table(pa.table({
        "label": y, "p_target": list(np.eye(k)[released]), "p_reference": list(true_posterior(x, k)),
    }), path)
    code, out, _ = run_cli(capsys, "audit-scores", str(path), "--repetitions", "2", "--quiet")
    assert code == 0 and "epsilon lower bound" in out and "valid at 95% confidence" in out


def test_audit_scores_bad_inputs(capsys, tmp_path, scored_file):
    code, _, err = run_cli(capsys, "audit-scores", str(tmp_path / "missing.parquet"))
    assert code == 2 and "no such file" in err
    code, _, err = run_cli(capsys, "audit-scores", str(scored_file), "--target-col", "nope")
    assert code == 2 and "missing column(s) ['nope']" in err
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"label": [0, 1, 1], "p_target": [0.5, 1.5, 0.2], "p_reference": [0.5, 0.5, 0.5]}), bad)
    code, _, err = run_cli(capsys, "audit-scores", str(bad))
    assert code == 2 and "bad.parquet" in err and "p_target: 1 row(s) have probabilities outside [0, 1]" in err
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"not parquet at all")
    code, _, err = run_cli(capsys, "audit-scores", str(corrupt))
    assert code == 2 and "not a readable Parquet file" in err


def test_validate_rr_small(capsys):
    code, out, _ = run_cli(capsys, "validate-rr", "--rows", "20000", "--repetitions", "2", "--classes", "2",
                           "--epsilons", "1,4", "--counterfactual", "truth", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 4
    for row in rows:
        assert 0 <= row["valid_lower_bound"] <= row["epsilon"] + 0.5
    assert max(r["valid_lower_bound"] for r in rows if r["epsilon"] == 4) > 1.0
