"""Library errors name the field they are about; the command line maps fields to its flags (`labeldp.errors`,
`flows.cli.error_text`): the same bad value says ``reference`` to a library caller and ``--reference`` to a
user of `labeldp-audit score`. What the command line prints: tests/flows/test_cli.py."""

from __future__ import annotations

import datetime as dt
import pickle

import pytest

from labeldp.errors import LabelDPInputError, mention

DAY = dt.date(2024, 1, 2)


def test_the_leading_field_name_is_marked_and_mapped():
    exc = LabelDPInputError("model must be a safe name; got 'a/b' (model of the night)", field="model")
    assert exc.field == "model" and str(exc) == exc.args[0] == "model must be a safe name; got 'a/b' (model of the night)"
    assert exc.for_flags({"model": "--model"}) == "--model must be a safe name; got 'a/b' (model of the night)"
    assert exc.for_flags({"reference": "--reference"}) == str(exc)  # no flag for the field: its plain name


def test_only_a_whole_leading_word_is_the_field():
    exc = LabelDPInputError("models must be listed", field="model")
    assert exc.for_flags({"model": "--model"}) == "models must be listed"


def test_a_field_named_elsewhere_is_mentioned():
    exc = LabelDPInputError(f"no partition; pass the right {mention('data_root')}, or {mention('replace')}",
                            field="data_root")
    assert str(exc) == "no partition; pass the right data_root, or replace"
    assert exc.for_flags({"data_root": "--data-root", "replace": "--replace"}) == \
        "no partition; pass the right --data-root, or --replace"


def test_a_message_without_a_field_is_unchanged():
    exc = LabelDPInputError("x must be 1; got 2")
    assert exc.field is None and exc.for_flags({"x": "--x"}) == str(exc) == "x must be 1; got 2"


def test_the_field_survives_pickling():
    exc = pickle.loads(pickle.dumps(LabelDPInputError("claimed_epsilon must be >= 0", field="claimed_epsilon")))
    assert exc.field == "claimed_epsilon" and str(exc) == "claimed_epsilon must be >= 0"
    assert exc.for_flags({"claimed_epsilon": "--claimed-epsilon"}) == "--claimed-epsilon must be >= 0"


def test_a_library_error_carries_its_field_and_names_no_flag():
    from pipelines.models.registration import check_claim
    from pipelines.scoring.beam_request import ScoringRequest

    with pytest.raises(LabelDPInputError) as caught:
        ScoringRequest("/r", DAY, "m", reference="bad/name")
    assert caught.value.field == "reference" and str(caught.value).startswith("reference may contain only")
    assert "--" not in str(caught.value)
    with pytest.raises(LabelDPInputError) as caught:
        check_claim(-1.0, 0.0)
    assert caught.value.field == "claimed_epsilon"
    assert str(caught.value).startswith("claimed_epsilon must be >= 0")
    assert caught.value.for_flags({"claimed_epsilon": "--claimed-epsilon"}).startswith("--claimed-epsilon must be")
