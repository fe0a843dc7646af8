"""Attack scores for the label-inference game (paper Sec. 6.2).

A score is computed from the target model's and the reference model's probability of the *released* label
y^b. Positive means "this label looks like the training label" (guess b' = 0); the attacker guesses on the
examples with the largest |score| and abstains on the rest.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from labeldp.errors import LabelDPInputError

ScoreFunction = Callable[[np.ndarray, np.ndarray], np.ndarray]

DEFAULT_POWER = 2.0
_LOG_FLOOR = 1e-15


def paper_score(p_target: np.ndarray, p_reference: np.ndarray, power: float = DEFAULT_POWER) -> np.ndarray:
    """s = (M(x)[y] - M'(x)[y]) * (1 - M'(x)[y])^t, the paper's s1 * s2^t with t = 2 by default."""
    return (p_target - p_reference) * (1.0 - p_reference) ** power


def log_ratio_score(p_target: np.ndarray, p_reference: np.ndarray, power: float = DEFAULT_POWER) -> np.ndarray:
    """s = log(M(x)[y] / M'(x)[y]) * (1 - M'(x)[y])^t: the likelihood-ratio form of s1, same s2 weighting."""
    # Floor before the log so that a probability of exactly 0 gives a large finite score, not -inf/nan.
    ratio = np.log(np.maximum(p_target, _LOG_FLOOR)) - np.log(np.maximum(p_reference, _LOG_FLOOR))
    return ratio * (1.0 - p_reference) ** power


SCORES: dict[str, Callable[..., np.ndarray]] = {"paper": paper_score, "log-ratio": log_ratio_score}


def resolve_score(score: str | ScoreFunction, power: float = DEFAULT_POWER) -> ScoreFunction:
    """Returns a function (p_target_of_label, p_reference_of_label) -> score for a name or a callable."""
    if callable(score):
        return score
    if score not in SCORES:
        raise LabelDPInputError(f"score must be one of {sorted(SCORES)} or a callable; got {score!r}")
    if not (power >= 0):
        raise LabelDPInputError(f"score power t must be >= 0; got {power!r}")
    base = SCORES[score]
    return lambda p_target, p_reference: base(p_target, p_reference, power)
