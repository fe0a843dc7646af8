"""The typed alert payloads (auditing/sinks/alerts/payloads.py): each kind's body, text included, is the one the
webhook sent when the payloads were dicts, key for key and in the same order (fixtures/alert_bodies.json, written
by that version from the cases below), and what the text reads of a body."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from auditing.sinks.alerts.webhook import (
    AUDIT_FAILED,
    CONTROL_FAILED,
    DATA_MISSING,
    FAMILY_CONFIRMED,
    SLICE_VIOLATION,
    VIOLATION,
    VIOLATION_UNTRUSTED,
    WEAK_PASS,
    alert_event_payload,
    family_payload,
    slice_violation_payload,
    violation_payload,
)
from auditing.verdict.reference_check import ReferenceCheck
from labeldp.codec import decode

BODIES = Path(__file__).resolve().parent / "fixtures" / "alert_bodies.json"
REFERENCE_CHECK = {"calibration": "boost", "checked": True, "note": None,
                   "calibration_figures": {"rows_fit": 6000, "rows_validation": 2000, "rounds": 40,
                                           "logloss_before": 0.47, "logloss_after": 0.45, "ece_before": 0.03,
                                           "ece_after": 0.006}}
# (kind, model, control, reference check) of each failure alert: what flows.steps.send_failure_alert sends.
FAILURES = {"data-missing": (DATA_MISSING, "rr-1", None, None), "audit-failed": (AUDIT_FAILED, "rr-1", None, None),
            "control-negative": (CONTROL_FAILED, "control-negative", "negative", REFERENCE_CHECK),
            "control-positive-unchecked": (CONTROL_FAILED, "control-positive", "positive", None)}


def _nights():
    from auditing.game.sweep import guess_grid
    from auditing.verdict.family_evidence import CheckCounts, NightCounts, family_evidence

    grid = tuple(int(c) for c in guess_grid(600, kind="log", points=20, min_fraction=1e-2))
    nights = [NightCounts(dt.date(2026, 1, 1) + dt.timedelta(days=t), 1.0, 0.0, 0.0, 600, grid, grid,
                          coins_night=dt.date(2026, 1, 1) + dt.timedelta(days=t),
                          check=CheckCounts(300, 300, 44, 80)) for t in range(2)]
    return family_evidence(nights)


def verdict_cases() -> dict:
    """(kind, payload) of every built payload kind, from real verdicts (tests/support)."""
    from auditing.verdict.judge import judge
    from auditing.verdict.trust import NightTrust
    from tests.support import checked_audits, sliced_audits

    leaky = checked_audits.leaky(row_groups=checked_audits.groups())
    misfit = checked_audits.misfit()
    sliced = sliced_audits.sliced()
    unchecked = decode(ReferenceCheck, {"calibration": "boost", "checked": False, "note": "no held-out rows"}, "r")
    verdicts = {"trusted": (VIOLATION, judge(leaky, 0.5, night=NightTrust())),
                "untrusted": (VIOLATION_UNTRUSTED, judge(misfit, 0.1, night=NightTrust())),
                "weak": (WEAK_PASS, judge(misfit, 3.0, night=NightTrust())),
                "void": (VIOLATION_UNTRUSTED, judge(leaky, 0.5, night=NightTrust(void_reason="control-negative: x"))),
                "reference-unchecked": (VIOLATION, judge(leaky, 0.5, night=NightTrust(), reference_check=unchecked))}
    cases = {f"verdict-{name}": (kind, violation_payload(v, model_id="leaky", partition_date="2024-01-02",
                                                         report="/r.html", flow_run_id="run-1", run_kind="nightly"))
             for name, (kind, v) in verdicts.items()}
    for name, claim in (("slices", 1.0), ("slices-passing", 3.0)):
        cases[name] = (SLICE_VIOLATION, slice_violation_payload(judge(sliced, claim), model_id="leaky",
                                                                partition_date="2024-01-02", report="/r.html",
                                                                flow_run_id=None, run_kind="nightly"))
    family = _nights()
    cases["family"] = (FAMILY_CONFIRMED, family_payload(family, model_id="leaky",
                                                        partition_date=family.confirmed_on.isoformat(),
                                                        report="/r.html"))
    return cases


def _body(kind, payload) -> dict:
    return alert_event_payload(kind, payload)["payload"]


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads(BODIES.read_text())


def test_each_built_payload_sends_the_body_it_sent_as_a_dict(expected):
    """Verdicts (trusted, untrusted, weak, void, reference unchecked), slices (with and without a slice VIOLATION)
    and a confirmed family: the same keys, values and order, and the same text."""
    cases = verdict_cases()
    assert set(cases) | set(FAILURES) == set(expected)
    for name, (kind, payload) in cases.items():
        assert json.dumps(_body(kind, payload)) == json.dumps(expected[name]), name


def test_a_failure_alert_sends_the_body_it_sent_as_a_dict(expected):
    """A failed control's alert names its kind and carries the night's reference check (null when none); the
    other failures carry neither key."""
    from auditing.sinks.alerts.payloads import FailureAlert

    for name, (kind, model, control, check) in FAILURES.items():
        payload = FailureAlert(model_id=model, partition_date="2024-01-02", message="eps_lb 0.4 > 0",
                               flow_run_id="run-1", control=control,
                               reference_check=None if check is None else decode(ReferenceCheck, check, "check"))
        assert json.dumps(_body(kind, payload)) == json.dumps(expected[name]), name
        assert ("control" in expected[name]) is (control is not None)


def test_a_mapping_is_sent_as_given_and_read_once_for_the_text():
    """A caller's mapping: every key goes into the body; the text reads the claim and the bound only when they
    are there, a confidence that is not a number as none, and slices that are not records not at all."""
    from auditing.sinks.alerts.payloads import ABSENT, AlertFields

    mapping = {"model_id": "m", "partition_date": "2024-01-02", "epsilon_lower_bound": 2.5, "confidence": True,
               "custom": [1, 2], "slice_violations": ["not a record", {"name": "a", "acted_on": True}]}
    body = _body(VIOLATION, mapping)
    assert body["custom"] == [1, 2] and body["confidence"] is True
    fields = AlertFields.read(mapping)
    assert fields.claimed_epsilon is ABSENT and fields.epsilon_lower_bound == 2.5 and fields.confidence is None
    assert fields.lists_slices and [p.name for p in fields.slice_violations] == ["a"]
    assert body["text"] == "[labeldp-audit] VIOLATION: model m, partition 2024-01-02"
