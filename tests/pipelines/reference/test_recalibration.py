"""The reference recalibrated on a keyed share of day D's training rows and the capacity check's rows
(pipelines.reference.recalibration, pipelines.data.splits.correction_share), with real CatBoost on small days.

Drift is built here and in tests/support/drifted_reference.py (the registry level's day), not by the generator:
labels are redrawn from the day's oracle probability shifted in logit, globally and/or on the rows holding the most
frequent value of one categorical column (a segment). The shift diagnostic on that day:
tests/pipelines/reference/test_shift_diagnostics.py.

- The correction's rows are a keyed tenth of the rows outside the test split, stable, pinned, and never a check row.
- Array level (base logits = the oracle's, so M' is exact before the drift): with no drift the correction is
  near-identity (intercept near 0) and never worsens the validation log-loss; with global drift the intercept step
  absorbs the shift (a near +0.8; over 8 label draws the mean leftover logit error is about 0, where the rounds
  alone left 0.06-0.11), the validation log-loss drops and the corrected mean moves to the shifted rate; with
  segment drift it moves toward the truth on the segment and off it more than the best global (intercept) shift
  does; same inputs (and thread count) give byte-identical logits; when no round improves the validation
  log-loss the intercept alone is kept (and checked exact in the registered .cbm), and when the intercept does
  not help either the reference is kept exactly.
- Registry level: the recalibrated reference is one CatBoost .cbm whose probabilities equal
  sigmoid(raw_M' + a + c) on every row of the day (1e-12), loaded by the Beam handler unchanged; it moves the mean
  on the audited rows toward the true shifted rate; a second run is byte-identical; CatBoost's default sum policy
  would not be exact.
- The capacity check's rows are every held-out row; through the Beam job a model trained on the train split is
  audited on its training rows minus the correction's and checked on every test row against the recalibrated
  reference.
- No held-out rows (or an audit on every row, or a target that may have read them): ReferenceCheckSkipped.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from dataclasses import replace

import numpy as np
import pytest
from scipy.special import expit, logit

from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from pipelines.data import schema, splits, synth
from pipelines.data.day import listed_day
from pipelines.data.layout import file_fingerprint, model_dir
from pipelines.models import registry
from pipelines.models.handle import resolve_model
from pipelines.reference.recalibration import (
    RECALIBRATED_TYPE,
    CheckRowSelection,
    CorrectionExclusion,
    HeldOutRows,
    RecalibrationSettings,
    ReferenceCheckSkipped,
    calibration_figures,
    check_heldout,
    correction_frame,
    correction_part,
    correction_rows,
    fit_correction,
    recalibrate_reference,
    recalibrated_logits,
)
from pipelines.reference.shift_diagnostics import measured_reference
from pipelines.training import train as training
from tests.support.drifted_reference import DAY, DAY_ROWS, EMPTY_DAY, PREVIOUS, RECALIBRATED, TARGET
from tests.support.drifted_reference import draw as _draw
from tests.support.drifted_reference import top_value_mask as _top_value_mask
from tests.support.model_handles import unregistered

logging.getLogger("apache_beam").setLevel(logging.ERROR)

ARRAY_ROWS = 60_000
CATS = list(schema.CATEGORICAL_COLUMNS)


def _global_shift(base: np.ndarray, labels: np.ndarray) -> float:
    """The maximum-likelihood intercept shift d of sigmoid(base + d) (Newton): the best global correction."""
    d = 0.0
    for _ in range(50):
        q = expit(base + d)
        d += float(np.sum(labels - q) / np.sum(q * (1 - q)))
    return d


# ------------------------------------------------------------------------------------------ correction rows


def test_correction_rows_are_a_keyed_share_of_the_training_rows_and_never_check_rows():
    ids = np.int64(19_723) * np.int64(2**32) + np.arange(400_000, dtype=np.int64)
    rows = correction_rows(HeldOutRows())
    correction = rows.in_correction(ids)
    test = splits.split_of(ids) == splits.TEST
    check = CheckRowSelection(HeldOutRows()).mask(ids)
    assert np.array_equal(check, test)  # every held-out row is a check row
    assert not np.any(correction & check)  # the correction never fits a check row
    # what a game against the corrected reference keeps: every row outside the keyed share (a superset of the rows
    # fitted: the held-out rows in the share are no audited row anyway)
    keep = CorrectionExclusion(splits.CORRECTION_SHARE).mask(ids)
    assert not (keep & correction).any() and np.array_equal(keep | test, ~correction)
    share = correction.sum() / (~test).sum()
    assert abs(share - splits.CORRECTION_SHARE) < 5 * math.sqrt(0.09 / (~test).sum())
    # a row's part depends on its row_id only: any order, any subset
    order = np.random.default_rng(0).permutation(ids.size)
    assert np.array_equal(rows.in_correction(ids[order]), correction[order])
    assert np.array_equal(rows.in_correction(ids[:1000]), correction[:1000])
    # the fit / validation fold is independent of the share
    fold = splits.correction_validation(ids, 1 / 3)
    assert abs(fold[correction].mean() - 1 / 3) < 5 * math.sqrt(2 / 9 / correction.sum())
    # pinned: the share must never change (registered entries record the salts)
    assert np.flatnonzero(rows.in_correction(np.arange(200))).tolist() == PINNED_CORRECTION_IDS
    assert splits.correction_scheme(0.1)["correction_salt"] == "0x6c616265" + "6c637234"
    with pytest.raises(LabelDPInputError, match="share"):
        RecalibrationSettings(share=1.0)


PINNED_CORRECTION_IDS = [4, 12, 16, 32, 38, 46, 47, 48, 51, 79, 82, 91, 109, 120, 121, 146, 158, 159, 171, 172, 173,
                         183, 185]  # the correction's share among row_ids 0..199 (before the held-out rows leave it)


# ------------------------------------------------------------------------------------------ array level


@pytest.fixture(scope="module")
def arrays():
    day = synth.generate_day(DAY, rows=ARRAY_ROWS)
    ids = day.table.column(schema.ROW_ID).to_numpy()
    fit = splits.correction_validation(ids, 0.5)  # any rows will do at the array level: half fit, half applied
    return {"features": training.feature_frame(day.table), "p": day.oracle.column(schema.P_CLICK).to_numpy(),
            "segment": _top_value_mask(day.table, "C23"), "fit": np.flatnonzero(fit), "other": np.flatnonzero(~fit)}


def _fit(arrays, shift: np.ndarray, label_seed: int = 5, **kwargs):
    base = logit(arrays["p"])
    truth = expit(base + shift)
    labels = _draw(truth, label_seed)
    fit, other = arrays["fit"], arrays["other"]
    correction = fit_correction(arrays["features"].iloc[fit], base[fit], labels[fit], CATS, seed=3, **kwargs)
    corrected = correction.corrected_logits(arrays["features"].iloc[other], base[other])
    return correction, corrected, base, truth, labels


def test_no_drift_correction_is_near_identity(arrays):
    correction, corrected, base, _truth, _labels = _fit(arrays, np.zeros(ARRAY_ROWS))
    record, other = correction.record, arrays["other"]
    validation = record["validation"]
    assert validation["log_loss_after"] <= validation["log_loss_before"]
    assert validation["log_loss_after_intercept"] <= validation["log_loss_before"]
    assert abs(correction.intercept) < 0.05 and record["intercept"] == correction.intercept
    assert record["rounds"] <= 30  # measured: 4 (28 with another label draw) of at most 300
    p_base, p_corrected = expit(base[other]), expit(corrected)
    assert abs(p_corrected.mean() - p_base.mean()) < 0.05 * p_base.mean()
    assert np.mean(np.abs(p_corrected - p_base)) < 0.003
    assert record["fit_rows"] + record["validation_rows"] == arrays["fit"].size


@pytest.fixture(scope="module")
def global_drift(arrays):
    return _fit(arrays, np.full(ARRAY_ROWS, 0.8))


def test_global_drift_lowers_validation_log_loss_and_moves_mean_to_the_shifted_rate(arrays, global_drift):
    correction, corrected, base, truth, _labels = global_drift
    record, other = correction.record, arrays["other"]
    validation = record["validation"]
    drop = validation["log_loss_before"] - validation["log_loss_after"]
    assert not record["kept_reference"] and record["intercept_kept"]
    assert abs(correction.intercept - 0.8) < 0.1, correction.intercept  # the intercept step absorbs the shift
    assert validation["log_loss_after_intercept"] < validation["log_loss_before"]
    assert validation["log_loss_after"] <= validation["log_loss_after_intercept"]
    assert drop > 0.005 and drop > 3 * validation["log_loss_change_se"]
    assert validation["ece_after"] < validation["ece_before"]
    gap_before = abs(expit(base[other]).mean() - truth[other].mean())
    gap_after = abs(expit(corrected).mean() - truth[other].mean())
    assert gap_after < 0.3 * gap_before
    figures = calibration_figures(record)
    assert figures.rounds == record["rounds"] and figures.logloss_after == validation["log_loss_after"]


def test_global_shift_is_absorbed_without_a_systematic_leftover(arrays):
    """The intercept step removes the rounds' systematic under-correction of a global shift: over 8 label draws the
    mean leftover logit error on the other rows is about 0 (measured -0.002; per draw -0.06 to +0.06, the
    intercept's sampling noise with ~700 fit clicks), where the rounds alone left -0.06 to -0.08 on each of the
    draws 5-7 (measured before the intercept step; drift_constructed.md: 0.06-0.11 at n = 1e5)."""
    other = arrays["other"]
    leftovers = []
    for label_seed in range(5, 13):
        correction, corrected, base, _truth, _labels = _fit(arrays, np.full(ARRAY_ROWS, 0.8), label_seed=label_seed)
        assert abs(correction.intercept - 0.8) < 0.1, (label_seed, correction.intercept)
        leftovers.append(float(np.mean(corrected - (base[other] + 0.8))))
    assert abs(np.mean(leftovers)) < 0.03, leftovers
    assert max(abs(v) for v in leftovers) < 0.1, leftovers


def test_segment_drift_is_learned_beyond_a_global_shift(arrays):
    shift = 1.2 * arrays["segment"]
    correction, corrected, base, truth, labels = _fit(arrays, shift)
    fit, other = arrays["fit"], arrays["other"]
    d = _global_shift(base[fit], labels[fit])  # the best global correction from the same rows
    p_global, p_corrected, p_true = expit(base[other] + d), expit(corrected), truth[other]
    segment = arrays["segment"][other]
    assert 0.2 < segment.mean() < 0.4
    for rows in (segment, ~segment):
        gap_corrected = abs(p_corrected[rows].mean() - p_true[rows].mean())
        gap_global = abs(p_global[rows].mean() - p_true[rows].mean())
        assert gap_corrected < 0.7 * gap_global, (rows.mean(), gap_corrected, gap_global)
    assert np.mean(np.abs(p_corrected - p_true)) < np.mean(np.abs(p_global - p_true))
    assert correction.record["validation"]["log_loss_after"] < correction.record["validation"]["log_loss_before"]


def test_same_inputs_give_byte_identical_logits(arrays, global_drift):
    """Same inputs, same thread count (fixed in the settings and recorded: with ~30k rows 1 and 2 threads give
    slightly different trees) -> byte-identical logits and record; the one-call form is the same fit."""
    correction, corrected, base, _truth, labels = global_drift
    fit, other = arrays["fit"], arrays["other"]
    logits, record = recalibrated_logits(arrays["features"].iloc[fit], base[fit], labels[fit],
                                         arrays["features"].iloc[other], base[other], CATS, seed=3)
    assert logits.tobytes() == corrected.tobytes()
    assert record == correction.record and record["catboost_params"]["thread_count"] == 2


def test_too_few_rows_or_one_class_is_a_skip(arrays):
    base = logit(arrays["p"][:150])
    with pytest.raises(ReferenceCheckSkipped, match="too few held-out rows") as caught:
        fit_correction(arrays["features"].iloc[:150], base, _draw(expit(base), 1), CATS)
    assert "rows" in caught.value.reason
    with pytest.raises(ReferenceCheckSkipped, match="both labels"):
        fit_correction(arrays["features"].iloc[:3000], logit(arrays["p"][:3000]), np.zeros(3000, int), CATS)
    with pytest.raises(LabelDPInputError, match="cat_features"):
        fit_correction(arrays["features"].iloc[:300], base[:0].tolist() + [0.0] * 300, np.zeros(300, int), ["nope"])


# ------------------------------------------------------------------------------------------ registry level


def test_recalibrated_reference_is_one_cbm_equal_to_reference_plus_correction(drifted_world, drifted_recalibrated, capfd):
    metadata, model, p = drifted_recalibrated
    record = metadata["recalibration"]
    assert metadata["model_type"] == RECALIBRATED_TYPE and not metadata.get("output_correction")
    capfd.readouterr()
    model = registry.load_model(resolve_model(drifted_world["root"], RECALIBRATED, DAY))
    assert type(model).__name__ == "CatBoostClassifier"
    assert "invalid params" not in "".join(capfd.readouterr())  # the summed model's training record is whole
    assert model.get_all_params()["loss_function"] == "Logloss"
    assert record["rounds"] > 0 and record["ctr_type"] == "Buckets"
    source = record["source_reference"]
    assert (source["name"], source["date"]) == ("reference", PREVIOUS.isoformat())
    assert source["fingerprint"] == file_fingerprint(model_dir(drifted_world["root"], "reference", PREVIOUS) / "model.cbm")
    assert record["sum"]["max_abs_raw_difference"] <= 1e-9 and record["sum"]["checked_rows"] > 0
    assert 0.5 < record["intercept"] < 1.5  # +0.8 everywhere, +1.0 more on ~25% of rows

    # the same correction at the array level (deterministic), then the .cbm against sigmoid(raw_M' + c) everywhere
    row_ids, features, labels = correction_frame(drifted_world["table"], correction_rows(HeldOutRows()))
    assert record["fit_rows"] + record["validation_rows"] == row_ids.size
    base = drifted_world["reference"].predict(features, prediction_type="RawFormulaVal")
    correction = fit_correction(features, base, labels, CATS,
                                validation=splits.correction_validation(row_ids, 1 / 3), seed=0, ctr_type="Buckets")
    assert correction.rounds == record["rounds"] and correction.intercept == record["intercept"]
    assert correction.model.get_feature_importance()[drifted_world["frame"].columns.get_loc("C1")] > 0  # a CTR feature
    expected = expit(drifted_world["reference_raw"] + correction.intercept + correction.raw(drifted_world["frame"]))
    assert np.max(np.abs(p - expected)) <= 1e-12
    assert np.array_equal(correction.corrected_logits(drifted_world["frame"], drifted_world["reference_raw"]),
                          drifted_world["reference_raw"] + correction.intercept + correction.raw(drifted_world["frame"]))

    # the Beam job's handler loads and predicts it unchanged
    from pipelines.models.catboost_frames import catboost_frame
    from pipelines.models.formats.catboost_handler import CatBoostModelHandler

    handler = CatBoostModelHandler(resolve_model(drifted_world["root"], RECALIBRATED, DAY), thread_count=2)
    [prediction] = handler.run_inference([catboost_frame(drifted_world["table"])], handler.load_model())
    assert np.max(np.abs(prediction.inference[:, 1] - p)) <= 1e-12


def test_recalibrated_reference_moves_toward_the_shifted_rate_on_the_audited_rows(drifted_world, drifted_recalibrated):
    metadata, _model, p = drifted_recalibrated
    validation = metadata["recalibration"]["validation"]
    assert validation["log_loss_after"] < validation["log_loss_before"]
    assert validation["ece_after"] < validation["ece_before"]
    audited, truth = drifted_world["audited"], drifted_world["truth"]
    p_reference = expit(drifted_world["reference_raw"])
    gap_before = abs(p_reference[audited].mean() - truth[audited].mean())
    gap_after = abs(p[audited].mean() - truth[audited].mean())
    assert gap_after < 0.5 * gap_before, (gap_before, gap_after)
    on_segment = audited & drifted_world["segment"]
    assert abs(p[on_segment].mean() - truth[on_segment].mean()) < abs(
        p_reference[on_segment].mean() - truth[on_segment].mean())
    assert metadata["test_metrics"]["log_loss_after"] == validation["log_loss_after"]
    assert metadata["correction_rows"]["scheme"]["share"] == splits.CORRECTION_SHARE
    assert metadata["correction_rows"]["heldout_rows"] == int((splits.split_of(drifted_world["ids"]) == splits.TEST).sum())
    assert registry.claimed_epsilon(metadata) == math.inf
    assert calibration_figures(metadata["recalibration"]).rows_fit == metadata["recalibration"]["fit_rows"]


def test_recalibration_is_reused_and_byte_identical_when_rerun(drifted_world, drifted_recalibrated):
    metadata, _model, p = drifted_recalibrated
    source = resolve_model(drifted_world["root"], "reference", PREVIOUS)
    entry = recalibrate_reference(listed_day(drifted_world["root"], DAY), RECALIBRATED, source, targets=[unregistered(TARGET)], seed=0)
    again = entry.metadata
    assert again["created_at"] == metadata["created_at"]  # same inputs: reused, not refitted
    # the handle knows its source: the night's diagnostics read the D-1 checkpoint without resolving it again
    assert entry.source is source and measured_reference(drifted_world["root"], entry) is source
    other = recalibrate_reference(listed_day(drifted_world["root"], DAY), "reference-recalibrated-2",
                                  resolve_model(drifted_world["root"], "reference", PREVIOUS), targets=[unregistered(TARGET)],
                                  seed=0).metadata
    model = registry.load_model(resolve_model(drifted_world["root"], "reference-recalibrated-2", DAY))
    assert np.asarray(model.predict_proba(drifted_world["frame"]))[:, 1].tobytes() == p.tobytes()
    assert other["recalibration"]["validation"] == metadata["recalibration"]["validation"]


def test_no_improving_round_keeps_the_intercept_alone_exactly(drifted_world, arrays):
    strict = RecalibrationSettings(min_improvement=1.0)  # no round can lower the log-loss by 1 nat
    correction, corrected, base, _truth, _labels = _fit(arrays, np.full(ARRAY_ROWS, 0.8), settings=strict)
    record = correction.record
    assert correction.model is None and correction.rounds == 0 and not record["kept_reference"]
    assert record["intercept_kept"] and abs(correction.intercept - 0.8) < 0.1
    assert "the intercept alone is kept" in record["kept_reason"]
    assert corrected.tobytes() == (base[arrays["other"]] + correction.intercept).tobytes()
    assert record["validation"]["log_loss_after"] == record["validation"]["log_loss_after_intercept"]

    metadata = recalibrate_reference(listed_day(drifted_world["root"], DAY), "reference-intercept",
                                     resolve_model(drifted_world["root"], "reference", PREVIOUS), targets=[unregistered(TARGET)],
                                     settings=strict).metadata
    record = metadata["recalibration"]
    assert record["rounds"] == 0 and not record["kept_reference"] and record["best_rounds"] > 0
    a = record["intercept"]
    assert a > 0.5 and record["validation"]["log_loss_after"] < record["validation"]["log_loss_before"]
    assert record["sum"]["checked_rows"] > 0 and record["sum"]["max_abs_raw_difference"] <= 1e-9
    assert record["sum"]["intercept"] == a
    model = registry.load_model(resolve_model(drifted_world["root"], "reference-intercept", DAY))
    raw = model.predict(drifted_world["frame"], prediction_type="RawFormulaVal")
    assert np.max(np.abs(raw - (drifted_world["reference_raw"] + a))) <= 1e-12
    p = np.asarray(model.predict_proba(drifted_world["frame"]), dtype=np.float64)[:, 1]
    assert np.max(np.abs(p - expit(drifted_world["reference_raw"] + a))) <= 1e-12


def test_no_helping_intercept_or_round_keeps_the_reference_unchanged_and_says_so(arrays):
    """The fit rows drift by +0.8, the validation rows do not: the fitted intercept (and any round) worsens the
    validation log-loss, so a = 0, no round, and the base logits come back byte for byte."""
    base = logit(arrays["p"])
    fit, other = arrays["fit"], arrays["other"]
    validation = np.zeros(fit.size, dtype=bool)
    validation[::3] = True
    shift = np.where(validation, 0.0, 0.8)
    labels = _draw(expit(base[fit] + shift), 5)
    strict = RecalibrationSettings(min_improvement=1.0)
    correction = fit_correction(arrays["features"].iloc[fit], base[fit], labels, CATS, validation=validation,
                                settings=strict, seed=3)
    record = correction.record
    assert record["intercept_fitted"] > 0.5 and not record["intercept_kept"] and correction.intercept == 0.0
    assert correction.model is None and record["kept_reference"] and "kept unchanged" in record["kept_reason"]
    assert record["validation"]["log_loss_after"] == record["validation"]["log_loss_before"]
    corrected = correction.corrected_logits(arrays["features"].iloc[other], base[other])
    assert corrected.tobytes() == base[other].tobytes()


def test_catboost_default_sum_policy_would_change_the_reference(drifted_world):
    """Why the correction uses a CTR type the reference does not (pipelines.reference.recalibration docstring)."""
    from catboost import CatBoostError, sum_models

    row_ids, features, labels = correction_frame(drifted_world["table"], correction_rows(HeldOutRows()))
    base = drifted_world["reference"].predict(features, prediction_type="RawFormulaVal")
    same_ctr = fit_correction(features, base, labels, CATS, validation=splits.correction_validation(row_ids, 1 / 3),
                              ctr_type="Borders")
    assert same_ctr.rounds > 0
    averaged = sum_models([drifted_world["reference"], same_ctr.model])  # IntersectingCountersAverage
    raw = averaged.predict(drifted_world["frame"], prediction_type="RawFormulaVal")
    assert np.max(np.abs(raw - (drifted_world["reference_raw"] + same_ctr.raw(drifted_world["frame"])))) > 1e-3
    with pytest.raises(CatBoostError, match="intersection"):
        sum_models([drifted_world["reference"], same_ctr.model], ctr_merge_policy="FailIfCtrIntersects")


# ------------------------------------------------------------------------------------------ label-blind control


def test_check_rows_are_every_held_out_row_and_the_correction_rows_leave_the_audit(drifted_world):
    ids = drifted_world["ids"]
    heldout = check_heldout([unregistered(TARGET)])
    check = CheckRowSelection(heldout)
    np.testing.assert_array_equal(check.mask(ids), splits.split_of(ids) == splits.TEST)
    assert not (check.mask(ids) & drifted_world["audited"]).any()
    assert not (correction_rows(heldout).in_correction(ids) & drifted_world["audited"]).any()
    assert check.describe()["rows"] == "test split"


def _values(frame):
    """``frame`` with its categorical columns as plain objects (the values, whatever the category lists)."""
    return frame.apply(lambda column: column.astype(object) if column.dtype.name == "category" else column)


def test_the_correction_rows_are_streamed_and_capped_by_a_keyed_sample(drifted_world, monkeypatch):
    """The correction reads the day's correction rows in batches: the same rows, order, features and labels as
    the whole partition read at once; above ``max_rows`` the keyed sample of that many, whatever the batches."""
    from pipelines.data.dataset_spec import dataset_of

    root, rows = drifted_world["root"], correction_rows(HeldOutRows())
    dataset = dataset_of(root, DAY)
    whole = dataset.to_internal(schema.read_partition(root, DAY, dataset=dataset))
    expected = correction_frame(whole, rows, dataset)
    monkeypatch.setattr(schema, "SAMPLE_BATCH_ROWS", 7_000)  # batches across the files' row groups
    part = correction_part(listed_day(root, DAY), rows, max_rows=10**9)
    assert (part.partition_rows, part.available) == (DAY_ROWS, expected[0].size)
    assert part.heldout == int((splits.split_of(drifted_world["ids"]) == splits.TEST).sum())
    streamed = correction_frame(part.table, rows, dataset)
    np.testing.assert_array_equal(streamed[0], expected[0])
    np.testing.assert_array_equal(streamed[2], expected[2])
    # the same values (what CatBoost hashes); the categoricals' category lists hold only the values the rows use
    assert _values(streamed[1]).equals(_values(expected[1]))

    chosen = splits.keyed_sample(expected[0], 500)
    # the sample is the 500 rows of smallest keyed hash, whatever order the ids come in; none below the cap
    hashes = splits.splitmix64(expected[0].astype(np.uint64) ^ splits.SAMPLE_SALT)
    np.testing.assert_array_equal(chosen, np.sort(expected[0][np.argsort(hashes, kind="stable")[:500]]))
    np.testing.assert_array_equal(splits.keyed_sample(expected[0][::-1], 500), chosen)
    assert splits.keyed_sample(expected[0], expected[0].size) is None
    for size in (7_000, 65_536):
        monkeypatch.setattr(schema, "SAMPLE_BATCH_ROWS", size)
        sample = correction_part(listed_day(root, DAY), rows, max_rows=500)
        ids = sample.table.column("row_id").to_numpy()
        assert ids.size == 500 and sample.available == expected[0].size
        np.testing.assert_array_equal(np.sort(ids), chosen)
        np.testing.assert_array_equal(ids, expected[0][np.isin(expected[0], chosen)])  # the partition's order
    with pytest.raises(LabelDPInputError, match="max_rows"):
        RecalibrationSettings(max_rows=1)


def test_a_model_is_audited_without_the_correction_rows_and_checked_on_every_held_out_row(drifted_world, drifted_recalibrated):
    """The reference itself, registered as a day-D model trained on the train split: against the recalibrated
    reference the job audits its training rows minus the correction's share (whose labels fitted that reference; the
    job reads it from the reference, whoever calls it) and checks every test row; against the D-1 checkpoint every
    training row is audited."""
    from pipelines.scoring.beam_request import ScoringRequest
    from pipelines.scoring.beam_scoring import score_day

    root = drifted_world["root"]
    metadata = encode(registry.read_metadata(root, "reference", PREVIOUS))
    train = splits.split_of(drifted_world["ids"]) == splits.TRAIN
    record = {**metadata["training_rows"], "label_splits": ["train"], "unread_row_ids": [], "rows": int(train.sum())}
    registry.save_model(root, "day-model", DAY, drifted_world["reference"],
                        {**{k: v for k, v in metadata.items() if k not in ("created_at",)},
                         "partition_fingerprint": schema.partition_fingerprint(root, DAY), "training_rows": record})
    heldout = check_heldout([unregistered(TARGET)])
    check_rows = CheckRowSelection(heldout)
    game, bound = GameConfig(repetitions=2, seed=1, grid_points=20), BoundConfig()
    outcome = score_day(ScoringRequest(data_root=str(root), date=DAY, model="day-model", game=game, bound=bound,
                                       reference=RECALIBRATED, reference_date=DAY, batch_size=20_000,
                                       check_rows=check_rows))
    assert outcome.result.m == int(drifted_world["audited"].sum())
    check = outcome.result.capacity_check
    assert check.checked and check.check_rows == int(check_rows.mask(drifted_world["ids"]).sum())
    assert check.check_rows == int((splits.split_of(drifted_world["ids"]) == splits.TEST).sum())
    audited = outcome.record["diagnostics"]["audited_rows"]
    assert audited["excluded_for_correction"]["share"] == splits.CORRECTION_SHARE
    assert outcome.record["lineage"]["rows"]["correction"]["share"] == splits.CORRECTION_SHARE  # in the job's key
    raw = score_day(ScoringRequest(data_root=str(root), date=DAY, model="day-model", game=game, bound=bound,
                                   reference="reference", reference_date=PREVIOUS, batch_size=20_000))
    assert raw.result.m == int(train.sum()) and "excluded_for_correction" not in raw.record["diagnostics"][
        "audited_rows"]


# ------------------------------------------------------------------------------------------ skips


def test_no_heldout_rows_is_a_skip_with_its_reason(drifted_world):
    root = drifted_world["root"]
    with pytest.raises(ReferenceCheckSkipped, match="no held-out rows") as caught:
        recalibrate_reference(listed_day(root, EMPTY_DAY), "recalibrated-empty", resolve_model(root, "reference", PREVIOUS),
                              targets=[unregistered(TARGET)])
    assert "test split" in caught.value.reason and not model_dir(root, "recalibrated-empty", EMPTY_DAY).exists()


def test_targets_that_may_have_read_the_test_split_or_an_audit_of_every_row_is_a_skip(drifted_world):
    outside = {"model_name": "outside", "date": DAY.isoformat()}
    with pytest.raises(ReferenceCheckSkipped, match=r"'outside'.*no training_rows record"):
        check_heldout([unregistered(TARGET), unregistered(outside)])
    every = json.loads(json.dumps(TARGET))
    every["training_rows"]["label_splits"] = ["train", "validation", "test"]
    with pytest.raises(ReferenceCheckSkipped, match="test split is not held out"):
        check_heldout([unregistered(every)])
    other_scheme = json.loads(json.dumps(TARGET))
    other_scheme["training_rows"]["split"]["salt"] = "0x0000000000000001"
    with pytest.raises(ReferenceCheckSkipped, match="not the built-in scheme"):
        check_heldout([unregistered(other_scheme)])
    with pytest.raises(ReferenceCheckSkipped, match="every row"):
        check_heldout([unregistered(TARGET)], audit_rows="all")
    check_heldout([unregistered(TARGET)])  # a target trained on train + validation leaves the test split held out
    with pytest.raises(ReferenceCheckSkipped, match="no training_rows record"):
        recalibrate_reference(listed_day(drifted_world["root"], DAY), "recalibrated-outside", resolve_model(drifted_world["root"], "reference", PREVIOUS),
                              targets=[unregistered(outside)])


def test_a_reference_with_an_output_correction_is_a_skip(drifted_world):
    root = drifted_world["root"]
    source, copy = model_dir(root, "reference", PREVIOUS), model_dir(root, "reference-nc", PREVIOUS)
    shutil.copytree(source, copy)
    metadata = json.loads((copy / registry.METADATA_FILE).read_text())
    metadata["output_correction"] = {"kind": "rr_inverse", "epsilon": 1.0, "floor": 0.0}
    (copy / registry.METADATA_FILE).write_text(json.dumps(metadata))
    with pytest.raises(ReferenceCheckSkipped, match="not additive in logit space"):
        recalibrate_reference(listed_day(root, DAY), "recalibrated-nc", resolve_model(root, "reference-nc", PREVIOUS),
                              targets=[unregistered(TARGET)])
    with pytest.raises(LabelDPInputError, match="overwrite its own source"):
        recalibrate_reference(listed_day(root, PREVIOUS), "reference", resolve_model(root, "reference", PREVIOUS))


def test_the_scoring_job_reads_the_correction_share_from_the_reference_and_refuses_an_unknown_scheme(drifted_world, drifted_recalibrated):
    """A reference corrected on day D leaves its keyed share out of day D's games, not another day's; a recorded
    scheme with another salt (another version's rows) is refused by name rather than leaving the wrong rows out."""
    from pipelines.models.metadata import as_metadata
    from pipelines.reference.recalibration import correction_exclusion

    handle = resolve_model(drifted_world["root"], RECALIBRATED, DAY)
    assert correction_exclusion(handle, DAY) == CorrectionExclusion(splits.CORRECTION_SHARE)
    assert correction_exclusion(handle, PREVIOUS) is None
    assert correction_exclusion(resolve_model(drifted_world["root"], "reference", PREVIOUS), PREVIOUS) is None
    data = json.loads(json.dumps(encode(handle.meta)))
    data["correction_rows"]["scheme"]["correction_salt"] = "0x0000000000000001"
    other = replace(handle, meta=as_metadata(data))
    with pytest.raises(LabelDPInputError, match=r"correction_rows\.scheme is not one this version reads"):
        correction_exclusion(other, DAY)
