"""The kinds of run that write a verdict (auditing/verdict/run_kinds.py): one registry, and a check whose error
names the field and the kinds."""

import pytest

from auditing.verdict.run_kinds import RUN_KINDS, check_run_kind
from labeldp.errors import LabelDPInputError


def test_every_kind_is_kept_and_anything_else_refused_naming_the_field_and_the_kinds():
    assert RUN_KINDS == ("nightly", "guardrail", "backfill", "rejudge")
    assert [check_run_kind(kind) for kind in RUN_KINDS] == list(RUN_KINDS)
    for bad in ("Nightly", "", None, 1):
        with pytest.raises(LabelDPInputError, match=r"--run-kind must be one of \['nightly', 'guardrail'"):
            check_run_kind(bad, "--run-kind")
