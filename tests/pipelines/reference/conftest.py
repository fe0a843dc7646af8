"""The drifted day's fixtures (tests/support/drifted_reference.py) for the reference's tests here
(test_recalibration.py, test_shift_diagnostics.py): the data root with the reference and the drifted day
(``drifted_world``), and the reference recalibrated on it (``drifted_recalibrated``), once per module."""

from tests.support.drifted_reference import drifted_recalibrated, drifted_world  # noqa: F401  (fixtures)
