"""The synthetic Criteo-like generator (pipelines.synth) and `labeldp-audit data synth`."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow.compute as pc
import pytest
from scipy import stats

from auditing.errors import LabelDPInputError
from flows.cli import main
from pipelines import schema, synth
from pipelines.layout import oracle_dir, partition_dir

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


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--start", "2024-02-02", "--end", "2024-02-01"], "--end (2024-02-01) is before --start"),
        (["--start", "2024-02-30", "--end", "2024-03-01"], "--start is not a valid calendar date"),
        (["--start", "2024-02-01", "--end", "2024-02-01", "--rows", "-5"], "--rows must be a whole number >= 1"),
        (["--start", "2024-02-01", "--end", "2024-02-01", "--seed", "x"], "--seed must be a whole number"),
    ],
)
def test_cli_synth_bad_input(tmp_path, capsys, args, message):
    assert main(["data", "synth", *args, "--data-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "partitions").exists()
