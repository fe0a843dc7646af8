"""Attack scores for the label-inference game (paper Sec. 6.2).

A score is computed from the target model's and the reference model's probability of the *released* label
y^b. Positive means "this label looks like the training label" (guess b' = 0); the attacker guesses on the
examples with the largest |score| and abstains on the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from labeldp.choices import Choices
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


class AttackScore:
    """A built-in score, registered by name in `SCORES` (the plan's and the CLI's ``score``): called as
    ``score(p_target, p_reference, power)``, the compiled kernels serve it (`auditing.game.kernel`)."""

    name: ClassVar[str]
    description: ClassVar[str]
    function: ClassVar[Callable[..., np.ndarray]]

    def __call__(self, p_target: np.ndarray, p_reference: np.ndarray, power: float = DEFAULT_POWER) -> np.ndarray:
        return type(self).function(p_target, p_reference, power)


SCORES: Choices[AttackScore] = Choices("score")


@SCORES.register
class PaperScore(AttackScore):
    name = "paper"
    description = "s = (M(x)[y] - M'(x)[y]) * (1 - M'(x)[y])^t, the paper's s1 * s2^t with t = 2 by default"
    function = staticmethod(paper_score)


@SCORES.register
class LogRatioScore(AttackScore):
    name = "log-ratio"
    description = ("s = log(M(x)[y] / M'(x)[y]) * (1 - M'(x)[y])^t: the likelihood-ratio form of s1, same s2 "
                   "weighting")
    function = staticmethod(log_ratio_score)


def resolve_score(score: str | ScoreFunction, power: float = DEFAULT_POWER) -> ScoreFunction:
    """Returns a function (p_target_of_label, p_reference_of_label) -> score for a name or a callable."""
    if callable(score):
        return score
    base = SCORES.get(score)
    if not (power >= 0):
        raise LabelDPInputError(f"score power t must be >= 0; got {power!r}")
    return lambda p_target, p_reference: base(p_target, p_reference, power)
