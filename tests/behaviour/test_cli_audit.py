"""The `bound`, `audit-scores` and `validate-rr` commands: outputs, JSON keys, exit codes, messages; the
legacy `tau` (flags and plan files) and the config hash that keys existing warehouses. The `bound` command's JSON,
text and bad input alone: tests/flows/commands/test_bound.py; `validate-rr` on small worlds: test_validate_rr.py."""

import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditing.bounds.rr_validation import gaussian_mixture, randomized_response, true_posterior
from auditing.config import BoundConfig, config_hash, same_numbers_as_version1
from auditing.game.config import GameConfig
from flows.plan import load_plan
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from tests.support.cli_runs import run_cli


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
    assert err == ""  # live progress shows on a terminal only (tests/labeldp/test_progress.py)
    # the attack curve of repetition 0 (descriptive, docs/attack-curve.md): RR at eps 4 separates the labels
    attack = data["attack_curve"]
    assert sum(attack["positives"]) + sum(attack["negatives"]) == 20_000 and attack["auroc_lower"] > 0.6
    assert len(attack["edges"]) == len(attack["positives"]) - 1 == len(attack["negatives"]) - 1


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


# --------------------------------------------------------------------------------------- the legacy tau
@pytest.mark.parametrize("command", [
    ("bound", "--correct", "10", "--guesses", "10", "--m", "100"),
    ("audit-scores", "{file}", "--repetitions", "1", "--quiet"),
])
def test_tau_flag_zero_warns_and_is_ignored_nonzero_is_refused(capsys, scored_file, command):
    argv = [a.format(file=scored_file) for a in command]
    code, plain, _ = run_cli(capsys, *argv, "--json")
    assert code == 0
    code, out, err = run_cli(capsys, *argv, "--tau", "0", "--json")
    assert code == 0 and json.loads(out) == json.loads(plain)  # ignored: the same numbers
    assert "warning" in err and "tau" in err and "ignored" in err and "kappa" in err
    for value in ("0.01", "1", "-0.1", "x"):
        code, out, err = run_cli(capsys, *argv, "--tau", value)
        assert code == 2 and out == "" and "Traceback" not in err, value
        assert "tau" in err and "refused" in err and "kappa" in err and len(err.strip().splitlines()) == 1, value


def _plan_file(tmp_path, audit: dict):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0,
                                             "claimed_epsilon": 1.0}], "audit": audit}))
    return path


def test_plan_tau_zero_warns_and_is_ignored_nonzero_is_refused(tmp_path, capsys):
    plan = load_plan(_plan_file(tmp_path, {"tau": 0.0, "repetitions": 5}))
    err = capsys.readouterr().err
    assert "plan.json" in err and "tau" in err and "ignored" in err and "kappa" in err
    assert plan.bound.kappa == 0.0 and plan.game.repetitions == 5 and not hasattr(plan.bound, "tau")
    again = load_plan(_plan_file(tmp_path, {"repetitions": 5}))
    assert (plan.game, plan.bound) == (again.game, again.bound)
    for value in (0.01, 1.0, "0.5"):
        with pytest.raises(LabelDPInputError, match=r"plan\.json") as info:
            load_plan(_plan_file(tmp_path, {"tau": value}))
        message = str(info.value)
        assert "tau" in message and "refused" in message and "kappa" in message, value
    assert load_plan(_plan_file(tmp_path, {"kappa": 0.7})).bound.kappa == 0.7
    with pytest.raises(LabelDPInputError, match="kappa must be"):
        load_plan(_plan_file(tmp_path, {"kappa": -1}))
    # plans default to 20 repetitions and the recalibrated reference
    default = load_plan(_plan_file(tmp_path, {}))
    assert default.game.repetitions == 20 and default.game.reference_calibration == "boost"


