"""A seeded audit with declared slices, for the sinks' tests (warehouse, report, results): a real `run_audit`
result whose leak is confined to the rows the reference puts highest (the top decile of its prior), with check rows
(rows the model never saw, as confident on that decile but not told their labels), bounded per slice by
`auditing.slices.audit_slices` over the shown label and the prior's deciles.

Against a claim of 1 (a trusted VIOLATION overall) the top decile is a trusted slice VIOLATION, the shown label 0 an
untrusted one (its check rows do not vouch for it at the slices' confidence), every other slice a PASS.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from auditing.audit import CheckRows, run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.result import AuditResult
from auditing.slices import audit_slices

AUDITED, CHECK = 6_000, 6_000
SLICINGS = ("shown-label", "prior-deciles")


def sliced(seed: int = 3, leak: float = 0.6) -> AuditResult:
    """The audit with its slices (``AuditResult.slices``): 12 slices, 2 shown labels and 10 deciles."""
    rng = np.random.default_rng(seed)
    n = AUDITED + CHECK
    reference = rng.uniform(0.1, 0.9, n)
    labels = (rng.random(n) < reference).astype(np.int64)
    target = np.clip(reference + rng.normal(0.0, 0.05, n), 0.01, 0.99)
    top = reference > 0.82
    direction = np.where(np.arange(n) < AUDITED, 2 * labels - 1, rng.choice([-1, 1], n))  # check rows: unseen
    target[top] = np.clip(target[top] + leak * direction[top], 0.01, 0.99)
    ids = np.arange(n)
    a, c = slice(0, AUDITED), slice(AUDITED, n)
    game, bound = GameConfig(repetitions=2, reference_calibration="none"), BoundConfig()
    check = CheckRows(target[c], reference[c], labels[c], ids[c])
    result = run_audit(target[a], reference[a], labels[a], ids[a], game=game, bound=bound, check=check)
    return dataclasses.replace(result, slices=audit_slices(target[a], reference[a], labels[a], ids[a], game, bound,
                                                           SLICINGS, check=check))
