"""audit_rows: the Beam job audits exactly the rows whose labels entered training, as the registry
metadata records them, and its counts equal the in-process audit of those rows; bad input fails early.

A small real world (tests/support/rr_trained_days.py, ``rr_trained_world``): two synthetic days of 4,000 rows, a
reference trained on day 1 and an RR target on day 2, both by `pipelines.training.train.train_and_register` with 10
CatBoost iterations.
"""

import json
import logging

import numpy as np
import pytest

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from flows.cli import main as cli_main
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from pipelines.data import schema, splits
from pipelines.models import registry
from pipelines.models.handle import resolve_model
from pipelines.scoring.audit_rows import row_selection, training_rows
from pipelines.scoring.beam_request import ScoringRequest
from pipelines.scoring.beam_scoring import score_day
from pipelines.training import train as training
from tests.support.model_handles import metadata_of
from tests.support.rr_trained_days import DAY, PREVIOUS, ROWS

logging.getLogger("apache_beam").setLevel(logging.ERROR)


def test_metadata_records_the_rows_whose_labels_entered_training(rr_trained_world):
    record = rr_trained_world["metadata"]["training_rows"]
    assert record["split"] == splits.scheme()
    # use_best_model: the privatized validation labels chose the best iteration, so they entered training
    assert record["label_splits"] == ["train", "validation"]
    assert record["validation_labels_used_for"] == ["chose the best iteration (use_best_model)"]
    row_ids = rr_trained_world["table"].column(schema.ROW_ID).to_numpy()
    split = splits.split_of(row_ids)
    assert record["rows"] == int(np.sum(split != splits.TEST)) == rr_trained_world["metadata"]["test_metrics"]["train_rows"] + \
        rr_trained_world["metadata"]["test_metrics"]["validation_rows"]
    mask = training_rows(metadata_of(rr_trained_world["metadata"])).mask(row_ids)
    assert np.array_equal(mask, split != splits.TEST)


def test_beam_counts_equal_in_process_on_the_training_rows(rr_trained_world):
    root, table = rr_trained_world["root"], rr_trained_world["table"]
    game, bound = GameConfig(repetitions=3, seed=4), BoundConfig()
    assert game.audit_rows == "training"
    outcome = score_day(ScoringRequest(str(root), DAY, "rr-1", game, bound, reference="reference", batch_size=1500), [])
    row_ids = table.column(schema.ROW_ID).to_numpy()
    keep = row_selection("training", metadata_of(rr_trained_world["metadata"])).mask(row_ids)
    expected_rows = rr_trained_world["metadata"]["training_rows"]["rows"]
    assert outcome.result.m == int(keep.sum()) == expected_rows < ROWS
    audited = outcome.record["diagnostics"]["audited_rows"]
    assert audited["rows_not_audited"] == ROWS - expected_rows and audited["label_splits"] == ["train", "validation"]
    assert outcome.result.game.audit_rows == "training"

    target = registry.load_model(resolve_model(root, "rr-1", DAY))
    reference = registry.load_model(resolve_model(root, "reference", PREVIOUS))
    frame = training.feature_frame(table.filter(keep))
    expected = run_audit(target.predict_proba(frame), reference.predict_proba(frame),
                         table.column(schema.LABEL).to_numpy()[keep], row_ids[keep], game, bound)
    assert np.array_equal(outcome.counts.correct[0], [p.correct for p in expected.curve])
    assert encode(outcome.result) == encode(expected)

    every = score_day(ScoringRequest(str(root), DAY, "rr-1", GameConfig(repetitions=3, seed=4, audit_rows="all", reference_calibration="none"), BoundConfig(),
                                     reference="reference"), [])
    assert every.result.m == ROWS and every.result.game.audit_rows == "all"
    assert every.result.config_hash != outcome.result.config_hash


def test_a_model_without_training_rows_metadata_is_refused_naming_it(rr_trained_world, capsys):
    root = rr_trained_world["root"]
    handle = resolve_model(root, "rr-1", DAY)
    model, metadata = registry.load_model(handle), handle.metadata
    legacy = {k: v for k, v in metadata.items() if k != "training_rows"}
    registry.save_model(root, "legacy", DAY, model, legacy)
    with pytest.raises(LabelDPInputError, match=r"model 'legacy' of 2024-05-02: .*re-train it"):
        row_selection("training", registry.read_metadata(root, "legacy", DAY))
    code = cli_main(["score", "--date", DAY.isoformat(), "--model", "legacy", "--reference", "reference", "--data-root",
                     str(root), "--repetitions", "2", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "legacy" in err and "re-train" in err and "--audit-rows all" in err
    assert not (root / "sweeps" / "legacy").exists()
    code = cli_main(["score", "--date", DAY.isoformat(), "--model", "legacy", "--reference", "reference", "--data-root",
                     str(root), "--repetitions", "2", "--quiet", "--audit-rows", "all", "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["result"]["m"] == ROWS


def test_unread_rows_and_recorded_scheme_are_applied_from_the_record_alone():
    """PATE's student rows (labels never read) are left out; the split comes from the recorded parameters, so a
    record with another salt selects other rows than the current scheme would."""
    ids = np.arange(10_000, dtype=np.int64)
    record = {"split": splits.scheme(), "label_splits": ["train"], "unread_row_ids": [3, 5, 7], "rows": None}
    selection = training_rows(metadata_of({"model_name": "pate-1", "date": DAY.isoformat(), "training_rows": record}))
    expected = (splits.split_of(ids) == splits.TRAIN) & ~np.isin(ids, [3, 5, 7])
    assert np.array_equal(selection.mask(ids), expected)
    other = {**record, "split": {**splits.scheme(), "salt": "0x1"}, "unread_row_ids": []}
    moved = training_rows(metadata_of({"model_name": "m", "date": DAY.isoformat(), "training_rows": other})).mask(ids)
    assert np.array_equal(moved, splits.split_of(ids, salt=1) == splits.TRAIN)
    assert not np.array_equal(moved, splits.split_of(ids) == splits.TRAIN)
    for bad in ({**record, "label_splits": []}, {**record, "split": {"hash": "md5"}}):
        with pytest.raises(LabelDPInputError, match=r"model 'm' of .*re-train it"):
            training_rows(metadata_of({"model_name": "m", "date": DAY.isoformat(), "training_rows": bad}))
