"""The verdict's records (auditing/verdict/types.py): a void night's reason read back, which trust states exit 4,
a decision's words, and the flat trust figures read from a mapping or a stored row. How they are decided:
tests/auditing/verdict/test_trust.py and test_decision.py."""

from types import SimpleNamespace

import pytest

from auditing.verdict.types import (
    DECISIONS,
    EXITS_UNTRUSTED,
    HEADLINES,
    MEANINGS,
    TRUST_STATES,
    Decision,
    Trust,
    TrustFigures,
    is_void_night,
    void_night_reason,
)


def test_a_void_night_s_reason_opens_with_its_marker_and_is_recognised():
    reason = void_night_reason("the negative control failed")
    assert reason == "the night is void: the negative control failed" and is_void_night(reason)
    for other in (None, "", "the capacity check does not vouch for it", "not the night is void"):
        assert not is_void_night(other), other


def test_only_untrusted_and_unchecked_verdicts_exit_untrusted():
    assert EXITS_UNTRUSTED == ("untrusted", "reference unchecked")
    for state in TRUST_STATES:
        trust = Trust(state, None)
        assert trust.exits_untrusted == (state in EXITS_UNTRUSTED) and trust.trusted == (state == "trusted")


def test_every_decision_has_its_headline_and_meaning():
    assert set(HEADLINES) == set(MEANINGS) == set(DECISIONS) == {"act", "unconfirmed", "no_evidence", "no_power"}
    decision = Decision("unconfirmed", "why")
    assert decision.headline == "unconfirmed leak" and decision.meaning == MEANINGS["unconfirmed"]
    with pytest.raises(KeyError):
        Decision("maybe", "why").headline  # noqa: B018


def test_trust_figures_are_read_from_a_mapping_or_a_row_and_what_is_missing_is_none():
    from_mapping = TrustFigures.read({"trust": "trusted", "check_rows": 5, "unrelated": 1})
    from_row = TrustFigures.read(SimpleNamespace(trust="trusted", check_rows=5, other="x"))
    assert from_mapping == from_row == TrustFigures(trust="trusted", check_rows=5)
    assert from_row.epsilon_check is None and from_row.untrusted_reason is None
