"""Bound methods: how the counts (c correct of c' guesses on m rows) of the game become an epsilon lower bound.

A method is one frozen class registered in `BOUND_METHODS`. It answers two questions for one pre-chosen point,
both at confidence 1 - gamma and robustness kappa (docs/soundness.md, Lemma 1: the claim (eps, delta) is tested
through views that are (eps + kappa, e^kappa delta)-indistinguishable):

- ``rejects(c, c', m, eps)``: does the test reject "M is (eps, delta)-DP"? It must be monotone: rejected at
  eps implies rejected at every smaller eps;
- ``epsilon_lower_bound(c, c', m)``: the edge of the rejected interval, 0 when nothing is rejected.

Sweeps, selection, robustness and detection floors (`auditing.bounds.lower_bound`, `auditing.bounds.selection`,
`auditing.verdict.robustness`) use only these two and three hints below, so a new method is one new class here (or in
its own module, registered with ``@BOUND_METHODS.register``) plus its statistical tests; the CLI choices, the
plan parser and the warehouse CHECK constraint read `method_names()`.

Hints a method may set (all optional, for speed; results do not depend on them):
  ``closed_form(delta)``: the vectorized pure bound (`pure_epsilon_lower_bounds`, paper Thm 17) IS this
  method's bound at this delta; ``pure_bound_is_upper``: the pure bound is an upper bound on this method's
  bound (orders and stops scans); ``cheap_rejection``: testing rejection is much cheaper than the bound (a
  point that does not reject the best value so far is skipped).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from auditing.bounds.binomial import binomial_epsilon_lower_bound, binomial_rejects
from labeldp.choices import Choices


@dataclass(frozen=True)
class BoundMethod(ABC):
    """One way to bound epsilon from (c, c', m); see the module docstring for the contract."""

    name: ClassVar[str]
    label: ClassVar[str]  # how reports and tables name it
    description: ClassVar[str]  # one sentence for --help and the docs
    default_delta: ClassVar[float] = 0.0
    pure_bound_is_upper: ClassVar[bool] = False
    cheap_rejection: ClassVar[bool] = False
    # The trade-off curve a row of this method records (warehouse fdp_curve), None for methods without one.
    curve: ClassVar[str | None] = None

    def closed_form(self, delta: float) -> bool:
        return False

    @abstractmethod
    def rejects(self, correct: int, guesses: int, m: int, epsilon: float, *, delta: float, confidence: float,
                kappa: float) -> bool:
        """Does the test reject "M is (epsilon, delta)-DP" at this point?"""

    @abstractmethod
    def epsilon_lower_bound(self, correct: int, guesses: int, m: int, *, delta: float, confidence: float,
                            kappa: float) -> float:
        """The largest rejected epsilon at this point (0 with no evidence)."""

    def gaussian_reading(self, correct: int, guesses: int, m: int, *, confidence: float,
                         kappa: float) -> float | None:
        """A mu-GDP reading at the selected point, for methods that have one (never an epsilon that decides)."""
        return None


BOUND_METHODS: Choices[BoundMethod] = Choices("method")


@BOUND_METHODS.register
@dataclass(frozen=True)
class Binomial(BoundMethod):
    """Paper Thm 17 (delta = 0) and Thm 16 (delta > 0) as re-derived in docs/soundness.md."""

    name: ClassVar[str] = "binomial"
    label: ClassVar[str] = "binomial"
    description: ClassVar[str] = ("one-sided binomial test on the correct guesses (paper Thm 16/17, re-derived in "
                                  "docs/soundness.md)")
    pure_bound_is_upper: ClassVar[bool] = True

    def closed_form(self, delta: float) -> bool:
        return delta == 0.0

    def rejects(self, correct, guesses, m, epsilon, *, delta, confidence, kappa):
        return binomial_rejects(correct, guesses, m, epsilon, delta=delta, confidence=confidence, kappa=kappa)

    def epsilon_lower_bound(self, correct, guesses, m, *, delta, confidence, kappa):
        return binomial_epsilon_lower_bound(correct, guesses, m, delta=delta, confidence=confidence, kappa=kappa)


@BOUND_METHODS.register
@dataclass(frozen=True)
class FDPCurve(BoundMethod):
    """Paper Alg. 3 on the (eps, delta) trade-off curve itself (docs/fdp-curve.md): valid for every mechanism."""

    name: ClassVar[str] = "fdp"
    label: ClassVar[str] = "f-DP on the (ε, δ) curve"
    description: ClassVar[str] = ("paper Alg. 3 on the (eps, delta) trade-off curve (docs/fdp-curve.md), valid for "
                                  "every mechanism")
    cheap_rejection: ClassVar[bool] = True
    curve: ClassVar[str | None] = "eps-delta"

    def rejects(self, correct, guesses, m, epsilon, *, delta, confidence, kappa):
        from auditing.bounds.fdp import fdp_rejects

        return fdp_rejects(correct, guesses, m, epsilon, delta=delta, confidence=confidence, kappa=kappa)

    def epsilon_lower_bound(self, correct, guesses, m, *, delta, confidence, kappa):
        from auditing.bounds.fdp import fdp_epsilon_lower_bound

        return fdp_epsilon_lower_bound(correct, guesses, m, delta=delta, confidence=confidence, kappa=kappa)

    def gaussian_reading(self, correct, guesses, m, *, confidence, kappa):
        if kappa != 0.0:
            return None
        from auditing.bounds.fdp import fdp_mu_lower_bound

        return float(fdp_mu_lower_bound(correct, guesses, m, confidence=confidence))


def bound_method(choice: str | BoundMethod, name: str = "method") -> BoundMethod:
    """The registered method for a name (see `Choices.get`)."""
    return BOUND_METHODS.get(choice, name)


def method_names() -> tuple[str, ...]:
    return BOUND_METHODS.names()
