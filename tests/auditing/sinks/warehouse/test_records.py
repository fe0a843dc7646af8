"""The typed records from the warehouse row to a run's outcome: ResultRow is the table schema, upgrade_row is the one
reader of older rows, and a run's Outcome holds typed rows only."""

from __future__ import annotations

import dataclasses
import datetime as dt
import pickle

import pytest

from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.sinks.listing import ListedVerdict, SkippedTarget
from auditing.sinks.warehouse import normalize_row, schema
from auditing.sinks.warehouse.records import ResultRow, trust_state, upgrade_row
from auditing.verdict.types import TRUSTED, UNTRUSTED
from flows.exit_codes import UNTRUSTED as EXIT_UNTRUSTED
from flows.exit_codes import VIOLATION as EXIT_VIOLATION
from flows.exit_codes import Outcome
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from tests.support.warehouse_rows import make_row

PYTHON = {"text": str, "date": dt.date, "double": float, "bigint": int, "integer": int, "timestamptz": dt.datetime}


def _row(**overrides) -> ResultRow:
    return upgrade_row(normalize_row(make_row(**overrides)[0]))


def test_the_row_type_is_the_table_schema():
    """One field per column, in order, typed by the column's logical type, optional exactly where it is nullable."""
    fields = dataclasses.fields(ResultRow)
    assert tuple(f.name for f in fields) == schema.RESULT_NAMES
    for column, f in zip(schema.RESULT_COLUMNS, fields, strict=True):
        kind = PYTHON[column.kind]
        assert f.type == (kind | None if column.nullable else kind), column.name
        assert (f.default is None) == column.nullable and f.metadata["column"] is column
    required = {f.name for f in fields if f.default is dataclasses.MISSING}
    assert required == {c.name for c in schema.RESULT_COLUMNS if not c.nullable}
    with pytest.raises(dataclasses.FrozenInstanceError):
        _row().status = "VIOLATION"
    assert not hasattr(ResultRow, "get") and not hasattr(ResultRow, "__getitem__")


def test_a_row_round_trips_through_its_dict_and_pickle():
    row = _row(marker=0.4, status="VIOLATION")
    assert row.to_dict() == normalize_row(make_row(marker=0.4, status="VIOLATION")[0])
    assert upgrade_row(row.to_dict()) == row
    assert pickle.loads(pickle.dumps(row)) == row  # Prefect may persist a flow's typed result
    assert row.key.model_id == "m-1" and row.key.partition_date == row.partition_date
    assert row.replace(status="PASS").status == "PASS" and row.status == "VIOLATION"


def test_the_upgrader_reads_an_older_row_as_the_current_type():
    """A row of schema version 1: no run kind, no fingerprint, none of the later columns, a neutral tau."""
    stored = {name: value for name, value in normalize_row(make_row()[0]).items()
              if name in ("model_id", "partition_date", "audit_config_hash", "claimed_epsilon", "delta",
                          "confidence", "gamma", "m", "selected_guesses", "selected_correct", "epsilon_lower_bound",
                          "strategy", "method", "status", "max_certifiable_epsilon", "repetitions", "seed",
                          "result_json")}
    stored |= {"tau": 0.0, "partition_date": dt.datetime(2024, 1, 2, 0, 0),
               "finished_at": dt.datetime(2024, 1, 3, 2, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))}
    row = upgrade_row(stored)
    assert row.run_kind == schema.UNRECORDED and row.model_fingerprint == schema.UNRECORDED
    assert row.kappa is None and row.trust is None and row.kind is None and row.breaking_kappa is None
    assert row.partition_date == dt.date(2024, 1, 2) and type(row.partition_date) is dt.date
    assert row.finished_at == dt.datetime(2024, 1, 3, 0, 0, tzinfo=dt.UTC) and row.finished_at.tzinfo == dt.UTC
    assert "tau" not in row.to_dict()


@pytest.mark.parametrize(("change", "named"), [
    ({"tau": 0.3}, "tau"),  # a pre-kappa verdict: its TV figure cannot be read as today's
    ({"breaking_tau": 1.0}, "breaking_tau"),
    ({"colour": "red"}, "colour"),
])
def test_the_upgrader_refuses_what_no_version_holds(change, named):
    with pytest.raises(LabelDPInputError, match=named):
        upgrade_row({**normalize_row(make_row()[0]), **change})


def test_the_upgrader_names_a_missing_required_column():
    stored = normalize_row(make_row()[0])
    del stored["epsilon_lower_bound"]
    with pytest.raises(LabelDPInputError, match="epsilon_lower_bound"):
        upgrade_row(stored)


def test_trust_of_a_row_before_per_verdict_trust_reads_its_nights_reason():
    assert trust_state(TRUSTED, None) == TRUSTED
    assert trust_state(None, "control failed") == UNTRUSTED
    assert trust_state(None, None) is None


def _listed(status: str, trust: str, reason: str | None = None) -> ListedVerdict:
    return ListedVerdict(_row(status=status, trust=trust, trust_reason="why", untrusted_reason=reason,
                              kind="target"), report="/r.html", warehouse="written")


