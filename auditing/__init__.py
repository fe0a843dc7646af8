"""The auditing stage of labeldp-audit: the observational label-inference game (paper Alg. 2), epsilon lower
bounds (Thm. 16/17 and Alg. 3), valid selection over the guess sweep, and repetitions.

The core modules are pure numpy/scipy (plus numba for one compiled recursion); no Beam, CatBoost, Prefect
or database imports. Sinks (warehouse writers, reports) live in their own subpackages.
"""
