"""What an epsilon means for the people in the data: attack-success ceilings implied by a DP guarantee.

Pure numpy/scipy. Every function takes the guarantee (eps, and delta where the source gives a delta form) and
the adversary's prior, and returns the most an attacker can achieve against ANY mechanism with that guarantee.
The sources:

* [BWC] Swanberg et al. 2025, "Beyond the Worst Case: Extending Differential Privacy Guarantees to Realistic
  Adversaries", arXiv:2507.08158: the posterior ceiling beta(eps, p) = e^eps / (e^eps - 1 + 1/p)
  = sigmoid(eps + logit p) of one attack attempt whose prior success is p (Theorem 3.2, n = 1), with delta
  (Theorem 3.5, n = 1); the column bound: the number of successful attempts among n independent targets is
  stochastically dominated by a Poisson-binomial with success probabilities beta(eps, p_i) (Theorem 3.2),
  + alpha n delta (Theorem 3.5); the generalised advantage (posterior - prior) / (1 - prior) and eps_protect
  (Section 5.3).
* [ARD] Guerra-Balboa et al. 2024, "Analysis and Measurement of Attack Resilience of Differential Privacy"
  (WPES '24, doi:10.1145/3689943.3695046): the membership-inference advantage (e^eps - 1 + 2 delta) /
  (e^eps + 1) (Theorem 4.9), and the attribute-inference / U-ReRo bounds (Theorem 7.2, Theorem 7.3, Eq. 6,
  Section 8.2, Table 2).
* [BRD] Hayes et al. 2023, "Bounding Training Data Reconstruction in DP-SGD", arXiv:2302.07225: reconstruction
  success <= the blow-up 1 - f(prior) of the mechanism's trade-off function f at the attack's prior success
  (Theorem 2 with Remark 3), which for mu-Gaussian-DP is Phi(Phi^-1(prior) + mu) (their Table 2 uses one
  unsampled DP-SGD step, mu = 1/sigma); the advantage (success - prior) / (1 - prior) (Eq. 4). The paper writes
  the prior success as kappa; here it is always ``prior`` (``prior_max`` / ``prior_min`` for [ARD]'s largest and
  smallest prior probability), since kappa is this project's robustness parameter (docs/soundness.md).

Priors for a day of CTR data are the reference model's click probabilities over the audited rows. They travel
as a claim-free `PriorHistogram` (fixed buckets in logit space, integer counts, so that it merges exactly across
batches and runners); `risk_block` turns a histogram and a claimed or demonstrated (eps, delta) into the figures
shown beside the bound. Bad input raises `LabelDPInputError` naming the argument and the count of bad values.

The code is split by what it computes; every name is importable from here:

* `auditing.risk.attack_bounds`: one target (posterior ceiling, advantages, membership / attribute inference,
  reconstruction) and the argument checks;
* `auditing.risk.column_bound`: n targets (the Poisson-binomial column bound, exact or saddlepoint, and eps_protect);
* `auditing.game.prior_histogram`: `PriorHistogram`;
* `auditing.risk.records`: the records they fill (`RiskBlock`, `RiskAssessment` with its flat columns);
* this module: the risk block and assessment built from them.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from auditing.bounds.gaussian_dp import mu_for_epsilon
from auditing.bounds.params import check_delta
from auditing.game.prior_histogram import PriorHistogram
from auditing.result import AuditResult
from auditing.risk.attack_bounds import (
    aia_advantage_bound,
    check_epsilon,
    mia_advantage_bound,
    posterior_ceiling,
    reconstruction_bound_dp,
    reconstruction_bound_gdp,
)
from auditing.risk.column_bound import column_bound
from auditing.risk.records import RISK_SCALARS, PriorBucket, RiskAssessment, RiskBlock

__all__ = [
    "COLUMN_FRACTION", "HIGH_PRIOR", "PRIOR_BUCKET_EDGES", "RISK_SCALARS", "PriorBucket", "RiskAssessment",
    "RiskBlock", "headline", "risk_assessment", "risk_block",
]

# "At least 1% of the day's clicks inferred": the column figure's threshold beyond the reference's own guess.
COLUMN_FRACTION = 0.01
# The rows the reference puts at or above this click probability get their own conditional figures.
HIGH_PRIOR = 0.10
# The conditional rates per prior bucket shown in the report (edges on the reference's click probability).
PRIOR_BUCKET_EDGES = (0.0, 0.01, 0.05, 0.10, 0.50, 1.0)


# ------------------------------------------------------------------------------------------ the risk block


def risk_block(eps: float, delta: float, histogram: PriorHistogram | None, mu: float | None = None) -> RiskBlock:
    """The figures shown beside a claimed or demonstrated (eps, delta), from the day's priors.

    * posterior_ceiling_median / _p90: beta(eps, p) + (1 - beta) delta at the median / 90th-percentile
      reference click probability ([BWC] Thm 3.2/3.5, n = 1): how often a "this person clicked" guess can be
      right for such a row (the prior is the reference's probability).
    * high_prior_rows / high_prior_mean / high_prior_ceiling: the rows the reference puts at >= 10% (buckets
      whose midpoint is >= 10%, so to 1/32 in logit), their mean prior and their mean posterior ceiling (the
      conditional rate; the day's average hides it).
    * column_*: over the n audited rows, an attacker guessing every label (prior success q_i = max(p_i,
      1 - p_i), the a-priori Bayes-optimal attempt of [BWC] Theorem 3.5; any other attempt has a smaller
      prior success, hence is dominated too) gets S labels right. column_baseline = sum q_i (the reference's own
      expected score), column_t = ceil(baseline + 1% of the expected clicks), column_tail_bound = bound on
      P[S >= column_t], column_tail_prior = the same at eps = 0 (chance alone), column_expected = bound on E[S].
    * prior_buckets: the same conditional rate for every band of PRIOR_BUCKET_EDGES (rows, mean prior, mean
      posterior ceiling).
    * mia_advantage_bound ([ARD] Thm 4.9), aia_advantage_bound (binary label, uniform prior, [ARD] Eq. 6 /
      Sec. 8.1-8.2), reconstruction_bound: reconstructing "clicked" for a 90th-percentile row (prior success
      reconstruction_prior = p90): 1 - f(p90) with f the (eps, delta) trade-off ([BRD] Thm 2), and with ``mu``
      (a Gaussian-DP audit) the Gaussian form Phi(Phi^-1(p90) + mu) as reconstruction_bound_gdp.

    Without a histogram (None or empty) only epsilon, delta, rows = 0, the membership / attribute bounds and
    the reconstruction bound at prior success 0.5 are filled. Raises LabelDPInputError for a bad eps or delta.
    """
    eps = check_epsilon(eps)
    delta = check_delta(delta)
    common = {"epsilon": eps, "delta": delta, "mia_advantage_bound": mia_advantage_bound(eps, delta),
              "aia_advantage_bound": aia_advantage_bound(eps, 2, delta=delta)}
    if histogram is None or histogram.total == 0:
        gdp = {} if mu is None else {"mu": float(mu), "reconstruction_bound_gdp": float(reconstruction_bound_gdp(mu, 0.5))}
        return RiskBlock(**common, rows=0, reconstruction_prior=0.5,
                         reconstruction_bound=float(reconstruction_bound_dp(eps, delta, 0.5)), **gdp)
    p, c = histogram.nonzero()
    n = int(c.sum())
    median, p90 = histogram.quantile(0.5), histogram.quantile(0.9)
    q = np.maximum(p, 1.0 - p)
    baseline = float(np.sum(c * q))
    positives = float(np.sum(c * p)) if histogram.kind == "class1" else float(np.sum(c * (1.0 - q)))
    t = min(n, max(1, math.ceil(baseline + COLUMN_FRACTION * positives - 1e-9)))
    col = column_bound(eps, q, t, delta=delta, counts=c)
    prior_tail = column_bound(0.0, q, t, counts=c).tail
    high = p >= HIGH_PRIOR
    high_rows = int(c[high].sum())
    gdp = {} if mu is None else {"mu": float(mu), "reconstruction_bound_gdp": float(reconstruction_bound_gdp(mu, p90))}
    return RiskBlock(
        **common, rows=n, prior_kind=histogram.kind, prior_median=median, prior_p90=p90,
        posterior_ceiling_median=float(posterior_ceiling(eps, median, delta)),
        posterior_ceiling_p90=float(posterior_ceiling(eps, p90, delta)),
        high_prior_threshold=HIGH_PRIOR, high_prior_rows=high_rows,
        high_prior_mean=float(np.sum(c[high] * p[high]) / high_rows) if high_rows else None,
        high_prior_ceiling=(float(np.sum(c[high] * posterior_ceiling(eps, p[high], delta)) / high_rows)
                            if high_rows else None),
        expected_positives=positives, column_baseline=baseline, column_t=int(t),
        column_tail_bound=col.tail, column_tail_prior=float(prior_tail), column_expected=col.expected,
        column_method=col.method, reconstruction_prior=p90,
        reconstruction_bound=float(reconstruction_bound_dp(eps, delta, p90)),
        prior_buckets=_prior_buckets(eps, delta, p, c), **gdp,
    )


def _prior_buckets(eps: float, delta: float, p: np.ndarray, c: np.ndarray) -> tuple[PriorBucket, ...]:
    """Conditional rates: per band of reference click probability (PRIOR_BUCKET_EDGES, by the histogram's bucket
    midpoints), the rows, their mean prior and their mean posterior ceiling ([BWC] Thm 3.2/3.5, n = 1)."""
    ceilings = np.asarray(posterior_ceiling(eps, p, delta), dtype=np.float64).reshape(-1)
    out = []
    for lo, hi in itertools.pairwise(PRIOR_BUCKET_EDGES):
        inside = (p >= lo) & ((p < hi) if hi < 1.0 else (p <= hi))
        rows = int(c[inside].sum())
        out.append(PriorBucket(lo, hi, rows,
                               mean_prior=float(np.sum(c[inside] * p[inside]) / rows) if rows else None,
                               mean_ceiling=float(np.sum(c[inside] * ceilings[inside]) / rows) if rows else None))
    return tuple(out)


def risk_assessment(result: AuditResult, claimed_epsilon: float) -> RiskAssessment:
    """The risk figures of a claim and of what an audit demonstrated, both at the audited delta.

    Args:
        result: an audit result (AuditResult); its prior_histogram gives the priors.
        claimed_epsilon: the claim, >= 0 (inf allowed).
    Returns:
        The `RiskAssessment`: the claimed block, the demonstrated one (or None) and the headline. The demonstrated
        block uses the valid epsilon_lower_bound (None when the result is optimistic or has no bound); for
        method fdp its mu is the Gaussian-DP parameter the audit certified (mu_for_epsilon of the bound,
        auditing.bounds.gaussian_dp), for the claim the tightest mu consistent with (eps, delta) (the same inverse;
        none at delta = 0).
    Raises:
        LabelDPInputError: a bad claimed epsilon or an unknown prior histogram scheme.
    """
    claimed = check_epsilon(claimed_epsilon, "claimed epsilon")
    delta = float(result.bound.delta)
    histogram = result.prior_histogram if result.prior_histogram is not None and result.prior_histogram.total else None
    mu_claim = mu_for_epsilon(claimed, delta) if delta > 0.0 and not math.isinf(claimed) else None
    claimed_block, shown = risk_block(claimed, delta, histogram, mu=mu_claim), None
    eps_lb = result.epsilon_lower_bound
    if not result.optimistic and math.isfinite(float(eps_lb)):
        eps_lb = max(0.0, float(eps_lb))
        mu_lb = mu_for_epsilon(eps_lb, delta) if result.bound.method == "fdp" and delta > 0.0 else None
        shown = risk_block(eps_lb, delta, histogram, mu=mu_lb)
    return RiskAssessment(claimed_block, shown, headline(claimed_block, shown))


def _pct(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{100.0 * value:.3g}%" if value < 0.9995 else "100%"


def headline(claimed: RiskBlock, shown: RiskBlock | None, confirmed: bool = True) -> str:
    """One sentence: what the claim allows and what the bound demonstrates, in attack-success terms. Unconfirmed
    (the capacity check did not rule out the reference's misfit), the bound's part is conditional on kappa."""

    def ceiling(block: RiskBlock) -> str:
        if block.rows:
            return (f"a 'clicked' guess on a row the reference puts at {_pct(block.prior_p90)} can be right "
                    f"up to {_pct(block.posterior_ceiling_p90)} of the time")
        return f"membership inference advantage up to {_pct(block.mia_advantage_bound)}"

    text = f"The claimed eps={claimed.epsilon:.4g} allows: {ceiling(claimed)}"
    if shown is None:
        return text + "; the audit demonstrates nothing (no valid lower bound)."
    if shown.epsilon == 0.0:
        return text + "; the audit demonstrates no leakage beyond the prior (eps_lb = 0)."
    if not confirmed:
        return (text + f"; the measured eps_lb={shown.epsilon:.4g} would demonstrate: {ceiling(shown)}, if the "
                "reference's misfit is within kappa, which tonight's check could not confirm.")
    return text + f"; the measured eps_lb={shown.epsilon:.4g} demonstrates: {ceiling(shown)}."
