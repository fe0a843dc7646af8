"""The report tests' shared run and how they read a page (tests/auditing/sinks/report/, whose conftest.py offers the
fixtures; tests/behaviour/test_cli_report.py; tests/auditing/sinks/test_listing.py).

- ``run`` (fixture, once per session: read-only, its records frozen): a real audit with signal, a VIOLATION at
  claimed eps 1 (``CLAIMED``) that its capacity check vouches for, with 14 nights of trend, a score histogram,
  lineage and its night's reference check; ``run_page`` renders its run page with some inputs changed.
- ``checked`` (fixture, once per session): the audits of tests/support/checked_audits.py, a real leak with row
  groups and a model whose evidence is the reference's misfit.
- ``parse_page``: a page's visible text and the classes of its elements; ``page_section``: one card's text.
- ``headless_chromium``: a page opened in headless Chromium (what a person sees), ``painted_colours``: the colours
  of its screenshot. They need Debian's `chromium` (scripts/run-tests.sh installs it); without it the test is
  skipped with a loud reason.
- ``five_night_family``: a family's evidence over five nights; ``listed_verdict``: a verdict as a run lists it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from auditing.audit import CheckRows, run_audit
from auditing.game.config import GameConfig
from auditing.sinks.report import render_run_report
from auditing.sinks.warehouse.records import upgrade_row
from auditing.verdict.judge import judge
from auditing.verdict.reference_check import ReferenceCheck
from labeldp.codec import decode

CLAIMED = 1.0


@pytest.fixture(scope="session")
def run():
    """A real audit with signal (VIOLATION at claimed eps 1, trusted: its capacity check on 20,000 check rows, rows
    the model never saw, vouches for it) on a recalibrated reference, its night's reference check, 14 nights of
    trend, a score histogram, lineage."""
    rng = np.random.default_rng(0)
    n = 20_000
    labels = rng.integers(0, 2, n)
    p_target = np.clip(0.5 + 0.25 * (2 * labels - 1) + rng.normal(0, 0.15, n), 0.01, 0.99)
    p_reference = np.clip(0.5 + rng.normal(0, 0.05, n), 0.01, 0.99)
    unseen = np.random.default_rng(1)  # the check rows: as confident, but the model never saw their labels
    check = CheckRows(np.clip(0.5 + 0.25 * unseen.choice([-1, 1], n) + unseen.normal(0, 0.15, n), 0.01, 0.99),
                      np.clip(0.5 + unseen.normal(0, 0.05, n), 0.01, 0.99), unseen.integers(0, 2, n),
                      np.arange(n, 2 * n))
    result = run_audit(p_target, p_reference, labels,
                       game=GameConfig(repetitions=10, reference_calibration="boost"), check=check)
    trend = []
    for d in range(14):
        bound = result.epsilon_lower_bound if d == 13 else [0.3, 0.7, 0.65, 0.9, 0.88, 0.72, 0.74, 0.46, 0.17,
                                                            1.2, 0.15, 0.43, 0.55][d]
        trend.append(upgrade_row({  # the required columns and the figures the trend shows; no trust recorded
            "model_id": "rr-eps1", "run_kind": "nightly",
            "partition_date": dt.date(2024, 1, 1) + dt.timedelta(days=d), "epsilon_lower_bound": bound,
            "claimed_epsilon": CLAIMED, "status": "VIOLATION" if bound > CLAIMED else "PASS",
            "audit_config_hash": result.config_hash, "max_certifiable_epsilon": result.max_certifiable_epsilon,
            "epsilon_mean": bound + 0.2, "strategy": "bonferroni", "confidence": 0.95, "gamma": 0.05, "m": n,
            "delta": result.bound.delta, "selected_guesses": result.selected_guesses,
            "selected_correct": result.selected_correct, "method": result.bound.method, "kappa": result.bound.kappa,
            "repetitions": result.game.repetitions, "seed": result.game.seed, "result_json": "{}",
        }))
    scores = np.abs(p_target - p_reference)
    correct = rng.random(n) < 0.7
    edges = np.linspace(0, scores.max(), 21)
    histogram = {"edges": edges.tolist(), "counts_correct": np.histogram(scores[correct], edges)[0].tolist(),
                 "counts_wrong": np.histogram(scores[~correct], edges)[0].tolist()}
    lineage = {
        "model_id": "rr-eps1", "partition_date": "2024-01-14",
        "model_uri": "file:///data/models/rr-eps1/date=2024-01-14/model.cbm", "model_fingerprint": "sha256:9f2c41d0a7",
        "reference_model": "rr-eps1@2024-01-13", "partition_fingerprint": "sha256:07be3e11",
        "code_version": "0.1.0+g1a2b3c", "flow_run_id": "4b1c9e0a-1111-2222-3333-444455556666",
        "started_at": "2024-01-15T01:00:00+00:00", "finished_at": "2024-01-15T01:07:31+00:00",
        "durations": {"validate": 1.2, "train": 181.0, "score": 95.4, "audit": 3.1, "publish": 0.4},
    }
    return {"result": result, "trend": trend, "histogram": histogram, "lineage": lineage,
            "reference_check": reference_check_json()}


@pytest.fixture(scope="session")
def checked():
    """Audits with a capacity check (tests/support/checked_audits.py): a real leak with row groups, and a model whose
    evidence is the reference's misfit."""
    from tests.support import checked_audits
    return {"leaky": checked_audits.leaky(row_groups=checked_audits.groups()), "misfit": checked_audits.misfit()}


