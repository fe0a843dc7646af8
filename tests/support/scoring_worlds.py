"""The Beam scoring job's synthetic worlds: a tiny CatBoost model fitted on a day and registered as the scoring job
reads it, the counts the in-process game gives on a world (what the job must equal exactly), and ``scoring_world``:
two synthetic days (PREVIOUS, DAY) of ROWS rows in 3 files, a tiny target registered for each, once per module.
Used by the Beam job's tests (tests/pipelines/scoring/test_beam_scoring.py), the CatBoost frame's (tests/pipelines/
models/test_catboost_frames.py), the ``score`` command's (tests/flows/commands/test_score.py) and the Dask
cluster's (tests/behaviour/); each folder's conftest.py offers ``scoring_world`` by name."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from auditing.game.play import play_repetition
from auditing.game.scores import resolve_score
from auditing.game.sweep import correct_at, rank_order
from pipelines.data import schema, splits, synth
from pipelines.models import registry
from pipelines.training import train as training

DAY = dt.date(2024, 3, 2)
PREVIOUS = dt.date(2024, 3, 1)
ROWS = 6000


def register_tiny_model(root, name, date, features, labels, extra_column=None, seed=0):
    """A 12-tree CatBoost model fitted on every row of the day, registered under ``name`` for ``date`` (its training
    rows are all rows); ``extra_column``: a numeric feature added to the frame and the schema."""
    from catboost import CatBoostClassifier

    params = {"iterations": 12, "depth": 4, "learning_rate": 0.3, "max_ctr_complexity": 1, "thread_count": 1,
              "random_seed": seed, "allow_writing_files": False, "verbose": False}
    feature_schema = registry.feature_schema()
    if extra_column:
        features = features.assign(**{extra_column: np.arange(len(features), dtype=np.float64)})
        feature_schema = [*feature_schema, {"name": extra_column, "kind": registry.NUMERIC}]
    model = CatBoostClassifier(**params)
    model.fit(features, labels, cat_features=schema.CATEGORICAL_COLUMNS)
    metadata = {"mechanism": {"name": "none", "epsilon": "inf", "delta": 0.0}, "seed": seed,
                "partition_fingerprint": schema.partition_fingerprint(root, date), "catboost_params": params,
                "test_metrics": {}, "feature_schema": feature_schema,
                # fitted on every row of the day: its training rows (audit_rows "training") are all rows
                "training_rows": {"split": splits.scheme(), "label_splits": ["train", "validation", "test"],
                                  "unread_row_ids": [], "rows": len(labels)}}
    registry.save_model(root, name, date, model, metadata)
    return model


def in_process_counts(world, config_game):
    """The sweep's counts (repetitions x grid) the in-process game gives on ``world`` (its ``p_target``,
    ``p_reference``, ``labels`` and ``row_ids``) under ``config_game``."""
    score = resolve_score(config_game.score, config_game.score_power)
    grid = config_game.grid_for(world["row_ids"].size)
    rows = []
    for r in range(config_game.repetitions):
        game = play_repetition(world["p_target"], world["p_reference"], world["labels"], world["row_ids"],
                               seed=config_game.seed, repetition=r, score=score)
        rows.append(correct_at(game.correct, rank_order(game.scores, world["row_ids"]), grid))
    return np.stack(rows)


@pytest.fixture(scope="module")
def scoring_world(tmp_path_factory):
    """A data root with days PREVIOUS and DAY (ROWS rows each, 3 files of 2,000) and a tiny model "target" fitted on
    each; the day's row ids, labels, table and CatBoost frame, and both models' probabilities on it."""
    root = tmp_path_factory.mktemp("beam-root")
    models = {}
    for seed, date in enumerate((PREVIOUS, DAY)):
        synth.write_synthetic_day(root, date, rows=ROWS, rows_per_file=2000)
        table = schema.read_partition(root, date)
        frame = training.feature_frame(table)
        labels = table.column(schema.LABEL).to_numpy()
        models[date] = register_tiny_model(root, "target", date, frame, labels, seed=seed)
    table = schema.read_partition(root, DAY)
    frame = training.feature_frame(table)
    return {
        "root": root,
        "row_ids": table.column(schema.ROW_ID).to_numpy(),
        "labels": table.column(schema.LABEL).to_numpy().astype(np.int64),
        "p_target": models[DAY].predict_proba(frame),
        "p_reference": models[PREVIOUS].predict_proba(frame),
        "frame": frame,
        "table": table,
        "model": models[DAY],
        "previous_model": models[PREVIOUS],
    }
