"""The numeric world's fixtures (tests/support/numeric_registry.py) for the ``models`` command's tests here
(test_models.py): the world's files once per module, a fresh data root holding its day for each test
(``numeric_files``, ``numeric_root``). The Beam scoring job's world (tests/support/scoring_worlds.py:
``scoring_world``) and an RR target's (tests/support/rr_trained_days.py: ``rr_trained_world``) for the ``score``
command's tests (test_score.py). The data's days and logs (tests/support/schema_days.py: ``schema_table``,
criteo_sources.py: ``criteo_source``, tabular_logs.py: ``tabular_source``) for the ``data`` command's tests
(test_data.py)."""

from tests.support.criteo_sources import criteo_source  # noqa: F401  (fixture)
from tests.support.numeric_registry import numeric_files, numeric_root  # noqa: F401  (fixtures)
from tests.support.rr_trained_days import rr_trained_world  # noqa: F401  (fixture)
from tests.support.schema_days import schema_table  # noqa: F401  (fixture)
from tests.support.scoring_worlds import scoring_world  # noqa: F401  (fixture)
from tests.support.tabular_logs import tabular_source  # noqa: F401  (fixture)
