"""The numeric world's fixtures (tests/support/numeric_registry.py) for the ``models`` command's tests here
(test_models.py): the world's files once per module, a fresh data root holding its day for each test."""

from tests.support.numeric_registry import files, root  # noqa: F401  (fixtures)
