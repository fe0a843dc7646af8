"""The flows' steps (flows/steps.py): a scoring job's record, read from its JSON, gives its lineage to the warehouse
once (Scored.warehouse_lineage), refusing a bad lineage field by name."""

from __future__ import annotations

import pytest

from labeldp.errors import LabelDPInputError

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
