"""The ``audit-scores`` command's slices (flows/commands/audit_scores.py, docs/slices.md): declared slices bounded
from a scores file, the training label refused as a slicing, and the slices played only on the rows the grouping
leaves. The world: tests/support/rr_slice_worlds.py; the slices' validity: tests/auditing/test_slices.py.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows.cli import main as cli_main
from tests.support.rr_slice_worlds import rr_world


def test_audit_scores_slices_and_refuses_the_training_label(tmp_path, capsys):
    target, reference, y, category, _ = rr_world(np.random.default_rng(4), 40_000, 1.0, leak_eps=20.0)
    path = tmp_path / "scores.parquet"
    pq.write_table(pa.table({"row_id": np.arange(40_000), "label": y, "p_target": target, "p_reference": reference,
                             "market": pa.array([f"m{c}" for c in category]).dictionary_encode()}), path)
    assert cli_main(["audit-scores", str(path), "--claimed-epsilon", "1", "--slice", "column:market=m0,m1",
                     "--slice", "shown-label", "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["slices"]["declared"] == 4 and out["slices"]["confidence"] == pytest.approx(1 - 0.05 / 4)
    assert out["slices"]["slices"][0]["name"] == "market=m0"
    assert out["slices"]["slices"][0]["status"] == "VIOLATION", out["status"]
    assert cli_main(["audit-scores", str(path), "--slice", "column:label", "--quiet"]) == 2
    assert "training label" in capsys.readouterr().err
    assert cli_main(["audit-scores", str(path), "--slice-budget", "0.1", "--quiet"]) == 2
    assert "--slice-budget needs" in capsys.readouterr().err


def test_slices_play_only_the_rows_the_grouping_leaves(tmp_path, capsys):
    """Rows whose labels move together (a duplicated event) leave the game before it is sliced: the slices'
    rows are the audited rows after the grouping (docs/soundness.md section 9), so each slice's bound rests on
    independent rows as the global one does."""
    target, reference, y, category, _ = rr_world(np.random.default_rng(6), 20_000, 1.0)
    user = np.arange(20_000)
    user[1::10] = user[0::10]  # every tenth row repeats the event before it
    y[1::10] = y[0::10]
    path = tmp_path / "scores.parquet"
    pq.write_table(pa.table({"row_id": np.arange(20_000), "label": y, "p_target": target, "p_reference": reference,
                             "user": user, "market": [f"m{c}" for c in category]}), path)
    assert cli_main(["audit-scores", str(path), "--group-column", "user", "--slice", "shown-label",
                     "--slice", "column:market:top=3", "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    left = 20_000 - out["row_groups"]["rows_excluded"]
    assert out["row_groups"]["rows_excluded"] == 4_000 and out["m"] == left
    shown = [s for s in out["slices"]["slices"] if s["slicing"] == "shown-label"]
    assert sum(s["rows"] for s in shown) == left
    kept = np.ones(20_000, bool)
    kept[0::10] = kept[1::10] = False
    for piece in (s for s in out["slices"]["slices"] if s["slicing"] == "column:market:top=3"):
        assert piece["rows"] == int(((np.array([f"m{c}" for c in category]) == piece["name"].split("=")[1])
                                     & kept).sum())
