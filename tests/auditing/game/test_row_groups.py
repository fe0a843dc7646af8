"""Rows whose labels move together (auditing/game/row_groups.py, pipelines/scoring/row_grouping.py, docs/soundness.md
section 9), against constructions built here.

The dependent-rows world: groups of 2 to 5 rows share their features and their label (a duplicated event, a
repeat impression), plus single rows. Each row's label passes through its own binary randomized response at
eps = 1, so the model is exactly 1-label-DP per row; the target is the Bayes posterior of the row's label given
every released label of its group, the reference is the true click probability (kappa = 0 holds). Without
grouping, the audit reads the twins' released labels as leakage of the row's own; with the group column, the
grouped rows are left out and the bound exceeds the truth at most at the stated rate.

A night on a day with duplicated events: tests/flows/test_nightly.py.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from auditing.game.row_groups import label_agreement, repeated, singleton_mask
from flows.cli import main as cli_main

EPSILON = 1.0
CONFIDENCE = 0.95


def dependent_world(seed: int, *, groups: int = 15_000, singles: int = 40_000, sizes=(2,)) -> pa.Table:
    """The module docstring's world as an audit-scores table (label, p_target, p_reference, row_id, group)."""
    rng = np.random.default_rng(seed)
    size = rng.choice(np.asarray(sizes), groups)
    members = np.concatenate([size, np.ones(singles, dtype=np.int64)])
    group = np.repeat(np.arange(members.size), members)
    p = 1 / (1 + np.exp(-rng.normal(-2.5, 0.8, members.size)))  # a group's click probability (its features)
    y = (rng.random(members.size) < p).astype(np.int64)[group]  # one label per group
    keep = math.exp(EPSILON) / (1 + math.exp(EPSILON))
    released = np.where(rng.random(group.size) < keep, y, 1 - y)
    # Bayes posterior of the group's label given all its released labels: prior p, likelihood ratio per release.
    ones = np.bincount(group, weights=released)
    log_odds = np.log(p) - np.log1p(-p) + (2 * ones - members) * math.log(keep / (1 - keep))
    posterior = 1 / (1 + np.exp(-log_odds))
    return pa.table({"label": y, "p_target": posterior[group], "p_reference": p[group],
                     "row_id": np.arange(group.size, dtype=np.int64) * 3 + seed, "group": group})


def audit_scores(path, *extra) -> dict:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["audit-scores", str(path), "--repetitions", "1", "--claimed-epsilon", str(EPSILON),
                         "--json", "--quiet", *extra]) == 0
    return json.loads(out.getvalue())


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [(2,), (2, 3, 4, 5)])
def test_grouped_rows_left_out_keep_the_bound_valid(tmp_path, sizes):
    trials = 40
    above_grouped = above_raw = 0
    for seed in range(trials):
        path = tmp_path / f"world-{seed}.parquet"
        table = dependent_world(seed, sizes=sizes)
        pq.write_table(table, path)
        raw = audit_scores(path, "--seed", str(seed))
        grouped = audit_scores(path, "--seed", str(seed), "--group-column", "group")
        above_raw += raw["epsilon_lower_bound"] > EPSILON
        above_grouped += grouped["epsilon_lower_bound"] > EPSILON
        groups = grouped["row_groups"]
        assert groups["rows_excluded"] == table.num_rows - 40_000
        assert grouped["m"] == 40_000  # the single rows
        assert groups["agreement_observed"] == 1.0 and groups["agreement_expected"] < 0.9
    assert above_raw >= 0.8 * trials, above_raw  # the construction fools the ungrouped audit
    assert stats.binomtest(above_grouped, trials, 1 - CONFIDENCE, alternative="greater").pvalue > 1e-3, above_grouped


def test_everything_grouped_is_inconclusive(tmp_path):
    path = tmp_path / "pairs.parquet"
    pq.write_table(dependent_world(0, groups=2_000, singles=0), path)
    out = audit_scores(path, "--group-column", "group")
    assert out["status"] == "INCONCLUSIVE" and out["m"] == 0
    assert "shares its group" in out["inconclusive_reason"]
    assert out["row_groups"]["rows_excluded"] == 4_000


def test_singleton_mask_and_other_days():
    a = np.array([1, 2, 2, 3, 4], dtype=np.uint64)
    b = np.array([9, 8, 7, 6, 6], dtype=np.uint64)
    np.testing.assert_array_equal(singleton_mask([a]), [True, False, False, True, True])
    np.testing.assert_array_equal(singleton_mask([a, b]), [True, False, False, False, False])
    np.testing.assert_array_equal(singleton_mask([a], [np.array([4, 10], dtype=np.uint64)]),
                                  [True, False, False, True, False])
    np.testing.assert_array_equal(repeated(np.array([5, 1, 5, 5, 2, 1], dtype=np.uint64)), [1, 5])


def test_label_agreement_equals_the_sum_over_pairs():
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 30, 200).astype(np.uint64)
    labels = rng.integers(0, 3, 200)
    p = rng.dirichlet(np.ones(3), 200)
    pairs = agree = expected = 0
    for i, j in itertools.combinations(range(200), 2):
        if keys[i] == keys[j]:
            pairs += 1
            agree += labels[i] == labels[j]
            expected += float(p[i] @ p[j])
    got = label_agreement([keys], labels, p)
    assert got.pairs == pairs
    assert got.observed == pytest.approx(agree / pairs) and got.expected == pytest.approx(expected / pairs)
    assert label_agreement([np.arange(5, dtype=np.uint64)], np.zeros(5), np.full(5, 0.1)).observed is None
