"""Evidence across nights: anytime-valid tests of a model family's claims (docs/soundness.md section 10).

A family is one target name audited night after night. Two running products of per-night e-values:

- **the check's confirmation** (the decision reads it; section 10.2): each night's capacity check gives an e-value
  for the check's own null, "eps-DP" under the check's assumption T_u, with no kappa
  (the exact test's p-value on the night's matched counts, calibrated: 1 / (2 sqrt(p)), never below 1/2).
  Their product is a test supermartingale under the claims; the family is **confirmed**
  the first night it reaches 1/alpha and the kappa-based evidence below does too (so a confirmation needs both
  tests wrong: it stays at most alpha if either T_u holds every night or kappa covers every night's reference);
- **the kappa-based evidence** (secondary, labelled with its condition: it holds only if kappa covers every
  night's reference, which it never exactly does on real data, and small misfit compounds across nights). Each
  night contributes repetition 0's guesses and correct guesses at its grid points (`NightCounts`). The points are
  pooled into fixed bands of the guessed fraction c'/m (half octaves), and each band b keeps a running product of
  likelihood ratios (`auditing.bounds.e_values`):

    P_t(b) = prod_{s <= t} e_s(b),   e_s(b) = the mean of LR over night s's points in band b (1 if none),

  with each night's alternative per band fixed from earlier nights only. Every P(b) is a test supermartingale
  under the claim, so their average M_t = mean_b P_t(b) is one too, and by Ville's inequality
  P[M_t >= 1/alpha for some t] <= alpha under the claim, however often the product is looked at. The family is
  *flagged* (kappa-based) the first night M_t reaches 1/alpha. A night's own e-value is M_t / M_{t-1}.

A night counts only when its claim is pure (delta = 0) and finite, it holds guesses, and its game's coins were
keyed by its own day (`NightCounts.coins_night`: a game keyed by the seed alone draws the coins of every other such
night on row ids that repeat across days); otherwise its e-values are 1 and ``reason`` says why. A night counts in
the check's product only when its check ran stratified with matched guesses (``check_reason`` otherwise). Pure
numpy/scipy; the warehouse and the report render `FamilyEvidence`.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from auditing.bounds.e_values import log_likelihood_ratio, null_rate, plug_in_alternative
from auditing.bounds.misfit_test import calibrated_e_value, check_p_value
from auditing.result import AuditResult, CapacityCheck
from labeldp.codec import INF_AS_STRING
from labeldp.errors import LabelDPInputError
from labeldp.stored import AS_LARGEST, FLAG, NUMBER, stored

DEFAULT_ALPHA = 0.05
# Bands of the guessed fraction c'/m: band k holds fractions in (2^-(k+1)/2, 2^-k/2]; the last holds the rest.
BANDS = 29
@dataclass(frozen=True)
class CheckCounts:
    """A night's capacity check as the check's e-value reads it: the matched audited and check guesses, how many
    were right, and the composition's slack."""

    bound_correct: int
    bound_guesses: int
    check_correct: int
    check_guesses: int
    slack: float = 0.0

    @classmethod
    def of_check(cls, check: CapacityCheck | None) -> CheckCounts | None:
        """The matched counts of a stratified check that ran (None otherwise)."""
        if check is None or not check.checked or not check.stratified or not check.matched_bound_guesses \
                or not check.matched_check_guesses:
            return None
        return cls(int(check.matched_bound_correct), int(check.matched_bound_guesses),
                   int(check.matched_check_correct), int(check.matched_check_guesses),
                   float(check.composition_slack or 0.0))

    def e_value(self, claimed_epsilon: float) -> float:
        """This night's e-value of the check's null at the claim: the exact test's p-value, calibrated
        (`auditing.bounds.misfit_test.calibrated_e_value`, never below 1/2)."""
        return calibrated_e_value(check_p_value(self.bound_correct, self.bound_guesses, self.check_correct,
                                                self.check_guesses, claimed_epsilon, self.slack))


