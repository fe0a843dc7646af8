"""The synthetic Criteo-like generator (pipelines.data.synth) and `labeldp-audit data synth`."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow.compute as pc
import pytest
from scipy import stats

from flows.cli import main
from labeldp.errors import LabelDPInputError
from pipelines.data import schema, synth
from pipelines.data.layout import oracle_dir, partition_dir

DAY = dt.date(2024, 5, 10)
NEXT = dt.date(2024, 5, 11)
ROWS = 200_000


def _codes(column) -> tuple[np.ndarray, np.ndarray]:
    """(dictionary codes with 0 for nulls, validity) of a single-dictionary categorical column."""
    array = column.combine_chunks()
    return pc.fill_null(array.indices, 0).to_numpy(), array.is_valid().to_numpy(zero_copy_only=False)


@pytest.fixture(scope="module")
def day() -> synth.SyntheticDay:
    return synth.generate_day(DAY, rows=ROWS, seed=3)


def test_schema_and_oracle_alignment(day):
    assert day.table.schema.equals(schema.PARTITION_SCHEMA)
    schema.validate_table(day.table, "synthetic")  # 8-hex categoricals, unique row_ids, 0/1 labels
    assert day.oracle.column("row_id").equals(day.table.column("row_id"))
    assert "p_click" not in day.table.column_names  # the truth never enters the partition
    first = DAY.toordinal() - dt.date(1970, 1, 1).toordinal()
    assert day.table.column("row_id")[0].as_py() == first * 2**32


def test_click_rate_near_three_percent(day):
    # The day's target rate is 3% +- 10% (slow yearly cycle); sampling noise at 200k rows is ~0.04%.
    # Tolerance: 3% +- 0.45% absolute.
    rate = pc.mean(day.table.column("label")).as_py()
    assert abs(rate - 0.03) < 0.0045, rate
    assert abs(day.provenance["target_click_rate"] - 0.03) <= 0.003 + 1e-9


def test_labels_follow_the_oracle(day):
    """label ~ Bernoulli(p_click): the click count matches sum(p) within 4 standard errors, overall and in
    each decile of p (a calibration check), and p is informative (AUC of the oracle well above 0.5)."""
    y = day.table.column("label").to_numpy().astype(float)
    p = day.oracle.column("p_click").to_numpy()
    assert np.all((p > 0) & (p < 1))
    se = np.sqrt(np.sum(p * (1 - p)))
    assert abs(y.sum() - p.sum()) < 4 * se
    order = np.argsort(p)
    chi2 = 0.0
    for part in np.array_split(order, 10):
        expected, variance = p[part].sum(), np.sum(p[part] * (1 - p[part]))
        chi2 += (y[part].sum() - expected) ** 2 / variance
    assert stats.chi2.sf(chi2, df=10) > 1e-4, chi2
    auc = stats.mannwhitneyu(p[y == 1], p[y == 0]).statistic / ((y == 1).sum() * (y == 0).sum())
    assert auc > 0.7, auc


def test_signal_and_noise_features(day):
    """A signal categorical (C6, 20 values) moves the click rate across its values; a noise one (C5) does not
    beyond chance (chi-square test of independence)."""
    y = day.table.column("label").to_numpy()

    def independence_p_value(name: str) -> float:
        values, valid = _codes(day.table.column(name))
        top = np.argsort(np.bincount(values[valid]))[-15:]  # the 15 most popular values
        keep = valid & np.isin(values, top)
        table = np.array([[np.sum((values[keep] == v) & (y[keep] == k)) for k in (0, 1)] for v in top])
        return stats.chi2_contingency(table).pvalue

    assert independence_p_value("C6") < 1e-6
    assert independence_p_value("C5") > 1e-4


def test_missing_rates_and_zipf(day):
    t = day.table
    assert abs(t.column("I12").null_count / ROWS - 0.76) < 0.01
    assert t.column("I2").null_count == 0
    assert abs(t.column("C22").null_count / ROWS - 0.76) < 0.01
    assert pc.min(t.column("I5")).as_py() >= 0
    # Zipf popularity: in C3 (200k possible values) the 1% most frequent values seen cover most rows.
    codes, valid = _codes(t.column("C3"))
    counts = np.sort(np.bincount(codes[valid]))[::-1]
    top = counts[: max(1, len(counts) // 100)].sum() / counts.sum()
    assert top > 0.5, top
    assert len(counts) > 1000  # and a long tail


def test_deterministic_bytes_and_order_independence(tmp_path):
    synth.write_synthetic_day(tmp_path / "a", DAY, rows=5_000, seed=3)
    synth.write_synthetic_day(tmp_path / "b", NEXT, rows=5_000, seed=3)  # another day first
    synth.write_synthetic_day(tmp_path / "b", DAY, rows=5_000, seed=3)
    for area in (partition_dir, oracle_dir):
        files_a = sorted(p.relative_to(tmp_path / "a") for p in area(tmp_path / "a", DAY).iterdir())
        files_b = sorted(p.relative_to(tmp_path / "b") for p in area(tmp_path / "b", DAY).iterdir())
        assert files_a == files_b
        for rel in files_a:
            assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    assert schema.partition_fingerprint(tmp_path / "a", DAY) == schema.partition_fingerprint(tmp_path / "b", DAY)
    provenance = schema.read_provenance(tmp_path / "a", DAY)
    assert provenance["day_seed"] == synth.day_seed(3, DAY)
    assert provenance["base_seed"] == 3 and provenance["rows"] == 5_000


def test_seed_and_date_change_the_data():
    base = synth.generate_day(DAY, rows=2_000, seed=3).table
    assert not synth.generate_day(DAY, rows=2_000, seed=4).table.drop(["row_id"]).equals(base.drop(["row_id"]))
    assert not synth.generate_day(NEXT, rows=2_000, seed=3).table.drop(["row_id"]).equals(
        base.drop(["row_id"]))
    assert synth.day_seed(3, DAY) != synth.day_seed(3, NEXT) != synth.day_seed(4, DAY)


def test_law_does_not_depend_on_rows():
    small = synth.generate_day(DAY, rows=1_000, seed=3).provenance
    large = synth.generate_day(DAY, rows=20_000, seed=3).provenance
    assert small["intercept"] == large["intercept"]
    assert small["target_click_rate"] == large["target_click_rate"]


def test_drift_is_slow_but_real():
    d0 = dt.date(2024, 5, 10)
    p0, p1, p60 = (synth.day_parameters(3, d0 + dt.timedelta(days=k)) for k in (0, 1, 60))
    one_day = np.abs(p1.num_coef - p0.num_coef).max()
    sixty_days = np.abs(p60.num_coef - p0.num_coef).max()
    assert 0 < one_day < sixty_days
    assert 0 < np.abs(p1.cat_effect[0] - p0.cat_effect[0]).max() < np.abs(p60.cat_effect[0] - p0.cat_effect[0]).max()
    # Popularity drift is visible in data: C6's value frequencies differ between days 60 apart.
    far = [synth.generate_day(d, rows=100_000, seed=3).table.column("C6") for d in (d0, d0 + dt.timedelta(60))]
    freq = []
    for column in far:
        values = np.array(column.cast(schema.pa.string()).fill_null("").to_pylist())
        keys = np.unique(values)
        freq.append({k: c for k, c in zip(keys, [(values == k).sum() for k in keys], strict=True)})
    keys = sorted(set(freq[0]) | set(freq[1]))
    contingency = np.array([[freq[i].get(k, 0) for k in keys] for i in range(2)])
    assert stats.chi2_contingency(contingency).pvalue < 1e-6


def test_bad_arguments():
    with pytest.raises(LabelDPInputError, match="rows must be a whole number"):
        synth.generate_day(DAY, rows=0)
    with pytest.raises(LabelDPInputError, match="seed must be a whole number"):
        synth.generate_day(DAY, rows=10, seed=-1)
    with pytest.raises(TypeError, match=r"date must be a datetime\.date"):  # parsed at the edge, never here
        synth.generate_day("2024-05-10", rows=10)


def test_cli_synth_range(tmp_path, capsys):
    argv = ["data", "synth", "--start", "2024-01-30", "--end", "2024-02-01", "--rows", "3000", "--seed", "5",
            "--data-root", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count(" rows, click rate ") == 3
    for date in (dt.date(2024, 1, 30), dt.date(2024, 1, 31), dt.date(2024, 2, 1)):
        assert schema.read_partition(tmp_path, date).num_rows == 3000
        assert schema.read_oracle(tmp_path, date).num_rows == 3000


# ------------------------------------------------------------------------------------------ drift on demand


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p) - np.log1p(-p)


def _p_click(d: synth.SyntheticDay) -> np.ndarray:
    return d.oracle.column("p_click").to_numpy()


def _is_value(d: synth.SyntheticDay, column: str, value: str) -> np.ndarray:
    """True on the rows whose ``column`` is ``value`` (False where missing)."""
    strings = d.table.column(column).cast(schema.pa.string())
    return pc.fill_null(pc.equal(strings, value), False).to_numpy(zero_copy_only=False)


def test_no_shift_is_the_default_output():
    base = synth.generate_day(DAY, rows=5_000, seed=3)
    for shift in (None, synth.DayShift(),
                  synth.DayShift(logit=0.0, segments=(synth.SegmentShift(column="C9", rank=0, logit=0.0),))):
        same = synth.generate_day(DAY, rows=5_000, seed=3, shift=shift)
        assert same.table.equals(base.table) and same.oracle.equals(base.oracle)
        assert same.provenance == base.provenance and "shift" not in same.provenance


def test_global_logit_shift_moves_the_truth_and_the_labels(day):
    """+0.7 on every row's logit: the oracle's logits move by exactly 0.7 (same features, same intercept), its
    mean from ~2.9% to ~5.3% on this day, and the labels follow the shifted truth (only 0 -> 1 flips, since the
    label uniforms are shared)."""
    shifted = synth.generate_day(DAY, rows=ROWS, seed=3, shift=synth.DayShift(logit=0.7))
    p0, p1 = _p_click(day), _p_click(shifted)
    np.testing.assert_allclose(_logit(p1) - _logit(p0), 0.7, rtol=0, atol=1e-8)
    assert shifted.table.drop(["label"]).equals(day.table.drop(["label"]))
    assert 0.025 < p0.mean() < 0.035 and 0.045 < p1.mean() < 0.065, (p0.mean(), p1.mean())
    y0 = day.table.column("label").to_numpy()
    y1 = shifted.table.column("label").to_numpy()
    assert np.all(y1 >= y0)
    assert abs(y1.sum() - p1.sum()) < 4 * np.sqrt(np.sum(p1 * (1 - p1)))  # labels ~ Bernoulli(shifted truth)
    info = shifted.provenance
    assert info["shift"] == {"logit": 0.7, "segments": [], "popularity": []}
    assert info["intercept"] == day.provenance["intercept"]  # the law's intercept; the shift is on top
    assert info["mean_p_click"] == round(float(p1.mean()), 6) and info["clicks"] == int(y1.sum())


def test_segment_shift_moves_only_the_segment(day):
    """C9 rank 0 (the day's most popular of 3 values, ~30-70% of rows) +0.5 and C6 rank 0 (a column with 12%
    missing) -0.3: each row's logit moves by exactly the sum of its segments' shifts; other rows are untouched
    bit for bit; missing C6 rows are in no C6 segment."""
    shift = synth.DayShift(segments=(synth.SegmentShift(column="C9", rank=0, logit=0.5),
                                     synth.SegmentShift(column="C6", rank=0, logit=-0.3)))
    shifted = synth.generate_day(DAY, rows=ROWS, seed=3, shift=shift)
    c9, c6 = shifted.provenance["shift"]["segments"]
    in_c9, in_c6 = _is_value(shifted, "C9", c9["value"]), _is_value(shifted, "C6", c6["value"])
    assert c9["rows"] == in_c9.sum() and c6["rows"] == in_c6.sum()
    assert 0.3 < in_c9.mean() < 0.75 and abs(in_c9.mean() - c9["expected_share"]) < 0.01, in_c9.mean()
    assert c9["day_rank"] == 0 and c6["rank"] == 0
    values, valid = _codes(shifted.table.column("C9"))
    assert np.bincount(values[valid]).argmax() == values[in_c9][0]  # rank 0 is the most frequent value
    assert in_c6.sum() > 0 and not np.any(in_c6 & ~shifted.table.column("C6").is_valid().to_numpy(
        zero_copy_only=False))
    p0, p1 = _p_click(day), _p_click(shifted)
    touched = in_c9 | in_c6
    assert np.array_equal(p1[~touched], p0[~touched])  # bit for bit
    np.testing.assert_allclose((_logit(p1) - _logit(p0))[touched], (0.5 * in_c9 - 0.3 * in_c6)[touched],
                               rtol=0, atol=1e-8)
    assert shifted.table.drop(["label"]).equals(day.table.drop(["label"]))
    # The same segment named by its hex value (any case) is the same day.
    by_rank = synth.generate_day(DAY, rows=3_000, seed=3, shift=synth.DayShift(
        segments=(synth.SegmentShift(column="C9", rank=0, logit=0.5),)))
    by_value = synth.generate_day(DAY, rows=3_000, seed=3, shift=synth.DayShift(
        segments=(synth.SegmentShift(column="C9", value=c9["value"].upper(), logit=0.5),)))
    assert by_value.table.equals(by_rank.table) and by_value.oracle.equals(by_rank.oracle)
    assert by_value.provenance["shift"]["segments"][0]["day_rank"] == 0


def test_popularity_shift_moves_the_features_not_the_click_model(day):
    """C9 rotated by 1 and C3 (a noise column) flattened to exponent 0.8: their value frequencies follow the
    shifted weights; every other column is unchanged; P(label | features) keeps its form (rows whose C9 value
    is unchanged keep their p_click bit for bit, the others move by a constant per (old, new) value pair)."""
    shift = synth.DayShift(popularity=(synth.PopularityShift(column="C9", rotate=1),
                                       synth.PopularityShift(column="C3", exponent=0.8)))
    shifted = synth.generate_day(DAY, rows=ROWS, seed=3, shift=shift)
    assert shifted.table.drop(["label", "C9", "C3"]).equals(day.table.drop(["label", "C9", "C3"]))
    old, _ = _codes(day.table.column("C9"))
    new, _ = _codes(shifted.table.column("C9"))
    old_values = np.asarray(day.table.column("C9").combine_chunks().dictionary.to_pylist())[old]
    new_values = np.asarray(shifted.table.column("C9").combine_chunks().dictionary.to_pylist())[new]
    # Frequencies: far from the day's own law, in line with the shifted law (C9 has no missing values).
    j = schema.CATEGORICAL_COLUMNS.index("C9")
    expected = {name: np.diff(synth.day_parameters(3, DAY, s).cat_cdf[j], prepend=0.0) for name, s in
                (("base", None), ("shifted", shift))}
    assert not np.allclose(expected["base"], expected["shifted"], atol=0.05)
    vocabulary = sorted(set(old_values) | set(new_values))
    for values, law in ((old_values, "base"), (new_values, "shifted")):
        counts = np.array([(values == v).sum() for v in vocabulary])
        ordered = np.sort(counts)[::-1] / ROWS
        np.testing.assert_allclose(ordered, np.sort(expected[law])[::-1], atol=0.005)
    assert stats.chi2_contingency([[(old_values == v).sum() for v in vocabulary],
                                   [(new_values == v).sum() for v in vocabulary]]).pvalue < 1e-6
    codes3, valid3 = _codes(day.table.column("C3"))
    shifted3, shifted_valid3 = _codes(shifted.table.column("C3"))
    assert len(np.unique(shifted3[shifted_valid3])) > 1.2 * len(np.unique(codes3[valid3]))  # flatter: more values
    p0, p1 = _p_click(day), _p_click(shifted)
    same = old_values == new_values
    assert 0 < same.sum() < ROWS
    assert np.array_equal(p1[same], p0[same])
    diff = _logit(p1) - _logit(p0)
    for a, b in {(a, b) for a, b in zip(old_values[~same], new_values[~same], strict=True)}:
        pair = (old_values == a) & (new_values == b)
        assert np.ptp(diff[pair]) < 1e-8 and abs(diff[pair][0]) > 1e-3
    assert shifted.provenance["shift"]["popularity"][0]["rotate"] == 1
    assert shifted.provenance["intercept"] == day.provenance["intercept"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: synth.DayShift(logit=11), "logit shift must be a finite number in -10..10"),
        (lambda: synth.DayShift(logit=float("nan")), "logit shift must be a finite number"),
        (lambda: synth.SegmentShift(column="I1", rank=0, logit=1), "segment column must name a categorical"),
        (lambda: synth.SegmentShift(column="C9", logit=1), "needs exactly one of a value"),
        (lambda: synth.SegmentShift(column="C9", rank=3, logit=1), r"segment rank of C9 \(3 values\)"),
        (lambda: synth.SegmentShift(column="C9", value="xyz", logit=1), "must be 8 hex digits"),
        (lambda: synth.PopularityShift(column="C9"), "needs a rotation"),
        (lambda: synth.PopularityShift(column="C9", exponent=-1), "popularity exponent of C9"),
        (lambda: synth.DayShift(popularity=(synth.PopularityShift(column="C9", rotate=1),) * 2),
         "at most one popularity shift per column"),
        (lambda: synth.DayShift(segments=("C9",)), "must hold SegmentShift objects"),
        (lambda: synth.check_shift(synth.DayShift(segments=(synth.SegmentShift(
            column="C9", value="00000000", logit=1),)), seed=3), "00000000 is not a value of C9"),
    ],
)
def test_bad_shift_settings(make, message):
    with pytest.raises(LabelDPInputError, match=message):
        make()


def test_cli_shift_days(tmp_path, capsys):
    """The shift lands on the chosen day only: the other days are byte-identical to an unshifted run, and the
    shifted day is what generate_day gives with the same settings, whatever range it was generated in."""
    common = ["data", "synth", "--rows", "3000", "--seed", "5"]
    days = [dt.date(2024, 1, 30), dt.date(2024, 1, 31), dt.date(2024, 2, 1)]
    flags = ["--shift-days", "2024-01-31", "--logit-shift", "0.7", "--segment-shift", "C9=rank:0:-0.5",
             "--popularity-shift", "C3:exponent=0.9"]
    assert main([*common, "--start", "2024-01-30", "--end", "2024-02-01", "--data-root", str(tmp_path / "plain")]) == 0
    assert main([*common, "--start", "2024-01-30", "--end", "2024-02-01", *flags,
                 "--data-root", str(tmp_path / "shifted")]) == 0
    out = capsys.readouterr().out
    assert "1 of them shifted" in out and out.count("; shifted: logit +0.7, C9=") == 1
    assert main([*common, "--start", "2024-01-31", "--end", "2024-01-31", *flags,
                 "--data-root", str(tmp_path / "alone")]) == 0

    def files(root, date):
        return {p.relative_to(root): p.read_bytes() for area in (partition_dir, oracle_dir)
                for p in area(root, date).iterdir()}

    for date in days:
        plain, shifted = files(tmp_path / "plain", date), files(tmp_path / "shifted", date)
        assert (plain == shifted) == (date != days[1]), date
    assert files(tmp_path / "alone", days[1]) == files(tmp_path / "shifted", days[1])
    record = schema.read_provenance(tmp_path / "shifted", days[1])["shift"]
    assert record["logit"] == 0.7 and record["popularity"] == [
        {"column": "C3", "rotate": 0, "exponent": 0.9, "base_exponent": record["popularity"][0]["base_exponent"]}]
    assert record["segments"][0]["rank"] == 0 and record["segments"][0]["logit"] == -0.5
    expected = synth.generate_day(days[1], rows=3000, seed=5, shift=synth.DayShift(
        logit=0.7, segments=(synth.SegmentShift(column="C9", rank=0, logit=-0.5),),
        popularity=(synth.PopularityShift(column="C3", exponent=0.9),)))
    assert schema.read_oracle(tmp_path / "shifted", days[1]).equals(expected.oracle)
    assert "shift" not in schema.read_provenance(tmp_path / "shifted", days[0])