def reference_check_json(calibration: str = "boost", *, label_blind: bool | None = None) -> dict:
    """A night's reference check as its JSON (`ReferenceCheck.to_dict`; `run_page` reads it with ``from_dict``);
    ``label_blind``: a night written while the label-blind control ran (True: it flagged the reference)."""
    check = {"calibration": calibration, "checked": True, "note": None,
             "calibration_figures": None if calibration != "boost" else {
                 "rows_fit": 6000, "rows_validation": 2000, "rounds": 40, "logloss_before": 0.4731,
                 "logloss_after": 0.4522, "ece_before": 0.0312, "ece_after": 0.0061}}
    if label_blind is not None:
        check["label_blind"] = {"epsilon_lower_bound": 0.2134 if label_blind else 0.0,
                                "misfit_kappa": 0.35 if label_blind else 0.0, "flagged": label_blind}
    return check


def reference_check_of(data: dict | None) -> ReferenceCheck | None:
    return None if data is None else decode(ReferenceCheck, data, "reference_check")


def run_page(run, *, trust=None, robustness=None, **changes):
    """The run page of ``run`` with some inputs changed. trust: {kind, control, night} (night: the night's
    `NightTrust`); robustness: figures to show instead of the computed ones (the shift diagnostic, audited rows),
    to check how the page renders them."""
    args = {"result": run["result"], "lineage": run["lineage"], "trend": run["trend"],
            "score_histogram": run["histogram"], "claimed_epsilon": CLAIMED,
            "reference_check": run["reference_check"], **changes}
    trust, robustness = dict(trust or {}), dict(robustness or {})
    verdict = judge(args["result"], args["claimed_epsilon"], kind=trust.get("kind", "target"),
                    control=trust.get("control"), night=trust.get("night"),
                    reference_check=reference_check_of(args["reference_check"]),
                    shift_diagnostic=robustness.pop("shift_diagnostic", None))
    if robustness:
        verdict = dataclasses.replace(verdict, robustness=dataclasses.replace(verdict.robustness, **robustness))
    return render_run_report(verdict, args["lineage"], args["trend"], args["score_histogram"])


class PageText(HTMLParser):
    """Visible text (outside <style>/<title>) and the classes of every element."""

    def __init__(self):
        super().__init__()
        self.text: list[str] = []
        self.classes: list[tuple[str, set[str]]] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self.classes.append((tag, set((dict(attrs).get("class") or "").split())))
        if tag in ("style", "title"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("style", "title"):
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)

    def count(self, css_class: str, tag: str | None = None) -> int:
        return sum(css_class in classes and (tag is None or t == tag) for t, classes in self.classes)

    @property
    def visible(self) -> str:
        return re.sub(r"\s+", " ", " ".join(self.text))


def parse_page(html_text: str) -> PageText:
    dom = PageText()
    dom.feed(html_text)
    return dom


def page_section(html_text: str, section_id: str) -> str:
    """The visible text of one <section id=...> card."""
    start = html_text.index(f'id="{section_id}"')
    return parse_page(html_text[start:html_text.index("</section>", start)]).visible


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("!!! HTML REPORT NOT CHECKED IN A BROWSER: no chromium found; scripts/run-tests.sh installs "
                "Debian's chromium (apt-get install chromium) !!!")


def headless_chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    command = [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
               "--disable-dev-shm-usage", f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def painted_colours(page: Path, tmp_path: Path, *, height: int) -> set[tuple[int, int, int]]:
    """The RGB colours of a headless-Chromium screenshot of ``page`` (1100 px wide)."""
    shot = tmp_path / f"{page.stem}.png"
    taken = headless_chromium([f"--window-size=1100,{height}", f"--screenshot={shot}", page.as_uri()],
                              tmp_path / "profile")
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    image_module = pytest.importorskip("PIL.Image")
    with image_module.open(shot) as image:
        return {rgb for _count, rgb in image.convert("RGB").getcolors(maxcolors=1 << 20)}


def five_night_family(confirm_after: int = 3):
    """A family of five nights whose evidences cross 1/alpha on night ``confirm_after`` (0-based)."""
    import datetime as dt

    from auditing.verdict.family_evidence import FamilyEvidence, NightEvidence

    nights, evidence, confirmed = [], 1.0, False
    for t in range(5):
        e = 3.0 if t < 4 else 1.0
        evidence *= e
        confirmed = confirmed or t >= confirm_after
        nights.append(NightEvidence(dt.date(2024, 1, 1) + dt.timedelta(days=t), e, evidence * 2, math.log(evidence * 2),
                                    confirmed, None if t < 4 else "no guesses on this night", e, evidence,
                                    math.log(evidence), confirmed))
    return FamilyEvidence(0.05, tuple(nights))


def listed_verdict(model: str, verdict):
    """A verdict as a run lists it after publishing (its warehouse row, its report's path, written)."""
    from auditing.sinks.listing import ListedVerdict
    from auditing.sinks.warehouse import audit_record

    row, _ = audit_record(verdict, model_id=model, partition_date="2024-01-14", run_kind="nightly")
    return ListedVerdict(row, report=f"/r/{model}.html", verdict=verdict, warehouse="written")

