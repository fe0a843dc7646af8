"""The model handler builds one CatBoost Pool per frame for both models, with predictions unchanged."""

import datetime as dt

import numpy as np

from pipelines.data import synth
from pipelines.models import catboost_frames
from pipelines.models.catboost_frames import catboost_frame, catboost_pool
from pipelines.training import train as training


def test_pool_is_shared_between_models_and_predicts_like_the_frame(monkeypatch):
    table = synth.generate_day(dt.date(2024, 5, 1), rows=1500).table
    settings = training.CatBoostSettings(iterations=20, use_best_model=False)
    labels = table.column("label").to_numpy()
    models = [training.fit_catboost(training.feature_frame(table), labels, settings, random_seed=seed)[0]
              for seed in (1, 2)]
    built = []
    real_pool = catboost_frames.catboost.Pool
    monkeypatch.setattr(catboost_frames.catboost, "Pool", lambda *a, **k: built.append(1) or real_pool(*a, **k))
    frame = catboost_frame(table)
    first, second = (model.predict_proba(catboost_pool(frame, model)) for model in models)
    assert len(built) == 1  # the second model reused the first one's Pool
    assert np.array_equal(first, models[0].predict_proba(frame))
    assert np.array_equal(second, models[1].predict_proba(frame))
    other = catboost_frame(table.slice(0, 700))
    assert np.array_equal(models[0].predict_proba(catboost_pool(other, models[0])), models[0].predict_proba(other))
    assert len(built) == 2  # a new frame gets its own Pool
