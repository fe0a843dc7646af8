"""Do a split's check rows stand for its audited rows? A two-sample test, fixed in advance, of the rows' label-free
inputs (docs/soundness.md section 8.7).

The capacity check compares the model's accuracy on its training rows with its accuracy on the check rows, and
its assumption T_u needs the two to be exchangeable: rows drawn from the same law of features. The built-in split
is a keyed random draw, exchangeable by construction. A split a team supplies (a training-rows keys file,
``audit-scores --check-column``) is not: a team that holds out the afternoon while the reference misfits the
morning would have its check rows vouch for the morning's misfit (23% trusted false VIOLATIONs where 5% is
promised). So before such a split can vouch for anything, its audited and check rows are compared on what does
not depend on a label: the features, the reference's probability and the rows' position in the day (never the
model's own score: a memorising model, private or not, scores its training rows differently by design).

The test, fixed before any data is seen: per numeric input, the two-sample Kolmogorov-Smirnov test on the values
present and, where values are missing, a chi-square test of the missing share; per categorical input, a
chi-square test of homogeneity over its `TOP_CATEGORIES` most frequent values (pooled), the rest and the missing
value. The split is refused when any test's p-value is at most `SPLIT_TEST_LEVEL` / J, J the number of tests
(Bonferroni): an exchangeable split is refused with probability at most `SPLIT_TEST_LEVEL`. When it is refused, no
VIOLATION of the night is trusted, and the reason names the input that differs.

Pure numpy/scipy.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

from labeldp.errors import LabelDPInputError
from labeldp.stored import FLAG, TEXT, stored

SPLIT_TEST_LEVEL = 0.01
TOP_CATEGORIES = 20
# A side needs at least this many values of an input for the input to be tested.
MIN_VALUES = 20
KEYED_DRAW = "keyed random draw"
TESTED = "tested"
SPLIT_RULES = (KEYED_DRAW, TESTED)
NUMERIC, CATEGORICAL, MISSING = "numeric", "categorical", "missing share"


@dataclass(frozen=True)
class InputTest:
    """One input's test: its name, the kind of test, the statistic and its p-value."""

    column: str
    kind: str
    statistic: float
    p_value: float


@dataclass(frozen=True)
class SplitTest:
    """The split's exchangeability: ``rule`` is `KEYED_DRAW` (the built-in split, random by construction: not
    tested) or `TESTED`; for a tested split the sample sizes, every input's test, the level and whether the split
    was refused."""

    rule: str = stored(
        TEXT, "the check rows' split: keyed random draw (the built-in split) or tested (a split a team supplied, "
        "auditing.verdict.split_test); NULL: no split recorded", column="split_rule",
        choices=lambda: SPLIT_RULES)
    level: float = SPLIT_TEST_LEVEL
    audited_rows: int = 0
    check_rows: int = 0
    tests: tuple[InputTest, ...] = ()
    # stored for a tested split only (the warehouse's row leaves it NULL for the keyed draw)
    refused: bool = stored(
        FLAG, "1 when the split test refused the team's split (no VIOLATION trusted), 0 when it passed; NULL: not "
        "tested", column="split_refused", default=False)

    @property
    def worst(self) -> InputTest | None:
        return min(self.tests, key=lambda t: t.p_value) if self.tests else None

    def reason(self) -> str | None:
        """Why the split cannot vouch, in one sentence (None when it can)."""
        if not self.refused:
            return None
        worst = self.worst
        return (f"the check rows do not stand for the audited rows: {worst.column} differs between them ({worst.kind} "
                f"test, p = {worst.p_value:.2g}, at most {self.level:g} / {len(self.tests)} tests); a split that is not "
                "random cannot vouch for a VIOLATION: hold out a random share of the day")


KEYED_SPLIT = SplitTest(KEYED_DRAW)


