"""How far above its claim a leak must be before the capacity check can confirm it: the power planner behind
``labeldp-audit plan power`` and the preflight's warning (docs/decisions.md, "planning the holdout").

A leak is confirmed on a night when the capacity check vouches for the VIOLATION (docs/soundness.md section 8)
and across nights when the check's evidence reaches 1/alpha (section 10.2). Both are limited by the check rows:
the rows of the day no audited model trained on and the reference's correction did not fit. For planning, the
check is modelled as one matched comparison at the planned threshold:

- the leak shows on a share ``guess_share`` of the rows (the guesses at the threshold): the audited side's bound
  half keeps that share of half the audited rows, the check side that share of the check rows, of which the
  composition matching keeps `MATCHED_SHARE` (about half on the worlds of tests/ and the real log);
- the reference's misfit buys nothing (the check's guesses are right half the time), and the model is right on
  its guessed training rows sigmoid(claim + gap) of the time: the most a model at eps = claim + gap can be
  (randomized response's accuracy);
- the test's statistic is normal: a night confirms the leak with probability Phi(gap / se - z), se the log-odds
  difference's standard error, z the critical value at the verdict's confidence; across nights each night's
  p-value is calibrated to an e-value, 1 / (2 sqrt p), and the family confirms once their product reaches 1/alpha
  (simulated, seeded).

These are planning figures, not bounds: a real model's guesses are rarely all equally sharp, and misfit makes
the check's accuracy other than a half. `can_ever_confirm` is exact instead: whether even an attacker right on
every audited guess could be vouched for, with the check right half the time.

The two shares are assumptions (`DEFAULT_GUESS_SHARE`, `MATCHED_SHARE`) unless they are measured: a night's
capacity check records its check rows, its guesses at the threshold and the guesses the matching kept
(`NightShares.of_check`), and `measured_shares` takes the median over a model's latest stored nights. The default
guess share is optimistic: an overfitted CatBoost on real features guessed on about 1.3% of the check rows
(docs/soundness.md section 8.9), so `REAL_MODEL_GUESS_SHARE` is shown beside it.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from labeldp.errors import LabelDPInputError

DEFAULT_GUESS_SHARE = 0.1  # a planning assumption; the preflight's "can ever confirm" warning uses it too
REAL_MODEL_GUESS_SHARE = 0.01  # nearer a real model's (docs/soundness.md 8.9: 1.3% of the check rows)
MATCHED_SHARE = 0.5
MEASURED_NIGHTS = 7  # the stored nights `measured_shares` summarises by default
ASSUMED, MEASURED = "assumed", "measured"
DEFAULT_POWER = 0.9
FAMILY_NIGHTS = 7
_SIMULATIONS = 4000
_SEED = 20261128
_GAP_MAX = 20.0


@dataclass(frozen=True)
class NightShares:
    """What one stored night's capacity check measured of the two shares: its check rows, its check guesses at the
    planned threshold and the check guesses the composition matching kept (`auditing.result.CapacityCheck`)."""

    partition_date: dt.date
    check_rows: int
    check_guesses: int
    matched_check_guesses: int

    _computed = ("guess_share", "matched_share")

    @property
    def guess_share(self) -> float:
        """The check guesses over the check rows: the share of rows the leak can show on at the threshold."""
        return self.check_guesses / self.check_rows

    @property
    def matched_share(self) -> float | None:
        """The check guesses the matching kept over the check guesses (None: the check guessed on no row)."""
        return self.matched_check_guesses / self.check_guesses if self.check_guesses else None

    @classmethod
    def of_check(cls, partition_date: dt.date, check) -> NightShares | None:
        """The shares a stored `CapacityCheck` measured; None when it measured none (it did not run, it is a
        check computed before strata, which recorded no matching, or it had no check rows)."""
        if check is None or not check.checked or not check.stratified or not check.check_rows \
                or check.check_guesses is None or check.matched_check_guesses is None:
            return None
        return cls(partition_date, int(check.check_rows), int(check.check_guesses), int(check.matched_check_guesses))


@dataclass(frozen=True)
class MeasuredShares:
    """The shares a plan takes from ``model_id``'s stored nights: the median over ``nights`` (latest first) of
    each night's guess share and of its matched share (the nights whose check guessed at all)."""

    model_id: str
    nights: tuple[NightShares, ...]
    guess_share: float
    matched_share: float


def measured_shares(model_id: str, nights: Sequence[NightShares], last: int = MEASURED_NIGHTS) -> MeasuredShares:
    """The median shares of the ``last`` nights of ``nights`` (given latest first). The median, not the mean: one
    night whose threshold fell low (many weak guesses) or high (a handful) does not move the plan.

    Raises:
        LabelDPInputError: no night, ``last`` < 1, or the median night's check guessed on no row (no share to plan
            with).
    """
    if isinstance(last, bool) or int(last) != last or last < 1:
        raise LabelDPInputError(f"last must be a whole number >= 1; got {last!r}", field="last")
    used = tuple(nights[:int(last)])
    if not used:
        raise LabelDPInputError(f"no stored night of {model_id} with a capacity check to measure the shares on",
                                field="model_id")
    guess = float(np.median([n.guess_share for n in used]))
    matched = [n.matched_share for n in used if n.matched_share is not None]
    if guess <= 0.0 or not matched:
        raise LabelDPInputError(f"the capacity checks of {model_id}'s last {len(used)} nights guessed on no check "
                                f"row (median guess share {guess:g}): no leak shows at their thresholds to plan for",
                                field="model_id")
    return MeasuredShares(model_id, used, guess, float(np.median(matched)))


