"""Rows spilled to disk by a hash of their key, so that a pass comparing every row of a day with every other (rows
sharing a group key, repeated row ids) holds one bucket at a time instead of the day.

A row goes to bucket ``(splitmix64(key) >> 32) * buckets >> 32``: equal keys always meet in one bucket, and the
buckets are about equal whatever the keys (row ids in order, hashes). Each column of each bucket is one file of raw
values appended batch by batch; reading a bucket gives its rows in the order they were added. The files live in a
temporary directory (under ``parent``, default the system's) removed when the `KeyBuckets` is closed, also after an
error; a process killed outright leaves it behind (``labeldp-buckets-*``, safe to delete).

    with KeyBuckets(buckets_for(rows), {"key": np.uint64, "row_id": np.int64}) as spill:
        for batch in ...:
            spill.add(key=keys, row_id=ids)
        for bucket in spill:          # dict of column -> array, one bucket at a time
            ...
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from pipelines.data.splits import splitmix64

# Rows per bucket aimed at: a bucket of keys, ids and positions (24 bytes a row), sorted, holds about 200 MB.
BUCKET_ROWS = 4_000_000
# Rows buffered in memory (all buckets together) before they are written out.
_FLUSH_ROWS = 1_000_000


def buckets_for(rows: int, bucket_rows: int = BUCKET_ROWS) -> int:
    """The number of buckets for about ``rows`` rows: at least one, about ``bucket_rows`` rows each."""
    if bucket_rows < 1:
        raise ValueError(f"bucket_rows must be >= 1; got {bucket_rows!r}")
    return max(1, math.ceil(max(int(rows), 0) / bucket_rows))


def bucket_of(keys: np.ndarray, buckets: int) -> np.ndarray:
    """The bucket of each key (uint64 keys; int64 ones are read as their bits)."""
    keys = np.ascontiguousarray(keys)
    if keys.dtype != np.uint64:
        keys = keys.view(np.uint64) if keys.dtype == np.int64 else keys.astype(np.uint64)
    high = splitmix64(keys) >> np.uint64(32)
    return ((high * np.uint64(buckets)) >> np.uint64(32)).astype(np.intp)


class KeyBuckets:
    """Columns of rows spilled into ``buckets`` buckets by the hash of their first column (the key).

    ``columns``: name -> dtype, in order; the first is the key. ``add`` takes one array per column, all of one
    length; iterating yields each bucket in turn as {name: array} (empty buckets included, as empty arrays)."""

    def __init__(self, buckets: int, columns: Mapping[str, object], parent: str | os.PathLike | None = None):
        if isinstance(buckets, bool) or int(buckets) != buckets or buckets < 1:
            raise ValueError(f"buckets must be a whole number >= 1; got {buckets!r}")
        if not columns:
            raise ValueError("KeyBuckets needs at least the key column")
        self.buckets = int(buckets)
        self.columns = {name: np.dtype(dtype) for name, dtype in columns.items()}
        self.key = next(iter(self.columns))
        self.rows = 0
        self.directory = Path(tempfile.mkdtemp(prefix="labeldp-buckets-", dir=parent))
        self._pending: list[dict[str, np.ndarray]] = []
        self._pending_rows = 0
        self._closed = False

    def _path(self, bucket: int, name: str) -> Path:
        return self.directory / f"{bucket:05d}-{name}.bin"

    def add(self, **values: np.ndarray) -> None:
        """Appends rows: one array per column (``add(key=..., row_id=...)``)."""
        if self._closed:
            raise ValueError("KeyBuckets is closed")
        if set(values) != set(self.columns):
            raise ValueError(f"KeyBuckets.add needs the columns {list(self.columns)}; got {sorted(values)}")
        arrays = {name: np.asarray(values[name], dtype=dtype).reshape(-1) for name, dtype in self.columns.items()}
        sizes = {array.size for array in arrays.values()}
        if len(sizes) != 1:
            raise ValueError(f"KeyBuckets.add: columns of different lengths {sorted(sizes)}")
        size = sizes.pop()
        if size == 0:
            return
        self._pending.append(arrays)
        self._pending_rows += size
        self.rows += size
        if self._pending_rows >= _FLUSH_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        arrays = {name: np.concatenate([part[name] for part in self._pending]) for name in self.columns}
        self._pending, self._pending_rows = [], 0
        if self.buckets == 1:
            order, bounds = None, np.array([0, arrays[self.key].size])
        else:
            which = bucket_of(arrays[self.key], self.buckets)
            order = np.argsort(which, kind="stable")  # the rows of a bucket keep the order they were added in
            bounds = np.searchsorted(which[order], np.arange(self.buckets + 1))
        for name, array in arrays.items():
            ordered = array if order is None else array[order]
            for bucket in range(self.buckets):
                lo, hi = bounds[bucket], bounds[bucket + 1]
                if hi > lo:
                    with open(self._path(bucket, name), "ab") as out:
                        out.write(ordered[lo:hi].tobytes())

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        self._flush()
        for bucket in range(self.buckets):
            yield {name: self._read(bucket, name, dtype) for name, dtype in self.columns.items()}

    def _read(self, bucket: int, name: str, dtype: np.dtype) -> np.ndarray:
        path = self._path(bucket, name)
        if not path.exists():
            return np.zeros(0, dtype=dtype)
        return np.fromfile(path, dtype=dtype)

    def close(self) -> None:
        self._closed = True
        self._pending = []
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> KeyBuckets:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["BUCKET_ROWS", "KeyBuckets", "bucket_of", "buckets_for"]
