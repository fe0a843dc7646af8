"""The CatBoost frame (pipelines.models.catboost_frames): it predicts exactly like the training frame, recodes chunks
whose dictionaries differ, and the model handler builds one CatBoost Pool per frame for both models, with
predictions unchanged. The scoring world: tests/support/scoring_worlds.py (``scoring_world``)."""

import datetime as dt

import numpy as np
import pyarrow as pa

from pipelines.data import schema, synth
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


def test_catboost_frame_predicts_exactly_like_feature_frame(scoring_world):
    table = scoring_world["table"].slice(100, 2500)
    assert table.column("C19").null_count > 0  # missing categoricals are exercised
    assert np.array_equal(scoring_world["model"].predict_proba(catboost_frame(table)),
                          scoring_world["model"].predict_proba(training.feature_frame(table)))


def test_catboost_frame_recodes_chunks_with_different_dictionaries(scoring_world):
    """Two chunks whose dictionaries differ (as two files' row groups do), plain string columns and nulls: the
    frame holds exactly the rows' strings ("" for missing), with only the values present as categories."""
    table = scoring_world["table"].slice(0, 3000)
    first, second = table.slice(0, 1200), table.slice(1200)
    recoded = {name: second.column(name).combine_chunks().dictionary_decode().dictionary_encode()
               for name in schema.CATEGORICAL_COLUMNS}  # only the second chunk's values, in another order
    second = pa.table({name: recoded.get(name, second.column(name)) for name in second.column_names})
    mixed = pa.concat_tables([first, second.cast(first.schema)])
    plain = table.cast(pa.schema([pa.field(f.name, pa.string()) if f.name in schema.CATEGORICAL_COLUMNS else f
                                  for f in table.schema]))
    assert mixed.column("C1").num_chunks == 2 and mixed.column("C19").null_count > 0
    assert mixed.column("C1").chunk(0).dictionary != mixed.column("C1").chunk(1).dictionary
    for case in (mixed, plain):
        frame = catboost_frame(case)
        for name in schema.CATEGORICAL_COLUMNS:
            strings = case.column(name).cast(pa.string()).fill_null("").to_pylist()
            assert frame[name].astype(object).tolist() == strings, name
            assert set(frame[name].cat.categories) == set(strings), name
