"""The day's priors as a claim-free histogram: the reference's probabilities counted in fixed logit buckets.

Integer counts in fixed buckets merge exactly across batches and runners (the Beam job and the in-process
audit produce the same histogram), and carry no claim: `auditing.risk.figures.risk_block` turns a histogram and an
(eps, delta) into the risk figures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labeldp.errors import LabelDPInputError
from labeldp.records import record_keys

__all__ = ["PriorHistogram"]


@dataclass(frozen=True, eq=False)
class PriorHistogram:
    """Counts of the reference's probabilities in fixed logit buckets: claim-free, exact under merging.

    Buckets: width 1/32 in logit from -16 to 16 (1024 buckets, 0 = logit 0 is an edge), plus one bucket below
    (p < 1.1e-7) and one above. A bucket stands for its logit midpoint (under/overflow: their finite edge); the
    figures from the histogram agree with the same figures from the exact per-row priors to the tolerances
    tests/auditing/risk/test_figures.py checks (posterior ceilings within 0.2% relative, the column tail within 5e-3).
    ``kind``: "class1" (binary: the click probability) or "top-class" (k > 2: the largest class probability).
    """

    counts: np.ndarray  # int64, (BUCKETS,)
    kind: str = "class1"

    LOW = -16.0
    WIDTH = 1.0 / 32.0
    INTERIOR = 1024
    BUCKETS = INTERIOR + 2

    @classmethod
    def empty(cls, kind: str = "class1") -> PriorHistogram:
        return cls(np.zeros(cls.BUCKETS, dtype=np.int64), kind)

    @classmethod
    def bucket_of(cls, p) -> np.ndarray:
        """Bucket index of each probability from its logit (0 underflow, 1..1024 interior, 1025 overflow; NaN ->
        overflow). Elementwise, so the counts are the same however the rows are batched. Computed in float32
        for speed: a probability within ~1e-6 relative of a bucket edge may land on the other side of it than
        in exact arithmetic, the same way in every batch and runner."""
        x = np.asarray(p, dtype=np.float32).reshape(-1)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            position = np.float32(1.0) - x
            np.divide(x, position, out=position)
            np.log(position, out=position)
            position -= np.float32(cls.LOW)
            position *= np.float32(1.0 / cls.WIDTH)
            np.floor(position, out=position)
        np.nan_to_num(position, copy=False, nan=cls.INTERIOR, posinf=cls.INTERIOR, neginf=-1.0)
        np.clip(position, -1, cls.INTERIOR, out=position)
        return position.astype(np.int64) + 1

    @classmethod
    def from_probabilities(cls, p, kind: str = "class1") -> PriorHistogram:
        """The histogram of an array of probabilities (0 counts in the underflow bucket; NaN, negatives and
        values >= 1 in the overflow bucket, as `bucket_of` places them): `bucket_of`'s float32 operations with
        numpy's own log, the others compiled (two passes instead of ten)."""
        from auditing.game.prior_buckets import count_buckets, odds32  # here: a result reader needs no numba

        p = np.asarray(p).reshape(-1)
        log_odds = np.empty(p.size, np.float32)
        odds32(p, log_odds)
        with np.errstate(divide="ignore", invalid="ignore"):
            np.log(log_odds, out=log_odds)
        counts = np.zeros(cls.BUCKETS, np.int64)
        count_buckets(log_odds, np.float32(cls.LOW), np.float32(1.0 / cls.WIDTH), cls.INTERIOR, counts)
        return cls(counts, kind)

    @classmethod
    def from_reference(cls, reference: np.ndarray) -> PriorHistogram:
        """From an n x k matrix of reference class probabilities (binary: class 1; k > 2: the top class)."""
        reference = np.asarray(reference, dtype=np.float64)
        if reference.ndim == 1:
            return cls.from_probabilities(reference)
        if reference.shape[1] == 2:
            return cls.from_probabilities(reference[:, 1])
        return cls.from_probabilities(reference.max(axis=1), kind="top-class")

    def merge(self, other: PriorHistogram) -> PriorHistogram:
        """The sum of two histograms; raises ValueError for two non-empty histograms of different kinds."""
        if other.kind != self.kind and other.total and self.total:
            raise ValueError(f"cannot merge prior histograms of kinds {self.kind!r} and {other.kind!r}")
        kind = self.kind if self.total else other.kind
        return PriorHistogram(self.counts + other.counts, kind)

    def __eq__(self, other) -> bool:
        if not isinstance(other, PriorHistogram):
            return NotImplemented
        return self.kind == other.kind and np.array_equal(self.counts, other.counts)

    __hash__ = None

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @classmethod
    def midpoints(cls) -> np.ndarray:
        """The probability each bucket stands for (its logit midpoint; under/overflow: their finite edge)."""
        from scipy.special import expit  # here: importing scipy.special costs a result reader 0.8 s

        logits = cls.LOW + cls.WIDTH * (np.arange(cls.INTERIOR) + 0.5)
        return np.concatenate([[expit(cls.LOW)], expit(logits), [expit(-cls.LOW)]])

    # Its stored form is sparse (the non-empty buckets), not its fields: the codec's hooks write and read it.
    def _encoded(self) -> dict:
        nz = np.flatnonzero(self.counts)
        return {"scheme": "logit[-16,16]/32", "kind": self.kind, "buckets": [int(i) for i in nz],
                "counts": [int(v) for v in self.counts[nz]]}

    @classmethod
    def _decoded(cls, data, name: str) -> PriorHistogram:
        """The inverse of `_encoded`; a record with no bucket (no row audited) is an empty histogram of its kind;
        LabelDPInputError for an unknown scheme."""
        if isinstance(data, cls):
            return data
        data = record_keys(data, name, ("scheme", "kind", "buckets", "counts"), ())
        if not data.get("buckets"):
            return cls.empty(str(data.get("kind", "class1")))
        if data.get("scheme") != "logit[-16,16]/32":
            raise LabelDPInputError(f"{name}: unknown scheme {data.get('scheme')!r}")
        counts = np.zeros(cls.BUCKETS, dtype=np.int64)
        counts[np.asarray(data["buckets"], dtype=np.int64)] = np.asarray(data["counts"], dtype=np.int64)
        return cls(counts, str(data.get("kind", "class1")))

    def nonzero(self) -> tuple[np.ndarray, np.ndarray]:
        """(representative probability, count) of the non-empty buckets."""
        nz = np.flatnonzero(self.counts)
        return self.midpoints()[nz], self.counts[nz]

    def quantile(self, q: float) -> float:
        """The q-quantile of the rows, interpolated linearly in logit inside the bucket that holds it (the
        under/overflow buckets give their finite edge)."""
        cum = np.cumsum(self.counts)
        target = q * cum[-1]
        index = min(int(np.searchsorted(cum, target, side="left")), self.BUCKETS - 1)
        if index == 0 or index == self.BUCKETS - 1:
            return float(self.midpoints()[index])
        before = cum[index - 1]
        fraction = (target - before) / self.counts[index]
        from scipy.special import expit

        return float(expit(self.LOW + self.WIDTH * (index - 1 + fraction)))

