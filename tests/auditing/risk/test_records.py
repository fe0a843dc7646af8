"""The risk figures as records (auditing/risk/records.py): a block's stored form leaves out what was not computed,
and an assessment's columns are each block's stored figures under its prefix. How the figures are computed:
tests/auditing/risk/test_figures.py."""

from auditing.risk.records import RISK_SCALARS, PriorBucket, RiskAssessment, RiskBlock
from labeldp.codec import decode, encode

NO_PRIORS = RiskBlock(epsilon=1.0, delta=0.0, mia_advantage_bound=0.46, aia_advantage_bound=0.73, rows=0)
WITH_PRIORS = RiskBlock(epsilon=0.5, delta=0.0, mia_advantage_bound=0.24, aia_advantage_bound=0.62, rows=100,
                        prior_kind="class1", prior_median=0.03, posterior_ceiling_median=0.05,
                        reconstruction_bound=0.3, prior_buckets=(PriorBucket(0.0, 0.1, 100, 0.03, 0.05),),
                        mu=0.4, reconstruction_bound_gdp=0.2)


def test_a_block_stores_prior_and_gaussian_figures_only_when_computed():
    stored = encode(NO_PRIORS)
    assert "prior_kind" not in stored and "prior_buckets" not in stored and "mu" not in stored
    assert "reconstruction_bound_gdp" not in stored and stored["reconstruction_bound"] == 1.0
    full = encode(WITH_PRIORS)
    assert full["prior_kind"] == "class1" and full["mu"] == 0.4 and len(full["prior_buckets"]) == 1
    for block in (NO_PRIORS, WITH_PRIORS):
        assert decode(RiskBlock, encode(block)) == block


def test_the_columns_are_the_claim_s_and_the_bound_s_stored_figures_under_their_prefixes():
    columns = RiskAssessment(claimed=WITH_PRIORS, demonstrated=NO_PRIORS, headline="h").columns()
    assert list(columns) == [*(f"risk_{n}" for n in RISK_SCALARS), *(f"risk_lb_{n}" for n in RISK_SCALARS),
                             "risk_headline"]
    assert columns["risk_posterior_ceiling_median"] == 0.05 and columns["risk_lb_mia_advantage_bound"] == 0.46
    assert columns["risk_lb_posterior_ceiling_median"] is None and columns["risk_headline"] == "h"
    assert "mu" not in RISK_SCALARS and "prior_median" not in RISK_SCALARS  # only the declared stored figures
    without_bound = RiskAssessment(claimed=NO_PRIORS, demonstrated=None, headline="h").columns()
    assert all(without_bound[f"risk_lb_{n}"] is None for n in RISK_SCALARS)
    assert without_bound["risk_reconstruction_bound"] == 1.0
