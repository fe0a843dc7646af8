"""Checked scalar values of a warehouse row (auditing/sinks/warehouse/values.py): every error names the column
and what it got."""

import math

import pytest

from auditing.sinks.warehouse.values import as_count, as_float, optional_float
from labeldp.errors import LabelDPInputError


def test_a_float_is_a_finite_number_infinity_only_when_allowed():
    assert as_float({"x": 3}, "x") == 3.0 and type(as_float({"x": 3}, "x")) is float
    assert as_float({"x": math.inf}, "x", allow_inf=True) == math.inf
    for bad, needle in ((True, "must be a number"), ("1.0", "must be a number"), (None, "must be a number"),
                        (math.nan, "must be a finite number"), (math.inf, "must be a finite number")):
        with pytest.raises(LabelDPInputError, match=f"bound {needle}; got"):
            as_float({"bound": bad}, "bound")
    with pytest.raises(LabelDPInputError, match="finite"):
        as_float({"x": math.nan}, "x", allow_inf=True)


def test_a_count_is_a_whole_number_at_least_zero():
    assert as_count({"m": 7.0}, "m") == 7 and type(as_count({"m": 7.0}, "m")) is int and as_count({"m": 0}, "m") == 0
    for bad in (-1, 2.5, False, "3"):
        with pytest.raises(LabelDPInputError, match=r"m must be a whole number >= 0; got"):
            as_count({"m": bad}, "m")


def test_an_optional_float_is_none_or_within_its_limits():
    assert optional_float({}, "p") is None and optional_float({"p": None}, "p") is None
    assert optional_float({"p": 0.5}, "p", high=1.0) == 0.5 and optional_float({"p": 1e9}, "p") == 1e9
    with pytest.raises(LabelDPInputError, match=r"p must be a finite number in \[0, 1\] or None; got 1.5"):
        optional_float({"p": 1.5}, "p", high=1.0)
    with pytest.raises(LabelDPInputError, match=r"p must be a finite number >= 0 or None; got -0.5"):
        optional_float({"p": -0.5}, "p")
    with pytest.raises(LabelDPInputError, match="finite"):
        optional_float({"p": math.inf}, "p")
