"""The kinds of run that write a verdict, one registry of names: part of the warehouse key (``run_kind``), of
report and spool file names, and the choices of ``labeldp-audit results --run-kind``.

A verdict of one kind of run never replaces one of another: a guardrail's row sits beside the nightly's row of
the same model and day. Data only: no imports beyond the errors module.
"""

from __future__ import annotations

from typing import Any

from labeldp.errors import LabelDPInputError

NIGHTLY, GUARDRAIL, BACKFILL = "nightly", "guardrail", "backfill"
# A verdict re-judged from a night's stored game at other bound settings (`labeldp-audit rejudge`): settings
# chosen after the night was seen, so its rows never stand in for the night's own verdicts.
REJUDGE = "rejudge"
RUN_KINDS = (NIGHTLY, GUARDRAIL, BACKFILL, REJUDGE)


def check_run_kind(value: Any, name: str = "run_kind") -> str:
    """``value`` when it is one of `RUN_KINDS`, else LabelDPInputError naming ``name`` and the kinds."""
    if value not in RUN_KINDS:
        raise LabelDPInputError(f"{name} must be one of {list(RUN_KINDS)}; got {value!r}")
    return value
