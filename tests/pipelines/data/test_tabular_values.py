"""A tabular log's values (pipelines/data/tabular_values.py): which text fits a column's type, and which floats are
whole numbers an int64 holds exactly. Converting a whole log is tested in test_tabular_ingest.py."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipelines.data.tabular_values import WHOLE_FLOAT_LIMIT, fits, whole_numbers


def test_whole_numbers_are_finite_integral_and_exact_in_a_double():
    values = pa.array([1.0, -3.0, 2.5, None, float("nan"), float("inf"), WHOLE_FLOAT_LIMIT, 2.0 * WHOLE_FLOAT_LIMIT])
    assert whole_numbers(values).tolist() == [True, True, False, False, False, False, True, False]
    assert whole_numbers(pa.array([], type=pa.float64())).dtype == np.bool_


def test_text_fits_a_type_when_it_converts_without_loss():
    assert fits(str(2**63 - 1), pa.int64()) and fits(str(-(2**63)), pa.int64())
    assert not fits(str(2**63), pa.int64()) and not fits(str(-(2**63) - 1), pa.int64())
    assert fits("1.5", pa.float64()) and not fits("abc", pa.float64())
