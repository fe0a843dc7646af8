"""The train command (flows/commands/train.py): a CatBoost fit's live progress, shown on a terminal only and never
with --quiet, each fit named (the progress itself: tests/labeldp/test_progress.py)."""

from __future__ import annotations

import datetime as dt
import sys

import pytest

from tests.support.live_progress import not_live  # noqa: F401  (autouse fixture: live progress off)

DAY0, DAY1 = dt.date(2024, 3, 1), dt.date(2024, 3, 2)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    from pipelines.data.synth import write_synthetic_day

    root = tmp_path_factory.mktemp("progress")
    for date in (DAY0, DAY1):
        write_synthetic_day(root, date, rows=3000)
    return root


@pytest.mark.parametrize(("terminal", "quiet", "shown"), [(True, False, True), (True, True, False),
                                                           (False, False, False)])
def test_train_shows_the_fits_progress_on_a_terminal_only_and_never_with_quiet(data_root, capsys, monkeypatch,
                                                                                terminal, quiet, shown):
    from flows.cli import main
    from pipelines.training import fitting

    monkeypatch.setattr(fitting, "PROGRESS_SECONDS", 0.0)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    name = f"cli-rr-{terminal}-{quiet}"
    code = main(["train", "--date", DAY1.isoformat(), "--mechanism", "rr", "--epsilon", "2", "--model-name", name,
                 "--data-root", str(data_root), "--iterations", "4", *(["--quiet"] if quiet else [])])
    err = capsys.readouterr().err
    assert code == 0, err
    lines = [line for line in err.splitlines() if "of 4 iterations" in line]
    assert bool(lines) == shown, err
    if shown:  # the reference (trained when missing) and the target, each fit with its name
        assert any(line.endswith("CatBoost rr eps=2: 2 of 4 iterations") for line in lines), lines
        assert all(line.startswith("[train +") for line in lines), lines
    assert quiet is False or err == "", err
