"""The data's fixtures for the tests here: the partition schema's synthetic day (tests/support/schema_days.py:
``schema_table``, test_schema.py), the Criteo TSV rendering of a day (tests/support/criteo_sources.py:
``criteo_source``, test_criteo_ingest.py) and the tabular click log under its spec (tests/support/tabular_logs.py:
``tabular_source``, test_tabular_ingest.py), once per module."""

from tests.support.criteo_sources import criteo_source  # noqa: F401  (fixture)
from tests.support.schema_days import schema_table  # noqa: F401  (fixture)
from tests.support.tabular_logs import tabular_source  # noqa: F401  (fixture)
