"""The validate-rr command (flows/commands/validate_rr.py): on small randomized-response worlds, each valid lower
bound within the true epsilon (plus slack), and the audit finding the leak at epsilon 4."""

from __future__ import annotations

import json

from tests.support.cli_runs import run_cli


def test_validate_rr_small(capsys):
    code, out, _ = run_cli(capsys, "validate-rr", "--rows", "20000", "--repetitions", "2", "--classes", "2",
                           "--epsilons", "1,4", "--counterfactual", "truth", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 4
    for row in rows:
        assert 0 <= row["valid_lower_bound"] <= row["epsilon"] + 0.5
    assert max(r["valid_lower_bound"] for r in rows if r["epsilon"] == 4) > 1.0
