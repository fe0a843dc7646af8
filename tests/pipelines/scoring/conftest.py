"""The read tasks of a synthetic day (tests/support/read_tasks.py) for the batch readers' tests here
(test_partition_batches.py, test_beam_dofns.py), once per module."""

from tests.support.read_tasks import tasks  # noqa: F401  (fixture)
