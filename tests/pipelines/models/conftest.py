"""The numeric world's fixtures (tests/support/numeric_registry.py) for the tests here and in formats/: the world's
files once per module and a fresh data root holding its day for each test (``numeric_files``, ``numeric_root``:
test_registration.py), the world's models registered in each format once per module (``numeric_formats``:
test_formats.py, formats/test_onnx.py, formats/test_predictions.py; formats/test_onnx_inputs.py builds a world of
its own). The Beam scoring job's world (tests/support/scoring_worlds.py: ``scoring_world``) for the CatBoost frame's
tests (test_catboost_frames.py)."""

from tests.support.numeric_registry import numeric_files, numeric_formats, numeric_root  # noqa: F401  (fixtures)
from tests.support.scoring_worlds import scoring_world  # noqa: F401  (fixture)
