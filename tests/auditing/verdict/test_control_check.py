"""A control's outcome (auditing/verdict/control_check.py): read from its JSON by `labeldp.codec.decode` and written
back by `labeldp.codec.encode` exactly as it came, refusing an unknown or bad field by name (the record check_control
builds: tests/behaviour/test_night_records.py)."""

from __future__ import annotations

import json

import pytest

from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from tests.support.night_records import NEGATIVE_CHECK, POSITIVE_CHECK


@pytest.mark.parametrize("data", [POSITIVE_CHECK, NEGATIVE_CHECK], ids=["positive", "negative"])
def test_a_control_check_is_written_back_as_it_was_read(data):
    from auditing.verdict.control_check import ControlCheck

    check = decode(ControlCheck, data, "control")
    assert json.dumps(encode(check)) == json.dumps(data)
    assert decode(ControlCheck, json.loads(json.dumps(encode(check))), "control") == check


@pytest.mark.parametrize("change, message", [
    ({"verdict": 1}, r"control: unknown field\(s\) \['verdict'\]"),
    ({"control": "sideways"}, r"control\.control must be one of"),
    ({"passed": "yes"}, r"control\.passed: expected true or false"),
    ({"floor": "0.8"}, r"control\.floor: expected a number"),
    ({"ceiling": None}, r"control\.ceiling: expected a number"),
    ({"message": ""}, r"control\.message must be non-empty text"),
    ({"floor_detail": [0.8]}, r"control\.floor_detail: expected a mapping"),
])
def test_a_bad_control_check_is_refused_naming_the_field(change, message):
    from auditing.verdict.control_check import ControlCheck

    with pytest.raises(LabelDPInputError, match=message):
        decode(ControlCheck, {**POSITIVE_CHECK, **change}, "control")
    with pytest.raises(LabelDPInputError, match=r"control: missing field\(s\) \['message'\]"):
        decode(ControlCheck, {k: v for k, v in POSITIVE_CHECK.items() if k != "message"}, "control")
