"""Label-DP mechanisms, pure numpy (no CatBoost here): every random choice comes from a seeded
``numpy.random.Generator`` the caller passes in and records.

| name       | module                 | guarantee (unit: replacement of one label)                 | source                  |
|------------|------------------------|------------------------------------------------------------|-------------------------|
| none       | --                     | none (eps = inf)                                           |                         |
| rr         | randomized_response    | eps-label-DP, k-ary RR                                     | Warner 1965             |
| lp-1st     | rr_with_prior          | eps-label-DP, RR restricted to the prior's optimal top-k   | Ghazi et al. 2021       |
| lp-1st-nc  | noise_correction       | eps-label-DP (RR) + post-hoc inversion of the flip rates   | paper Table 2           |
| lp-2st     | two_stage              | eps-label-DP, disjoint stages (parallel composition)       | Ghazi et al. 2021       |
| alibi      | alibi                  | eps-label-DP, Laplace(2/eps) on one-hot + Bayesian soft    | Malek et al. 2021       |
| pate       | pate                   | (eps, delta)-label-DP over Q exponential-mechanism votes   | Papernot et al. 2017    |

All guarantees are stated for the replacement of one row's label; each implies the same eps for the
simulation-based DP (SIM-DP, add/remove model with the imputation simulator, paper Def. 2) that the paper's
observational audit lower-bounds: the simulator's output is a mixture over imputed labels of outputs each
within e^eps of the real one. ``pipelines.training`` wires these to CatBoost.
"""

MECHANISMS = ("none", "rr", "lp-1st", "lp-1st-nc", "lp-2st", "alibi", "pate")
