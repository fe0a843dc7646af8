"""The night's records that travel from the flows to the sinks: each read from its JSON by `labeldp.codec.decode` and
written back by `labeldp.codec.encode` exactly as it came (key names, None vs absent), refusing an unknown or bad field by
name."""

from __future__ import annotations

import json

import pytest

from auditing.game.config import GameConfig
from auditing.verdict.reference_check import ReferenceCheck
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError

FIGURES = {"rows_fit": 6000, "rows_validation": 2000, "rounds": 40, "logloss_before": 0.47, "logloss_after": 0.452,
           "ece_before": 0.031, "ece_after": 0.006}
CHECKED = {"calibration": "boost", "checked": True, "note": None, "calibration_figures": FIGURES}
SKIPPED = {"calibration": "boost", "checked": False, "note": "reference not checked: no held-out rows",
           "calibration_figures": None}
LEGACY = {**CHECKED, "label_blind": {"epsilon_lower_bound": 0.21, "misfit_kappa": 0.35, "flagged": True}}


@pytest.mark.parametrize("data", [CHECKED, SKIPPED, LEGACY, {**CHECKED, "calibration": "none",
                                                             "calibration_figures": None, "note": "raw"}])
def test_a_reference_check_is_written_back_as_it_was_read(data):
    check = decode(ReferenceCheck, data, "reference_check")
    assert json.dumps(encode(check)) == json.dumps(data)  # same keys, same order, label_blind only when given
    assert decode(ReferenceCheck, encode(check), "reference_check") == check
    assert {**encode(check), "label_blind": encode(check.label_blind)} == {**data, "label_blind": data.get("label_blind")}


def test_the_nightly_producer_and_a_skipped_check_write_the_json_of_before():
    """The flows build the check; its JSON is the dict they built before it was typed."""
    check = ReferenceCheck("boost", True)
    assert encode(check) == {"calibration": "boost", "checked": True, "note": None, "calibration_figures": None}
    assert encode(check.skipped("no held-out rows")) == SKIPPED
    assert decode(ReferenceCheck, LEGACY, "reference_check").flagged and not decode(ReferenceCheck, CHECKED, "reference_check").flagged


@pytest.mark.parametrize("change, message", [
    ({"verdict": "ok"}, r"reference_check: unknown field\(s\) \['verdict'\]"),
    ({"checked": None}, r"reference_check\.checked: expected true or false; got None"),
    ({"calibration": "isotonic"}, r"reference_check\.calibration must be one of"),
    ({"checked": 1}, r"reference_check\.checked: expected true or false"),
    ({"note": ""}, r"reference_check\.note must be non-empty text"),
    ({"calibration_figures": {**FIGURES, "extra": 1}}, r"reference_check\.calibration_figures: unknown field\(s\) "
                                                       r"\['extra'\]"),
    ({"calibration_figures": {**FIGURES, "rounds": 2.5}}, r"reference_check\.calibration_figures\.rounds: expected "
                                                          "an integer"),
    ({"calibration_figures": {**FIGURES, "logloss_after": "0.4"}},
     r"reference_check\.calibration_figures\.logloss_after: expected a number"),
    ({"calibration_figures": {**FIGURES, "rows_validation": 0}},
     r"reference_check\.calibration_figures\.rows_validation must be >= 1"),
    ({"label_blind": {"epsilon_lower_bound": 0.1, "misfit_kappa": 0.2, "flagged": "no"}},
     r"reference_check\.label_blind\.flagged: expected true or false"),
    ({"checked": False, "note": None, "calibration_figures": None}, r"reference_check\.note is required"),
])
def test_a_bad_reference_check_is_refused_naming_the_field(change, message):
    with pytest.raises(LabelDPInputError, match=message):
        decode(ReferenceCheck, {**CHECKED, **change}, "reference_check")
    with pytest.raises(LabelDPInputError, match=r"reference_check: expected a record \(mapping\)"):
        decode(ReferenceCheck, [CHECKED], "reference_check")


# ------------------------------------------------------------------------------------------ the shift diagnostic
LABEL = "a diagnostic, not a proof: no statistic of the features or of M''s fit certifies kappa"
DAYS = {"previous": "2024-01-01", "current": "2024-01-02"}
SHIFT = {"statistic": "population stability index (PSI)", "bins": "numerics: D-1 deciles + missing",
         "max_psi": 0.31, "median_psi": 0.02, "mean_psi": 0.05,
         "top": [{"feature": "C9", "psi": 0.31}, {"feature": "I1", "psi": 0.1}], "per_feature": {"I1": 0.1, "C9": 0.31}}