@dataclass(frozen=True)
class NightCounts:
    """What one night of a family contributes: its claim and kappa, repetition 0's counts over all audited rows at
    each grid point (c' guesses of m rows, c correct), the night that keyed its coins (None: the seed alone) and
    its capacity check's matched counts (None: no stratified check ran)."""

    partition_date: dt.date
    claimed_epsilon: float
    kappa: float
    delta: float
    m: int
    guesses: tuple[int, ...]
    correct: tuple[int, ...]
    coins_night: dt.date | None = None
    check: CheckCounts | None = None
    void: str | None = None  # why the night counts in no test (a control voided it), set by the flow

    @classmethod
    def of_result(cls, partition_date: dt.date, claimed_epsilon: float, result: AuditResult) -> NightCounts:
        """From a stored audit: the curve of repetition 0 (the bonferroni strategy), or, for a strategy that
        selects on one keyed half, both halves' counts added point by point (each half guesses a fixed number of
        its own rows, so their sum is a fixed number of guesses too)."""
        halves = result.split_halves
        if halves is not None:
            guesses = tuple(a + b for a, b in zip(halves.selection.guesses, halves.bound.guesses, strict=True))
            correct = tuple(a + b for a, b in zip(halves.selection.correct, halves.bound.correct, strict=True))
            m = halves.selection.m + halves.bound.m
        else:
            guesses = tuple(p.guesses for p in result.curve)
            correct = tuple(p.correct for p in result.curve)
            m = result.m
        return cls(partition_date, float(claimed_epsilon), float(result.bound.kappa), float(result.bound.delta), int(m),
                   guesses, correct, result.game.night, CheckCounts.of_check(result.capacity_check))


@dataclass(frozen=True)
class NightEvidence:
    """One night's place in its family's tests.

    check_e_value / check_evidence / confirmed: the check's e-value of this night (1 when it does not count,
    ``check_reason`` says why), the product after it, and whether the family was confirmed by then (that product
    and the kappa-based evidence both at 1/alpha). e_value / evidence / log_evidence / flagged: the kappa-based
    evidence (secondary; ``reason`` says why a night does not count in either)."""

    partition_date: dt.date
    # stored in the warehouse (schema version 7; the check's evidence and the confirmation: version 10)
    e_value: float = stored(NUMBER, "this night's e-value against the claim in its family's test (1: the night does "
                            "not count)", column="family_e_value", infinite=AS_LARGEST)
    evidence: float = stored(NUMBER, "the family's evidence after this night: the running mixture of e-values, "
                             "anytime-valid; flagged at 1/alpha", column="family_evidence", infinite=AS_LARGEST)
    log_evidence: float
    flagged: bool = stored(FLAG, "1 once the family's evidence has reached 1/alpha (alpha 0.05) on or before this "
                           "night, else 0", column="family_flagged")
    reason: str | None = None
    check_e_value: float = 1.0
    check_evidence: float = stored(
        NUMBER, "the family's kappa-free evidence after this night: the product of the check's e-values (section "
        "10.2)", column="family_check_evidence", infinite=AS_LARGEST, group="decision", default=1.0)
    log_check_evidence: float = 0.0
    confirmed: bool = stored(
        FLAG, "1 once the family's check evidence and its kappa-based evidence have both reached 1/alpha (alpha "
        "0.05) on or before this night: a confirmed leak, act; else 0", column="family_confirmed", group="decision",
        default=False)
    check_reason: str | None = None


@dataclass(frozen=True)
class NightSummary:
    """A night of `FamilySummary`: its e-values and running evidences (an infinite one written ``"inf"``), its
    confirmation and flag, and why a test did not count it."""

    partition_date: dt.date
    check_e_value: float = field(metadata=INF_AS_STRING)
    check_evidence: float = field(metadata=INF_AS_STRING)
    confirmed: bool
    check_reason: str | None
    e_value: float = field(metadata=INF_AS_STRING)
    evidence: float = field(metadata=INF_AS_STRING)
    log_evidence: float
    flagged: bool
    reason: str | None


