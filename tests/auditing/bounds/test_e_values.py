"""The nightly e-values (auditing/bounds/e_values.py, docs/soundness.md section 10): the likelihood ratio is an
e-value under the claim only with its clamp; the null rate and the plug-in alternative."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from auditing.bounds.e_values import log_likelihood_ratio, null_rate, plug_in_alternative
from labeldp.errors import LabelDPInputError


def test_the_likelihood_ratio_is_an_e_value_exactly_and_needs_the_clamp():
    """E[LR] under Binomial(c', p) for p <= q0 is at most 1 (exact sums); with q1 < q0 it exceeds 1 at p = 0."""
    for guesses, q0 in ((1, 0.6), (40, 0.731), (500, 0.9)):
        k = np.arange(guesses + 1)
        for q1 in (q0, q0 + 0.5 * (1 - q0), 1 - 1e-6):
            lr = np.exp(log_likelihood_ratio(k, np.full_like(k, guesses), q0, q1))
            for p in (0.0, 0.3, q0 / 2, q0):
                assert float(np.sum(stats.binom.pmf(k, guesses, p) * lr)) <= 1 + 1e-9
    with pytest.raises(LabelDPInputError, match="q0 <= q1"):
        log_likelihood_ratio([0], [10], 0.7, 0.6)
    # why: below q0 a wrong guess weighs more than 1, so an attacker that is never right would "win"
    assert (1 - 0.6) / (1 - 0.7) > 1
    assert null_rate(1.0, 0.25) == pytest.approx(special.expit(1.25))
    q1 = plug_in_alternative(0.7, [0.0, 90.0, 10.0], [0.0, 100.0, 100.0])
    assert q1[0] == pytest.approx(special.expit(special.logit(0.7) + 0.5)) and q1[1] > q1[0] and q1[2] == 0.7
