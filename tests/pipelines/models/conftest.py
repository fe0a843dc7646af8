"""The numeric world's fixtures (tests/support/numeric_registry.py) for the tests here and in formats/: the world's
files once per module and a fresh data root holding its day for each test (test_registration.py), the world's
models registered in each format once per module (test_formats.py, formats/test_onnx.py, formats/
test_predictions.py; formats/test_onnx_inputs.py builds a world of its own)."""

from tests.support.numeric_registry import files, root, world  # noqa: F401  (fixtures)
