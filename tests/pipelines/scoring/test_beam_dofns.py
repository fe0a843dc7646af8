"""The scoring job's DoFns (pipelines/scoring/beam_dofns.py): a read the driver started before its in-process
pipeline runs (`ReadBatches.prefetch`) is taken up by the DoFn's pickled copy and yields exactly what it would have
read itself. The day's tasks: tests/support/read_tasks.py."""

from __future__ import annotations

import pytest

from pipelines.scoring.partition_batches import chain_tasks, read_batches
from tests.support.read_tasks import flat as _flat


@pytest.mark.parametrize("first", [0, 3])
def test_a_read_the_driver_started_is_taken_up_by_the_pipelines_copy(day_read_tasks, first):
    """`ReadBatches.prefetch` starts the first task's first read before the pipeline runs; the DoFn's pickled copy
    (as the runner holds it) takes it up under the job key and yields exactly what it would have read itself, also
    when the runner starts with another task (first=3: the prefetched read is not the one it wants)."""
    import pickle

    from pipelines.scoring import beam_dofns
    from pipelines.scoring.beam_dofns import ReadBatches, drop_prefetched

    chained = chain_tasks(day_read_tasks)
    driver = ReadBatches(700, read_ahead=True, job="job-under-test")
    driver.prefetch(chained[0])
    assert "job-under-test" in beam_dofns._PREFETCHED
    worker = pickle.loads(pickle.dumps(driver))
    order = chained[first:] + chained[:first]
    got = _flat(item for task in order for item in worker.process(task))
    assert "job-under-test" not in beam_dofns._PREFETCHED  # taken up by the worker's copy
    assert got == _flat(item for task in order for item in read_batches(task, 700))
    driver.prefetch(chained[0])
    drop_prefetched("job-under-test")
    assert "job-under-test" not in beam_dofns._PREFETCHED
    with pytest.raises(ValueError, match="job key"):
        ReadBatches(700, read_ahead=True).prefetch(chained[0])
