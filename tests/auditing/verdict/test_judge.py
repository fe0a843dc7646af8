"""judge (auditing/verdict/judge.py) takes the night's typed records, never their dicts."""

from __future__ import annotations

import pytest

from tests.support.night_records import CHECKED, FAILED, NEGATIVE_CHECK


def test_judge_refuses_a_records_dict():
    """The records are read from their JSON once, at the edge: judge takes the typed record, never its dict."""
    from auditing.verdict.judge import judge

    for name, value in (("reference_check", CHECKED), ("shift_diagnostic", FAILED), ("control", NEGATIVE_CHECK)):
        with pytest.raises(TypeError, match=rf"^{name} must be a \w+ \(its JSON is read by"):
            judge(None, 1.0, **{name: value})
