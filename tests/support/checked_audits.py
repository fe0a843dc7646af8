"""Seeded audits with a capacity check, for the sinks' tests (report, alerts, results): real `run_audit` results
on audited rows and check rows (rows the model never saw), so every trust state comes from the real rules.

- `leaky`: the target memorises its training labels (a real leak); the reference fits the day. The check rows
  show no misfit, so the VIOLATION is trusted.
- `misfit`: the target knows the day's click rate on a fifth of the rows that the reference misses, and never
  saw a label. Its VIOLATION is the reference's misfit: the check does not vouch for it, and a PASS audited
  against it has its floors measured under a reference that misfits.
- `clean`: neither: a PASS (weak at these sizes) with its floors measured.

`groups()` is a grouping as a dataset spec would record it (rows left out, the label-agreement diagnostic).
"""

from __future__ import annotations

import numpy as np

from auditing.audit import CheckRows, run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.row_groups import RowGroups, describe_rule
from auditing.result import AuditResult

AUDITED, CHECK = 20_000, 4_000


def audit(leak: float, misfit: float, *, seed: int = 0, row_groups: RowGroups | None = None,
          repetitions: int = 2) -> AuditResult:
    """One audit: the target is the day's truth plus noise (and ``leak`` toward each training label); the
    reference is 0.3 everywhere, the truth 0.3 + ``misfit`` on the rows with x > 0.8."""
    rng = np.random.default_rng(seed)
    n = AUDITED + CHECK
    x = rng.random(n)
    truth = np.clip(0.3 + misfit * (x > 0.8), 0.01, 0.99)
    labels = (rng.random(n) < truth).astype(np.int64)
    target = np.clip(truth + rng.normal(0.0, 0.2, n), 0.01, 0.99)
    target[:AUDITED] = np.clip(target[:AUDITED] + leak * (2 * labels[:AUDITED] - 1), 0.01, 0.99)
    reference = np.full(n, 0.3)
    ids = np.arange(n)
    a, c = slice(0, AUDITED), slice(AUDITED, n)
    game, bound = GameConfig(repetitions=repetitions, reference_calibration="none"), BoundConfig()
    return run_audit(target[a], reference[a], labels[a], ids[a], game, bound,
                     check=CheckRows(target[c], reference[c], labels[c], ids[c]), row_groups=row_groups)


def leaky(**kwargs) -> AuditResult:
    return audit(0.3, 0.0, **kwargs)


def misfit(**kwargs) -> AuditResult:
    return audit(0.0, 0.5, **kwargs)


def clean(**kwargs) -> AuditResult:
    return audit(0.0, 0.0, **kwargs)


def groups(pairs: int = 152, observed: float | None = 0.9812, expected: float | None = 0.9779) -> RowGroups:
    """Feature-identical rows grouped, with a user column: 311 audited rows left out (290 sharing a group with
    another row of the day, 21 with the reference's training rows), 12 check rows."""
    return RowGroups(rule=describe_rule("group", ("user_id",)), columns=("user_id",), rows_excluded=311,
                     excluded_with_day=290, excluded_with_inputs=21, check_rows_excluded=12,
                     agreement_pairs=pairs if observed is not None else 0, agreement_observed=observed,
                     agreement_expected=expected)
