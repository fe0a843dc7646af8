"""The night's reference check as warehouse columns (auditing/sinks/warehouse/reference_columns.py): the columns a
check fills, all None without one, and the check read back from a row. A pre-kappa row reads back no check:
tests/auditing/sinks/warehouse/test_migrations.py."""

from types import SimpleNamespace

import pytest

from auditing.sinks.warehouse.reference_columns import (
    CALIBRATION_FIGURES,
    LABEL_BLIND_FIGURES,
    reference_check_columns,
    reference_check_from_row,
)
from auditing.verdict.reference_check import CalibrationFigures, LabelBlindFigures, ReferenceCheck
from labeldp.errors import LabelDPInputError

CHECK = ReferenceCheck("boost", True, "checked on held-out rows", CalibrationFigures(10, 5, 3, 0.75, 0.5, 0.125, 0.0625),
                       LabelBlindFigures(0.5, 0.25, True))


def test_a_check_reads_back_from_its_columns():
    columns = reference_check_columns(CHECK, "boost")
    assert set(CALIBRATION_FIGURES.values()) | set(LABEL_BLIND_FIGURES.values()) < set(columns)
    assert columns["reference_checked"] == 1
    row = SimpleNamespace(reference_calibration="boost", **columns)
    assert reference_check_from_row(row) == CHECK
    bare = ReferenceCheck("none", True)
    row = SimpleNamespace(reference_calibration="none", **reference_check_columns(bare))
    assert reference_check_from_row(row) == bare  # no figure group: none read back


def test_no_check_fills_every_column_with_none_and_reads_back_as_none():
    columns = reference_check_columns(None, "boost")
    assert columns.keys() == reference_check_columns(CHECK).keys() and set(columns.values()) == {None}
    assert reference_check_from_row(SimpleNamespace(reference_calibration="boost", **columns)) is None


def test_a_check_of_another_calibration_than_the_result_s_is_refused():
    with pytest.raises(LabelDPInputError, match="differs from the result's reference_calibration 'none'"):
        reference_check_columns(CHECK, "none")
