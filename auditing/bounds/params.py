"""Validation of the scalar arguments shared by every bound and audit.

Each check names the argument, its allowed range and the value received, so that a user reading the
message knows what to change.
"""

from __future__ import annotations

import math

from labeldp.errors import LabelDPInputError
from labeldp.settings import Setting, check_value

# The bound's scalar settings, declared once: `auditing.config.BoundConfig`'s fields, the plan schema, the command
# line and the checks below all read these.
CONFIDENCE = Setting("confidence of the epsilon lower bound (1 - gamma)", minimum=0, maximum=1, open_minimum=True,
                     open_maximum=True, finite=True)
DELTA = Setting("the delta of the (eps, delta) claim tested; unset (null in a plan): the method's default, 0 "
                "(label-DP claims are pure eps)", minimum=0, maximum=1, open_maximum=True, finite=True)
KAPPA = Setting("robustness to the reference: the bound holds if no audited row's reference probability of its label "
                "is off from the truth by more than a factor e^kappa, |log D'(y|x) - log D(y|x)| <= kappa (0: the "
                "reference is exact; 0.7 covers click odds off by a factor 2; docs/soundness.md)", minimum=0,
                finite=True, hint="a bound on the reference's log-likelihood ratio, e.g. 0.7 for 'no row's click odds "
                                  "are off by more than a factor 2'")


def check_confidence(confidence: float, name: str = "confidence") -> float:
    """confidence as a float in the open interval (0, 1) (`CONFIDENCE`); LabelDPInputError naming ``name``."""
    return check_value(name, confidence, CONFIDENCE, float)


def check_delta(delta: float, name: str = "delta") -> float:
    """delta as a float in [0, 1) (`DELTA`); LabelDPInputError naming ``name``."""
    return check_value(name, delta, DELTA, float)


def check_kappa(kappa: float, name: str = "kappa") -> float:
    """kappa bounds |log D'(y|x) - log D(y|x)| over the audited rows (docs/soundness.md): a finite number >= 0
    (`KAPPA`); LabelDPInputError naming ``name``."""
    return check_value(name, kappa, KAPPA, float)


def legacy_tau_warning(value, where: str) -> str:
    """The old total-variation parameter `tau`: 0 is accepted and ignored (the returned warning says so), any
    other value is refused, because a TV bound gives no likelihood ratio on rare labels (docs/soundness.md)."""
    try:
        tau = float(value)
    except (TypeError, ValueError):
        tau = math.nan
    if tau == 0.0:
        return (f"{where}: tau is no longer used and is ignored (it was a total-variation bound; the robustness "
                "parameter is now kappa, a bound on the reference's log-likelihood ratio, default 0)")
    raise LabelDPInputError(
        f"{where}: tau = {value!r} is refused: tau was a total-variation bound on the reference, and a TV bound "
        "allows any likelihood ratio on a rare label (a 1% reference for a true 2% click rate has TV 0.01 but "
        "ratio 2), so it cannot protect a verdict. Use kappa instead: a bound on |log D'(y|x) - log D(y|x)|, "
        "e.g. kappa = 0.7 when no row's click odds are off by more than a factor 2 (docs/soundness.md)")


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
