"""Grouped spill files: what the two-stage plan writes per batch and reads back one group of keys at a time.

Two steps of the job spill a batch's rows keyed by a small integer and later need every batch's rows of one key
together, with memory bounded whatever the day's size:
- the row-id uniqueness check (key: a hash bucket of the row id, `pipelines.scoring.scored_batch.row_id_buckets`);
- pass 2's boundary rows (key: the game's slot, `pipelines.scoring.scoring_batches.boundary_batch`).

Each batch writes ONE data file, its rows sorted by key (a structured ``.npy``: one field per column), and one
offsets file (key k's rows are ``offsets[k]:offsets[k+1]``). A file per key and batch, as before, meant 256 + 102
small files per batch: at 1e7 rows, 13,600 files written, renamed and read back, about 12 s of a 64 s job
(benchmarks/results/beam_scoring.md). The reader memory-maps the data files and copies out only the keys of the
current group (`read_groups`), so at most about ``max_rows`` rows are in memory at once.

No Beam here: the DoFns in `pipelines.scoring.beam_dofns` call `write_grouped`, the driver calls `read_groups`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

OFFSETS_SUFFIX = ".offsets.npy"
DATA_SUFFIX = ".rows.npy"
# Rows copied out of the data files per group (boundary rows: 25 bytes each, row ids 8): ~100 MB at most.
GROUP_ROWS = 1 << 22
# Rows a merge round of one key holds (`merge_sorted`): about 25 MB of boundary rows, 120 MB with the round's
# sort and the consumer's temporaries; more rows per round only save rounds of a few milliseconds each.
MERGE_ROWS = 1 << 20


def save_atomically(path: Path, save) -> None:
    """Writes a file through ``save(handle)`` to a temporary sibling and renames it into place, so that a
    reader never sees a torn file and a retried batch replaces its own file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    with open(tmp, "wb") as handle:
        save(handle)
    os.replace(tmp, path)


def key_order(keys: np.ndarray, num_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, offsets): the stable order that groups rows by key, and each key's range in that order."""
    keys = np.asarray(keys)
    if keys.size and (int(keys.min()) < 0 or int(keys.max()) >= num_keys):
        raise ValueError(f"keys must lie in [0, {num_keys}); got {int(keys.min())}..{int(keys.max())}")
    sortable = keys.astype(np.uint16) if num_keys <= 1 << 16 else keys.astype(np.int64)  # 16 bits: a radix sort
    order = np.argsort(sortable, kind="stable")
    offsets = np.zeros(num_keys + 1, np.int64)
    offsets[1:] = np.cumsum(np.bincount(keys, minlength=num_keys))
    return order, offsets


def write_grouped(directory: str | os.PathLike, name: str, offsets: np.ndarray, columns: dict[str, np.ndarray],
                  order: np.ndarray | None = None) -> None:
    """Writes one batch's rows, already grouped by key (key k's rows at ``offsets[k]:offsets[k+1]`` of every
    column, each column taken in ``order`` when given: a permutation or a selection of its rows), as
    ``<name>.rows.npy`` and ``<name>.offsets.npy`` under ``directory``. The offsets are written last: a reader
    lists them, so it never sees a batch whose rows are not there yet."""
    directory = Path(directory)
    offsets = np.asarray(offsets, dtype=np.int64)
    rows = int(offsets[-1])
    data = np.empty(rows, dtype=[(field, np.asarray(values).dtype) for field, values in columns.items()])
    for field, values in columns.items():
        taken = values if order is None else np.asarray(values)[order]
        if len(taken) != rows:
            raise ValueError(f"column {field!r} has {len(taken)} rows{'' if order is None else ' in order'}; "
                             f"the offsets say {rows}")
        data[field] = taken
    save_atomically(directory / f"{name}{DATA_SUFFIX}", lambda handle: np.save(handle, data))
    save_atomically(directory / f"{name}{OFFSETS_SUFFIX}", lambda handle: np.save(handle, offsets))