@dataclass(frozen=True)
class FamilySummary:
    """`FamilyEvidence` as its JSON shows it: alpha, both evidences, the confirmation and the flag and the nights
    they were raised, and every night."""

    alpha: float
    check_evidence: float = field(metadata=INF_AS_STRING)
    confirmed: bool
    confirmed_on: dt.date | None
    nights_to_confirm: int | None
    evidence: float = field(metadata=INF_AS_STRING)
    flagged: bool
    flagged_on: dt.date | None
    nights: tuple[NightSummary, ...]


@dataclass(frozen=True)
class FamilyEvidence:
    """A family's tests after its last night: the nights in the order they were computed and alpha.
    ``confirmed`` (the decision reads it): the check's product and the kappa-based evidence both reached 1/alpha;
    ``flagged``: the kappa-based evidence alone did (secondary, valid only if kappa covered every night)."""

    alpha: float
    nights: tuple[NightEvidence, ...]

    @property
    def evidence(self) -> float:
        return self.nights[-1].evidence if self.nights else 1.0

    @property
    def check_evidence(self) -> float:
        return self.nights[-1].check_evidence if self.nights else 1.0

    @property
    def flagged(self) -> bool:
        return bool(self.nights) and self.nights[-1].flagged

    @property
    def confirmed(self) -> bool:
        return bool(self.nights) and self.nights[-1].confirmed

    @property
    def flagged_on(self) -> dt.date | None:
        return next((n.partition_date for n in self.nights if n.flagged), None)

    @property
    def confirmed_on(self) -> dt.date | None:
        return next((n.partition_date for n in self.nights if n.confirmed), None)

    @property
    def counted(self) -> int:
        """Nights whose check counted in the confirmation."""
        return sum(1 for n in self.nights if n.check_reason is None)

    def nights_to_confirm(self) -> int | None:
        """About how many more nights like the family's average counted night the check's product needs to reach
        1/alpha (0 once it has; None when its evidence is not growing): the gap in log-evidence over the mean
        log e-value of the counted nights. A planning figure, not a bound."""
        target = -math.log(self.alpha)
        log_now = self.nights[-1].log_check_evidence if self.nights else 0.0
        if log_now >= target:
            return 0
        if not self.counted or log_now <= 0.0:
            return None
        return max(1, math.ceil((target - log_now) / (log_now / self.counted)))

    def _encoded(self) -> FamilySummary:
        """Its JSON (`FamilySummary`), for the results listing."""
        return FamilySummary(
            self.alpha, self.check_evidence, self.confirmed, self.confirmed_on, self.nights_to_confirm(),
            self.evidence, self.flagged, self.flagged_on,
            tuple(NightSummary(n.partition_date, n.check_e_value, n.check_evidence, n.confirmed, n.check_reason,
                               n.e_value, n.evidence, n.log_evidence, n.flagged, n.reason) for n in self.nights))

    def sentence(self) -> str:
        """The family's tests in one sentence each, what each means, the confirmation first."""
        head = (f"across {len(self.nights)} night(s) ({self.counted} checked): the check's evidence "
                f"{self.check_evidence:.3g} against the claims (kappa-free, anytime-valid at alpha {self.alpha:g}, "
                f"confirmation at {1 / self.alpha:g} with the kappa-based evidence)")
        if self.confirmed:
            head += f": CONFIRMED since {self.confirmed_on.isoformat()}: the nights together disprove the claims"
        else:
            more = self.nights_to_confirm()
            head += (": not confirmed" + (f" (about {more} more night(s) like these would confirm it)"
                                          if more else ""))
        secondary = (f"; kappa-based evidence {self.evidence:.3g} (secondary: it holds only if kappa covers every "
                     f"night's reference{', and it is at 1/alpha' if self.flagged else ''})")
        return head + secondary


