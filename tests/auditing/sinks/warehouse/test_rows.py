"""Warehouse rows (auditing/sinks/warehouse/rows.py): ``normalize_row`` refusing a bad row, curve or slice before
any SQL, naming the field; ``audit_record`` rendering a real verdict (its risk, trust, exposure floor, control,
capacity check, attack curve and family figures), stored and read back on both backends.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math

import numpy as np
import pytest

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.result import AuditResult
from auditing.sinks.warehouse import audit_record, open_warehouse
from auditing.verdict.judge import judge
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.shift_diagnostic import ShiftDiagnostic
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from tests.support.warehouse_audits import fdp_result as _fdp_result
from tests.support.warehouse_audits import reference_check_record as _reference_check
from tests.support.warehouse_rows import DAY, make_row
from tests.support.warehouse_targets import only


def _leaky_audit(seed: int, rows: int, repetitions: int) -> AuditResult:
    """A real audit of a target that leaks every label (0.3 toward it) against an uninformed reference."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, rows)
    p_target = np.clip(0.5 + 0.3 * (2 * labels - 1) + rng.normal(0, 0.05, rows), 0.01, 0.99)
    return run_audit(p_target, np.full(rows, 0.5), labels,
                     game=GameConfig(repetitions=repetitions, reference_calibration="none"))


