"""A model is one typed handle (`pipelines.models.handle`): resolved once, its metadata read and its file hashed
once, then passed down to the input checks, the Beam job and its handlers, so that every stage judges the same
bytes and a run does not re-read the registry per stage."""

from __future__ import annotations

import datetime as dt
import pickle
import sys

import numpy as np
import pytest

from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from labeldp.errors import LabelDPInputError

PREVIOUS, DAY = dt.date(2024, 6, 1), dt.date(2024, 6, 2)

# Every file a Python `open` touches while `_OPENED` is a list (an audit hook cannot be removed, so it is idle
# outside the block that sets it).
_OPENED: list | None = None


def _record_open(event: str, args) -> None:
    if event == "open" and _OPENED is not None:
        _OPENED.append(str(args[0]))


sys.addaudithook(_record_open)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from catboost import CatBoostClassifier

    from pipelines.data import schema, synth
    from pipelines.models import registry
    from pipelines.training import train as training
    from tests.support.planted import register_memorizer

    root = tmp_path_factory.mktemp("handles")
    for day in (PREVIOUS, DAY):
        synth.write_synthetic_day(root, day, rows=3000)
    table = schema.read_partition(root, PREVIOUS)
    model = CatBoostClassifier(iterations=8, depth=3, thread_count=1, random_seed=0, allow_writing_files=False,
                               verbose=False)
    model.fit(training.feature_frame(table), table.column(schema.LABEL).to_numpy(),
              cat_features=schema.CATEGORICAL_COLUMNS)
    registry.save_model(root, "reference", PREVIOUS, model, {
        "mechanism": {"name": "none", "epsilon": "inf", "delta": 0.0}, "seed": 0,
        "partition_fingerprint": schema.partition_fingerprint(root, PREVIOUS), "catboost_params": {},
        "test_metrics": {}})
    register_memorizer(root, DAY.isoformat(), name="target", claimed_epsilon=1.0)
    return root


def _counting(monkeypatch):
    """Counts model-file hashes (the handle is the only place a run hashes a model) and metadata.json opens."""
    import pipelines.models.handle as handle_module

    hashed = []
    original = handle_module.file_fingerprint
    monkeypatch.setattr(handle_module, "file_fingerprint", lambda path: hashed.append(path.name) or original(path))
    return hashed


def _metadata_reads(opened: list[str]) -> dict[str, int]:
    reads: dict[str, int] = {}
    for path in opened:
        if path.endswith("metadata.json"):
            model = path.split("/models/")[1].split("/")[0]
            reads[model] = reads.get(model, 0) + 1
    return reads


def test_a_handle_is_the_registered_model_resolved(world):
    from pipelines.data.layout import file_fingerprint, model_dir
    from pipelines.models.handle import resolve_model, training_rows_fingerprint

    target = resolve_model(world, "target", DAY)
    assert (target.name, target.date, target.id) == ("target", DAY, f"target@{DAY.isoformat()}")
    assert target.directory == model_dir(world, "target", DAY).resolve()
    assert target.artifact == target.directory / "predictions.parquet" and target.format.name == "predictions"
    assert target.fingerprint == file_fingerprint(target.artifact) == target.metadata["fingerprint"]
    assert target.claimed_epsilon == 1.0
    assert target.lineage() == {"name": "target", "date": DAY.isoformat(), "uri": str(target.directory),
                                "fingerprint": target.fingerprint, "format": "predictions", "source": "registered",
                                "mechanism": target.metadata["mechanism"]["name"], "claimed_epsilon": 1.0,
                                "partition_fingerprint": target.metadata.get("partition_fingerprint"),
                                "training_rows_fingerprint": training_rows_fingerprint(target.meta),
                                "source_fingerprint": None}
    assert target.lineage()["training_rows_fingerprint"].startswith("sha256:")
    copy = pickle.loads(pickle.dumps(target))  # what a Beam worker receives
    assert copy == target and hash(copy) == hash(target) and copy.metadata == target.metadata
    reference = resolve_model(world, "reference", PREVIOUS)
    assert reference.artifact.name == "model.cbm" and reference.format.catboost_classifier
    assert reference != target and "fingerprint" not in reference.metadata  # trained here: nothing recorded
    with pytest.raises(LabelDPInputError, match=r"no model 'nope' for 2024-06-02"):
        resolve_model(world, "nope", DAY)


def test_a_scoring_job_reads_each_model_once_and_none_when_handed_them(world, monkeypatch):
    """Without handles the job resolves each model once (one metadata read, one hash); handed the handles by its
    caller (a flow resolves each model once per run) it reads neither again, and the counts are the same."""
    global _OPENED
    from pipelines.models.handle import resolve_model
    from pipelines.scoring.beam_request import ScoringRequest
    from pipelines.scoring.beam_scoring import score_day

    game, bound = GameConfig(repetitions=2, seed=3, grid_points=20, audit_rows="all", reference_calibration="none"), BoundConfig()
    request = ScoringRequest(str(world), DAY, "target", game, bound, reference="reference", reference_date=PREVIOUS,
                             batch_size=1000)
    hashed = _counting(monkeypatch)
    _OPENED = []
    try:
        plain = score_day(request)
        by_name = (sorted(hashed), _metadata_reads(_OPENED))
        target, reference = resolve_model(world, "target", DAY), resolve_model(world, "reference", PREVIOUS)
        hashed.clear()
        _OPENED = []
        handed = score_day(ScoringRequest(str(world), DAY, "target", game, bound, reference="reference",
                                          reference_date=PREVIOUS, batch_size=1000, target_model=target,
                                          reference_model=reference))
        by_handle = (sorted(hashed), _metadata_reads(_OPENED))
    finally:
        _OPENED = None
    assert by_name == (["model.cbm", "predictions.parquet"], {"target": 1, "reference": 1})
    assert by_handle == ([], {})
    assert np.array_equal(plain.counts.correct, handed.counts.correct)
    assert plain.record["lineage"]["model"] == handed.record["lineage"]["model"] == target.lineage()


def test_a_request_refuses_a_handle_of_another_model(world):
    from pipelines.models.handle import resolve_model
    from pipelines.scoring.beam_request import ScoringRequest

    reference = resolve_model(world, "reference", PREVIOUS)
    with pytest.raises(LabelDPInputError, match=r"target_model is reference@2024-06-01, but the request names "
                                                r"target@2024-06-02"):
        ScoringRequest(str(world), DAY, "target", target_model=reference)
    with pytest.raises(TypeError, match="reference_model must be a resolved ModelHandle"):
        ScoringRequest(str(world), DAY, "target", reference_model=("reference", PREVIOUS))
