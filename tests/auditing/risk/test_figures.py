"""auditing.risk.figures: the risk block from the prior histogram, the assessment of an audit, and its headline
in the alert and the printed rows."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from auditing.audit import run_audit
from auditing.game.config import GameConfig
from auditing.game.prior_histogram import PriorHistogram
from auditing.result import AuditResult
from auditing.risk.attack_bounds import (
    mia_advantage_bound,
    posterior_ceiling,
)
from auditing.risk.column_bound import column_bound
from auditing.risk.figures import risk_assessment, risk_block
from labeldp.codec import decode, encode
from tests.support.ctr_priors import ctr_priors


def test_histogram_error_against_exact_per_row_priors_is_negligible():
    """1026 logit buckets of width 1/32: every figure from the histogram is within 0.2% (relative) of the same
    figure from the exact per-row priors, the column expectation within 1e-4 and its tail within 5e-3."""
    p = ctr_priors(200_000)
    hist = PriorHistogram.from_probabilities(p)
    assert hist.total == p.size
    block = risk_block(1.0, 0.0, hist)
    for q, name in ((0.5, "posterior_ceiling_median"), (0.9, "posterior_ceiling_p90")):
        exact = posterior_ceiling(1.0, float(np.quantile(p, q)))
        assert getattr(block, name) == pytest.approx(exact, rel=2e-3)
    high = PriorHistogram.midpoints()[PriorHistogram.bucket_of(p)] >= 0.1  # the rows of the >= 10% buckets
    assert block.high_prior_rows == int(high.sum())
    assert block.high_prior_rows == pytest.approx(int((p >= 0.1).sum()), rel=0.02)
    assert block.high_prior_ceiling == pytest.approx(float(np.mean(posterior_ceiling(1.0, p[high]))), rel=5e-3)
    q = np.maximum(p, 1 - p)
    exact_col = column_bound(1.0, q, block.column_t)
    assert block.column_expected == pytest.approx(exact_col.expected, rel=1e-4)
    assert block.column_baseline == pytest.approx(float(q.sum()), rel=1e-4)
    assert abs(block.column_tail_bound - exact_col.tail) < 1e-3
    for eps in (0.05, 0.1):  # where the tail is in between 0 and 1
        t = block.column_t
        values, counts = hist.nonzero()
        approx = column_bound(eps, np.maximum(values, 1 - values), t, counts=counts).tail
        assert abs(approx - column_bound(eps, q, t).tail) < 5e-3


@pytest.fixture(scope="module")
def audit():
    rng = np.random.default_rng(3)
    n = 4000
    p_ref = ctr_priors(n, seed=4)
    labels = (rng.random(n) < p_ref).astype(int)
    p_target = np.clip(np.where(labels == 1, 0.9, 0.05) + rng.normal(0, 0.02, n), 0.01, 0.99)
    return run_audit(p_target, p_ref, labels, game=GameConfig(repetitions=3))


def test_risk_assessment_for_claimed_and_demonstrated(audit):
    assert audit.prior_histogram.kind == "class1" and audit.prior_histogram.total == audit.m
    a = risk_assessment(audit, 0.5)
    claimed, shown = a.claimed, a.demonstrated
    assert claimed.epsilon == 0.5 and shown.epsilon == pytest.approx(audit.epsilon_lower_bound)
    assert claimed.rows == audit.m and claimed.prior_median < 0.1 < claimed.prior_p90 + 0.1
    assert claimed.mia_advantage_bound == pytest.approx(mia_advantage_bound(0.5))
    bigger = shown.epsilon > 0.5
    for name in ("posterior_ceiling_median", "posterior_ceiling_p90", "mia_advantage_bound", "column_expected"):
        assert (getattr(shown, name) > getattr(claimed, name)) == bigger
    assert "eps=0.5" in a.headline and "eps_lb=" in a.headline
    buckets = claimed.prior_buckets  # conditional rates per band of the reference's click probability
    assert sum(b.rows for b in buckets) == audit.m
    filled = [b for b in buckets if b.rows]
    assert all(b.low <= b.mean_prior <= b.high and b.mean_ceiling >= b.mean_prior for b in filled)
    assert [b.mean_ceiling for b in filled] == sorted(b.mean_ceiling for b in filled)
    assert sum(b.rows for b in buckets if b.low >= 0.1) == claimed.high_prior_rows
    cols = a.columns()
    assert cols["risk_mia_advantage_bound"] == claimed.mia_advantage_bound
    assert cols["risk_lb_posterior_ceiling_p90"] == shown.posterior_ceiling_p90 and cols["risk_headline"]


def test_old_results_optimistic_results_and_fdp(audit):
    old = {k: v for k, v in encode(audit).items() if k != "prior_histogram"}
    a = risk_assessment(decode(AuditResult, old), 1.0)
    assert a.claimed.rows == 0 and a.claimed.posterior_ceiling_median is None
    assert "posterior_ceiling_median" not in encode(a)["claimed"]  # what was not computed is not stored
    assert a.columns()["risk_posterior_ceiling_median"] is None
    assert risk_assessment(dataclasses.replace(audit, optimistic=True), 1.0).demonstrated is None
    fdp = risk_assessment(dataclasses.replace(audit, bound=dataclasses.replace(audit.bound, method="fdp", delta=1e-5)), 1.0)
    from auditing.bounds.gaussian_dp import mu_for_epsilon
    assert fdp.demonstrated.mu == pytest.approx(mu_for_epsilon(audit.epsilon_lower_bound, 1e-5))
    assert fdp.claimed.mu == pytest.approx(mu_for_epsilon(1.0, 1e-5))
    assert risk_assessment(audit, math.inf).claimed.posterior_ceiling_median == 1.0


def test_alert_text_and_printed_rows_carry_the_headline(audit):
    import datetime as dt

    from auditing.sinks.alerts.webhook import summary_text
    from auditing.sinks.listing import ListedVerdict
    from auditing.sinks.report.text import format_rows
    from auditing.sinks.warehouse.records import upgrade_row

    headline = risk_assessment(audit, 0.5).headline
    text = summary_text("VIOLATION", "m", "2024-01-02", {"epsilon_lower_bound": 1.2, "claimed_epsilon": 0.5,
                                                         "confidence": 0.95, "risk_headline": headline})
    assert text.endswith(headline) and "\n" not in text
    row = upgrade_row({"model_id": "m", "partition_date": dt.date(2024, 1, 2), "status": "VIOLATION",
                       "claimed_epsilon": 0.5, "epsilon_lower_bound": 1.2, "epsilon_mean": None,
                       "max_certifiable_epsilon": 5.0, "m": 10, "confidence": 0.95, "strategy": "bonferroni",
                       "method": "binomial", "delta": 0.0, "kappa": 0.0, "risk_headline": headline,
                       "model_fingerprint": "fp", "run_kind": "nightly", "audit_config_hash": "abc", "gamma": 0.05,
                       "selected_guesses": 5, "selected_correct": 5, "repetitions": 1, "seed": 0,
                       "result_json": "{}"})
    assert headline in format_rows([ListedVerdict(row, report="r.html")])


def test_audit_text_shows_what_the_bound_demonstrates(audit):
    from auditing.sinks.report.text import format_audit_result
    from auditing.verdict.judge import demonstrated_risk

    text = format_audit_result(audit, demonstrated_risk(audit))
    block = risk_block(audit.epsilon_lower_bound, audit.bound.delta, audit.prior_histogram)
    assert "what eps_lb demonstrates" in text and f"{block.posterior_ceiling_p90:.1%}" in text
    old = {k: v for k, v in encode(audit).items() if k != "prior_histogram"}
    older = decode(AuditResult, old)
    assert "what eps_lb demonstrates" not in format_audit_result(older, demonstrated_risk(older))
