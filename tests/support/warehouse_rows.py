"""A valid warehouse row and its curve, for the warehouse, records and spool tests."""

import datetime as dt

DAY = dt.date(2024, 1, 2)
FINGERPRINT = "sha256:" + "ab12" * 16


def make_row(model_id="m-1", date=DAY, config_hash="abc123", *, marker=0.5, points=3, **overrides):
    """A valid (row, curve) whose every number carries `marker`, so a mixture of two writes is detectable."""
    row = {
        "model_id": model_id, "partition_date": date, "audit_config_hash": config_hash, "run_kind": "nightly",
        "model_fingerprint": FINGERPRINT,
        "claimed_epsilon": 1.0, "delta": 0.0, "confidence": 0.95, "tau": 0.0, "m": 1000,
        "selected_guesses": 100, "selected_correct": 80, "epsilon_lower_bound": marker,
        "epsilon_mean": marker + 0.1, "epsilon_std": 0.01, "epsilon_median": marker + 0.1,
        "strategy": "bonferroni", "method": "binomial", "status": "PASS", "max_certifiable_epsilon": 5.0,
        "repetitions": 10, "seed": 7, "flow_run_id": f"run-{marker}",
        "started_at": dt.datetime(2024, 1, 3, 1, 0, tzinfo=dt.UTC),
        "finished_at": dt.datetime(2024, 1, 3, 1, 5, tzinfo=dt.UTC),
        "durations": {"score": 12.5, "audit": 0.25}, "result_json": {"marker": marker},
    }
    row.update(overrides)
    curve = [{"guesses": 10 * (i + 1), "correct": 5 * (i + 1), "epsilon_lower_bound": marker,
              "point_confidence": 0.999} for i in range(points)]
    return row, curve