def test_the_outcome_reads_typed_rows_and_refuses_anything_else():
    """The exit code follows the typed rows: a trusted VIOLATION exits 1 under fail_on_violation, an untrusted
    one 4 (exit 1 wins when both apply); a skipped target is listed and judged by nothing; a dict row is a bug, not a silent PASS."""
    trusted = _listed("VIOLATION", TRUSTED)
    untrusted = _listed("VIOLATION", UNTRUSTED, "reference misfits")
    skipped = SkippedTarget("late", dt.date(2024, 1, 2), "no model file")
    assert Outcome(rows=[trusted, skipped], fail_on_violation=True).exit_code() == EXIT_VIOLATION
    outcome = Outcome(rows=[trusted, untrusted, skipped], fail_on_violation=True)
    outcome.collect_untrusted()
    assert outcome.untrusted == ["reference misfits"] and outcome.codes() == [EXIT_VIOLATION, EXIT_UNTRUSTED]
    assert Outcome(rows=[trusted, untrusted]).exit_code() == EXIT_UNTRUSTED  # not failing on VIOLATION
    assert outcome.violations == [trusted] and outcome.untrusted_violations == [untrusted]
    assert encode(outcome)["rows"][2] == {"model_id": "late", "partition_date": "2024-01-02", "kind": "skipped",
                                            "status": "SKIPPED", "reason": "no model file"}
    with pytest.raises(TypeError, match="dict"):
        Outcome(rows=[encode(trusted)], fail_on_violation=True).exit_code()


def test_a_result_record_is_read_once_into_the_typed_result():
    """AuditResult.from_dict: a record without a field added since takes its default; a field no version had, a
    missing required one and a pre-kappa record are refused, each named; judge's verdict holds the typed result."""
    import numpy as np

    from auditing.audit import run_audit
    from auditing.result import AuditResult
    from auditing.verdict.judge import judge

    rng = np.random.default_rng(2)
    p = rng.uniform(0.1, 0.9, 2000)
    result = run_audit(p, p, (rng.random(2000) < p).astype(int), game=GameConfig(repetitions=2))
    record = encode(result)
    assert decode(AuditResult, record) == result
    older = {k: v for k, v in record.items() if k not in ("row_groups", "capacity_check", "inconclusive_reason")}
    assert decode(AuditResult, older).row_groups is None and decode(AuditResult, older).inconclusive_reason is None
    for bad, named in (({**record, "colour": 1}, "colour"), ({k: v for k, v in record.items() if k != "m"}, "'m'"),
                       ({**{k: v for k, v in record.items() if k != "kappa"}, "tau": 0.1}, "before kappa")):
        with pytest.raises(LabelDPInputError, match=named):
            decode(AuditResult, bad)
    verdict = judge(decode(AuditResult, record), 1.0)
    assert isinstance(verdict.result, AuditResult) and verdict.result == result
    assert encode(verdict)["result"] == record


def test_the_records_nested_in_a_result_are_typed_and_stored_as_before(tmp_path):
    """The curve, the split halves, both histograms, the expected curve, the capacity check and the row groups
    are typed records on the result; to_dict writes the JSON they were always stored as (a JSON round trip gives
    the same result and the same text), and a nested record with a field no version had is refused, named."""
    import json

    import numpy as np

    from auditing.audit import CheckRows, run_audit
    from auditing.game.prior_histogram import PriorHistogram
    from auditing.records.game import CurvePoint, ExpectedCorrect, ScoreHistogram, SplitHalves
    from auditing.result import AuditResult, CapacityCheck

    rng = np.random.default_rng(5)
    n, k = 4000, 800
    p = rng.uniform(0.05, 0.95, n + k)
    y = (rng.random(n + k) < p).astype(int)
    target = np.clip(p + 0.2 * (2 * y - 1), 0.01, 0.99)  # leaks the label
    check = CheckRows(p_target=p[n:], p_reference=p[n:], labels=y[n:], row_ids=np.arange(n, n + k))
    result = run_audit(target[:n], p[:n], y[:n], game=GameConfig(repetitions=2), bound=BoundConfig(strategy="split"),
                       expected_curve=True, check=check)
    assert all(isinstance(point, CurvePoint) for point in result.curve) and result.curve
    assert isinstance(result.split_halves, SplitHalves) and result.split_halves.selection.m > 0
    assert isinstance(result.score_histogram, ScoreHistogram) and sum(result.score_histogram.rows) == result.m
    assert isinstance(result.expected_correct, ExpectedCorrect) and result.expected_correct.guesses
    assert isinstance(result.prior_histogram, PriorHistogram) and result.prior_histogram.total == result.m
    assert isinstance(result.capacity_check, CapacityCheck) and result.capacity_check.check_rows == k

    text = json.dumps(encode(result), sort_keys=True)
    stored = json.loads(text)
    assert isinstance(stored["curve"][0], dict) and set(stored["curve"][0]) == {"guesses", "correct",
                                                                                 "epsilon_lower_bound"}
    assert set(stored["split_halves"]) == {"selection", "bound"} and stored["prior_histogram"]["scheme"]
    again = decode(AuditResult, stored)
    assert again == result and json.dumps(encode(again), sort_keys=True) == text

    for field, bad in (("split_halves", {**stored["split_halves"], "third": {}}),
                       ("score_histogram", {**stored["score_histogram"], "colour": 1}),
                       ("expected_correct", {"guesses": [1]}),
                       ("curve", [{**stored["curve"][0], "slope": 2}])):
        with pytest.raises(LabelDPInputError, match=r"third|colour|correct|slope"):
            decode(AuditResult, {**stored, field: bad})
    absent = decode(AuditResult, {**stored, "split_halves": {}, "expected_correct": {}, "prior_histogram": {}})
    assert absent.split_halves is None and absent.expected_correct is None and absent.prior_histogram is None
    assert encode(absent)["split_halves"] == {} and encode(absent)["prior_histogram"] == {}
