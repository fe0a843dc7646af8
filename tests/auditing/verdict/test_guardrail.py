import math

import pytest

from auditing.verdict.guardrail import guardrail_status
from auditing.verdict.types import INCONCLUSIVE, PASS, VIOLATION
from labeldp.errors import LabelDPInputError


def test_statuses():
    assert guardrail_status(2.5, 1.0, 9.0) == VIOLATION
    assert guardrail_status(0.5, 1.0, 9.0) == PASS
    assert guardrail_status(0.0, 8.0, 5.0) == INCONCLUSIVE  # a perfect attacker reaches only 5 < 8
    assert guardrail_status(0.0, 5.0, 5.0) == INCONCLUSIVE
    assert guardrail_status(1.0, math.inf, 9.0) == INCONCLUSIVE
    assert guardrail_status(1.0, 1.0, 9.0) == PASS  # equal is not "exceeds"


def test_refuses_optimistic_and_bad_claims():
    with pytest.raises(LabelDPInputError, match="optimistic"):
        guardrail_status(3.0, 1.0, 9.0, optimistic=True)
    with pytest.raises(LabelDPInputError, match="claimed_epsilon must be >= 0"):
        guardrail_status(3.0, -1.0, 9.0)