def _batches(directory: Path) -> list[tuple[Path, np.ndarray]]:
    """(data file, offsets) of every batch written under ``directory``, in name order."""
    if not directory.is_dir():
        return []
    found = []
    for path in sorted(directory.glob(f"*{OFFSETS_SUFFIX}")):
        if path.name.startswith("."):
            continue  # a temporary file of an interrupted write
        name = path.name[:-len(OFFSETS_SUFFIX)]
        found.append((directory / f"{name}{DATA_SUFFIX}", np.load(path)))
    return found


def _groups(totals: np.ndarray, max_rows: int, wanted: np.ndarray | None = None) -> list[tuple[int, int]]:
    """Consecutive key ranges [lo, hi) of at most ``max_rows`` rows (a key with more rows is a range alone),
    covering only the ``wanted`` keys (default all): a key not wanted ends a range, so that reading a range
    never reads its rows."""
    groups, lo, rows = [], None, 0
    for key, count in enumerate(totals.tolist()):
        if wanted is not None and not wanted[key]:
            if lo is not None:
                groups.append((lo, key))
                lo = None
            continue
        if lo is None:
            lo, rows = key, 0
        elif rows + count > max_rows:
            groups.append((lo, key))
            lo, rows = key, 0
        rows += count
    if lo is not None:
        groups.append((lo, len(totals)))
    return groups


def _totals(directory: str | os.PathLike, batches: list[tuple[Path, np.ndarray]]) -> np.ndarray:
    widths = {offsets.size for _, offsets in batches}
    if len(widths) != 1:
        raise RuntimeError(f"{directory}: batch files disagree on the number of keys ({sorted(widths)})")
    return np.sum([np.diff(offsets) for _, offsets in batches], axis=0)


def key_rows(directory: str | os.PathLike) -> np.ndarray:
    """Rows per key over every batch written under ``directory`` (empty when nothing was written)."""
    batches = _batches(Path(directory))
    return _totals(directory, batches) if batches else np.zeros(0, np.int64)


