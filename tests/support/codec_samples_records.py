"""Sample records of the verdict's and the sinks' records for tests/labeldp/test_codec.py, built by hand (no codec import):
tests/labeldp/fixtures/codec_before_records.json holds what their hand-written ``to_dict`` wrote before the codec."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

from auditing.sinks.family import LaterRun
from auditing.sinks.warehouse import normalize_row
from auditing.sinks.warehouse.address import Destination
from auditing.sinks.warehouse.records import upgrade_row
from auditing.sinks.warehouse.spool import SpooledPayload
from auditing.verdict.control_check import ControlCheck
from auditing.verdict.family_evidence import FamilyEvidence, NightEvidence
from auditing.verdict.reference_check import CalibrationFigures, LabelBlindFigures, ReferenceCheck
from auditing.verdict.shift_diagnostic import DayFit, FeaturePsi, FeatureShift, ShiftDiagnostic

D0, D1 = dt.date(2026, 9, 1), dt.date(2026, 9, 2)


def samples() -> dict:
    """name -> record, the records whose JSON must not change."""
    shift = FeatureShift("psi", "deciles of day D-1", 0.5, 0.125, 0.25, (FeaturePsi("I1", 0.5), FeaturePsi("C2", 0.25)),
                         {"I1": 0.5, "C2": 0.25, "I3": 0.0})
    fit_previous = DayFit(0.5, 0.125, 100, 0.25, "rows of day D-1 M' never saw")
    fit_current = DayFit(None, None, 0, None)
    figures = CalibrationFigures(10, 5, 3, 0.75, 0.5, 0.125, 0.0625)
    blind = LabelBlindFigures(0.5, 0.25, True)
    nights = (NightEvidence(D0, 1.5, 1.5, math.log(1.5), False, None, 2.0, 2.0, math.log(2.0), False, None),
              NightEvidence(D1, 1.0, math.inf, math.inf, True, "not pure", 1.0, 2.0, math.log(2.0), True,
                            "no matched guesses"))
    return {
        "day_fit": fit_previous, "day_fit_bare": fit_current, "feature_shift": shift,
        "shift_diagnostic": ShiftDiagnostic("a diagnostic, not a proof", "ref@2026-09-01", D0, D1, fit_previous,
                                            fit_current, 0.25, None, shift, 0.5),
        "shift_diagnostic_not_computed": ShiftDiagnostic("a diagnostic", "ref@2026-09-01", D0, D1,
                                                         not_computed="no day D-1 partition"),
        "shift_diagnostic_error": ShiftDiagnostic("a diagnostic", error="boom"),
        "calibration_figures": figures, "label_blind": blind,
        "reference_check": ReferenceCheck("boost", True, "checked on held-out rows", figures, blind),
        "reference_check_bare": ReferenceCheck("none", True),
        "reference_check_skipped": ReferenceCheck("boost", False, "reference not checked: no rows"),
        "control_check": ControlCheck("positive", True, 1.5, 0.5, 2.0, "the positive control passed",
                                      {"rule": "floor"}, None),
        "control_check_bare": ControlCheck("negative", False, 0.25, None, 0.0, "the negative control failed"),
        "family_evidence": FamilyEvidence(0.05, nights),
        "family_evidence_empty": FamilyEvidence(0.05, ()),
        **sink_samples(),
    }


def sink_samples(row_of=upgrade_row) -> dict:
    """The sinks' records; ``row_of``: the row as the record holds it (before the codec: its JSON-safe dict)."""
    from tests.support.warehouse_rows import make_row

    row = normalize_row(make_row()[0])
    later = {**row, "run_id": "run-later", "status": "VIOLATION", "epsilon_lower_bound": 0.75}
    to = Destination("duckdb", "/data/warehouse.duckdb", "sha256:" + "ab" * 32)
    return {
        "spooled_payload": SpooledPayload(Path("/spool/m.json"), to, row_of(row), 1767225600.5),
        "spooled_payload_unread": SpooledPayload(Path("/spool/bad.json"), None, None, None, "not readable JSON"),
        "later_run": LaterRun(upgrade_row(row), upgrade_row(later), ("model_fingerprint", "claimed_epsilon")),
    }
