"""The Beam scoring job's synthetic worlds: a tiny CatBoost model fitted on a day and registered as the scoring job
reads it, and the counts the in-process game gives on a world (what the job must equal exactly). Used by the Beam
job's tests (tests/pipelines/scoring/test_beam_scoring.py) and the Dask cluster's (tests/behaviour/)."""

from __future__ import annotations

import numpy as np

from auditing.game.play import play_repetition
from auditing.game.scores import resolve_score
from auditing.game.sweep import correct_at, rank_order
from pipelines.data import schema, splits
from pipelines.models import registry


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
