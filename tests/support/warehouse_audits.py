"""Real audits and stored slices the warehouse tests share (tests/auditing/sinks/warehouse/): ``fdp_result``, a
seeded fdp audit of a leaking target; ``reference_check_record``, a reference check as its record holds it (a boost
calibration's figures, its label-blind control flagged or not); ``slice_fields``, slice rows as read back, reduced
to the fields ``slice_record`` gives."""

from __future__ import annotations

import numpy as np

from auditing.audit import run_audit
from auditing.config import split_settings


def reference_check_record(flagged: bool = False) -> dict:
    return {"calibration": "boost", "checked": True, "note": None,
            "calibration_figures": {"rows_fit": 6000, "rows_validation": 2000, "rounds": 40,
                                    "logloss_before": 0.47, "logloss_after": 0.452, "ece_before": 0.031,
                                    "ece_after": 0.006},
            "label_blind": {"epsilon_lower_bound": 0.21 if flagged else 0.0, "misfit_kappa": 0.35 if flagged else 0.0,
                            "flagged": flagged}}


def fdp_result(config_hash_seed: int = 5, **config):
    rng = np.random.default_rng(config_hash_seed)
    n = 3000
    labels = rng.integers(0, 2, n)
    p_target = np.clip(0.5 + 0.3 * (2 * labels - 1) + rng.normal(0, 0.05, n), 0.01, 0.99)
    game, bound = split_settings({"repetitions": 2, "method": "fdp", "reference_calibration": "none", **config})
    return run_audit(p_target, np.full(n, 0.5), labels, game=game, bound=bound)


def slice_fields(stored: list[dict]) -> list[dict]:
    from auditing.sinks.warehouse.rows import SLICE_FIELDS

    return [{name: piece[name] for name in SLICE_FIELDS} for piece in stored]
