"""The game's records (auditing/records/game.py): the attack curve's figures stored as attack_* columns, its rows
counted from its bins, and every record read back as written. How the curve is computed:
tests/auditing/game/test_attack_curve.py."""

from auditing.records.game import (
    REFERENCE_CALIBRATIONS,
    AttackCurve,
    CurvePoint,
    ExpectedCorrect,
    HalfCounts,
    ScoreHistogram,
    SplitHalves,
)
from labeldp.codec import decode, encode
from labeldp.stored import stored_fields

CURVE = AttackCurve(repetition=0, statistic="signed score", edges=(-1.0, 0.0, 1.0), positives=(1, 2, 3, 4),
                    negatives=(5, 0, 0, 1), tpr_at_fpr_0_001=None, tpr_at_fpr_0_001_lower=None,
                    tpr_at_fpr_0_001_upper=None, tpr_at_fpr_0_01=0.4, tpr_at_fpr_0_01_lower=0.3,
                    tpr_at_fpr_0_01_upper=0.5, auroc=0.8, auroc_lower=0.7, auroc_upper=0.9,
                    bootstrap_confidence=0.95, bootstrap_resamples=200, bootstrap_seed=3)


def test_each_attack_figure_and_its_interval_is_an_attack_column_between_zero_and_one():
    stored = {name: (column, declaration) for name, column, declaration in stored_fields(AttackCurve)}
    assert list(stored) == [f"{figure}{end}" for figure in AttackCurve.FIGURES for end in ("", "_lower", "_upper")]
    for name, (column, declaration) in stored.items():
        assert column == f"attack_{name}" and (declaration.low, declaration.high) == (0.0, 1.0)
        assert "not a bound on epsilon" in declaration.comment


def test_the_curve_counts_its_positive_and_negative_rows_over_its_bins():
    assert (CURVE.rows_positive, CURVE.rows_negative) == (10, 6)


def test_every_game_record_reads_back_as_written():
    half = HalfCounts(m=10, guesses=(1, 5), correct=(1, 3))
    for record in (CURVE, CurvePoint(10, 9, 0.5), SplitHalves(half, HalfCounts(m=11, guesses=(1, 6), correct=(0, 4))),
                   ScoreHistogram(0, "|score|", (0.25, 0.5), (3, 2, 1), (2, 1, 1)),
                   ExpectedCorrect((1, 5), (0.5, 2.5))):
        assert decode(type(record), encode(record)) == record
    assert REFERENCE_CALIBRATIONS == ("boost", "none")