FIGURES_SHAPE = {"label": LABEL, "reference": "reference@2024-01-01", "days": DAYS,
                 "reference_fit": {"previous": {"log_loss": 0.45, "ece": 0.01, "rows": 900, "click_rate": 0.2,
                                                "rows_rule": "test split"},
                                   "current": {"log_loss": None, "ece": None, "rows": 0, "click_rate": None}},
                 "reference_log_loss_shift": None, "reference_ece_shift": None, "feature_shift": SHIFT,
                 "feature_shift_max_psi": 0.31}
NOT_COMPUTED = {"label": LABEL, "reference": "reference@2024-01-02", "days": DAYS,
                "not_computed": "the reference is not of a day before the audited day"}
FAILED = {"label": LABEL, "error": "no partition"}


@pytest.mark.parametrize("data", [FIGURES_SHAPE, NOT_COMPUTED, FAILED], ids=["figures", "not-computed", "error"])
def test_a_shift_diagnostic_is_written_back_as_it_was_read(data):
    from auditing.verdict.shift_diagnostic import ShiftDiagnostic

    diagnostic = decode(ShiftDiagnostic, data, "shift_diagnostic")
    assert json.dumps(encode(diagnostic)) == json.dumps(data)  # keys, their order, None kept as None
    assert decode(ShiftDiagnostic, json.loads(json.dumps(encode(diagnostic))), "shift_diagnostic") == diagnostic
    assert diagnostic.computed == (data is FIGURES_SHAPE)


@pytest.mark.parametrize("data, message", [
    ({**FIGURES_SHAPE, "tau": 0.1}, r"shift_diagnostic: unknown field\(s\) \['tau'\]"),
    ({k: v for k, v in FIGURES_SHAPE.items() if k != "reference_ece_shift"},
     r"shift_diagnostic: missing field\(s\) \['reference_ece_shift'\]"),
    ({**FIGURES_SHAPE, "days": {**DAYS, "current": "2024-02-30"}}, r"shift_diagnostic\.days\.current: expected an ISO date"),
    ({**FIGURES_SHAPE, "reference_log_loss_shift": "0.1"}, r"shift_diagnostic\.reference_log_loss_shift: expected a "
                                                          "number"),
    ({**FIGURES_SHAPE, "reference_fit": {**FIGURES_SHAPE["reference_fit"], "previous": {"rows": 1}}},
     r"shift_diagnostic\.reference_fit\.previous: missing"),
    ({**FIGURES_SHAPE, "feature_shift": {**SHIFT, "top": [{"feature": "C9"}]}},
     r"shift_diagnostic\.feature_shift\.top\[0\]: missing field\(s\) \['psi'\]"),
    ({**NOT_COMPUTED, "reference_fit": {}}, r"shift_diagnostic: unknown field\(s\) \['reference_fit'\]"),
    ({**FAILED, "days": DAYS}, r"shift_diagnostic: unknown field\(s\) \['days'\]"),
    ("not json", r"shift_diagnostic: expected a record \(mapping\)"),
])
def test_a_bad_shift_diagnostic_is_refused_naming_the_field(data, message):
    from auditing.verdict.shift_diagnostic import ShiftDiagnostic

    with pytest.raises(LabelDPInputError, match=message):
        decode(ShiftDiagnostic, data, "shift_diagnostic")


# ------------------------------------------------------------------------------------------ a scoring job's lineage
JOB_RECORD = {
    "result": {}, "config": {}, "scoring_key": "0123456789abcdef", "diagnostics": {}, "timings": {"total_s": 1.5},
    "started_at": "2024-01-02T01:00:00+00:00", "finished_at": "2024-01-02T01:01:00+00:00",
    "lineage": {"model": {"name": "rr-eps1", "date": "2024-01-02", "uri": "/r/models/rr-eps1", "fingerprint": "abc"},
                "reference": {"name": "reference", "date": "2024-01-01", "fingerprint": "def"},
                "partition": {"date": "2024-01-02", "fingerprint": "p1"},
                "runner": {"runner": "FnApiRunner", "beam_args": []},
                "code_version": {"package": "labeldp-audit", "version": "1.2.0", "git_commit": "0123456789abcdef0",
                                 "git_dirty": True}}}


def _scored(record: dict):
    from flows.steps import Scored
    from labeldp.codec import decode
    from pipelines.scoring.beam_request import JobRecord

    return Scored(decode(JobRecord, record, "result.json"), reused=False, game_dir="/r/sweeps/x")


