"""The deterministic train / validation / test split of a day's rows: 80 / 4 / 16 (paper Sec. 6.4).

A row's split depends only on its ``row_id`` (and the fixed salt below), never on the order, the file it is in,
the day or the machine: the same ``row_id`` always lands in the same split, so training, scoring and
auditing agree without storing the split.

How: ``h = splitmix64(row_id XOR SALT)`` is a 64-bit hash whose top 32 bits are close to uniform;
``bucket = (top32(h) * 25) >> 32`` maps them to 0..24 with probabilities equal within 2^-32; buckets 0..19 are
train (80%), 20 is validation (4%), 21..24 are test (16%). Vectorized numpy.
"""

from __future__ import annotations

import numpy as np

TRAIN = 0
VALIDATION = 1
TEST = 2
SPLIT_NAMES = {TRAIN: "train", VALIDATION: "validation", TEST: "test"}
FRACTIONS = {TRAIN: 0.80, VALIDATION: 0.04, TEST: 0.16}

SALT = np.uint64(0x6C61_6265_6C64_7030)  # "labeldp0": changing it changes every split; never change it

_BUCKETS = 25
_TRAIN_BUCKETS = 20  # 20 / 25 = 80%
_VALIDATION_BUCKETS = 1  # 1 / 25 = 4%; the remaining 4 / 25 = 16% are test


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 mix (Steele, Lea, Flood 2014) of a uint64 array: a bijection with good avalanche, so
    distinct inputs give distinct outputs and nearby inputs give unrelated ones."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _as_uint64(row_ids) -> np.ndarray:
    array = np.asarray(row_ids)
    if array.dtype.kind not in "iu":
        if array.size == 0:
            return array.astype(np.uint64)
        raise TypeError(f"row_ids must be integers; got dtype {array.dtype}")
    # int64 -> uint64 reinterprets the two's-complement bits, so negative ids are fine and stay distinct.
    return array.astype(np.int64, copy=False).view(np.uint64)


def scheme() -> dict:
    """The split's parameters as recorded in a model's registry metadata (``training_rows.split``), so that an
    audit reproduces the training split from the record itself (``split_of(row_ids, **scheme_arguments(...))``)."""
    return {"hash": "splitmix64", "salt": f"0x{int(SALT):016x}", "buckets": _BUCKETS,
            "train_buckets": _TRAIN_BUCKETS, "validation_buckets": _VALIDATION_BUCKETS}


def split_of(row_ids, *, salt: int | np.uint64 = SALT, buckets: int = _BUCKETS, train_buckets: int = _TRAIN_BUCKETS,
             validation_buckets: int = _VALIDATION_BUCKETS) -> np.ndarray:
    """The split (``TRAIN`` = 0, ``VALIDATION`` = 1, ``TEST`` = 2) of each ``row_id``, as an int8 array.

    The keyword arguments default to this module's fixed scheme; an audit passes the values a model's
    metadata recorded (``pipelines.scoring.audit_rows``)."""
    h = splitmix64(_as_uint64(row_ids) ^ np.uint64(salt))
    with np.errstate(over="ignore"):
        bucket = ((h >> np.uint64(32)) * np.uint64(buckets)) >> np.uint64(32)
    out = np.full(bucket.shape, TEST, dtype=np.int8)
    out[bucket < train_buckets + validation_buckets] = VALIDATION
    out[bucket < train_buckets] = TRAIN
    return out


def split_masks(row_ids) -> dict[str, np.ndarray]:
    """Boolean masks ``{"train": ..., "validation": ..., "test": ...}``: disjoint and covering every row."""
    split = split_of(row_ids)
    return {name: split == code for code, name in SPLIT_NAMES.items()}


# ------------------------------------------------------------------------------------------ correction rows
#
# The test split's labels enter no audited model's training (targets train on train + validation and are audited
# on those rows): they are the capacity check's rows (`pipelines.reference.recalibration.CheckRowSelection`), every
# one of them. The reference's correction on day D (`pipelines.reference.recalibration`) fits on other rows: a keyed
# share of the rows that are NOT held out, ``splitmix64(row_id XOR CORRECTION_SALT) < share * 2^64`` (top 32 bits),
# which then leave every audited game of the night. So the correction's labels are neither check rows' nor audited
# rows' (docs/soundness.md sections 6 and 8.8). A third salt splits the correction's rows into fit / validation
# rows (`correction_validation`). Like the split itself, a row's part depends only on its row_id.

CORRECTION_SHARE = 0.1  # the default share (`pipelines.reference.recalibration.RecalibrationSettings.share`)
CORRECTION_SALT = np.uint64(0x6C61_6265_6C63_7234)  # "labelcr4": the correction's share; never change it
FOLD_SALT = np.uint64(0x6C61_6265_6C66_6432)  # "labelfd2": fit / validation rows of the correction; never change it