# ---------------------------------------------------------------------------------------- config hash
def test_config_hash_keeps_the_keys_of_existing_warehouses():
    """A configuration whose numbers did not change keeps its version-1 hash (the keys of existing warehouse
    rows and sweeps); every configuration whose numbers differ from version 1 gets a new one."""
    assert config_hash(GameConfig(repetitions=20, reference_calibration="none"), BoundConfig()) == "309b5ebb1171ce15"
    assert config_hash(GameConfig(repetitions=100, reference_calibration="none"), BoundConfig()) == "33d6a9cd40687cfd"
    assert config_hash(GameConfig(repetitions=5, seed=3, reference_calibration="none"), BoundConfig(strategy="split")) == \
        "da82541087de1ad1"
    # the declared defaults (20 repetitions, the recalibrated reference) are a plan's: the nightly's rows' key
    assert config_hash(GameConfig(), BoundConfig()) == "2db3742e76264ec4"
    assert config_hash(GameConfig(repetitions=20, reference_calibration="none"), BoundConfig(kappa=0.0)) == "309b5ebb1171ce15"
    old = {"309b5ebb1171ce15", "33d6a9cd40687cfd", "da82541087de1ad1"}
    game = GameConfig(repetitions=20)
    changed = [(game, BoundConfig(kappa=0.1)), (game, BoundConfig(kappa=1e-9)),
               (game, BoundConfig(method="fdp", delta=1e-5)), (game, BoundConfig(method="fdp")),
               (GameConfig(repetitions=20, reference_calibration="boost"), BoundConfig()),
               (game, BoundConfig(delta=1e-6))]  # delta > 0: the factor 2 m e^kappa changed the numbers
    hashes = [config_hash(*c) for c in changed]
    assert not old & set(hashes) and len(set(hashes)) == len(hashes)
    for (g, b), value in zip(changed, hashes, strict=True):
        assert not same_numbers_as_version1(g, b) and len(value) == 16
        assert config_hash(GameConfig(**encode(g)), BoundConfig(**dataclasses.asdict(b))) == value  # stable
    assert config_hash(game, BoundConfig(kappa=0.1)) != config_hash(game, BoundConfig(kappa=0.2))


# ------------------------------------------------------------------------------ references and split
def _table(path, labels, p_target, p_reference, reference_col="p_reference", row_ids=None):
    columns = {"label": np.asarray(labels, dtype=np.int64), "p_target": np.asarray(p_target, dtype=np.float64),
               reference_col: np.asarray(p_reference, dtype=np.float64)}
    if row_ids is not None:
        columns["row_id"] = np.asarray(row_ids, dtype=np.int64)
    pq.write_table(pa.table(columns), path)
    return path


