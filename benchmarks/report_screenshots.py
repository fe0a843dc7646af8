"""Renders the run report (a VIOLATION acted on, an unconfirmed one, a PASS, no power), the trend report and the
index page from seeded audits, and screenshots each in headless Chromium at 1400 and 400 pixels wide.

    PYTHONPATH=. python benchmarks/report_screenshots.py [OUT_DIR]   # default benchmarks/results

Writes OUT_DIR/report_<name>_<width>.png and the pages under OUT_DIR/pages/ (not committed).
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import tempfile
from pathlib import Path

from auditing.audit import no_rows_result
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.row_groups import NO_ROWS_LEFT
from auditing.sinks.report import render_run_report, render_trend_report, write_report
from auditing.sinks.report.index_page import render_index
from auditing.sinks.warehouse.records import upgrade_row
from auditing.verdict.judge import judge
from tests.support import checked_audits


def _row(model: str, day: dt.date, verdict, run_kind: str = "nightly") -> object:
    r = verdict.result
    return upgrade_row({
        "model_id": model, "run_kind": run_kind, "partition_date": day, "epsilon_lower_bound": r.epsilon_lower_bound,
        "claimed_epsilon": verdict.claimed_epsilon, "status": verdict.status, "audit_config_hash": r.config_hash,
        "max_certifiable_epsilon": r.max_certifiable_epsilon, "epsilon_mean": r.epsilon_mean, "strategy": r.bound.strategy,
        "confidence": r.bound.confidence, "gamma": 1 - r.bound.confidence, "m": r.m, "delta": r.bound.delta,
        "selected_guesses": r.selected_guesses, "selected_correct": r.selected_correct, "method": r.bound.method,
        "kappa": r.bound.kappa, "repetitions": r.game.repetitions, "seed": r.game.seed, "result_json": "{}",
        "trust": verdict.trust.state, "decision": verdict.decision.decision if verdict.decision else None})


def pages() -> dict[str, str]:
    leaky, misfit = checked_audits.leaky(), checked_audits.misfit()
    day = dt.date(2024, 1, 14)
    verdicts = {
        "violation": judge(leaky, 0.5),
        "unconfirmed": judge(misfit, 0.1),
        "pass": judge(checked_audits.clean(), 1.0),
        "no_power": judge(no_rows_result(GameConfig(), BoundConfig(), NO_ROWS_LEFT, None), 0.5),
    }
    trend = [_row("leaky", day - dt.timedelta(days=d), verdicts["violation"]) for d in range(3)]
    trend.append(_row("leaky", day, verdicts["unconfirmed"], run_kind="rejudge"))
    out = {name: render_run_report(v, {"model_id": name, "partition_date": day.isoformat()}, trend if
                                   name == "violation" else trend[:1], None) for name, v in verdicts.items()}
    out["trend"] = render_trend_report(trend, "leaky")
    others = [_row(name, day, v) for name, v in verdicts.items()]
    out["index"] = render_index([*trend, *others, _row("leaky", day, verdicts["violation"], run_kind="guardrail")])
    out["trend_one_night"] = render_trend_report(trend[:1], "leaky")
    return out


def main(out_dir: Path) -> None:
    (out_dir / "pages").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        for name, text in pages().items():
            page = write_report(text, out_dir / "pages" / f"{name}.html")
            for width in (1400, 400):
                shot = out_dir / f"report_{name}_{width}.png"
                subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                f"--user-data-dir={profile}", f"--window-size={width},2000", f"--screenshot={shot}",
                                page.as_uri()], check=True, capture_output=True, timeout=120)
                print(shot)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results").resolve())
