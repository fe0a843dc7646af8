"""A record's JSON object read at its edge (`labeldp.records.record_keys`): a mapping with only the allowed keys and
every required one, or LabelDPInputError naming the record and the keys."""

from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType

import pytest

from labeldp.errors import LabelDPInputError
from labeldp.records import record_keys

ALLOWED = ("scheme", "kind", "buckets", "counts")


def test_a_mapping_with_allowed_and_required_keys_is_returned_as_it_is():
    value = {"scheme": "fixed", "counts": [1]}
    assert record_keys(value, "prior", ALLOWED, ("scheme",)) is value
    frozen = MappingProxyType({"kind": "x"})
    assert record_keys(frozen, "prior", ALLOWED, ()) is frozen
    assert record_keys({}, "prior", ALLOWED, ()) == {}


@pytest.mark.parametrize(("value", "kind"), [([], "list"), (None, "NoneType"), ("{}", "str"), (3, "int")])
def test_a_value_that_is_not_a_mapping_is_refused_naming_the_record_and_its_type(value, kind):
    with pytest.raises(LabelDPInputError) as refused:
        record_keys(value, "prior", ALLOWED, ())
    assert str(refused.value) == f"prior must be a dict; got {kind}"


def test_unknown_keys_are_refused_sorted_with_the_allowed_ones_in_their_order():
    with pytest.raises(LabelDPInputError) as refused:
        record_keys(OrderedDict([("zeta", 1), ("scheme", "x"), ("alpha", 2)]), "prior", ALLOWED, ())
    assert str(refused.value) == ("prior: unknown key(s) ['alpha', 'zeta']; "
                                  "allowed: ['scheme', 'kind', 'buckets', 'counts']")


def test_unknown_keys_are_named_before_missing_ones():
    with pytest.raises(LabelDPInputError, match=r"unknown key\(s\) \['other'\]"):
        record_keys({"other": 1}, "prior", ALLOWED, ("scheme",))


def test_missing_required_keys_are_named_in_their_order():
    with pytest.raises(LabelDPInputError) as refused:
        record_keys({"kind": "x"}, "prior", ALLOWED, ("scheme", "counts"))
    assert str(refused.value) == "prior: missing ['scheme', 'counts']"


def test_a_null_value_counts_as_missing_only_when_asked():
    value = {"scheme": None, "counts": [1]}
    assert record_keys(value, "prior", ALLOWED, ("scheme", "counts")) is value
    with pytest.raises(LabelDPInputError, match=r"^prior: missing \['scheme'\]$"):
        record_keys(value, "prior", ALLOWED, ("scheme", "counts"), null_is_missing=True)
    falsy = {"scheme": "", "counts": []}  # present and not null: not missing
    assert record_keys(falsy, "prior", ALLOWED, ("scheme", "counts"), null_is_missing=True) is falsy
