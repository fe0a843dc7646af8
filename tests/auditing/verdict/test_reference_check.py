"""The reference check's record (auditing/verdict/reference_check.py): read from its JSON by `labeldp.codec.decode`
and written back by `labeldp.codec.encode` exactly as it came, refusing an unknown or bad field by name."""

from __future__ import annotations

import json

import pytest

from auditing.verdict.reference_check import ReferenceCheck
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from tests.support.night_records import CHECKED, FIGURES, LEGACY, SKIPPED


@pytest.mark.parametrize("data", [CHECKED, SKIPPED, LEGACY, {**CHECKED, "calibration": "none",
                                                             "calibration_figures": None, "note": "raw"}])
def test_a_reference_check_is_written_back_as_it_was_read(data):
    check = decode(ReferenceCheck, data, "reference_check")
    assert json.dumps(encode(check)) == json.dumps(data)  # same keys, same order, label_blind only when given
    assert decode(ReferenceCheck, encode(check), "reference_check") == check
    assert {**encode(check), "label_blind": encode(check.label_blind)} == {**data, "label_blind": data.get("label_blind")}


def test_the_nightly_producer_and_a_skipped_check_write_the_json_of_before():
    """The flows build the check; its JSON is the dict they built before it was typed."""
    check = ReferenceCheck("boost", True)
    assert encode(check) == {"calibration": "boost", "checked": True, "note": None, "calibration_figures": None}
    assert encode(check.skipped("no held-out rows")) == SKIPPED
    assert decode(ReferenceCheck, LEGACY, "reference_check").flagged and not decode(ReferenceCheck, CHECKED, "reference_check").flagged


@pytest.mark.parametrize("change, message", [
    ({"verdict": "ok"}, r"reference_check: unknown field\(s\) \['verdict'\]"),
    ({"checked": None}, r"reference_check\.checked: expected true or false; got None"),
    ({"calibration": "isotonic"}, r"reference_check\.calibration must be one of"),
    ({"checked": 1}, r"reference_check\.checked: expected true or false"),
    ({"note": ""}, r"reference_check\.note must be non-empty text"),
    ({"calibration_figures": {**FIGURES, "extra": 1}}, r"reference_check\.calibration_figures: unknown field\(s\) "
                                                       r"\['extra'\]"),
    ({"calibration_figures": {**FIGURES, "rounds": 2.5}}, r"reference_check\.calibration_figures\.rounds: expected "
                                                          "an integer"),
    ({"calibration_figures": {**FIGURES, "logloss_after": "0.4"}},
     r"reference_check\.calibration_figures\.logloss_after: expected a number"),
    ({"calibration_figures": {**FIGURES, "rows_validation": 0}},
     r"reference_check\.calibration_figures\.rows_validation must be >= 1"),
    ({"label_blind": {"epsilon_lower_bound": 0.1, "misfit_kappa": 0.2, "flagged": "no"}},
     r"reference_check\.label_blind\.flagged: expected true or false"),
    ({"checked": False, "note": None, "calibration_figures": None}, r"reference_check\.note is required"),
])
def test_a_bad_reference_check_is_refused_naming_the_field(change, message):
    with pytest.raises(LabelDPInputError, match=message):
        decode(ReferenceCheck, {**CHECKED, **change}, "reference_check")
    with pytest.raises(LabelDPInputError, match=r"reference_check: expected a record \(mapping\)"):
        decode(ReferenceCheck, [CHECKED], "reference_check")