# The holdout shares `with_holdouts` plans beside the one asked for: what a larger (or smaller) holdout would confirm.
HOLDOUT_SWEEP = (0.1, 0.2, 0.3, 0.4, 0.5)


@dataclass(frozen=True)
class HoldoutGaps:
    """A plan's figures at another holdout share of the same day (the same shares, claim and settings): its rows and
    the gaps a night and a family confirm (None: no gap would)."""

    holdout: float
    audited_rows: int
    check_rows: int
    night_gap: float | None
    family_gap: float | None


@dataclass(frozen=True)
class PowerPlan:
    """What a night and a family can confirm: the rows (audited, check), the claim, the confidence and alpha, the
    guess share, the gap above the claim a night confirms with ``power`` (None: no gap would), the gap a family
    confirms within ``nights`` nights with that power, and whether a perfect attacker could ever be vouched for on
    such a night. ``matched_share``: the share of the check guesses the matching keeps. ``source``: where the two
    shares came from, "assumed" (planning assumptions, or a share the user gave) or "measured" (the median over
    ``measured_nights`` of ``model_id``'s stored capacity checks, latest first). ``other_holdouts``: the same plan at
    other holdout shares of the day (`with_holdouts`; empty when not asked for)."""

    audited_rows: int
    check_rows: int
    claimed_epsilon: float
    confidence: float
    alpha: float
    guess_share: float
    power: float
    nights: int
    night_gap: float | None
    family_gap: float | None
    can_ever_confirm: bool
    matched_share: float = MATCHED_SHARE
    source: str = ASSUMED
    model_id: str | None = None
    measured_nights: tuple[NightShares, ...] = ()
    other_holdouts: tuple[HoldoutGaps, ...] = ()


def rows_of_day(rows: int, holdout: float, correction_share: float = 0.0) -> tuple[int, int]:
    """(audited rows, check rows) of a day of ``rows`` rows of which a share ``holdout`` trains no audited model:
    every held-out row is a check row, and the reference's correction, when it is recalibrated, fits a keyed
    ``correction_share`` of the other rows, which leave the audit (docs/soundness.md section 8.8)."""
    if not 0.0 <= correction_share < 1.0:
        raise LabelDPInputError(f"correction_share must be in [0, 1); got {correction_share!r}",
                                field="correction_share")
    held = int(rows * holdout)
    return int((rows - held) * (1.0 - correction_share)), held


def _guesses(audited_rows: int, check_rows: int, guess_share: float,
             matched_share: float = MATCHED_SHARE) -> tuple[int, int]:
    """(the bound half's guesses, the check's matched guesses) at the planned threshold."""
    return max(int(guess_share * audited_rows / 2), 0), max(int(guess_share * matched_share * check_rows), 0)


def _z_mean(gap: float, claim: float, n_bound: int, n_check: int) -> float:
    """The test statistic's mean (in standard errors) when the model is right sigmoid(claim + gap) of the time
    on its guesses and the check a half: the smoothed accuracies of the test's own statistic
    (`auditing.bounds.misfit_test`), so that the log-odds stay finite as the accuracy nears 1."""
    q = (1.0 / (1.0 + math.exp(-(claim + gap))) * n_bound + 0.5) / (n_bound + 1)
    se = math.sqrt(1.0 / ((n_bound + 1) * q * (1 - q)) + 4.0 / (n_check + 1))
    return (math.log(q / (1 - q)) - claim) / se


def _solve(power_at, power: float) -> float | None:
    """The smallest gap in [0, _GAP_MAX] at which ``power_at(gap)`` reaches ``power`` (bisection; None if none)."""
    if power_at(_GAP_MAX) < power:
        return None
    lo, hi = 0.0, _GAP_MAX
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if power_at(mid) < power else (lo, mid)
    return hi