def test_kappa_and_reference_figures_are_validated_naming_the_field(tmp_path):
    """normalize_row and the codec's reading of a ReferenceCheck refuse bad kappa-era figures before any write, with an
    error that names the field."""
    from auditing.sinks.warehouse.rows import normalize_row

    new = dict(make_row(model_id="new")[0], kappa=0.0, reference_calibration="boost")
    normalize_row(new)
    for change, message in (
        ({"kappa": -0.1}, "kappa must be a finite number >= 0"),
        ({"kappa": math.inf}, "kappa must be a finite number"),
        ({"kappa": "0.1"}, "kappa must be a number"),
        ({"breaking_kappa": math.nan}, "breaking_kappa must be a finite number"),
        ({"tau": 0.1}, r"retired column\(s\) \{'tau': 0.1\}"),
        ({"breaking_tau": 0.1}, r"retired column\(s\) \{'breaking_tau': 0.1\}"),
        ({"kappa": None, "breaking_kappa": 0.2}, r"breaking_kappa need\(s\) kappa"),
        ({"method": "fdp"}, "fdp_curve must be set on an fdp row with kappa"),
        ({"fdp_curve": "gaussian"}, "fdp_curve must be one of"),
        ({"gdp_mu_lower_bound": 0.3}, r"trade-off-curve method \(\['fdp'\]\) only"),
        ({"reference_calibration": "isotonic"}, "reference_calibration must be one of"),
        ({"reference_checked": 1, "calibration_rows_fit": 10}, "calibration figures: set all of"),
        ({"reference_checked": 2}, "reference_checked must be 0, 1"),
        ({"reference_checked": 0}, "reference_check_note is required"),
        ({"reference_check_note": "why"}, "reference_check_note needs reference_checked"),
        ({"reference_checked": 1, "calibration_ece_after": 1.5, "calibration_ece_before": 0.1,
          "calibration_rows_fit": 1, "calibration_rows_validation": 1, "calibration_rounds": 1,
          "calibration_log_loss_before": 0.5, "calibration_log_loss_after": 0.4}, "calibration_ece_after must be"),
        ({"reference_checked": 1, "label_blind_bound": 0.0, "reference_misfit_kappa": 0.1, "label_blind_flagged": 1},
         "label_blind_flagged = 1 needs label_blind_bound > 0"),
        ({"reference_checked": 1, "label_blind_bound": 0.2, "reference_misfit_kappa": 0.3, "label_blind_flagged": 1,
          "untrusted_reason": None}, "label_blind_flagged = 1 needs untrusted_reason"),
        ({"trust": "maybe"}, "trust must be one of"),
        ({"detectability": "unknown"}, "detectability must be one of"),
        ({"accepted_unchecked": 2}, "accepted_unchecked must be 0, 1"),
        ({"group_label_agreement": 1.5}, "group_label_agreement must be a finite number in"),
        ({"check_rows": -1}, "check_rows must be a whole number"),
        ({"reference_misfit_kappa": -1.0}, "reference_misfit_kappa must be"),
    ):
        with pytest.raises(LabelDPInputError, match=message):
            normalize_row({**new, **change})

    good = _reference_check()
    for change, message in (
        ({"calibration": None}, r"reference_check\.calibration: expected a string; got None"),
        ({"calibration": "none"}, "calibration_figures are for calibration 'boost'"),
        ({"checked": "yes"}, "reference_check.checked: expected true or false"),
        ({"checked": False}, "checked is False but"),
        ({"checked": False, "calibration_figures": None, "label_blind": None}, "reference_check.note is required"),
        ({"label_blind": {"epsilon_lower_bound": 0.0, "misfit_kappa": -0.5, "flagged": False}},
         "reference_check.label_blind.misfit_kappa must be"),
        ({"label_blind": {"epsilon_lower_bound": 0.0, "misfit_kappa": 0.5, "flagged": True}},
         "flagged needs epsilon_lower_bound > 0"),
        ({"label_blind": {"epsilon_lower_bound": 0.0, "misfit_kappa": 0.5}}, r"label_blind: missing field\(s\) \['flagged'\]"),
        ({"calibration_figures": {**good["calibration_figures"], "ece_after": 2.0}},
         "reference_check.calibration_figures.ece_after must be"),
        ({"calibration_figures": {**good["calibration_figures"], "rows_fit": -3}},
         "reference_check.calibration_figures.rows_fit must be a whole number"),
        ({"verdict": "ok"}, r"reference_check: unknown field\(s\) \['verdict'\]"),
    ):
        with pytest.raises(LabelDPInputError, match=message):
            decode(ReferenceCheck, {**good, **change}, "reference_check")
    skipped = {"calibration": "boost", "checked": False, "note": "no held-out rows for 2024-01-02"}
    assert decode(ReferenceCheck, skipped, "reference_check").label_blind is None
    crashed = {**good, "label_blind": None}  # the label-blind control could not run (untrusted by the controls)
    assert encode(decode(ReferenceCheck, crashed, "reference_check"))["calibration_figures"] == good["calibration_figures"]

    result = _fdp_result()  # raw reference: reference_calibration "none"
    with pytest.raises(LabelDPInputError, match="differs from the result's reference_calibration 'none'"):
        audit_record(judge(result, 0.5, reference_check=decode(ReferenceCheck, good, "reference_check")), run_kind="nightly",
                     model_id="x", partition_date=DAY)
    flagged = decode(ReferenceCheck, {**_reference_check(flagged=True), "calibration": "none",
                                        "calibration_figures": None, "note": "raw reference"}, "reference_check")
    # A result without check rows is "reference unchecked": its verdict carries that reason.
    row, _ = audit_record(judge(result, 0.5, reference_check=flagged), run_kind="nightly", model_id="x",
                          partition_date=DAY)
    assert row.trust == "reference unchecked" and row.untrusted_reason == row.trust_reason
    assert (row.label_blind_flagged, row.label_blind_bound, row.reference_misfit_kappa) == (1, 0.21, 0.35)
    assert row.calibration_rows_fit is None and row.reference_check_note == "raw reference"
    legacy = {k: v for k, v in encode(result).items() if k not in ("kappa", "reference_calibration")}
    with pytest.raises(LabelDPInputError, match="written before kappa"):
        audit_record(judge(decode(AuditResult, {**legacy, "tau": 0.0}), 0.5), run_kind="nightly", model_id="x",
                     partition_date=DAY)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        assert wh.fetch_results() == []


