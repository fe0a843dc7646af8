"""Rows whose labels move together: which rows the game may use, and how much the groups' labels agree.
Pure numpy; the argument is docs/soundness.md section 9.

The game assumes labels independent across rows given the features (section 1). Duplicate events, repeat
impressions and one user's rows break it: a model that is eps-label-DP per row can still reveal a row's label
through its twin's, and the audit would read that as a violation of the per-row claim. So rows are grouped
(by default, rows with the same feature vector form a group; a dataset may declare more group columns, or
declare feature-identical rows independent), and a row enters the game, or the capacity check, only when it is
the only member of its group among every row whose label any input of the audit used. Which rows are excluded
depends on group keys only, never on labels.

The label-agreement diagnostic compares, over the pairs of rows inside groups, how often their labels agree
with how often independent labels at the reference's probabilities would: sum over y of D'(y | x_i) D'(y | x_j)
(for feature-identical rows, the sum over y of D'(y | x)^2). An excess says how much a per-row claim leaves
unprotected on that log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from labeldp.errors import LabelDPInputError

# How rows are grouped (recorded on every result): feature-identical rows form a group unless the dataset
# declares them independent; declared group columns add their own groups.
FEATURE_ROWS_GROUPED = "group"
FEATURE_ROWS_INDEPENDENT = "independent"
FEATURE_ROWS = (FEATURE_ROWS_GROUPED, FEATURE_ROWS_INDEPENDENT)
NO_ROWS_LEFT = "every audited row shares its group with another row whose label the audit's inputs used"


def repeated(keys: np.ndarray) -> np.ndarray:
    """The sorted group keys that occur more than once in ``keys`` (uint64)."""
    keys = np.sort(np.asarray(keys, dtype=np.uint64))
    if keys.size < 2:
        return keys[:0]
    return np.unique(keys[1:][keys[1:] == keys[:-1]])


def in_sorted(values: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """values in sorted_keys, elementwise (both uint64)."""
    values = np.asarray(values, dtype=np.uint64)
    if sorted_keys.size == 0:
        return np.zeros(values.shape, dtype=bool)
    at = np.minimum(np.searchsorted(sorted_keys, values), sorted_keys.size - 1)
    return sorted_keys[at] == values


def singleton_mask(keys: Sequence[np.ndarray], others: Sequence[np.ndarray] = ()) -> np.ndarray:
    """True for the rows that are alone in every one of their groups.

    Args:
        keys: one uint64 key array per grouping relation (e.g. the feature vector's hash, a user column's hash),
            each over the same rows.
        others: per relation, the keys of further rows whose labels the audit's inputs used (e.g. the reference's
            training rows of the day before); a row sharing a key with any of them is not alone either.
    """
    if not keys:
        raise LabelDPInputError("singleton_mask needs at least one grouping relation")
    n = np.asarray(keys[0]).size
    alone = np.ones(n, dtype=bool)
    for index, relation in enumerate(keys):
        relation = np.asarray(relation, dtype=np.uint64)
        if relation.shape != (n,):
            raise LabelDPInputError(f"grouping relation {index}: {relation.shape} keys for {n} rows")
        alone &= ~in_sorted(relation, repeated(relation))
        if index < len(others) and np.asarray(others[index]).size:
            alone &= ~in_sorted(relation, np.unique(np.asarray(others[index], dtype=np.uint64)))
    return alone


@dataclass(frozen=True)
class LabelAgreement:
    """Label agreement inside groups: ``pairs`` pairs of rows sharing a group, the share whose labels agree
    (``observed``) and the share independent labels at the reference's probabilities would give
    (``expected``); None with no pair."""

    pairs: int
    observed: float | None
    expected: float | None

    @property
    def excess(self) -> float | None:
        return None if self.observed is None else self.observed - self.expected


def label_agreement(keys: Sequence[np.ndarray], labels: np.ndarray, p_reference: np.ndarray) -> LabelAgreement:
    """`LabelAgreement` over every pair of rows sharing a key, summed over the relations (module docstring).

    Per group of n rows with class counts n_y and reference probabilities p_iy: agreeing pairs
    sum_y n_y (n_y - 1) / 2, expected agreeing pairs sum_y ((sum_i p_iy)^2 - sum_i p_iy^2) / 2, of n (n - 1) / 2
    pairs; no pair is enumerated, so large groups cost O(rows).
    """
    labels = np.asarray(labels, dtype=np.int64)
    p = np.asarray(p_reference, dtype=np.float64)
    if p.ndim == 1:
        p = np.column_stack([1.0 - p, p])
    n, k = p.shape
    if labels.shape != (n,):
        raise LabelDPInputError(f"labels: {labels.shape} for {n} rows")
    pairs = agree = expected = 0.0
    for relation in keys:
        relation = np.asarray(relation, dtype=np.uint64)
        _, group = np.unique(relation, return_inverse=True)
        sizes = np.bincount(group)
        pairs += float((sizes * (sizes - 1) / 2).sum())
        counts = np.zeros((sizes.size, k))
        np.add.at(counts, (group, labels), 1.0)
        agree += float((counts * (counts - 1) / 2).sum())
        sums = np.zeros((sizes.size, k))
        squares = np.zeros((sizes.size, k))
        np.add.at(sums, group, p)
        np.add.at(squares, group, p * p)
        expected += float(((sums * sums - squares) / 2).sum())
    if pairs == 0:
        return LabelAgreement(0, None, None)
    return LabelAgreement(int(pairs), agree / pairs, expected / pairs)


@dataclass(frozen=True)
class RowGroups:
    """The grouping of one audit, as recorded on its result.

    rule: how rows were grouped (feature rows grouped or independent, declared columns); rows_excluded: audited
    rows left out for sharing a group, by why (``with_day``: another row of the audited day; ``with_inputs``:
    a row of another day whose label an input used, e.g. the reference's training rows); check_rows_excluded:
    the same for the capacity check's rows; agreement: the diagnostic (module docstring) over the day's groups.
    """

    rule: str
    columns: tuple[str, ...]
    rows_excluded: int
    excluded_with_day: int
    excluded_with_inputs: int
    check_rows_excluded: int = 0
    agreement_pairs: int = 0
    agreement_observed: float | None = None
    agreement_expected: float | None = None


def describe_rule(feature_rows: str, columns: Sequence[str]) -> str:
    """The rule's one-line description (stored on the result)."""
    if feature_rows not in FEATURE_ROWS:
        raise LabelDPInputError(f"feature_rows must be one of {list(FEATURE_ROWS)}; got {feature_rows!r}")
    parts = (["rows with the same feature vector"] if feature_rows == FEATURE_ROWS_GROUPED else []) + \
            [f"rows with the same {column}" for column in columns]
    if not parts:
        return "none: every row independent (declared)"
    return " or ".join(parts) + " form a group"


__all__ = ["FEATURE_ROWS", "FEATURE_ROWS_GROUPED", "FEATURE_ROWS_INDEPENDENT", "NO_ROWS_LEFT", "LabelAgreement",
           "RowGroups", "describe_rule", "in_sorted", "label_agreement", "repeated", "singleton_mask"]
