"""The bound methods' registry (auditing/bounds/methods.py): each registered method answers its two questions
with its own module's functions, and a rejected epsilon lies at or below the method's bound."""

import pytest

from auditing.bounds.binomial import binomial_epsilon_lower_bound
from auditing.bounds.fdp import fdp_epsilon_lower_bound, fdp_mu_lower_bound
from auditing.bounds.methods import Binomial, FDPCurve, bound_method, method_names
from labeldp.errors import LabelDPInputError

POINT = dict(correct=90, guesses=100, m=1000)


def test_the_methods_are_named_and_looked_up_by_name_or_instance():
    assert method_names()[:2] == ("binomial", "fdp")
    assert isinstance(bound_method("binomial"), Binomial) and isinstance(bound_method("fdp"), FDPCurve)
    method = FDPCurve()
    assert bound_method(method) is method
    with pytest.raises(LabelDPInputError, match="my_method"):
        bound_method("no-such-method", "my_method")


@pytest.mark.parametrize("name, delta", [("binomial", 0.0), ("binomial", 1e-6), ("fdp", 1e-5)])
def test_a_method_bounds_with_its_module_and_rejects_just_below_its_bound(name, delta):
    method = bound_method(name)
    settings = dict(delta=delta, confidence=0.95, kappa=0.1)
    bound = method.epsilon_lower_bound(*POINT.values(), **settings)
    direct = binomial_epsilon_lower_bound if name == "binomial" else fdp_epsilon_lower_bound
    assert bound == direct(*POINT.values(), **settings) and bound > 0
    assert method.rejects(*POINT.values(), 0.9 * bound, **settings)
    assert not method.rejects(*POINT.values(), bound + 0.5, **settings)


def test_only_the_binomial_pure_bound_is_closed_form_and_only_fdp_reads_mu_at_kappa_zero():
    assert Binomial().closed_form(0.0) and not Binomial().closed_form(1e-6) and not FDPCurve().closed_form(0.0)
    assert Binomial().gaussian_reading(*POINT.values(), confidence=0.95, kappa=0.0) is None
    mu = FDPCurve().gaussian_reading(*POINT.values(), confidence=0.95, kappa=0.0)
    assert mu == pytest.approx(float(fdp_mu_lower_bound(*POINT.values(), confidence=0.95))) and mu > 0
    assert FDPCurve().gaussian_reading(*POINT.values(), confidence=0.95, kappa=0.1) is None