# --------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize("overrides, message", [
    ({"status": "OK"}, "status must be one of"),
    ({"selected_correct": 101}, "selected_correct <= selected_guesses"),
    ({"confidence": 1.0}, r"confidence must be a finite number in \(0, 1\)"),
    ({"gamma": 0.2}, "gamma must equal 1 - confidence"),
    ({"epsilon_lower_bound": float("nan")}, "epsilon_lower_bound must be a finite number"),
    ({"model_id": "a/b"}, "model_id"),
    ({"partition_date": "2024-02-30"}, "partition_date"),
    ({"audit_config_hash": "x y"}, "audit_config_hash"),
    ({"color": "red"}, r"unknown column\(s\) \['color'\]"),
    ({"m": None}, r"missing required column\(s\) \['m'\]"),
    ({"durations": {"score": -1}}, "durations"),
    ({"result_json": "[1, 2]"}, "result_json must be a JSON object"),
    ({"started_at": "noon"}, "started_at"),
])
def test_bad_rows_are_refused_before_sql(tmp_path, overrides, message):
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        with pytest.raises(LabelDPInputError, match=message):
            wh.write_audit(*make_row(**overrides))
        assert wh.fetch_results() == []


def test_audit_record_from_a_real_audit(target):
    rng = np.random.default_rng(3)
    n = 4000
    labels = rng.integers(0, 2, n)
    p_target = np.clip(0.5 + 0.45 * (2 * labels - 1) + rng.normal(0, 0.05, n), 0.01, 0.99)
    result = run_audit(p_target, np.full(n, 0.5), labels, game=GameConfig(repetitions=4))
    row, curve = audit_record(judge(result, 0.5), run_kind="nightly", model_id="rr-eps8", partition_date="2024-01-02",
                              lineage={"flow_run_id": "f-1", "durations": {"audit": 0.1}})
    assert row.status == "VIOLATION" and row.epsilon_lower_bound > 0.5
    assert row.gamma == pytest.approx(1 - result.bound.confidence)
    assert len(curve) == result.grid_size or len(curve) == len(result.curve)
    with open_warehouse(target) as wh:
        wh.write_audit(row, curve)
        got = only(wh.fetch_results(model_id="rr-eps8"))
        assert json.loads(got.result_json) == json.loads(json.dumps(encode(result)))
        stored = wh.fetch_curve(got)
    assert [(p["guesses"], p["correct"]) for p in stored] == [(p.guesses, p.correct) for p in result.curve]
    assert all(p["point_confidence"] == result.point_confidence for p in stored)
    with pytest.raises(LabelDPInputError, match="optimistic"):
        audit_record(judge(dataclasses.replace(result, optimistic=True), 1), run_kind="nightly", model_id="x",
                     partition_date=DAY)
    with pytest.raises(LabelDPInputError, match="lineage: unknown"):
        audit_record(judge(result, 1), run_kind="nightly", model_id="x", partition_date=DAY, lineage={"owner": "me"})


