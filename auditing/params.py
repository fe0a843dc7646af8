"""Validation of the scalar arguments shared by every bound and audit.

Each check names the argument, its allowed range and the value received, so that a user reading the
message knows what to change.
"""

from __future__ import annotations

import math

from auditing.errors import LabelDPInputError


def check_confidence(confidence: float, name: str = "confidence") -> float:
    confidence = float(confidence)
    if not (0.0 < confidence < 1.0) or math.isnan(confidence):
        raise LabelDPInputError(f"{name} must be in the open interval (0, 1); got {confidence!r}")
    return confidence


def check_delta(delta: float, name: str = "delta") -> float:
    delta = float(delta)
    if not (0.0 <= delta < 1.0) or math.isnan(delta):
        raise LabelDPInputError(f"{name} must be in [0, 1); got {delta!r}")
    return delta


def check_tau(tau: float, name: str = "tau") -> float:
    """tau bounds TV(D|x, D'|x) (paper Thm. 6/10); values >= 1 are accepted and make every bound 0."""
    tau = float(tau)
    if not (tau >= 0.0) or math.isnan(tau):
        raise LabelDPInputError(f"{name} must be >= 0 (a total-variation bound, at most 1 is meaningful); got {tau!r}")
    return tau


def check_counts(correct: int, guesses: int, m: int) -> tuple[int, int, int]:
    """Checks 0 <= correct <= guesses <= m and m >= 1 for the counts (c, c', m) of the game (paper Alg. 2)."""
    values = {}
    for name, value in (("correct", correct), ("guesses", guesses), ("m", m)):
        if isinstance(value, bool) or int(value) != value:
            raise LabelDPInputError(f"{name} must be a whole number; got {value!r}")
        values[name] = int(value)
    c, g, n = values["correct"], values["guesses"], values["m"]
    if n < 1:
        raise LabelDPInputError(f"m (number of examples in the game) must be >= 1; got {n}")
    if g < 0 or g > n:
        raise LabelDPInputError(f"guesses (c') must satisfy 0 <= c' <= m = {n}; got {g}")
    if c < 0 or c > g:
        raise LabelDPInputError(f"correct (c) must satisfy 0 <= c <= c' = {g}; got {c}")
    return c, g, n
