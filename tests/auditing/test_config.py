"""The audit's settings (auditing/config.py): every bad setting refused naming it."""

import math

import pytest

from auditing.config import split_settings
from labeldp.errors import LabelDPInputError


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(method="nope"), "method"),
        (dict(strategy="best"), "strategy"),
        (dict(repetitions=0), "repetitions"),
        (dict(confidence=1.2), "confidence"),
        (dict(method="fdp", delta=1.0), "delta"),
        (dict(delta=-1e-9), "delta"),
        (dict(seed=-1), "seed"),
        (dict(kappa=-0.1), "kappa"),
        (dict(kappa=math.inf), "kappa"),
        (dict(kappa=math.nan), "kappa"),
        (dict(reference_calibration="isotonic"), "reference_calibration"),
        (dict(audit_rows="all", reference_calibration="boost"), "audit_rows 'all'"),
    ],
)
def test_bad_config(kwargs, needle):
    with pytest.raises(LabelDPInputError, match=needle):
        split_settings(kwargs)