# --------------------------------------------------------------------------------------------- risk
def test_risk_columns_round_trip_on_both_backends(target):
    """The risk scalars for the claim (risk_*) and the valid bound (risk_lb_*) and the headline are computed by
    audit_record from the result's prior histogram and stored as nullable columns."""
    from auditing.risk.figures import RISK_SCALARS, risk_assessment

    rng = np.random.default_rng(11)
    n = 3000
    p_ref = np.clip(rng.beta(1, 20, n), 1e-4, 0.99)
    labels = (rng.random(n) < p_ref).astype(int)
    p_target = np.clip(np.where(labels == 1, 0.9, 0.05) + rng.normal(0, 0.02, n), 0.01, 0.99)
    result = run_audit(p_target, p_ref, labels, game=GameConfig(repetitions=2))
    verdict = judge(result, 0.5)
    row, curve = audit_record(verdict, run_kind="nightly", model_id="risk-m", partition_date=DAY)
    expected = risk_assessment(result, 0.5)
    names = [f"{prefix}{name}" for prefix in ("risk_", "risk_lb_") for name in RISK_SCALARS]
    # the stored sentence is the verdict's: the assessment's, made conditional when the leak is unconfirmed
    assert all(name in row.to_dict() for name in names) and row.risk_headline == verdict.risk_headline
    claim_part = expected.headline.split("; ")[0]
    assert verdict.risk_headline.startswith(claim_part)
    with open_warehouse(target) as wh:
        wh.write_audit(row, curve)
        got = only(wh.fetch_results(model_id="risk-m"))
    for name in names:
        block = expected.claimed if name.startswith("risk_") and not name.startswith("risk_lb_") else \
            expected.demonstrated
        assert getattr(got, name) == pytest.approx(getattr(block, name.removeprefix("risk_lb_").removeprefix("risk_"))), name
    assert got.risk_headline == verdict.risk_headline
    # Nullable: a row without them (an old result) stores NULLs; bad values are refused before SQL.
    bare, bare_curve = make_row(model_id="risk-old")
    with open_warehouse(target) as wh:
        wh.write_audit(bare, bare_curve)
        old = only(wh.fetch_results(model_id="risk-old"))
    assert all(getattr(old, name) is None for name in [*names, "risk_headline"])
    from auditing.sinks.warehouse.rows import normalize_row

    with pytest.raises(LabelDPInputError, match="risk_mia_advantage_bound must be a finite number in"):
        normalize_row({**bare, "risk_mia_advantage_bound": 1.5})


def test_trust_columns_round_trip_on_both_backends(target):
    """audit_rows, breaking_kappa, detection_floor_rows (claim-dependent, computed by audit_record) and
    the shift diagnostic (JSON + two scalars) are stored, without the retired tau / breaking_tau; an old row
    stores NULLs; bad values are refused."""
    from auditing.sinks.warehouse.rows import normalize_row
    from auditing.verdict.robustness import breaking_kappa, detection_floor_rows

    result = _leaky_audit(seed=5, rows=3000, repetitions=2)
    diagnostic = {"label": "a diagnostic", "reference": "ref@2024-01-01",
                  "days": {"previous": "2024-01-01", "current": "2024-01-02"},
                  "reference_fit": {"previous": {"log_loss": 0.3, "ece": 0.01, "rows": 10, "click_rate": 0.1,
                                                 "rows_rule": "test split"},
                                    "current": {"log_loss": 0.31, "ece": 0.02, "rows": 12, "click_rate": 0.2}},
                  "reference_log_loss_shift": 0.01, "reference_ece_shift": 0.01,
                  "feature_shift": {"statistic": "PSI", "bins": "deciles", "max_psi": 0.2, "median_psi": 0.1,
                                    "mean_psi": 0.1, "top": [], "per_feature": {}},
                  "feature_shift_max_psi": 0.2}
    row, curve = audit_record(judge(result, 0.5, shift_diagnostic=decode(ShiftDiagnostic, diagnostic, "shift_diagnostic")), run_kind="nightly", model_id="trust-m",
                              partition_date=DAY)
    assert row.status == "VIOLATION" and row.audit_rows == "training"
    assert row.breaking_kappa == breaking_kappa(result, 0.5) > 0
    assert row.kappa == 0.0 and not {"tau", "breaking_tau"} & row.to_dict().keys()
    assert not hasattr(row, "tau") and not hasattr(row, "breaking_tau")
    assert row.reference_calibration == "none" and row.fdp_curve is None and row.reference_checked is None
    assert row.detection_floor_rows == detection_floor_rows(result, 0.5)
    with open_warehouse(target) as wh:
        wh.write_audit(row, curve)
        got = only(wh.fetch_results(model_id="trust-m"))
    assert got.audit_rows == "training" and got.breaking_kappa == pytest.approx(row.breaking_kappa)
    assert got.kappa == 0.0 and "breaking_tau" not in got.to_dict() and not hasattr(got, "breaking_tau")
    assert got.detection_floor_rows == row.detection_floor_rows
    assert json.loads(got.shift_diagnostic) == diagnostic
    assert got.reference_log_loss_shift == pytest.approx(0.01) and got.feature_shift_max_psi == pytest.approx(0.2)
    bare, bare_curve = make_row(model_id="trust-old")
    with open_warehouse(target) as wh:
        wh.write_audit(bare, bare_curve)
        old = only(wh.fetch_results(model_id="trust-old"))
    assert all(getattr(old, name) is None for name in ("audit_rows", "breaking_kappa", "kappa",
                                              "detection_floor_rows", "shift_diagnostic", "reference_log_loss_shift"))
    assert "breaking_tau" not in old.to_dict() and not hasattr(old, "breaking_tau")
    for change, message in (({"breaking_tau": 1.0}, r"retired column\(s\) \{'breaking_tau': 1.0\}"),  # a TV figure
                            ({"audit_rows": "test"}, "audit_rows must be"),
                            ({"detection_floor_rows": -3}, "detection_floor_rows must be")):
        with pytest.raises(LabelDPInputError, match=message):
            normalize_row({**bare, **change})


