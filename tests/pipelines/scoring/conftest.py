"""The read tasks of a synthetic day (tests/support/read_tasks.py: ``day_read_tasks``) for the batch readers' tests
here (test_partition_batches.py, test_beam_dofns.py), the Beam scoring job's world (tests/support/scoring_worlds.py:
``scoring_world``) for the job's tests (test_beam_scoring.py), and an RR target trained on a synthetic day
(tests/support/rr_trained_days.py: ``rr_trained_world``) for the audited rows' tests (test_audit_rows.py), once per
module."""

from tests.support.read_tasks import day_read_tasks  # noqa: F401  (fixture)
from tests.support.rr_trained_days import rr_trained_world  # noqa: F401  (fixture)
from tests.support.scoring_worlds import scoring_world  # noqa: F401  (fixture)
