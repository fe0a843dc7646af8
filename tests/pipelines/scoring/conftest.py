"""The read tasks of a synthetic day (tests/support/read_tasks.py: ``day_read_tasks``) for the batch readers' tests
here (test_partition_batches.py, test_beam_dofns.py), and the Beam scoring job's world (tests/support/
scoring_worlds.py: ``scoring_world``) for the job's tests (test_beam_scoring.py), once per module."""

from tests.support.read_tasks import day_read_tasks  # noqa: F401  (fixture)
from tests.support.rr_trained_days import rr_trained_world  # noqa: F401  (fixture)
from tests.support.scoring_worlds import scoring_world  # noqa: F401  (fixture)