def test_exposed_rows_floor_round_trip_on_both_backends(target):
    """the game-aware floor exposed_rows_floor (auditing.verdict.exposure_floor, claim-dependent,
    computed by audit_record) is stored on both backends: a number for a bonferroni PASS, NULL where it is
    not computable (INCONCLUSIVE, split) or for an old row; a negative or fractional value is refused."""
    from auditing.sinks.warehouse.rows import normalize_row
    from auditing.verdict.exposure_floor import exposed_floor_note, game_detection_floor

    rng = np.random.default_rng(11)
    n = 6000
    p_ref = rng.beta(1.0, 3.0, n)
    labels = (rng.random(n) < p_ref).astype(np.int64)
    rows = {}
    for name, strategy, claimed in (("exp-pass", "bonferroni", 0.3), ("exp-inconclusive", "bonferroni", 50.0),
                                    ("exp-split", "split", 0.3)):
        result = run_audit(p_ref, p_ref, labels, game=GameConfig(repetitions=1), bound=BoundConfig(strategy=strategy))
        row, curve = audit_record(judge(result, claimed), run_kind="nightly", model_id=name, partition_date=DAY)
        rows[name] = (row, result, claimed)
        with open_warehouse(target) as wh:
            wh.write_audit(row, curve)
    pass_row, pass_result, _ = rows["exp-pass"]
    # a PASS, weak when the floor exceeds 1% of the audited rows
    assert pass_row.status == ("WEAK_PASS" if pass_row.exposed_rows_floor > 0.01 * pass_row.m else "PASS")
    assert pass_row.exposed_rows_floor == game_detection_floor(pass_result, 0.3)
    assert pass_row.exposed_rows_floor > pass_row.detection_floor_rows > 0  # the game needs more
    assert rows["exp-inconclusive"][0].status == "INCONCLUSIVE"
    for name, reason in (("exp-inconclusive", "INCONCLUSIVE"), ("exp-split", "split strategy")):
        row, result, claimed = rows[name]
        assert row.exposed_rows_floor is None
        assert reason in exposed_floor_note(result, claimed, None)
    with open_warehouse(target) as wh:
        got = {r.model_id: r for r in wh.fetch_results()}
        bare, bare_curve = make_row(model_id="exp-old")
        wh.write_audit(bare, bare_curve)
        old = only(wh.fetch_results(model_id="exp-old"))
    assert got["exp-pass"].exposed_rows_floor == pass_row.exposed_rows_floor
    assert got["exp-inconclusive"].exposed_rows_floor is None and got["exp-split"].exposed_rows_floor is None
    assert old.exposed_rows_floor is None
    for bad in (-1, 2.5):
        with pytest.raises(LabelDPInputError, match="exposed_rows_floor"):
            normalize_row({**bare, "exposed_rows_floor": bad})


