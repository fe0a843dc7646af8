"""flows/rejudge.py: a stored night is written and read by labeldp.codec, byte for byte as before.

tests/flows/fixtures/stored_night_before.json holds what ``StoredNight.to_dict`` wrote for the samples below (through
``write_night``'s JSON) before the codec; tests/flows/fixtures/night-*.json are nights the nightly wrote then."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest

from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.verdict.reference_check import CalibrationFigures, ReferenceCheck
from auditing.verdict.shift_diagnostic import ShiftDiagnostic
from flows.rejudge import NightModel, StoredNight, read_night, write_night
from labeldp.codec import decode, encode
from pipelines.scoring.beam_request import json_safe

FIXTURES = Path(__file__).parent / "fixtures"
DAY = dt.date(2026, 9, 2)


def samples() -> dict:
    """name -> StoredNight, built by hand."""
    figures = CalibrationFigures(10, 5, 3, 0.75, 0.5, 0.125, 0.0625)
    models = (NightModel("control-positive", "control", 2.0, "positive", "sweeps/c/date=2026-09-02/k"),
              NightModel("open", "target", math.inf, None, "sweeps/open/date=2026-09-02/k",
                         split_test={"test": "binomial", "halves": [1, 2]}),
              NightModel("broken", "target", 1.0, error="scoring failed"))
    return {
        "full": StoredNight(DAY, "nightly", GameConfig(repetitions=3, seed=7, night=DAY),
                            BoundConfig(method="fdp", delta=1e-6, kappa=0.25), models,
                            ReferenceCheck("boost", True, "checked on held-out rows", figures),
                            ShiftDiagnostic("a diagnostic", error="boom"), True, "2026-09-03T01:02:03+00:00", 0.01),
        "bare": StoredNight(DAY, "backfill", GameConfig(), BoundConfig(), models[2:], None, None, False,
                            "2026-09-03T01:02:03+00:00"),
    }


def _written(night: StoredNight) -> str:
    return json.dumps(json_safe(encode(night)), indent=1, sort_keys=True) + "\n"


BEFORE = json.loads((FIXTURES / "stored_night_before.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_a_stored_night_writes_what_it_wrote_before_and_reads_it_back(name):
    night = samples()[name]
    assert _written(night) == json.dumps(BEFORE[name], indent=1, sort_keys=True) + "\n"
    assert decode(StoredNight, BEFORE[name], "night") == night


def test_a_night_stored_before_its_slice_budget_reads_as_none():
    stored = {k: v for k, v in BEFORE["bare"].items() if k != "slice_budget"}
    assert decode(StoredNight, stored, "night") == samples()["bare"]


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("night-*.json")), ids=lambda p: p.name)
def test_a_night_the_nightly_wrote_reads_back_and_is_written_again_identically(path, tmp_path):
    text = path.read_text(encoding="utf-8")
    night = decode(StoredNight, json.loads(text), "night")
    assert _written(night) == text
    written = write_night(tmp_path, night)
    assert written.read_text(encoding="utf-8") == text and read_night(tmp_path, night.date) == night
    assert written.name == path.name.removeprefix("night-")  # the game's hash, as main computed it
