"""Evidence across nights: an anytime-valid test of a model family's claim (docs/soundness.md section 10).

A family is one target name audited night after night. Each night contributes repetition 0's guesses and correct
guesses at its grid points (`NightCounts`). The points are pooled into fixed bands of the guessed fraction c'/m
(half octaves), and each band b keeps a running product of likelihood ratios (`auditing.bounds.e_values`):

    P_t(b) = prod_{s <= t} e_s(b),   e_s(b) = the mean of LR over night s's points in band b (1 if none),

with each night's alternative per band fixed from earlier nights only. Every P(b) is a test supermartingale under
the claim, so their average M_t = mean_b P_t(b) is one too, and by Ville's inequality
P[M_t >= 1/alpha for some t] <= alpha under the claim, however often the product is looked at. The family is
flagged the first night M_t reaches 1/alpha. A night's own e-value is M_t / M_{t-1} (a mixture over bands with
weights proportional to each band's evidence so far: weights fixed before the night).

A night counts (e-value from its counts) only when its claim is pure (delta = 0) and it holds guesses; otherwise
its e-value is 1 and ``reason`` says why. Pure numpy; the warehouse and the report render `FamilyEvidence`.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from auditing.bounds.e_values import log_likelihood_ratio, null_rate, plug_in_alternative
from auditing.result import AuditResult
from labeldp.errors import LabelDPInputError

DEFAULT_ALPHA = 0.05
# Bands of the guessed fraction c'/m: band k holds fractions in (2^-(k+1)/2, 2^-k/2]; the last holds the rest.
BANDS = 29


@dataclass(frozen=True)
class NightCounts:
    """What one night of a family contributes: its claim and kappa, and repetition 0's counts over all audited
    rows at each grid point (c' guesses of m rows, c correct)."""

    partition_date: dt.date
    claimed_epsilon: float
    kappa: float
    delta: float
    m: int
    guesses: tuple[int, ...]
    correct: tuple[int, ...]

    @classmethod
    def of_result(cls, partition_date: dt.date, claimed_epsilon: float, result: AuditResult) -> NightCounts:
        """From a stored audit: the curve of repetition 0 (the bonferroni strategy), or, for a strategy that
        selects on one keyed half, both halves' counts added point by point (each half guesses a fixed number of
        its own rows, so their sum is a fixed number of guesses too)."""
        result = AuditResult.from_dict(result)
        halves = result.split_halves
        if halves is not None:
            guesses = tuple(a + b for a, b in zip(halves.selection.guesses, halves.bound.guesses, strict=True))
            correct = tuple(a + b for a, b in zip(halves.selection.correct, halves.bound.correct, strict=True))
            m = halves.selection.m + halves.bound.m
        else:
            guesses = tuple(p.guesses for p in result.curve)
            correct = tuple(p.correct for p in result.curve)
            m = result.m
        return cls(partition_date, float(claimed_epsilon), float(result.kappa), float(result.delta), int(m),
                   guesses, correct)


@dataclass(frozen=True)
class NightEvidence:
    """One night's place in its family's test: its e-value (1 when it does not count, ``reason`` says why), the
    family's evidence M_t after it (and its log), and whether M_t had reached 1/alpha by then."""

    partition_date: dt.date
    e_value: float
    evidence: float
    log_evidence: float
    flagged: bool
    reason: str | None = None


@dataclass(frozen=True)
class FamilyEvidence:
    """A family's test after its last night: the nights in the order they were computed, alpha, the evidence
    M_t, whether it is flagged and from which night on."""

    alpha: float
    nights: tuple[NightEvidence, ...]

    @property
    def evidence(self) -> float:
        return self.nights[-1].evidence if self.nights else 1.0

    @property
    def flagged(self) -> bool:
        return bool(self.nights) and self.nights[-1].flagged

    @property
    def flagged_on(self) -> dt.date | None:
        return next((n.partition_date for n in self.nights if n.flagged), None)

    def to_dict(self) -> dict:
        """The test as JSON: alpha, the evidence, the flag and the night it was raised, and every night."""
        return {"alpha": self.alpha, "evidence": _finite(self.evidence), "flagged": self.flagged,
                "flagged_on": None if self.flagged_on is None else self.flagged_on.isoformat(),
                "nights": [{"partition_date": n.partition_date.isoformat(), "e_value": _finite(n.e_value),
                            "evidence": _finite(n.evidence), "log_evidence": n.log_evidence, "flagged": n.flagged,
                            "reason": n.reason} for n in self.nights]}

    def sentence(self) -> str:
        """The family's evidence in one sentence, with what it means."""
        counted = sum(1 for n in self.nights if n.reason is None)
        head = (f"evidence across {len(self.nights)} night(s) ({counted} counted): {self.evidence:.3g} against the "
                f"claims (flag at {1 / self.alpha:g}, anytime-valid at alpha {self.alpha:g})")
        if self.flagged:
            return head + f": FLAGGED since {self.flagged_on.isoformat()}: the nights together disprove the claims"
        return head + ": not flagged (no accumulated evidence of a violation)"


def band_of(guesses: np.ndarray, m: int) -> np.ndarray:
    """Each point's band: floor(-2 log2(c'/m)), clipped to the last band."""
    fraction = np.asarray(guesses, dtype=np.float64) / float(m)
    return np.clip(np.floor(-2.0 * np.log2(fraction) + 1e-9), 0, BANDS - 1).astype(np.int64)


def family_evidence(nights: Sequence[NightCounts], alpha: float = DEFAULT_ALPHA) -> FamilyEvidence:
    """The family's test over ``nights`` in the order they were computed (the first run of each night; a skipped
    night is simply absent, which is the same as e = 1)."""
    if not 0.0 < alpha < 1.0:
        raise LabelDPInputError(f"alpha must be in (0, 1); got {alpha!r}")
    log_band = np.zeros(BANDS)  # log P_t(b)
    past_correct = np.zeros(BANDS)
    past_guesses = np.zeros(BANDS)
    log_m = 0.0  # log M_t, M_0 = 1
    threshold = -math.log(alpha)
    flagged = False
    out = []
    for night in nights:
        reason = _not_counted(night)
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
        else:
            new_log_m = log_m
        e_log = new_log_m - log_m
        log_m = new_log_m
        flagged = flagged or log_m >= threshold
        out.append(NightEvidence(night.partition_date, _exp(e_log), _exp(log_m), log_m, flagged, reason))
    return FamilyEvidence(float(alpha), tuple(out))


def _not_counted(night: NightCounts) -> str | None:
    if not math.isfinite(night.claimed_epsilon):
        return "an infinite claim: no count of correct guesses can disprove it"
    if night.delta > 0:
        return "a claim with delta > 0: the per-guess bound behind the e-value needs delta = 0"
    if night.m < 1 or not night.guesses or sum(night.guesses) == 0:
        return "no guesses on this night"
    return None


def _finite(value: float) -> float | str:
    return "inf" if math.isinf(value) else value


def _exp(value: float) -> float:
    return math.exp(value) if value < 700 else math.inf
