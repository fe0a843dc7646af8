"""The warehouse fixtures of the sink tests here and in warehouse/ (tests/support/warehouse_targets.py): a fresh
target of each backend and an outage of it, for any test that names them."""

from tests.support.warehouse_targets import outage, target  # noqa: F401  (fixtures)