def correction_scheme(share: float) -> dict:
    """The correction rows' parameters as recorded in registry metadata (next to ``scheme()``)."""
    return {"split": scheme(), "hash": "splitmix64", "correction_salt": f"0x{int(CORRECTION_SALT):016x}",
            "share": float(share),
            "correction": "not held out and (splitmix64(row_id ^ correction_salt) >> 32) < round(share * 2^32)",
            "fold_salt": f"0x{int(FOLD_SALT):016x}",
            "fold": "validation iff (splitmix64(row_id ^ fold_salt) >> 32) < round(fraction * 2^32)"}


def correction_share(row_ids, share: float) -> np.ndarray:
    """True for the rows in the keyed ``share`` (0 < share < 1) that may fit the reference's correction, of
    any row (the caller removes the held-out rows)."""
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0.0 < share < 1.0:
        raise ValueError(f"share must be in (0, 1); got {share!r}")
    h = splitmix64(_as_uint64(row_ids) ^ CORRECTION_SALT)
    return (h >> np.uint64(32)) < np.uint64(round(share * 2**32))


SAMPLE_SALT = np.uint64(0x6C61_6265_6C73_6D33)  # "labelsm3": the keyed sample of a capped half; never change it


def keyed_sample(row_ids, max_rows: int) -> np.ndarray | None:
    """The ``max_rows`` of ``row_ids`` (unique) with the smallest ``splitmix64(row_id XOR SAMPLE_SALT)`` (ties by
    row_id), sorted, or None when there are no more than ``max_rows``: a sample that depends on the row ids only,
    never on their order or on the batches they came in."""
    ids = np.asarray(row_ids, dtype=np.int64)
    if ids.size <= max_rows:
        return None
    order = np.lexsort((ids, splitmix64(_as_uint64(ids) ^ SAMPLE_SALT)))
    return np.sort(ids[order[:max_rows]])


class KeyedSampler:
    """`keyed_sample` over ids that come in batches, holding O(``max_rows``) ids instead of all of them: ``add`` each
    batch, then ``result()`` is ``keyed_sample(every id added, max_rows)``, whatever the batches.

    A running bottom-k by (hash, row_id): once ``max_rows`` ids are held, an id whose hash is above the largest
    held hash cannot be among the smallest, so a batch costs its hashes plus its few rows at or below that hash;
    the held ids are cut back to ``max_rows`` whenever they reach twice that."""

    def __init__(self, max_rows: int):
        if isinstance(max_rows, bool) or int(max_rows) != max_rows or max_rows < 0:
            raise ValueError(f"max_rows must be a whole number >= 0; got {max_rows!r}")
        self.max_rows = int(max_rows)
        self.rows = 0  # ids added
        self._ids = np.zeros(0, np.int64)  # after a cut: the smallest by (hash, id), in that order
        self._hashes = np.zeros(0, np.uint64)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_rows = 0
        self._limit: np.uint64 | None = None  # the largest held hash once max_rows are held

    def add(self, row_ids) -> None:
        ids = np.asarray(row_ids, dtype=np.int64).reshape(-1)
        self.rows += ids.size
        if ids.size == 0 or self.max_rows == 0:
            return
        hashes = splitmix64(_as_uint64(ids) ^ SAMPLE_SALT)
        if self._limit is not None:
            inside = hashes <= self._limit
            if not inside.any():
                return
            ids, hashes = ids[inside], hashes[inside]
        self._pending.append((ids, hashes))
        self._pending_rows += ids.size
        if self._ids.size + self._pending_rows >= 2 * self.max_rows:
            self._cut()

    def _cut(self) -> None:
        ids = np.concatenate([self._ids, *(part[0] for part in self._pending)])
        hashes = np.concatenate([self._hashes, *(part[1] for part in self._pending)])
        self._pending, self._pending_rows = [], 0
        order = np.lexsort((ids, hashes))[:self.max_rows]  # keyed_sample's order: hash, then row_id
        self._ids, self._hashes = ids[order], hashes[order]
        if self.max_rows and self._ids.size == self.max_rows:
            self._limit = self._hashes[-1]

    def chosen(self) -> np.ndarray:
        """The ids of the sample, sorted: the ``max_rows`` of smallest hash, or every id added if no more."""
        self._cut()
        return np.sort(self._ids)

    def result(self) -> np.ndarray | None:
        """``keyed_sample`` of every id added: ``chosen()``, or None when no more than ``max_rows`` were added."""
        return None if self.rows <= self.max_rows else self.chosen()


def correction_validation(row_ids, fraction: float) -> np.ndarray:
    """True for the rows that validate (rather than fit) among the correction's rows: about ``fraction`` of them,
    chosen by a keyed hash of row_id (``FOLD_SALT``) independent of the split and of the correction's share."""
    if not isinstance(fraction, int | float) or not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1); got {fraction!r}")
    h = splitmix64(_as_uint64(row_ids) ^ FOLD_SALT)
    return (h >> np.uint64(32)) < np.uint64(round(fraction * 2**32))
