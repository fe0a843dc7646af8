"""The nightly controls as models (pipelines/reference/controls.py): the RR-label oracle registered as a model goes
through the Beam job and equals run_audit on the same arrays (counts, result, score histogram exactly; the
expected curve to float round-off); the negative control, a copy of the reference, gives 0."""

from __future__ import annotations

import datetime as dt
import logging

import numpy as np
import pytest

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.verdict.controls import (
    NEGATIVE,
    POSITIVE,
    check_control,
    rr_oracle_probabilities,
)
from labeldp.codec import encode
from pipelines.data.day import listed_day

logging.getLogger("apache_beam").setLevel(logging.ERROR)


DAY, PREVIOUS = dt.date(2024, 5, 2), dt.date(2024, 5, 1)


def _register_reference(root, date, seed=0):
    """A tiny CatBoost reference fitted on every row of ``date`` (registered as 'reference')."""
    from catboost import CatBoostClassifier

    from pipelines.data import schema, splits
    from pipelines.models import registry
    from pipelines.training import train as training

    table = schema.read_partition(root, date)
    frame = training.feature_frame(table)
    labels = table.column(schema.LABEL).to_numpy()
    params = {"iterations": 12, "depth": 4, "learning_rate": 0.3, "max_ctr_complexity": 1, "thread_count": 1,
              "random_seed": seed, "allow_writing_files": False, "verbose": False}
    model = CatBoostClassifier(**params)
    model.fit(frame, labels, cat_features=schema.CATEGORICAL_COLUMNS)
    registry.save_model(root, "reference", date, model, {
        "mechanism": {"name": "none", "epsilon": "inf", "delta": 0.0}, "seed": seed,
        "partition_fingerprint": schema.partition_fingerprint(root, date), "catboost_params": params,
        "test_metrics": {}, "training_rows": {"split": splits.scheme(), "label_splits": ["train"],
                                              "unread_row_ids": [], "rows": None}})
    return model


@pytest.fixture(scope="module")
def beam_world(tmp_path_factory):
    from pipelines.data import schema, splits, synth
    from pipelines.training import train as training

    root = tmp_path_factory.mktemp("controls-root")
    for date in (PREVIOUS, DAY):
        synth.write_synthetic_day(root, date, rows=6000, rows_per_file=2000)
    reference = _register_reference(root, PREVIOUS)
    table = schema.read_partition(root, DAY)
    ids = table.column(schema.ROW_ID).to_numpy().astype(np.int64)
    train = splits.split_of(ids) == splits.TRAIN
    return {"root": root, "ids": ids[train], "labels": table.column(schema.LABEL).to_numpy().astype(np.int64)[train],
            "p_reference": reference.predict_proba(training.feature_frame(table))[train],
            "fingerprint": schema.partition_fingerprint(root, DAY)}


def test_beam_positive_control_equals_run_audit(beam_world):
    """The RR-label oracle registered as a model goes through the Beam job's ModelHandler path and gives the
    in-process result on the same (train) rows: counts and result exactly, the expected curve to round-off."""
    from pipelines.models.handle import resolve_model
    from pipelines.reference import controls
    from pipelines.scoring.beam_request import ScoringRequest
    from pipelines.scoring.beam_scoring import score_day

    root, day = beam_world["root"], DAY
    oracle = controls.ensure_positive_control(listed_day(root, day), "control-positive", 2.0, 3)
    metadata = oracle.metadata
    assert controls.is_oracle(metadata) and oracle.artifact.name == "oracle.json"
    assert metadata["training_rows"]["rows"] == beam_world["ids"].size
    again = controls.ensure_positive_control(listed_day(root, day), "control-positive", 2.0, 3)
    assert again.metadata["created_at"] == metadata["created_at"]  # reused, not rewritten
    config_game, bound = GameConfig(repetitions=3, seed=1, grid_points=40), BoundConfig()
    outcome = score_day(ScoringRequest(data_root=str(root), date=DAY, model="control-positive", game=config_game, bound=bound,
                                       reference="reference", batch_size=1500, expected_curve=True))
    p_target = rr_oracle_probabilities(beam_world["ids"], beam_world["labels"], 2.0, seed=3)
    expected = encode(run_audit(p_target, beam_world["p_reference"], beam_world["labels"], beam_world["ids"],
                                config_game, bound, expected_curve=True))
    got = encode(outcome.result)
    got_curve, want_curve = got.pop("expected_correct"), expected.pop("expected_correct")
    assert got == expected  # score_histogram included
    assert got_curve["guesses"] == want_curve["guesses"]
    assert np.allclose(got_curve["correct"], want_curve["correct"], rtol=1e-9, atol=1e-6)
    check = check_control(POSITIVE, outcome.result, 2.0)
    assert check.epsilon_lower_bound <= 2.0 and check.floor > 0

    # the negative control: a copy of the reference, through the CatBoost handler, gives 0
    controls.ensure_negative_control(listed_day(root, day), "control-negative",
                                     resolve_model(root, "reference", PREVIOUS))
    negative = score_day(ScoringRequest(data_root=str(root), date=DAY, model="control-negative", game=config_game, bound=bound,
                                        reference="reference", batch_size=1500))
    assert negative.result.epsilon_lower_bound == 0.0 and check_control(NEGATIVE, negative.result).passed
    assert negative.result.score_histogram.rows[0] == beam_world["ids"].size