def test_control_and_trust_columns_round_trip(target):
    """kind, control_passed, control_floor and untrusted_reason on both backends; a bad
    value is refused before any write."""
    reason = "control failed on 2024-01-02 (the audit itself is broken): control-negative: eps_lb 0.3 > 0"
    control, control_curve = make_row(model_id="control-positive", kind="control", control_passed=0,
                                      control_floor=1.25, untrusted_reason=reason)
    plain, plain_curve = make_row(model_id="m-1", kind="target", untrusted_reason=reason)
    with open_warehouse(target) as wh:
        wh.write_audit(control, control_curve)
        wh.write_audit(plain, plain_curve)
        got = {r.model_id: r for r in wh.fetch_results()}
        for bad, message in (({"kind": "canary"}, "kind must be"), ({"kind": "control", "control_passed": 2},
                             "control_passed must be"), ({"control_floor": 1.0}, "kind 'control' rows only"),
                             ({"untrusted_reason": "  "}, "untrusted_reason must be")):
            with pytest.raises(LabelDPInputError, match=message):
                wh.write_audit(*make_row(model_id="bad", **bad))
        assert "bad" not in {r.model_id for r in wh.fetch_results()}
    assert (got["control-positive"].kind, got["control-positive"].control_passed) == ("control", 0)
    assert got["control-positive"].control_floor == 1.25 and got["control-positive"].untrusted_reason == reason
    assert got["m-1"].kind == "target" and got["m-1"].control_passed is None
    assert got["m-1"].untrusted_reason == reason


def test_trust_per_verdict_round_trips_on_both_backends(target):
    """A VIOLATION the capacity check vouches for and one it does not, with the row groups, written and read back:
    trust, its reason, epsilon_check, the misfit figures, check rows and the grouping (migration 5's columns)."""
    from auditing.audit import run_audit
    from auditing.game.row_groups import RowGroups
    from tests.support.segment_worlds import night

    groups = RowGroups(rule="rows with the same feature vector form a group", columns=(), rows_excluded=12,
                       excluded_with_day=10, excluded_with_inputs=2, agreement_pairs=40, agreement_observed=0.9,
                       agreement_expected=0.85)
    rows = {}
    for name, world in (("leak", dict(private=False, memorize=0.3, rows=40_000)),
                        ("misfit", dict(drift=2.5, drifted_share=0.3))):
        w = night(0, **world)
        result = run_audit(*w.audited, game=GameConfig(repetitions=1, seed=1), check=w.check, row_groups=groups)
        verdict = judge(result, 0.3)
        assert verdict.status == "VIOLATION"
        rows[name] = audit_record(verdict, run_kind="nightly", model_id=name, partition_date=DAY)
    with open_warehouse(target) as wh:
        for row, curve in rows.values():
            wh.write_audit(row, curve)
        got = {r.model_id: r for r in wh.fetch_results()}
    leak, misfit = got["leak"], got["misfit"]
    assert leak.trust == "trusted" and leak.untrusted_reason is None and "vouches" in leak.trust_reason
    assert leak.epsilon_check > 0.3 and leak.check_rows > 1000 and leak.accepted_unchecked == 0
    assert misfit.trust == "untrusted" and misfit.untrusted_reason == misfit.trust_reason
    assert misfit.epsilon_check <= 0.3 and misfit.misfit_kappa_upper is not None
    for row in (leak, misfit):
        assert (row.rows_excluded_groups, row.group_pairs) == (12, 40)
        assert row.group_label_agreement == 0.9 and row.group_label_agreement_expected == 0.85
        assert row.detectability in ("measured", "measured under a reference that misfits")


