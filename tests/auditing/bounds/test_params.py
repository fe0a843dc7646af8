"""The bound's shared scalar checks (auditing/bounds/params.py): each error names the argument and what it got."""

import pytest

from auditing.bounds.params import (
    check_confidence,
    check_counts,
    check_delta,
    check_kappa,
    legacy_tau_warning,
)
from labeldp.errors import LabelDPInputError


def test_confidence_delta_and_kappa_keep_their_ranges_and_name_the_argument():
    assert check_confidence(0.95) == 0.95 and check_delta(0) == 0.0 and check_kappa(0.7) == 0.7
    for check, bad in ((check_confidence, 0), (check_confidence, 1), (check_delta, 1), (check_delta, -1e-9),
                       (check_kappa, -0.1), (check_kappa, float("inf"))):
        with pytest.raises(LabelDPInputError, match="my_arg"):
            check(bad, name="my_arg")


def test_counts_must_satisfy_correct_at_most_guesses_at_most_m():
    assert check_counts(3, 5, 10) == (3, 5, 10)
    assert check_counts(3.0, 5.0, 10.0) == (3, 5, 10) and type(check_counts(3.0, 5, 10)[0]) is int
    for args, needle in (((6, 5, 10), "correct"), ((3, 11, 10), "guesses"), ((0, 0, 0), "m "),
                         ((-1, 5, 10), "correct"), ((1.5, 5, 10), "correct must be a whole number"),
                         ((True, 5, 10), "correct must be a whole number")):
        with pytest.raises(LabelDPInputError, match=needle):
            check_counts(*args)


def test_legacy_tau_zero_is_ignored_with_a_warning_any_other_value_refused():
    warning = legacy_tau_warning(0, "plan audit")
    assert warning.startswith("plan audit: tau is no longer used") and "kappa" in warning
    assert legacy_tau_warning("0.0", "cli").startswith("cli:")
    for bad in (0.01, -0.1, "x", None):
        with pytest.raises(LabelDPInputError, match=r"tau = .* is refused"):
            legacy_tau_warning(bad, "plan audit")
