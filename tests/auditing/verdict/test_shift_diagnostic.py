"""The shift diagnostic's record (auditing/verdict/shift_diagnostic.py): read from its JSON by `labeldp.codec.decode`
and written back by `labeldp.codec.encode` exactly as it came (None kept as None), refusing an unknown or bad field
by name."""

from __future__ import annotations

import json

import pytest

from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from tests.support.night_records import DAYS, FAILED, FIGURES_SHAPE, NOT_COMPUTED, SHIFT


@pytest.mark.parametrize("data", [FIGURES_SHAPE, NOT_COMPUTED, FAILED], ids=["figures", "not-computed", "error"])
def test_a_shift_diagnostic_is_written_back_as_it_was_read(data):
    from auditing.verdict.shift_diagnostic import ShiftDiagnostic

    diagnostic = decode(ShiftDiagnostic, data, "shift_diagnostic")
    assert json.dumps(encode(diagnostic)) == json.dumps(data)  # keys, their order, None kept as None
    assert decode(ShiftDiagnostic, json.loads(json.dumps(encode(diagnostic))), "shift_diagnostic") == diagnostic
    assert diagnostic.computed == (data is FIGURES_SHAPE)


@pytest.mark.parametrize("data, message", [
    ({**FIGURES_SHAPE, "tau": 0.1}, r"shift_diagnostic: unknown field\(s\) \['tau'\]"),
    ({k: v for k, v in FIGURES_SHAPE.items() if k != "reference_ece_shift"},
     r"shift_diagnostic: missing field\(s\) \['reference_ece_shift'\]"),
    ({**FIGURES_SHAPE, "days": {**DAYS, "current": "2024-02-30"}}, r"shift_diagnostic\.days\.current: expected an ISO date"),
    ({**FIGURES_SHAPE, "reference_log_loss_shift": "0.1"}, r"shift_diagnostic\.reference_log_loss_shift: expected a "
                                                          "number"),
    ({**FIGURES_SHAPE, "reference_fit": {**FIGURES_SHAPE["reference_fit"], "previous": {"rows": 1}}},
     r"shift_diagnostic\.reference_fit\.previous: missing"),
    ({**FIGURES_SHAPE, "feature_shift": {**SHIFT, "top": [{"feature": "C9"}]}},
     r"shift_diagnostic\.feature_shift\.top\[0\]: missing field\(s\) \['psi'\]"),
    ({**NOT_COMPUTED, "reference_fit": {}}, r"shift_diagnostic: unknown field\(s\) \['reference_fit'\]"),
    ({**FAILED, "days": DAYS}, r"shift_diagnostic: unknown field\(s\) \['days'\]"),
    ("not json", r"shift_diagnostic: expected a record \(mapping\)"),
])
def test_a_bad_shift_diagnostic_is_refused_naming_the_field(data, message):
    from auditing.verdict.shift_diagnostic import ShiftDiagnostic

    with pytest.raises(LabelDPInputError, match=message):
        decode(ShiftDiagnostic, data, "shift_diagnostic")
