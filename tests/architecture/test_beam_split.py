"""The Beam scoring job's module layout: a Beam-free request module, module-level DoFns, handlers with
Beam's keyword-only batching arguments, no private names imported across modules and no import cycle."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from auditing.game.config import GameConfig

ROOT = Path(__file__).resolve().parents[2]
# The modules of the Beam job and the per-batch work it wraps.
JOB_MODULES = (
    "pipelines.scoring.beam_coders",
    "pipelines.scoring.beam_dofns",
    "pipelines.scoring.beam_request",
    "pipelines.scoring.beam_scoring",
    "pipelines.models.catboost_frames",
    "pipelines.models.formats.catboost_handler",
    "pipelines.scoring.partition_batches",
    "pipelines.models.formats.oracle_handler",
    "pipelines.scoring.scored_batch",
    "pipelines.scoring.scoring_batches",
)
# Importing these must not import apache_beam: what the flows, controls and recalibration use without running
# the job.
BEAM_FREE = (
    "pipelines.scoring.beam_request",
    "pipelines.models.catboost_frames",
    "pipelines.scoring.partition_batches",
    "pipelines.scoring.scored_batch",
    "pipelines.scoring.scoring_batches",
    "pipelines.reference.controls",
    "pipelines.reference.recalibration",
)


def _path(module: str) -> Path:
    return ROOT.joinpath(*module.split(".")).with_suffix(".py")


def test_the_request_module_and_the_batch_work_import_no_beam():
    code = (
        "import importlib, sys\n"
        f"for name in {list(BEAM_FREE)!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'apache_beam'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_every_dofn_and_combinefn_is_a_module_level_class_that_pickles_by_reference():
    import apache_beam as beam

    from pipelines.scoring import beam_dofns
    from pipelines.scoring.scoring_batches import GameSpec

    classes = [value for value in vars(beam_dofns).values()
               if isinstance(value, type) and issubclass(value, beam.DoFn | beam.CombineFn)
               and value.__module__ == beam_dofns.__name__]
    assert {cls.__name__ for cls in classes} >= {
        "ReadBatches", "PassProgress", "Pass1CombineFn", "MergePass1Fn", "ExpectedHistogramFn", "BoundaryRows",
        "ExactCounts", "WriteTable", "ReadPredictions", "WriteResults"}
    assert all("<locals>" not in cls.__qualname__ for cls in classes)
    spec = GameSpec(GameConfig(repetitions=2))
    for instance in (beam_dofns.Pass1CombineFn(spec), beam_dofns.BoundaryRows(spec), beam_dofns.WriteResults("/w")):
        # Plain pickle (not cloudpickle) only handles classes it can import by name.
        assert type(pickle.loads(pickle.dumps(instance))) is type(instance)


def test_no_job_module_defines_a_class_inside_a_function():
    offenders = []
    for module in JOB_MODULES:
        tree = ast.parse(_path(module).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                offenders += [f"{module}:{inner.lineno} {inner.name}" for inner in ast.walk(node)
                              if isinstance(inner, ast.ClassDef)]
    assert not offenders, offenders


@pytest.mark.parametrize("handler_name", ["CatBoostModelHandler", "RROracleModelHandler"])
def test_handlers_take_beams_keyword_only_batching_arguments(handler_name):
    from pipelines.models.formats.catboost_handler import CatBoostModelHandler
    from pipelines.models.formats.oracle_handler import RROracleModelHandler

    handler_class = {"CatBoostModelHandler": CatBoostModelHandler, "RROracleModelHandler": RROracleModelHandler}[
        handler_name]
    from tests.support.model_handles import unregistered

    model = unregistered({"model_name": "m", "date": "2024-01-02"})
    assert handler_class(model).batch_elements_kwargs() == {}
    assert handler_class(model).model_id == "m@2024-01-02"
    handler = handler_class(model, min_batch_size=2, max_batch_size=8, max_batch_duration_secs=5)
    assert handler.batch_elements_kwargs() == {"min_batch_size": 2, "max_batch_size": 8,
                                               "max_batch_duration_secs": 5}
    assert handler_class(model, model_copies=2).model_copies() == 2
    with pytest.raises(TypeError):
        handler_class(model, 2)  # batching arguments are keyword-only


def test_job_modules_declare_all():
    """(Private cross-module imports and import circles are checked for every module by
    tests/architecture/test_layering.py.)"""
    offenders = [module for module in JOB_MODULES if "__all__" not in _path(module).read_text(encoding="utf-8")]
    assert not offenders, f"no __all__ in {offenders}"