@pytest.mark.parametrize("certain", [0.0, 1.0])
def test_a_reference_certain_of_a_label_is_refused(capsys, tmp_path, certain):
    path = _table(tmp_path / "certain.parquet", [0, 1, 1, 0], [0.5, 0.6, 0.2, 0.1], [0.5, certain, 0.3, 0.3])
    code, out, err = run_cli(capsys, "audit-scores", str(path), "--repetitions", "1", "--quiet")
    assert code == 2 and out == "" and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "certain.parquet" in err and "p_reference: 1 row(s)" in err and "exactly 0 or 1" in err
    assert "kappa" in err  # says why no kappa covers it
    # a multi-class reference with a zero column entry is refused the same way; a target may be certain
    multi = tmp_path / "multi.parquet"
    pq.write_table(pa.table({"label": [0, 1], "p_target": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
                             "p_reference": [[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]}), multi)
    code, _, err = run_cli(capsys, "audit-scores", str(multi), "--repetitions", "1", "--quiet")
    assert code == 2 and "multi.parquet" in err and "p_reference: 1 row(s)" in err


def test_a_certain_reference_names_the_column_given_by_reference_col(capsys, tmp_path):
    path = _table(tmp_path / "certain.parquet", [0, 1], [0.5, 0.6], [0.5, 1.0], reference_col="ref_prob")
    code, _, err = run_cli(capsys, "audit-scores", str(path), "--reference-col", "ref_prob", "--quiet")
    assert code == 2 and "ref_prob" in err


def test_split_on_two_rows_says_what_it_needs(capsys, tmp_path):
    from auditing.game.slots import selection_half_mask

    ids = np.array([0, 1], dtype=np.int64)
    seed = next(s for s in range(100) if len(set(selection_half_mask(ids, s))) == 1)  # both rows in one half
    path = _table(tmp_path / "two.parquet", [0, 1], [0.5, 0.6], [0.5, 0.4], row_ids=ids)
    code, out, err = run_cli(capsys, "audit-scores", str(path), "--strategy", "split", "--seed", str(seed),
                             "--repetitions", "1", "--quiet")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "two.parquet" in err and "2 row(s)" in err and "both halves" in err
    assert "thousands of rows" in err and "--strategy bonferroni" in err
    code, _, _ = run_cli(capsys, "audit-scores", str(path), "--seed", str(seed), "--repetitions", "1", "--quiet")
    assert code == 0  # the suggested strategy works on the same table


# ------------------------------------------------------------------------------ --claimed-epsilon
def test_audit_scores_claimed_epsilon_json_carries_the_verdict_and_robustness(capsys, scored_file):
    base = ("audit-scores", str(scored_file), "--repetitions", "1", "--quiet", "--json")
    code, out, _ = run_cli(capsys, *base)
    plain = json.loads(out)
    assert code == 0 and "status" not in plain and "breaking_kappa" not in plain
    code, out, _ = run_cli(capsys, *base, "--claimed-epsilon", "0.5")
    data = json.loads(out)
    assert code == 0 and data["claimed_epsilon"] == 0.5 and data["kappa"] == 0.0
    assert data["epsilon_lower_bound"] == plain["epsilon_lower_bound"] > 1.0  # RR at eps 4 on 20,000 rows
    assert data["status"] == "VIOLATION"
    for key in ("breaking_kappa", "detection_floor_rows", "exposed_rows_floor", "weak_pass"):
        assert key in data, key
    # binomial, delta 0: the bound at kappa is the bound minus kappa, so the verdict breaks at bound - claim
    expected = data["epsilon_lower_bound"] - 0.5
    assert expected * (1 - 1e-3) - 1e-9 <= data["breaking_kappa"] <= expected
    below, above = 0.9 * data["breaking_kappa"], 1.1 * expected
    code, out, _ = run_cli(capsys, *base, "--claimed-epsilon", "0.5", "--kappa", repr(below))
    at_below = json.loads(out)
    assert code == 0 and at_below["kappa"] == pytest.approx(below) and at_below["status"] == "VIOLATION"
    assert at_below["epsilon_lower_bound"] == pytest.approx(data["epsilon_lower_bound"] - below, abs=1e-9)
    assert at_below["breaking_kappa"] == data["breaking_kappa"]  # same counts: claim-dependent, not kappa's
    code, out, _ = run_cli(capsys, *base, "--claimed-epsilon", "0.5", "--kappa", repr(above))
    passed = json.loads(out)
    assert code == 0 and passed["status"] == ("WEAK_PASS" if passed["weak_pass"] else "PASS")
    code, out, _ = run_cli(capsys, *base, "--claimed-epsilon", "inf")
    assert code == 0 and json.loads(out)["status"] == "INCONCLUSIVE" and json.loads(out)["breaking_kappa"] == 0.0
    code, out, _ = run_cli(capsys, "audit-scores", str(scored_file), "--repetitions", "1", "--quiet",
                           "--claimed-epsilon", "0.5")
    assert code == 0 and "status against the claimed eps 0.5 at kappa 0: VIOLATION" in out
    assert f"factor {math.exp(data['breaking_kappa']):.3g}" in out
    code, _, err = run_cli(capsys, *base, "--claimed-epsilon", "0.5", "--strategy", "max")
    assert code == 2 and "optimistic" in err and "bonferroni or split" in err


def _checked_table(path, check):
    """A non-private model's scores (every training label leaked) and a reference whose probability rises along the
    table (so a check column that takes the table's end is not random), with the check rows marked."""
    rng = np.random.default_rng(9)
    n = check.size
    p_reference = np.linspace(0.1, 0.4, n)
    labels = (rng.random(n) < p_reference).astype(np.int64)
    unseen = np.clip(p_reference + rng.normal(0, 0.2, n), 0.01, 0.99)  # a label-free spread on rows it never saw
    p_target = np.where(check, unseen, np.clip(0.05 + 0.9 * labels, 0.01, 0.99))
    pq.write_table(pa.table({"label": labels, "p_target": p_target, "p_reference": p_reference,
                             "is_check": pa.array(check)}), path)


def test_audit_scores_with_a_check_column_gives_a_decision_and_tests_the_split(capsys, tmp_path):
    """A random check column: the VIOLATION's decision and trust are printed and in --json, with the split test that
    passed. A check column that takes the table's last rows (where the reference differs): refused, naming the
    input, and the decision is an unconfirmed leak whose next step is a random holdout."""
    rng = np.random.default_rng(1)
    random = tmp_path / "random.parquet"
    _checked_table(random, rng.random(40_000) < 0.2)
    code, out, _ = run_cli(capsys, "audit-scores", str(random), "--claimed-epsilon", "1", "--check-column",
                           "is_check", "--repetitions", "1", "--json")
    record = json.loads(out)
    assert code == 0 and record["status"] == "VIOLATION"
    assert record["decision"]["decision"] == "act" and record["trust"]["state"] == "trusted"
    assert record["split_test"]["rule"] == "tested" and not record["split_test"]["refused"]
    code, out, _ = run_cli(capsys, "audit-scores", str(random), "--claimed-epsilon", "1", "--check-column",
                           "is_check", "--repetitions", "1")
    assert "decision: CONFIRMED LEAK: ACT:" in out and "trust: trusted" in out
    tail = tmp_path / "tail.parquet"
    _checked_table(tail, np.arange(40_000) >= 32_000)
    code, out, _ = run_cli(capsys, "audit-scores", str(tail), "--claimed-epsilon", "1", "--check-column",
                           "is_check", "--repetitions", "1", "--json")
    record = json.loads(out)
    assert record["split_test"]["refused"] and record["decision"]["decision"] == "unconfirmed"
    assert "hold out a random share" in record["decision"]["next_step"]
    assert record["trust"]["state"] == "untrusted" and "differs between them" in record["trust"]["reason"]