def test_attack_curve_columns_round_trip_on_both_backends(target):
    """The attack curve's figures (descriptive, not a bound: docs/attack-curve.md) are stored from the verdict's
    result and read back on both backends; a row without them reads NULL; a bad value is refused, named."""
    from auditing.sinks.warehouse.rows import normalize_row
    from auditing.sinks.warehouse.schema import ATTACK_COLUMNS

    result = _leaky_audit(seed=8, rows=4000, repetitions=1)
    curve = result.attack_curve
    row, points = audit_record(judge(result, 0.5), run_kind="nightly", model_id="attack-m", partition_date=DAY)
    expected = {f"attack_{name}{part}": getattr(curve, f"{name}{part}") for name in curve.FIGURES
                for part in ("", "_lower", "_upper")}
    assert set(expected) == set(ATTACK_COLUMNS) and {name: getattr(row, name) for name in ATTACK_COLUMNS} == expected
    assert curve.auroc > 0.6
    bare, bare_curve = make_row(model_id="attack-old")
    with open_warehouse(target) as wh:
        wh.write_audit(row, points)
        wh.write_audit(bare, bare_curve)
        got = {r.model_id: r for r in wh.fetch_results()}
    assert {name: getattr(got["attack-m"], name) for name in ATTACK_COLUMNS} == expected
    assert json.loads(got["attack-m"].result_json)["attack_curve"] == json.loads(json.dumps(encode(curve)))
    assert all(getattr(got["attack-old"], name) is None for name in ATTACK_COLUMNS)
    for change, message in (({"attack_auroc": 1.5}, r"attack_auroc must be a finite number in \[0, 1\]"),
                            ({"attack_auroc": 0.7, "attack_auroc_lower": 0.8, "attack_auroc_upper": 0.6},
                             "attack_auroc_lower must be <= attack_auroc_upper"),
                            ({"attack_tpr_at_fpr_0_01_lower": 0.1}, "need attack_tpr_at_fpr_0_01")):
        with pytest.raises(LabelDPInputError, match=message):
            normalize_row({**bare, **change})


