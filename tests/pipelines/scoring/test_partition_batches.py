"""Reading ahead (`pipelines.scoring.partition_batches.ReadAhead`): on an in-process runner the next batch is read on
a background thread while the current one is scored. The batches and their order must be exactly those of
`read_batches`, whatever order the runner takes the row groups in, and a bad row group must still fail with an
error naming its file."""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from labeldp.errors import LabelDPInputError
from pipelines.data import synth
from pipelines.data.day import listed_day
from pipelines.scoring.partition_batches import (
    ReadAhead,
    chain_tasks,
    read_batches,
    read_tasks,
)

DAY = dt.date(2024, 5, 2)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    root = tmp_path_factory.mktemp("read-ahead")
    synth.write_synthetic_day(root, DAY, rows=5000, rows_per_file=1200)  # 5 files, a row group each
    found = read_tasks(list(listed_day(root, DAY).files))
    assert len(found) == 5
    return found


def _read(batch_size: int, threads: list | None = None):
    def read(task):
        for item in read_batches(task, batch_size):
            if threads is not None:
                threads.append(threading.current_thread().name)
            yield item
    return read


def _flat(pairs):
    return [(batch_id, table.to_pydict()) for batch_id, table in pairs]


def test_chained_tasks_pickle_flat():
    from pipelines.scoring.partition_batches import ReadTask

    chained = chain_tasks([ReadTask("a", 0, 1), ReadTask("a", 1, 1), ReadTask("b", 0, 1)])
    assert [t.ahead.key if t.ahead else None for t in chained] == [("a", 1), ("b", 0), None]
    assert all(t.ahead is None or t.ahead.ahead is None for t in chained)
    assert chain_tasks([]) == []


@pytest.mark.parametrize("batch_size", [500, 1200, 5000])
def test_the_same_batches_in_the_same_order_read_on_another_thread(tasks, batch_size):
    expected = _flat(item for task in tasks for item in read_batches(task, batch_size))
    threads: list[str] = []
    ahead = ReadAhead(_read(batch_size, threads))
    got = _flat(item for task in chain_tasks(tasks) for item in ahead.batches(task))
    assert got == expected
    # every batch was read by the background thread, none on the caller's
    assert threads and all(name.startswith("labeldp-read") for name in threads)


def test_a_runner_taking_another_order_gets_the_same_batches(tasks):
    chained = chain_tasks(tasks)
    order = [chained[i] for i in (2, 0, 4, 1, 3)]  # each prefetched first batch belongs to a task not taken next
    ahead = ReadAhead(_read(700))
    got = {batch_id: table.to_pydict() for task in order for batch_id, table in ahead.batches(task)}
    expected = {batch_id: table.to_pydict() for task in tasks for batch_id, table in read_batches(task, 700)}
    assert got == expected


def test_a_corrupt_row_group_fails_with_its_file_name(tasks, tmp_path):
    bad_path = tmp_path / "part-broken.parquet"
    bad_path.write_bytes(b"PAR1 not really parquet PAR1")
    broken = [tasks[0], type(tasks[0])(str(bad_path), 0, 10)]
    ahead = ReadAhead(_read(1000))
    with pytest.raises(LabelDPInputError, match=r"part-broken\.parquet"):
        for task in chain_tasks(broken):
            for _ in ahead.batches(task):
                pass


@pytest.mark.parametrize("first", [0, 3])
def test_a_read_the_driver_started_is_taken_up_by_the_pipelines_copy(tasks, first):
    """`ReadBatches.prefetch` starts the first task's first read before the pipeline runs; the DoFn's pickled copy
    (as the runner holds it) takes it up under the job key and yields exactly what it would have read itself, also
    when the runner starts with another task (first=3: the prefetched read is not the one it wants)."""
    import pickle

    from pipelines.scoring import beam_dofns
    from pipelines.scoring.beam_dofns import ReadBatches, drop_prefetched

    chained = chain_tasks(tasks)
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