def band_of(guesses: np.ndarray, m: int) -> np.ndarray:
    """Each point's band: floor(-2 log2(c'/m)), clipped to the last band."""
    fraction = np.asarray(guesses, dtype=np.float64) / float(m)
    return np.clip(np.floor(-2.0 * np.log2(fraction) + 1e-9), 0, BANDS - 1).astype(np.int64)


def family_evidence(nights: Sequence[NightCounts], alpha: float = DEFAULT_ALPHA) -> FamilyEvidence:
    """The family's tests over ``nights`` in the order they were computed (the first run of each night; a skipped
    night is simply absent, which is the same as e = 1)."""
    if not 0.0 < alpha < 1.0:
        raise LabelDPInputError(f"alpha must be in (0, 1); got {alpha!r}")
    log_band = np.zeros(BANDS)  # log P_t(b)
    past_correct = np.zeros(BANDS)
    past_guesses = np.zeros(BANDS)
    log_m = 0.0  # log M_t, M_0 = 1
    log_check = 0.0  # log of the check's product
    threshold = -math.log(alpha)
    flagged = confirmed = False
    out = []
    for night in nights:
        reason = _not_counted(night)
        check_reason = reason or _check_not_counted(night)
        new_log_m = log_m
        if reason is None:
            q0 = null_rate(night.claimed_epsilon, night.kappa)
            guesses = np.asarray(night.guesses, dtype=np.float64)
            correct = np.asarray(night.correct, dtype=np.float64)
            bands = band_of(guesses, night.m)
            q1 = plug_in_alternative(q0, past_correct, past_guesses)
            log_lr = log_likelihood_ratio(correct, guesses, q0, q1[bands])
            night_log = np.zeros(BANDS)  # log e_t(b): the mean LR of the band's points, 0 where it has none
            for b in np.unique(bands):
                inside = log_lr[bands == b]
                night_log[b] = np.logaddexp.reduce(inside) - math.log(inside.size)
            log_band = log_band + night_log
            np.add.at(past_correct, bands, correct)
            np.add.at(past_guesses, bands, guesses)
            new_log_m = float(np.logaddexp.reduce(log_band) - math.log(BANDS))
        check_log = 0.0 if check_reason else math.log(night.check.e_value(night.claimed_epsilon))
        e_log = new_log_m - log_m
        log_m = new_log_m
        log_check += check_log
        flagged = flagged or log_m >= threshold
        confirmed = confirmed or (log_check >= threshold and log_m >= threshold)
        out.append(NightEvidence(night.partition_date, _exp(e_log), _exp(log_m), log_m, flagged, reason,
                                 _exp(check_log), _exp(log_check), log_check, confirmed, check_reason))
    return FamilyEvidence(float(alpha), tuple(out))


def _not_counted(night: NightCounts) -> str | None:
    if night.void:
        return night.void
    if not math.isfinite(night.claimed_epsilon):
        return "an infinite claim: no count of correct guesses can disprove it"
    if night.delta > 0:
        return "a claim with delta > 0: the per-guess bound behind the e-value needs delta = 0"
    if night.coins_night != night.partition_date:
        keyed = ("by the seed alone" if night.coins_night is None
                 else f"by another night ({night.coins_night.isoformat()})")
        return (f"its game's coins were keyed {keyed}, not by its own day: where row ids repeat across days it "
                "would redraw another night's coins, so it enters no family (score it again with the night)")
    if night.m < 1 or not night.guesses or sum(night.guesses) == 0:
        return "no guesses on this night"
    return None


def _check_not_counted(night: NightCounts) -> str | None:
    if night.check is None:
        return ("no stratified capacity check with matched guesses on this night (no check rows, no stratum with "
                "both audited and check guesses, or a game stored before strata)")
    return None


def _exp(value: float) -> float:
    return math.exp(value) if value < 700 else math.inf