def test_family_evidence_columns_and_results_family_on_both_backends(target, capsys):
    """Five nights of a leaking target, each written with its place in the family's test (computed from the rows
    already stored, as the nightly's publish step does): the stored e-values and evidence equal the test computed
    directly from the nights' counts; a re-run of a night keeps the first run's place; a guardrail row and a
    control never enter; `results family --json` prints the same test; bad values are refused before SQL."""
    from auditing.bounds.rr_validation import gaussian_mixture, randomized_response, true_posterior
    from auditing.sinks.family import family_of, family_with
    from auditing.sinks.warehouse.rows import normalize_row
    from auditing.verdict.family_evidence import NightCounts, family_evidence
    from flows.cli import main as cli

    rng = np.random.default_rng(12)
    nights, written = [], []
    for t in range(5):
        day = DAY + dt.timedelta(days=t)
        x, y = gaussian_mixture(3000, 2, rng)
        result = run_audit(randomized_response(y, 2, 3.0, rng).astype(float), true_posterior(x, 2)[:, 1], y,
                           game=GameConfig(repetitions=1, seed=t).with_night(day))  # coins keyed by the night
        verdict = judge(result, 0.5)
        night = NightCounts.of_result(day, 0.5, result)
        nights.append(night)
        with open_warehouse(target) as wh:
            _test, entry = family_with(wh.fetch_results(model_id="fam"), "fam", night)
            lineage = {"started_at": dt.datetime(2024, 2, 1, tzinfo=dt.UTC) + dt.timedelta(hours=t)}
            row, curve = audit_record(verdict, model_id="fam", partition_date=day, run_kind="nightly",
                                      lineage=lineage, family=entry)
            wh.write_audit(row, curve)
            written.append(entry)
            if t == 2:  # a guardrail of the same day and a control never enter the family
                other, other_curve = audit_record(verdict, model_id="fam", partition_date=day, run_kind="guardrail")
                wh.write_audit(other, other_curve)
    expected = family_evidence(nights)
    assert [n.evidence for n in written] == pytest.approx([n.evidence for n in expected.nights], rel=1e-12)
    assert expected.flagged  # eps 3 randomized response against a claim of 0.5
    with open_warehouse(target) as wh:
        rows = wh.fetch_results(model_id="fam")
        # a later re-run of night 1 (another config: its own row) does not replace the first run's place
        rerun, rerun_curve = audit_record(judge(run_audit(np.full(10, 0.9), np.full(10, 0.5), np.arange(10) % 2,
                                                          game=GameConfig(repetitions=1)), 0.5),
                                          model_id="fam", partition_date=DAY + dt.timedelta(days=1),
                                          run_kind="nightly",
                                          lineage={"started_at": dt.datetime(2024, 3, 1, tzinfo=dt.UTC)})
        wh.write_audit(rerun, rerun_curve)
        rows_after = wh.fetch_results(model_id="fam")
    stored = sorted((r for r in rows if r.run_kind == "nightly"), key=lambda r: r.partition_date)
    assert [r.family_evidence for r in stored] == pytest.approx([n.evidence for n in expected.nights], rel=1e-12)
    assert [r.family_flagged for r in stored] == [int(n.flagged) for n in expected.nights]
    assert all(r.family_e_value is None for r in rows if r.run_kind == "guardrail")
    assert family_of(rows_after, "fam").evidence == pytest.approx(expected.evidence, rel=1e-12)
    assert cli(["results", "--warehouse", target, "family", "fam", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["flagged"] and printed["flagged_on"] == expected.flagged_on.isoformat()
    assert [n["evidence"] for n in printed["nights"]] == pytest.approx([n.evidence for n in expected.nights])
    assert cli(["results", "--warehouse", target, "family", "fam"]) == 0
    shown = capsys.readouterr().out  # no check rows here: nothing confirms, the kappa-based figure is secondary
    assert "not confirmed" in shown and "kappa-based evidence" in shown and "holds only if kappa" in shown
    bad = {**rows[0].to_dict(), "family_flagged": 2}
    with pytest.raises(LabelDPInputError, match="family_flagged"):
        normalize_row(bad)
    with pytest.raises(LabelDPInputError, match="set all three or none"):
        normalize_row({**rows[0].to_dict(), "family_e_value": None})


@pytest.mark.parametrize("change, message", [
    ({"status": "WEAK_PASS"}, r"slices\[0\]: status must be one of \['PASS', 'VIOLATION', 'INCONCLUSIVE'\]"),
    ({"trust": "maybe"}, r"slices\[0\]: trust must be one of"),
    ({"budget": 1.0}, "need budget and confidence in"),
    ({"rows": -1}, r"slices\[0\]: rows must be a whole number"),
    ({"epsilon_lower_bound": float("nan")}, "epsilon_lower_bound must be a finite number"),
    ({"slice_name": ""}, "slice_name must be non-empty text"),
])
def test_bad_slices_are_refused_before_sql(tmp_path, sliced_verdict, change, message):
    from auditing.sinks.warehouse import slice_record

    row, curve = audit_record(sliced_verdict, model_id="sliced", partition_date=DAY, run_kind="nightly")
    slices = slice_record(sliced_verdict)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        with pytest.raises(LabelDPInputError, match=message):
            wh.write_audit(row, curve, [{**slices[0], **change}, *slices[1:]])
        with pytest.raises(LabelDPInputError, match="given twice"):
            wh.write_audit(row, curve, [slices[0], slices[0]])
        with pytest.raises(LabelDPInputError, match="one budget and declared count"):
            wh.write_audit(row, curve, [slices[0], {**slices[1], "declared": 13}])
        with pytest.raises(LabelDPInputError, match="slice rows for 12 declared slices"):
            wh.write_audit(row, curve, [*slices, {**slices[0], "slice_name": "one more"}])
        assert wh.fetch_results() == [] and wh.fetch_slices(row.key) == []
