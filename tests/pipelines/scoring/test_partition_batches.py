"""Reading ahead (`pipelines.scoring.partition_batches.ReadAhead`): on an in-process runner the next batch is read on
a background thread while the current one is scored. The batches and their order must be exactly those of
`read_batches`, whatever order the runner takes the row groups in, and a bad row group must still fail with an
error naming its file. The day's tasks: tests/support/read_tasks.py; the Beam reader's prefetch taken up by its
pickled copy: tests/pipelines/scoring/test_beam_dofns.py."""

from __future__ import annotations

import threading

import pytest

from labeldp.errors import LabelDPInputError
from pipelines.scoring.partition_batches import (
    ReadAhead,
    chain_tasks,
    read_batches,
)
from tests.support.read_tasks import flat as _flat


def _read(batch_size: int, threads: list | None = None):
    def read(task):
        for item in read_batches(task, batch_size):
            if threads is not None:
                threads.append(threading.current_thread().name)
            yield item
    return read


def test_chained_tasks_pickle_flat():
    from pipelines.scoring.partition_batches import ReadTask

    chained = chain_tasks([ReadTask("a", 0, 1), ReadTask("a", 1, 1), ReadTask("b", 0, 1)])
    assert [t.ahead.key if t.ahead else None for t in chained] == [("a", 1), ("b", 0), None]
    assert all(t.ahead is None or t.ahead.ahead is None for t in chained)
    assert chain_tasks([]) == []


@pytest.mark.parametrize("batch_size", [500, 1200, 5000])
def test_the_same_batches_in_the_same_order_read_on_another_thread(day_read_tasks, batch_size):
    expected = _flat(item for task in day_read_tasks for item in read_batches(task, batch_size))
    threads: list[str] = []
    ahead = ReadAhead(_read(batch_size, threads))
    got = _flat(item for task in chain_tasks(day_read_tasks) for item in ahead.batches(task))
    assert got == expected
    # every batch was read by the background thread, none on the caller's
    assert threads and all(name.startswith("labeldp-read") for name in threads)


def test_a_runner_taking_another_order_gets_the_same_batches(day_read_tasks):
    chained = chain_tasks(day_read_tasks)
    order = [chained[i] for i in (2, 0, 4, 1, 3)]  # each prefetched first batch belongs to a task not taken next
    ahead = ReadAhead(_read(700))
    got = {batch_id: table.to_pydict() for task in order for batch_id, table in ahead.batches(task)}
    expected = {batch_id: table.to_pydict() for task in day_read_tasks for batch_id, table in read_batches(task, 700)}
    assert got == expected


def test_a_corrupt_row_group_fails_with_its_file_name(day_read_tasks, tmp_path):
    bad_path = tmp_path / "part-broken.parquet"
    bad_path.write_bytes(b"PAR1 not really parquet PAR1")
    broken = [day_read_tasks[0], type(day_read_tasks[0])(str(bad_path), 0, 10)]
    ahead = ReadAhead(_read(1000))
    with pytest.raises(LabelDPInputError, match=r"part-broken\.parquet"):
        for task in chain_tasks(broken):
            for _ in ahead.batches(task):
                pass
