"""One night's e-value against a pure label-DP claim: the likelihood ratio of its correct guesses.

Under H(eps, 0, kappa) (docs/soundness.md section 1) every guess of the game is right with probability at most
q0 = sigmoid(eps + kappa), conditionally on the attacker's whole view and on every other row's outcome
(section 3). For an alternative rate q1 >= q0 fixed before the night, the likelihood ratio of c correct
guesses among c' guesses,

    LR = (q1 / q0)^c ((1 - q1) / (1 - q0))^(c' - c),

is a product of one factor per guess whose conditional expectation is p q1/q0 + (1 - p)(1 - q1)/(1 - q0) <= 1
for every right-probability p <= q0 (the factor is increasing in p when q1 >= q0). So E[LR] <= 1 under the claim:
LR is an e-value. It is not one when q1 < q0 (at p = 0 the factor's mean is (1 - q1)/(1 - q0) > 1), hence the
clamp; nor when delta > 0 (the per-guess bound needs delta = 0); nor when the number of guesses c' was chosen
after seeing the outcomes (a maximum over grid points is not an e-value; a fixed-weight average is).
docs/soundness.md section 10 carries the argument across nights.

Pure numpy/scipy; bad input raises LabelDPInputError naming the argument.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from auditing.bounds.binomial import beta_from_epsilon
from auditing.bounds.params import check_kappa
from labeldp.errors import LabelDPInputError
from labeldp.names import check_claim

# The first night's alternative, before any evidence: q0 moved this far in logit (an eps 0.5 above the claim).
DEFAULT_GAP = 0.5
# How many guesses' worth of weight that default keeps once earlier nights have guessed (a shrinkage prior).
PRIOR_GUESSES = 100.0
# The alternative stays this far below 1, so a single wrong guess cannot make LR zero.
_Q1_MAX = 1.0 - 1e-9


def null_rate(claimed_epsilon: float, kappa: float) -> float:
    """q0 = sigmoid(eps + kappa): the most often a guess can be right under the claim at kappa."""
    return beta_from_epsilon(check_claim(claimed_epsilon), check_kappa(kappa))


def plug_in_alternative(q0: float, past_correct, past_guesses, *, gap: float = DEFAULT_GAP,
                        prior_guesses: float = PRIOR_GUESSES) -> np.ndarray:
    """The alternative rate for a night, from earlier nights only: their pooled success rate shrunk toward
    sigmoid(logit(q0) + gap) with ``prior_guesses`` pseudo-guesses, and never below q0 (the clamp that keeps the
    likelihood ratio an e-value). Vectorized over (past_correct, past_guesses)."""
    if not 0.0 < q0 < 1.0:
        raise LabelDPInputError(f"q0 must be in (0, 1); got {q0!r}")
    c = np.asarray(past_correct, dtype=np.float64)
    g = np.asarray(past_guesses, dtype=np.float64)
    if np.any(g < 0) or np.any(c < 0) or np.any(c > g):
        raise LabelDPInputError("past counts must satisfy 0 <= correct <= guesses")
    default = float(special.expit(special.logit(q0) + gap))
    rate = (c + prior_guesses * default) / (g + prior_guesses)
    return np.clip(rate, q0, max(q0, _Q1_MAX))


def log_likelihood_ratio(correct, guesses, q0: float, q1) -> np.ndarray:
    """log LR of ``correct`` right guesses among ``guesses`` (arrays, one entry per grid point) at the null rate
    q0 against the alternative q1 (a scalar or one per point, each >= q0)."""
    c = np.asarray(correct, dtype=np.float64)
    g = np.asarray(guesses, dtype=np.float64)
    q1 = np.broadcast_to(np.asarray(q1, dtype=np.float64), np.broadcast(c, g).shape)
    if np.any(c < 0) or np.any(c > g):
        raise LabelDPInputError("correct must be in [0, guesses] at every point")
    if not 0.0 < q0 < 1.0 or np.any(q1 < q0) or np.any(q1 >= 1.0):
        raise LabelDPInputError(f"need 0 < q0 <= q1 < 1; got q0 {q0!r}, q1 in [{float(np.min(q1))!r}, "
                                f"{float(np.max(q1))!r}]")
    return c * (np.log(q1) - math.log(q0)) + (g - c) * (np.log1p(-q1) - math.log1p(-q0))