def test_a_jobs_lineage_is_read_once_into_the_warehouse_lineage():
    lineage = _scored(JOB_RECORD)
    assert lineage.warehouse_lineage("run-1", None) == {
        "model_uri": "/r/models/rr-eps1", "model_fingerprint": "abc", "reference_model": "reference@2024-01-01",
        "partition_fingerprint": "p1", "code_version": "1.2.0+0123456789ab-dirty", "flow_run_id": "run-1",
        "started_at": "2024-01-02T01:00:00+00:00", "finished_at": "2024-01-02T01:01:00+00:00",
        "durations": {"total_s": 1.5}, "run_id": None, "training_rows_fingerprint": None,
        "reference_fingerprint": "def", "correction_fingerprint": None, "scoring_key": "0123456789abcdef"}
    # a corrected reference names the checkpoint it corrects: both fingerprints recorded, with the training rows'
    corrected = _scored({**JOB_RECORD, "lineage": {
        **JOB_RECORD["lineage"], "model": {**JOB_RECORD["lineage"]["model"], "training_rows_fingerprint": "t1"},
        "reference": {**JOB_RECORD["lineage"]["reference"], "source_fingerprint": "raw"}}})
    assert {k: v for k, v in corrected.warehouse_lineage("run-1", None, "r-1").items() if "fingerprint" in k
            or k == "run_id"} == {"model_fingerprint": "abc", "partition_fingerprint": "p1", "run_id": "r-1",
                                  "training_rows_fingerprint": "t1", "reference_fingerprint": "raw",
                                  "correction_fingerprint": "def"}
    assert lineage.job.lineage.runner.runner == "FnApiRunner"
    assert lineage.warehouse_lineage(None, {"publish_s": 2.0})["durations"] == {"publish_s": 2.0}
    bare = _scored({"result": {}}).warehouse_lineage(None, None)  # a record without lineage: nothing recorded
    assert (bare["reference_model"], bare["code_version"], bare["model_fingerprint"]) == (None, "None+unknown", None)
    with pytest.raises(LabelDPInputError, match=r"lineage\.code_version: expected a record"):
        _scored({**JOB_RECORD, "lineage": {**JOB_RECORD["lineage"], "code_version": "1.2.0"}})
    with pytest.raises(LabelDPInputError, match=r"lineage\.model: unknown field\(s\) \['fingerprnt'\]"):
        _scored({**JOB_RECORD, "lineage": {**JOB_RECORD["lineage"], "model": {"name": "m", "date": "2024-01-02",
                                                                             "fingerprnt": "abc"}}})


# ------------------------------------------------------------------------------------------ a control's outcome
POSITIVE_CHECK = {"control": "positive", "passed": True, "epsilon_lower_bound": 1.2, "floor": 0.8, "ceiling": 2.0,
                  "message": "positive control: valid eps_lb 1.2 is above the floor",
                  "floor_detail": {"floor": 0.8, "guesses": 400, "expected_rate": 0.7, "correct_quantile": 260,
                                   "power": 0.999},
                  "misfit_kappa": None}
NEGATIVE_CHECK = {"control": "negative", "passed": False, "epsilon_lower_bound": 0.3, "floor": None, "ceiling": 0.0,
                  "message": "negative control: eps 0.3 > 0", "floor_detail": None, "misfit_kappa": None}


@pytest.mark.parametrize("data", [POSITIVE_CHECK, NEGATIVE_CHECK], ids=["positive", "negative"])
def test_a_control_check_is_written_back_as_it_was_read(data):
    from auditing.verdict.control_check import ControlCheck

    check = decode(ControlCheck, data, "control")
    assert json.dumps(encode(check)) == json.dumps(data)
    assert decode(ControlCheck, json.loads(json.dumps(encode(check))), "control") == check


def test_the_judged_control_is_the_record_the_flows_carry():
    """check_control builds the record; the night's trust reads its dict exactly as before it was typed."""
    import numpy as np

    from auditing.audit import run_audit
    from auditing.verdict.control_check import ControlCheck
    from auditing.verdict.controls import NEGATIVE, check_control

    rng = np.random.default_rng(1)
    p = rng.uniform(0.05, 0.95, 2000)
    labels = (rng.random(2000) < p).astype(int)
    check = check_control(NEGATIVE, run_audit(p, p, labels, game=GameConfig(repetitions=1)))
    assert isinstance(check, ControlCheck) and check.passed and check.floor is None
    assert decode(ControlCheck, encode(check), "control") == check
    assert list(encode(check)) == ["control", "passed", "epsilon_lower_bound", "floor", "ceiling", "message",
                                     "floor_detail", "misfit_kappa"]


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


def test_judge_refuses_a_records_dict():
    """The records are read from their JSON once, at the edge: judge takes the typed record, never its dict."""
    from auditing.verdict.judge import judge

    for name, value in (("reference_check", CHECKED), ("shift_diagnostic", FAILED), ("control", NEGATIVE_CHECK)):
        with pytest.raises(TypeError, match=rf"^{name} must be a \w+ \(its JSON is read by"):
            judge(None, 1.0, **{name: value})
