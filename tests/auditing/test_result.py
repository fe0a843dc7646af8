"""auditing.result: a stored audit result is read through the codec, and one written before kappa (with its tau)
is refused, naming the field."""

from __future__ import annotations

import pytest

from auditing.result import AuditResult
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from tests.support.codec_samples import samples


def test_a_result_written_before_kappa_is_refused():
    stored = {k: v for k, v in encode(samples()["audit_result"]).items() if k != "kappa"}
    with pytest.raises(LabelDPInputError, match="written before kappa"):
        decode(AuditResult, {**stored, "tau": 0.1}, "result")
    with pytest.raises(LabelDPInputError, match=r"result: missing field\(s\) \['kappa'\]"):
        decode(AuditResult, stored, "result")
