"""The non-private mechanism ``none``: the labels are used as they are (eps = inf).

It is what every ``identity_at_infinity`` mechanism reduces to at eps = inf, and how the reference M' (the
previous day's checkpoint) is trained.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms._checks import check_epsilon
from pipelines.training.mechanisms.base import NO_GUARANTEE, LabelContext, Mechanism, Release


@dataclass(frozen=True)
class NoPrivacy(Mechanism):
    """Plain training on the true labels; accepts only eps = inf."""

    name = "none"
    summary = "no privacy (requires --epsilon inf)"
    claim = ""
    identity_at_infinity = True

    def check_epsilon(self, epsilon: float) -> float:
        epsilon = check_epsilon(epsilon)
        if not math.isinf(epsilon):
            raise LabelDPInputError(f"mechanism 'none' is non-private: epsilon must be inf; got {epsilon!r}")
        return epsilon

    def release(self, context: LabelContext) -> Release:
        return self.privatize(context)

    def privatize(self, context: LabelContext) -> Release:
        return Release(targets=context.labels.copy(), identity=True)

    def guarantee(self, epsilon: float, delta: float) -> str:
        return NO_GUARANTEE