def _categorical_test(column: str, audited: np.ndarray, check: np.ndarray) -> InputTest | None:
    from scipy import stats  # imported when a split is tested

    pooled = np.concatenate([audited, check]).astype(object)
    missing = np.array([v is None or (isinstance(v, float) and math.isnan(v)) for v in pooled])
    text = np.where(missing, "", pooled.astype(str))
    values, codes, counts = np.unique(text, return_inverse=True, return_counts=True)
    top = np.argsort(-counts, kind="stable")[:TOP_CATEGORIES]
    group = np.full(values.size, TOP_CATEGORIES, dtype=np.int64)  # the rest
    group[top] = np.arange(top.size)
    cell = np.where(missing, TOP_CATEGORIES + 1, group[codes])
    side = np.repeat([0, 1], [audited.size, check.size])
    table = np.zeros((2, TOP_CATEGORIES + 2))
    np.add.at(table, (side, cell), 1.0)
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return None
    statistic, p_value, _, _ = stats.chi2_contingency(table, correction=False)
    return InputTest(column, CATEGORICAL, float(statistic), float(p_value))


def _numeric_tests(column: str, audited: np.ndarray, check: np.ndarray) -> list[InputTest]:
    from scipy import stats  # imported when a split is tested

    a, c = np.asarray(audited, dtype=np.float64), np.asarray(check, dtype=np.float64)
    out = []
    a_missing, c_missing = np.isnan(a), np.isnan(c)
    if a_missing.any() or c_missing.any():
        table = np.array([[a_missing.sum(), (~a_missing).sum()], [c_missing.sum(), (~c_missing).sum()]], float)
        if (table.sum(axis=0) > 0).all():
            statistic, p_value, _, _ = stats.chi2_contingency(table, correction=False)
            out.append(InputTest(f"{column} (missing)", MISSING, float(statistic), float(p_value)))
    a, c = a[~a_missing], c[~c_missing]
    if a.size >= MIN_VALUES and c.size >= MIN_VALUES:
        result = stats.ks_2samp(a, c, method="asymp")
        out.append(InputTest(column, NUMERIC, float(result.statistic), float(result.pvalue)))
    return out


def split_test(audited: Mapping[str, np.ndarray], check: Mapping[str, np.ndarray], categorical: Collection[str] = (),
               level: float = SPLIT_TEST_LEVEL) -> SplitTest:
    """Tests that the audited rows' and the check rows' label-free inputs (module docstring) have one law.

    Args:
        audited, check: the same input names on both sides, each a 1-D array (numeric: NaN for a missing value;
            categorical: any values, None or NaN for a missing one).
        categorical: the names of the categorical inputs; every other input is numeric.
        level: the chance of refusing an exchangeable split.
    """
    if set(audited) != set(check):
        raise LabelDPInputError(f"split test: the audited rows have inputs {sorted(audited)} and the check rows "
                                f"{sorted(check)}; they must be the same")
    if not 0.0 < level < 1.0:
        raise LabelDPInputError(f"split test level must be in (0, 1); got {level!r}")
    tests: list[InputTest] = []
    sizes = {len(np.asarray(v)) for v in audited.values()}, {len(np.asarray(v)) for v in check.values()}
    if len(sizes[0]) > 1 or len(sizes[1]) > 1:
        raise LabelDPInputError("split test: every input of a side must have one value per row")
    for name in sorted(audited):
        a, c = np.asarray(audited[name]), np.asarray(check[name])
        if name in categorical:
            if a.size >= MIN_VALUES and c.size >= MIN_VALUES:
                test = _categorical_test(name, a, c)
                tests += [test] if test is not None else []
        else:
            tests += _numeric_tests(name, a, c)
    refused = bool(tests) and min(t.p_value for t in tests) <= level / len(tests)
    return SplitTest(TESTED, level, next(iter(sizes[0]), 0), next(iter(sizes[1]), 0), tuple(tests), refused)


__all__ = ["CATEGORICAL", "KEYED_DRAW", "KEYED_SPLIT", "MISSING", "NUMERIC", "SPLIT_TEST_LEVEL", "TESTED",
           "TOP_CATEGORIES", "InputTest", "SplitTest", "split_test"]
