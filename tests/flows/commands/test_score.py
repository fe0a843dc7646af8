"""The score command (flows/commands/score.py): a day scored on the command line and its errors (on the scoring
world: tests/support/scoring_worlds.py, ``scoring_world``), a bad tau or kappa refused (on an RR target: tests/support/
rr_trained_days.py, ``rr_trained_world``), the Beam options file, its environment variables and its errors."""

import json

import pytest

from flows.cli import main as cli_main
from labeldp.errors import LabelDPInputError
from tests.support.rr_trained_days import DAY as RR_DAY
from tests.support.scoring_worlds import DAY, PREVIOUS, ROWS


def test_beam_options_file(tmp_path, monkeypatch):
    from flows.commands.score import read_options_file

    path = tmp_path / "x.options"
    path.write_text("# comment\n\n--project=${P}\n--max_num_workers=3\n")
    monkeypatch.setenv("P", "proj")
    assert read_options_file(str(path)) == ["--project=proj", "--max_num_workers=3"]
    monkeypatch.delenv("P")
    with pytest.raises(LabelDPInputError, match=r"line 3: environment variable\(s\) \['P'\] are not set"):
        read_options_file(str(path))
    path.write_text("project=x\n")
    with pytest.raises(LabelDPInputError, match="line 1: expected an option"):
        read_options_file(str(path))


def test_cli_score_runs_and_reports_errors(scoring_world, capsys):
    root = str(scoring_world["root"])
    assert cli_main(["score", "--date", DAY.isoformat(), "--model", "target", "--data-root", root, "--repetitions", "2",
                     "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["result"]["m"] == ROWS and out["lineage"]["reference"]["date"] == PREVIOUS.isoformat()
    assert out["result"]["coins_night"] == DAY.isoformat()  # `score` keys the coins by the day it scores
    attack = out["result"]["attack_curve"]  # the attack curve, descriptive (docs/attack-curve.md)
    assert sum(attack["positives"]) + sum(attack["negatives"]) == ROWS and 0 <= attack["auroc"] <= 1
    assert attack["auroc_lower"] <= attack["auroc_upper"] and attack["bootstrap_resamples"] == 1000
    assert cli_main(["score", "--date", DAY.isoformat(), "--model", "nope", "--data-root", root, "--quiet"]) == 2
    assert "no model 'nope'" in capsys.readouterr().err
    assert cli_main(["score", "--date", DAY.isoformat(), "--model", "target", "--data-root", root, "--batch-size", "0"]) == 2
    assert "batch-size must be a whole number >= 1" in capsys.readouterr().err


@pytest.mark.parametrize(("flag", "value", "needles"), [
    ("--tau", "0.01", ("tau", "refused", "kappa")),  # the legacy TV parameter: only 0 is accepted (and ignored)
    ("--tau", "1", ("tau", "refused", "kappa")),
    ("--tau", "-0.1", ("tau", "refused", "kappa")),
    ("--kappa", "-0.1", ("kappa must be",)),
    ("--kappa", "inf", ("kappa must be",)),
    ("--kappa", "nan", ("kappa must be",)),
])
def test_a_bad_tau_or_kappa_is_refused_and_nothing_is_written(rr_trained_world, capsys, flag, value, needles):
    root = rr_trained_world["root"]
    before = sorted(root.rglob("*"))
    code = cli_main(["score", "--date", RR_DAY.isoformat(), "--model", "rr-1", "--reference", "reference", "--data-root",
                     str(root), "--repetitions", "2", "--quiet", flag, value])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert all(needle in err for needle in needles), err
    assert sorted(root.rglob("*")) == before
