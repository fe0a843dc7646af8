"""The risk figures as records: one block per (eps, delta) guarantee, the assessment of a claim and of a bound, and
the posterior-ceiling series the report draws. Data only (`auditing.risk.figures` computes them), so the verdict
that carries them imports no risk math."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from labeldp.stored import NUMBER, TEXT, Prefix, prefix_of, stored, stored_fields, stored_under, stored_values

# A risk block is stored twice in a warehouse row (`RiskAssessment.columns`): at the claim and at the valid bound.
CLAIMED = Prefix("risk_", "at the claimed eps")
DEMONSTRATED = Prefix("risk_lb_", "at the valid eps_lb")
# The group of a risk block's stored figures that exist without the day's priors (stored after the others).
NO_PRIOR = "no_prior"


@dataclass(frozen=True)
class PriorBucket:
    """One band [low, high) of the reference's click probability (the last band includes 1): its rows, their mean
    prior and their mean posterior ceiling (None for an empty band)."""

    low: float
    high: float
    rows: int
    mean_prior: float | None
    mean_ceiling: float | None


# The figures a risk block has only when the day's priors are known (`RiskBlock.rows` > 0).
_PRIOR_FIGURES = ("prior_kind", "prior_median", "prior_p90", "posterior_ceiling_median", "posterior_ceiling_p90",
                  "high_prior_threshold", "high_prior_rows", "high_prior_mean", "high_prior_ceiling",
                  "expected_positives", "column_baseline", "column_t", "column_tail_bound", "column_tail_prior",
                  "column_expected", "column_method", "prior_buckets")
# The figures of a Gaussian-DP reading (`RiskBlock.mu` set).
_GDP_FIGURES = ("mu", "reconstruction_bound_gdp")


@dataclass(frozen=True)
class RiskBlock:
    """The figures shown beside one (eps, delta) guarantee (`risk_block` says what each one is). Without the day's
    priors (``rows`` = 0) the prior figures are None and the reconstruction prior is 0.5; without a Gaussian
    reading ``mu`` and ``reconstruction_bound_gdp`` are None. its stored form leaves out the figures not computed."""

    epsilon: float
    delta: float
    mia_advantage_bound: float = stored(
        NUMBER, "membership-inference advantage bound (e^eps - 1 + 2 delta) / (e^eps + 1)", high=1.0, group=NO_PRIOR)
    aia_advantage_bound: float = stored(
        NUMBER, "attribute (label) inference advantage bound, binary label, uniform prior", high=1.0, group=NO_PRIOR)
    rows: int
    prior_kind: str | None = None
    prior_median: float | None = None
    prior_p90: float | None = None
    posterior_ceiling_median: float | None = stored(
        NUMBER, "most often a 'clicked' guess can be right on a median-prior row", high=1.0, default=None)
    posterior_ceiling_p90: float | None = stored(
        NUMBER, "most often a 'clicked' guess can be right on a 90th-percentile-prior row", high=1.0, default=None)
    high_prior_threshold: float | None = None
    high_prior_rows: int | None = None
    high_prior_mean: float | None = None
    high_prior_ceiling: float | None = stored(
        NUMBER, "mean posterior ceiling over rows the reference puts at >= 10% click probability", high=1.0,
        default=None)
    expected_positives: float | None = None
    column_baseline: float | None = None
    column_t: int | None = None
    column_tail_bound: float | None = stored(
        NUMBER, "bound on P[attacker labels >= 1% of the expected clicks more rows right than the reference's own "
        "guess]", high=1.0, default=None)
    column_tail_prior: float | None = None
    column_expected: float | None = stored(
        NUMBER, "bound on the expected number of audited rows an attacker labels right", default=None)
    column_method: str | None = None
    reconstruction_prior: float = 0.5
    reconstruction_bound: float = stored(
        NUMBER, "bound on reconstructing 'clicked' for a 90th-percentile-prior row", high=1.0, group=NO_PRIOR,
        default=1.0)
    prior_buckets: tuple[PriorBucket, ...] = ()
    mu: float | None = None
    reconstruction_bound_gdp: float | None = None

    # Its stored form leaves out the figures not computed (the codec writes it through this hook).
    def _encoded(self) -> dict:
        out = {}
        for f in fields(self):
            if (f.name in _PRIOR_FIGURES and not self.rows) or (f.name in _GDP_FIGURES and self.mu is None):
                continue
            value = getattr(self, f.name)
            out[f.name] = value
        return out


RISK_SCALARS = tuple(name for name, _, _ in stored_fields(RiskBlock))
"""The figures of a risk block stored as warehouse columns (risk_<figure>, risk_lb_<figure>): its stored fields."""


@dataclass(frozen=True)
class RiskAssessment:
    """The risk figures of a claim and of what an audit demonstrated (None: no valid lower bound), both at the
    audited delta, and the sentence that sums them up."""

    claimed: RiskBlock = field(metadata=stored_under(CLAIMED))
    demonstrated: RiskBlock | None = field(metadata=stored_under(DEMONSTRATED))
    headline: str = stored(TEXT, "one sentence: what the claim allows and what the bound demonstrates",
                           column="risk_headline")

    def columns(self) -> dict:
        """The stored figures as flat warehouse / JSON columns: each risk block's (`RiskBlock`'s stored fields)
        under the prefix its field declares (`CLAIMED` for the claim, `DEMONSTRATED` for the demonstrated bound;
        None where not computed), and risk_headline."""
        blocks = [(getattr(self, item.name), prefix_of(item)) for item in fields(self) if prefix_of(item) is not None]
        return {**{column: value for block, prefix in blocks
                   for column, value in stored_values(RiskBlock, block, prefix).items()},
                **stored_values(RiskAssessment, self)}


@dataclass(frozen=True)
class PosteriorCurve:
    """The report chart's series: the posterior ceiling at each prior of ``priors`` for the claimed and the
    demonstrated eps (None: no valid lower bound)."""

    priors: tuple[float, ...]
    claimed_epsilon: float
    claimed: tuple[float, ...]
    demonstrated_epsilon: float | None
    demonstrated: tuple[float, ...] | None