def can_ever_confirm(audited_rows: int, check_rows: int, claimed_epsilon: float, confidence: float,
                     guess_share: float = DEFAULT_GUESS_SHARE, matched_share: float = MATCHED_SHARE) -> bool:
    """True when the check could vouch for the claim being exceeded at all: an attacker right on every audited
    guess at the planned threshold, the check right half of the time (exact test)."""
    from auditing.bounds.misfit_test import check_p_value  # scipy: imported when a plan is computed

    n_bound, n_check = _guesses(audited_rows, check_rows, guess_share, matched_share)
    if n_bound == 0 or n_check == 0:
        return False
    # epsilon_check exceeds the claim exactly when the test's p-value at the claim is at most 1 - confidence
    return check_p_value(n_bound, n_bound, n_check // 2, n_check, claimed_epsilon) <= 1.0 - confidence


def power_plan(audited_rows: int, check_rows: int, claimed_epsilon: float, *, confidence: float = 0.95,
               alpha: float = 0.05, guess_share: float = DEFAULT_GUESS_SHARE, power: float = DEFAULT_POWER,
               nights: int = FAMILY_NIGHTS, matched_share: float = MATCHED_SHARE) -> PowerPlan:
    """The planner's figures (module docstring), at assumed shares."""
    for name, value in (("audited_rows", audited_rows), ("check_rows", check_rows), ("nights", nights)):
        if isinstance(value, bool) or int(value) != value or value < 0:
            raise LabelDPInputError(f"{name} must be a whole number >= 0; got {value!r}", field=name)
    if not claimed_epsilon >= 0 or not math.isfinite(claimed_epsilon):
        raise LabelDPInputError(f"claimed epsilon must be a finite number >= 0; got {claimed_epsilon!r}",
                                field="claimed_epsilon")
    for name, value in (("confidence", confidence), ("alpha", alpha), ("power", power)):
        if not 0.0 < value < 1.0:
            raise LabelDPInputError(f"{name} must be in (0, 1); got {value!r}", field=name)
    for name, value in (("guess_share", guess_share), ("matched_share", matched_share)):  # 1: every row
        if not 0.0 < value <= 1.0:
            raise LabelDPInputError(f"{name} must be in (0, 1]; got {value!r}", field=name)
    from scipy import stats  # imported when a plan is computed: 0.3 s to import

    n_bound, n_check = _guesses(audited_rows, check_rows, guess_share, matched_share)
    ever = can_ever_confirm(audited_rows, check_rows, claimed_epsilon, confidence, guess_share, matched_share)
    night_gap = family_gap = None
    if n_bound > 0 and n_check > 0:
        z = float(stats.norm.isf(1.0 - confidence))
        night_gap = _solve(lambda g: float(stats.norm.sf(z - _z_mean(g, claimed_epsilon, n_bound, n_check))), power)
        noise = np.random.default_rng(_SEED).standard_normal((_SIMULATIONS, max(int(nights), 1)))
        target = -math.log(alpha)

        def family_power(gap: float) -> float:
            statistic = _z_mean(gap, claimed_epsilon, n_bound, n_check) + noise
            log_p = stats.norm.logsf(statistic)
            log_e = -math.log(2.0) - 0.5 * log_p  # the calibrated e-value, 1 / (2 sqrt p)
            return float(np.mean(np.max(np.cumsum(log_e, axis=1), axis=1) >= target))

        family_gap = _solve(family_power, power) if nights else None
    return PowerPlan(int(audited_rows), int(check_rows), float(claimed_epsilon), confidence, alpha, guess_share,
                     power, int(nights), night_gap, family_gap, ever, matched_share)


def measured_power_plan(audited_rows: int, check_rows: int, claimed_epsilon: float, measured: MeasuredShares,
                        **settings) -> PowerPlan:
    """`power_plan` at the shares ``measured`` on a model's stored nights, saying so (``source`` "measured", the
    model and the nights); ``settings``: `power_plan`'s confidence, alpha, power and nights."""
    plan = power_plan(audited_rows, check_rows, claimed_epsilon, guess_share=measured.guess_share,
                      matched_share=measured.matched_share, **settings)
    return replace(plan, source=MEASURED, model_id=measured.model_id, measured_nights=measured.nights)


def with_holdouts(plan: PowerPlan, rows: int, holdout: float, correction_share: float = 0.0,
                  holdouts: Sequence[float] = HOLDOUT_SWEEP) -> PowerPlan:
    """``plan`` (of a day of ``rows`` rows at ``holdout``) with its figures at each other share of ``holdouts``: the
    same shares, claim, confidence, alpha, power and nights, the day's rows split again (`rows_of_day`)."""
    others = []
    for share in holdouts:
        if math.isclose(share, holdout):
            continue
        audited, check = rows_of_day(rows, share, correction_share)
        other = power_plan(audited, check, plan.claimed_epsilon, confidence=plan.confidence, alpha=plan.alpha,
                           guess_share=plan.guess_share, power=plan.power, nights=plan.nights,
                           matched_share=plan.matched_share)
        others.append(HoldoutGaps(float(share), audited, check, other.night_gap if other.can_ever_confirm else None,
                                  other.family_gap if other.can_ever_confirm else None))
    return replace(plan, other_holdouts=tuple(others))


__all__ = [
    "ASSUMED",
    "DEFAULT_GUESS_SHARE",
    "DEFAULT_POWER",
    "FAMILY_NIGHTS",
    "HOLDOUT_SWEEP",
    "MATCHED_SHARE",
    "MEASURED",
    "MEASURED_NIGHTS",
    "REAL_MODEL_GUESS_SHARE",
    "HoldoutGaps",
    "MeasuredShares",
    "NightShares",
    "PowerPlan",
    "can_ever_confirm",
    "measured_power_plan",
    "measured_shares",
    "power_plan",
    "rows_of_day",
    "with_holdouts",
]
