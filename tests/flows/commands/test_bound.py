"""The bound command (flows/commands/bound.py): eps_lb from given counts, as JSON (its keys, kappa subtracted) and as
text, and bad counts or settings refused with exit 2 and no traceback."""

from __future__ import annotations

import json

import pytest

from tests.support.cli_runs import run_cli


def test_bound_json(capsys):
    code, out, _ = run_cli(capsys, "bound", "--correct", "10", "--guesses", "10", "--m", "100", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["epsilon_lower_bound"] == pytest.approx(1.05186, abs=1e-4)
    for key in ("method", "delta", "confidence", "kappa", "m", "guesses", "correct"):
        assert key in data
    assert "tau" not in data
    assert data["delta"] == 0.0 and data["method"] == "binomial" and data["kappa"] == 0.0
    code, out, _ = run_cli(capsys, "bound", "--correct", "10", "--guesses", "10", "--m", "100", "--kappa", "0.5",
                           "--json")
    shifted = json.loads(out)
    assert code == 0 and shifted["kappa"] == 0.5
    assert shifted["epsilon_lower_bound"] == pytest.approx(data["epsilon_lower_bound"] - 0.5, abs=1e-12)


def test_bound_text_and_bad_input(capsys):
    code, out, _ = run_cli(capsys, "bound", "--correct", "1500", "--guesses", "2000", "--m", "1000000")
    assert code == 0 and "epsilon lower bound" in out
    code, _, err = run_cli(capsys, "bound", "--correct", "30", "--guesses", "20", "--m", "100")
    assert code == 2 and "correct (c) must satisfy" in err and "Traceback" not in err
    code, _, err = run_cli(capsys, "bound", "--correct", "3", "--guesses", "20", "--m", "100", "--confidence", "1.5")
    assert code == 2 and "confidence" in err