def read_groups(directory: str | os.PathLike, max_rows: int = GROUP_ROWS, keys=None
                ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """(key, {column: that key's rows from every batch, in batch-name order}) for each key with rows, in key
    order (only the keys in ``keys``, when given). Keys are read in consecutive groups of about ``max_rows`` rows:
    only the current group is in memory; a key with more rows is read alone (`merge_sorted` streams one)."""
    batches = _batches(Path(directory))
    if not batches:
        return
    totals = _totals(directory, batches)
    wanted = None
    if keys is not None:
        wanted = np.zeros(totals.size, bool)
        wanted[[key for key in keys if 0 <= key < totals.size]] = True
    for lo, hi in _groups(totals, max_rows, wanted):
        if not totals[lo:hi].any():
            continue
        parts = []  # (the batch's rows of keys lo..hi-1, their offsets rebased to the part)
        for path, offsets in batches:
            if offsets[hi] > offsets[lo]:
                data = np.load(path, mmap_mode="r")
                parts.append((np.array(data[offsets[lo]:offsets[hi]]), offsets[lo:hi + 1] - offsets[lo]))
                del data
        fields = parts[0][0].dtype.names
        for key in range(lo, hi):
            if not totals[key]:
                continue
            pieces = [part[local[key - lo]:local[key - lo + 1]] for part, local in parts]
            rows = np.concatenate(pieces)
            yield key, {field: np.ascontiguousarray(rows[field]) for field in fields}


def merge_sorted(directory: str | os.PathLike, key: int, sort_key, chunk_rows: int = MERGE_ROWS
                 ) -> Iterator[np.ndarray]:
    """One key's rows from every batch under ``directory``, merged into one ascending order, as structured
    chunks; at most about ``chunk_rows`` rows are read into memory at a time, whatever the key's size.

    Each batch must have written the key's rows already sorted by ``sort_key(rows) -> (primary, secondary)``,
    two arrays compared lexicographically, ascending, with no two rows equal (the consumer should check the
    order it receives). A k-way merge in rounds: each run offers its next window of ``chunk_rows / runs``
    rows (at least one); no row of any run beyond its window can precede the smallest window end (the threshold), so every
    offered row up to the threshold is emitted, sorted, and the run whose window ended there is consumed
    whole, which bounds the rounds by the windows.
    """
    batches = [(path, offsets) for path, offsets in _batches(Path(directory)) if offsets[key + 1] > offsets[key]]
    if not batches:
        return
    runs = [_Run(path, offsets[key], offsets[key + 1]) for path, offsets in batches]
    yield from _merge_runs(runs, sort_key, chunk_rows)


class _Run:
    """One batch's rows of one key, read from its file on demand (not memory-mapped: mapped pages a merge has
    read would stay resident, and count in the process's memory, until the whole key is merged). The file is
    opened for each read, not held: a day of 1e9 rows has about 3,800 batches, past a common limit of 1,024 open
    files, and a merge reads each run only every few rounds."""

    def __init__(self, path, start: int, stop: int):
        with open(path, "rb") as handle:
            header = (np.lib.format.read_array_header_1_0 if np.lib.format.read_magic(handle) == (1, 0)
                      else np.lib.format.read_array_header_2_0)
            _, _, self.dtype = header(handle)
            self._path, self._base = path, handle.tell() + start * self.dtype.itemsize
        self.size = int(stop - start)

    def __getitem__(self, part: slice) -> np.ndarray:
        lo, hi = max(0, part.start), min(self.size, part.stop)
        with open(self._path, "rb") as handle:
            handle.seek(self._base + lo * self.dtype.itemsize)
            return np.fromfile(handle, dtype=self.dtype, count=max(0, hi - lo))


def _merge_runs(runs: list[_Run], sort_key, chunk_rows: int) -> Iterator[np.ndarray]:
    window = max(1, chunk_rows // len(runs))
    position = np.zeros(len(runs), np.int64)
    sizes = np.array([run.size for run in runs], np.int64)
    # Per run, the keys of its next row and of its window's last row (kept between rounds: a round touches
    # only the runs it takes from); a window reaching its run's end bounds nothing (its key is the maximum).
    first = [np.zeros(len(runs), dtype) for dtype in (np.uint64, np.int64)]
    end = [np.zeros(len(runs), dtype) for dtype in (np.uint64, np.int64)]
    top = (np.iinfo(np.uint64).max, np.iinfo(np.int64).max)

    def refresh(i: int) -> None:
        if position[i] < sizes[i]:
            p, q = sort_key(runs[i][position[i]:position[i] + 1])
            first[0][i], first[1][i] = p[0], q[0]
        if position[i] + window < sizes[i]:
            p, q = sort_key(runs[i][position[i] + window - 1:position[i] + window])
            end[0][i], end[1][i] = p[0], q[0]
        else:
            end[0][i], end[1][i] = top

    for i in range(len(runs)):
        refresh(i)
    while True:
        active = position < sizes
        if not active.any():
            return
        bounded = active & (position + window < sizes)
        threshold = None
        if bounded.any():
            candidates = np.flatnonzero(bounded)
            smallest = candidates[np.lexsort((end[1][candidates], end[0][candidates]))[0]]
            threshold = (end[0][smallest], end[1][smallest])
            due = active & ((first[0] < threshold[0]) | ((first[0] == threshold[0]) & (first[1] <= threshold[1])))
        else:
            due = active
        taken = []
        for i in np.flatnonzero(due).tolist():
            rows = runs[i][position[i]:min(position[i] + window, sizes[i])]
            if threshold is not None:
                primary, secondary = sort_key(rows)
                below = int(np.searchsorted(primary, threshold[0], side="left"))
                equal = int(np.searchsorted(primary, threshold[0], side="right"))
                rows = rows[:below + int(np.searchsorted(secondary[below:equal], threshold[1], side="right"))]
            taken.append(rows)
            position[i] += rows.size
            refresh(i)
        if len(taken) == 1:  # one run's rows, already in order (runs over disjoint ranges: the common case)
            yield taken[0]
            continue
        merged = np.concatenate(taken)
        primary, secondary = sort_key(merged)
        yield merged[np.lexsort((secondary, primary))]


__all__ = ["GROUP_ROWS", "MERGE_ROWS", "key_order", "key_rows", "merge_sorted", "read_groups", "save_atomically",
           "write_grouped"]
