"""The release guardrail's verdict (docs/concepts.md, "What the numbers mean": Status; the valid bound it rests on and
its assumptions: docs/soundness.md, section 1 "The game and the hypothesis").

  - VIOLATION: the VALID lower bound exceeds the claimed epsilon: the claim is disproved at the audit's
    confidence (under the audit's assumptions: the model is label-DP and the reference is within kappa of the day).
  - INCONCLUSIVE: even a perfect attacker (every guess right) could not have produced a valid bound above
    the claimed epsilon with this many examples and this selection strategy, so the audit had no power to
    disprove the claim.
  - PASS: the audit could have shown a violation and did not. It means "no evidence of a violation", not
    "private". `auditing.verdict.judge.judge` makes a PASS whose robustness figures call it weak a WEAK_PASS
    (`auditing.verdict.types.STATUSES`).
An optimistic figure (the paper's max over the sweep) is never accepted here.
"""

from __future__ import annotations

import math

from auditing.verdict.types import INCONCLUSIVE, PASS, VIOLATION
from labeldp.errors import LabelDPInputError
from labeldp.names import check_claim

__all__ = ["guardrail_status"]


def guardrail_status(
    epsilon_lower_bound: float, claimed_epsilon: float, max_certifiable_epsilon: float, *, optimistic: bool = False
) -> str:
    """VIOLATION / INCONCLUSIVE / PASS for a valid bound against a claimed epsilon."""
    if optimistic:
        raise LabelDPInputError("the guardrail needs a valid lower bound; got an optimistic (strategy max) figure")
    claimed_epsilon = check_claim(claimed_epsilon)
    if epsilon_lower_bound > claimed_epsilon:
        return VIOLATION
    if math.isinf(claimed_epsilon) or max_certifiable_epsilon <= claimed_epsilon:
        return INCONCLUSIVE
    return PASS
