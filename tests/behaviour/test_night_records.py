"""The night's records that travel from the flows to the sinks: the control check_control judges carried as the typed
record. Each record read from its JSON and written back exactly, refusing a bad field by name: at its mirror
(tests/auditing/verdict/test_reference_check.py, test_shift_diagnostic.py, test_control_check.py; judge refusing a
record's dict: test_judge.py); a scoring job's lineage read once into the warehouse's: tests/flows/test_steps.py."""

from __future__ import annotations

from auditing.game.config import GameConfig
from labeldp.codec import decode, encode


# ------------------------------------------------------------------------------------------ a control's outcome
def test_the_judged_control_is_the_record_the_flows_carry():
    """check_control builds the record; the night's trust reads its dict exactly as before it was typed."""
    import numpy as np

    from auditing.audit import run_audit
    from auditing.verdict.control_check import ControlCheck
    from auditing.verdict.controls import NEGATIVE, check_control

    rng = np.random.default_rng(1)
    p = rng.uniform(0.05, 0.95, 2000)
    labels = (rng.random(2000) < p).astype(int)
    check = check_control(NEGATIVE, run_audit(p, p, labels, game=GameConfig(repetitions=1)))
    assert isinstance(check, ControlCheck) and check.passed and check.floor is None
    assert decode(ControlCheck, encode(check), "control") == check
    assert list(encode(check)) == ["control", "passed", "epsilon_lower_bound", "floor", "ceiling", "message",
                                     "floor_detail", "misfit_kappa"]
