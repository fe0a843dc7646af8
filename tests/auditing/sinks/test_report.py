"""HTML reports: content and labels, opened in headless Chromium (what a person sees), and the `report` CLI.

The browser tests need Debian's `chromium` (scripts/run-tests.sh installs it); without it they are skipped
with a loud reason. LABELDP_UPDATE_SCREENSHOT=1 also copies the run report's screenshot to
docs/report-screenshot.png.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from auditing.audit import CheckRows, run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.result import AuditResult
from auditing.sinks.report import (
    render_run_report,
    render_trend_report,
    run_report_path,
    trend_report_path,
    write_report,
)
from auditing.sinks.warehouse.records import upgrade_row
from auditing.verdict.judge import judge
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.shift_diagnostic import ShiftDiagnostic
from auditing.verdict.trust import NightTrust
from flows.cli import main as cli_main
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError

REPO = Path(__file__).resolve().parents[3]
CLAIMED = 1.0


# --------------------------------------------------------------------------------------------- a realistic run
@pytest.fixture(scope="module")
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
            "reference_check": _reference_check()}


def _reference_check(calibration: str = "boost", *, label_blind: bool | None = None) -> dict:
    """A night's reference check as its JSON (`ReferenceCheck.to_dict`; `_page` reads it with ``from_dict``);
    ``label_blind``: a night written while the label-blind control ran (True: it flagged the reference)."""
    check = {"calibration": calibration, "checked": True, "note": None,
             "calibration_figures": None if calibration != "boost" else {
                 "rows_fit": 6000, "rows_validation": 2000, "rounds": 40, "logloss_before": 0.4731,
                 "logloss_after": 0.4522, "ece_before": 0.0312, "ece_after": 0.0061}}
    if label_blind is not None:
        check["label_blind"] = {"epsilon_lower_bound": 0.2134 if label_blind else 0.0,
                                "misfit_kappa": 0.35 if label_blind else 0.0, "flagged": label_blind}
    return check


def _check(data: dict | None) -> ReferenceCheck | None:
    return None if data is None else decode(ReferenceCheck, data, "reference_check")


def _page(run, *, trust=None, robustness=None, **changes):
    """The run page of ``run`` with some inputs changed. trust: {kind, control, night} (night: the night's
    `NightTrust`); robustness: figures to show instead of the computed ones (the shift diagnostic, audited rows),
    to check how the page renders them."""
    args = {"result": run["result"], "lineage": run["lineage"], "trend": run["trend"],
            "score_histogram": run["histogram"], "claimed_epsilon": CLAIMED,
            "reference_check": run["reference_check"], **changes}
    trust, robustness = dict(trust or {}), dict(robustness or {})
    verdict = judge(args["result"], args["claimed_epsilon"], kind=trust.get("kind", "target"),
                    control=trust.get("control"), night=trust.get("night"),
                    reference_check=_check(args["reference_check"]), shift_diagnostic=robustness.pop("shift_diagnostic", None))
    if robustness:
        verdict = dataclasses.replace(verdict, robustness=dataclasses.replace(verdict.robustness, **robustness))
    return render_run_report(verdict, args["lineage"], args["trend"], args["score_histogram"])


class _Dom(HTMLParser):
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


def _parse(html_text: str) -> _Dom:
    dom = _Dom()
    dom.feed(html_text)
    return dom


# --------------------------------------------------------------------------------------------- content
def test_run_report_shows_verdict_bound_labels_and_charts(run):
    result = run["result"]
    html_text = _page(run)
    dom = _parse(html_text)
    text = dom.visible
    assert result.epsilon_lower_bound > CLAIMED
    assert "VIOLATION" in text and f"{result.epsilon_lower_bound:.3f}" in text
    assert "valid at 95% confidence" in text and "Bonferroni" in text and "δ = 0" in text and "κ = 0" in text
    assert "Paper's statistic" in text and "optimistic" in text and "never used for the verdict" in text
    assert "Max certifiable ε" in text and f"{result.max_certifiable_epsilon:.3f}" in text
    assert f"c′ = {result.selected_guesses:,}" in text
    assert dom.count("curve-point", "circle") == len(result.curve)
    assert dom.count("selected-point") == 1
    assert dom.count("trend-point") == 14 and dom.count("status-violation") == 2
    assert dom.count("hist-correct", "rect") == 20 and dom.count("hist-wrong", "rect") == 20
    # labelled on the chart: kappa and the reference calibration
    assert "bonferroni selection · 95% confidence · δ = 0 · κ = 0 · reference calibration: boost · binomial" in text
    assert "τ" not in text and "tau" not in text.lower()  # no surface says tau for a result written since kappa
    assert "sha256:9f2c41d0a7" in text and "total 281.1 s" in text


def test_page_is_self_contained(run):
    html_text = _page(run)
    assert "<script" not in html_text and "<link" not in html_text and "<img" not in html_text
    assert "url(" not in html_text and "@import" not in html_text
    assert not re.search(r"""(src|href)\s*=""", html_text)


def test_missing_histogram_empty_trend_and_infinite_claim(run):
    without = dataclasses.replace(run["result"], score_histogram=None)  # a result written before the score panel
    text = _parse(_page(run, result=without, score_histogram=None, trend=[], claimed_epsilon=float("inf"))).visible
    assert "Score histogram not provided for this run" in text
    assert "No audits of this model are in the warehouse yet" in text
    assert "INCONCLUSIVE" in text and "∞" in text


def test_pass_and_inconclusive_are_explained(run):
    from auditing.sinks.report.pages import VERDICTS

    assert "not a proof of privacy" in VERDICTS["PASS"]
    page = _page(run, claimed_epsilon=5.0)  # a PASS on 20,000 rows whose floor is above 1% of them: weak
    header = _parse(page.split("</header>")[0]).visible
    assert "WEAK_PASS" in header and 'class="badge WEAK_PASS"' in page
    # its meaning in one sentence on the first screen, next to the badge
    assert ("A PASS on weak evidence: this audit would have flagged the claim only if more than 1% of the audited "
            "labels were fully exposed (or not even then), so a smaller leak could have gone unseen.") in header
    text = _parse(_page(run, claimed_epsilon=50.0)).visible
    assert "INCONCLUSIVE" in text and "no power" in text


def test_text_from_lineage_is_escaped(run):
    html_text = _page(run, lineage={**run["lineage"], "code_version": "<script>alert(1)</script>"})
    assert "<script>" not in html_text and "&lt;script&gt;alert(1)&lt;/script&gt;" in html_text


@pytest.mark.parametrize("histogram, message", [
    ({"edges": [0, 1], "counts_correct": [1, 2], "counts_wrong": [1]}, "k\\+1 edges"),
    ({"edges": [0, 1]}, "counts_correct"),
    ({"edges": [1, 0], "counts_correct": [1], "counts_wrong": [1]}, "strictly increasing"),
    ({"edges": [0, 1], "counts_correct": [-1], "counts_wrong": [1]}, ">= 0"),
])
def test_bad_histograms_are_refused(run, histogram, message):
    with pytest.raises(LabelDPInputError, match=f"score_histogram.*{message}"):
        _page(run, score_histogram=histogram)


def test_trend_report_lists_every_night(run):
    dom = _parse(render_trend_report(run["trend"], "rr-eps1"))
    text = dom.visible
    assert dom.count("trend-point") == 14 and dom.count("status-violation") == 2
    assert "14 audit(s), 2024-01-01 – 2024-01-14" in text and "Paper's statistic (optimistic)" in text
    assert text.index("2024-01-14") < text.index("2024-01-02")  # newest first
    assert "No audit results" in _parse(render_trend_report([], "rr-eps1")).visible
    with pytest.raises(LabelDPInputError, match="model_id"):
        render_trend_report([], "../x")


def _polylines(svg_text: str, css_class: str) -> list[list[tuple[float, float]]]:
    """The points of every <polyline> of ``css_class``."""
    return [[tuple(map(float, pair.split(","))) for pair in found.split()]
            for found in re.findall(rf'<polyline class="{css_class}" points="([^"]*)"', svg_text)]


def _point_ys(svg_text: str, css_class: str) -> list[float]:
    """The top edge (y, in pixels) of every marker of ``css_class``: a circle's cy - r, a square's or diamond's
    smallest y."""
    tops = []
    for mark in re.findall(rf'<(?:circle|rect|polygon)[^>]*class="{css_class}[^"]*"[^>]*>', svg_text):
        if mark.startswith("<circle"):
            tops.append(float(re.search(r'cy="([-\d.]+)"', mark)[1]) - float(re.search(r' r="([-\d.]+)"', mark)[1]))
        elif mark.startswith("<rect"):
            tops.append(float(re.search(r' y="([-\d.]+)"', mark)[1]))
        else:
            tops.append(min(float(xy.split(",")[1]) for xy in re.search(r'points="([^"]*)"', mark)[1].split()))
    return tops


@pytest.mark.parametrize("nights", [1, 2, 14])
def test_trend_draws_the_claim_for_any_number_of_nights_one_line_per_run_kind_and_no_point_under_the_legend(
        run, nights):
    """The claimed-epsilon line spans the chart for one night as for many; a rejudge at another claim has its own
    bound line and claim line, never joined to the nightly's; its table names each row's run kind and decision; no
    point sits in the legend's band at the top of the chart."""
    from auditing.sinks.report.svg import Plot

    rows = run["trend"][-nights:]
    rejudged = rows[-1].replace(run_kind="rejudge", claimed_epsilon=0.25, epsilon_lower_bound=3.0)
    page = render_trend_report([*rows, rejudged], "rr-eps1")
    chart = page[page.index('class="chart trend-chart"'):page.index("</svg>", page.index('class="chart trend-chart"'))]
    claims = _polylines(chart, "claimed-line")
    assert len(claims) == 2  # the nightly's claim and the rejudge's
    for line in claims:
        xs = [x for x, _ in line]
        assert min(xs) == Plot.left and max(xs) == Plot.width - Plot.right  # across the whole chart
    # one bound line per run kind: the nightly's nights joined, the rejudge (one point) never joined to them
    assert [len(line) for line in _polylines(chart, "trend-line")] == ([nights] if nights > 1 else [])
    legend_bottom = Plot.top + 14 + 18 * 2 + 4  # three entries stacked from the top
    assert min(_point_ys(chart, "trend-point")) > legend_bottom
    dom = _parse(page)
    assert dom.count("run-kind", "td") == nights + 1 and "rejudge" in dom.visible
    assert dom.visible.index("Run Decision Status Trust") < dom.visible.index("2024-01-14 rejudge")


def _key(model="rr-eps1", day=dt.date(2024, 1, 14), run_kind="nightly", claim=1.0, fingerprint="sha256:" + "f0" * 32,
         inputs="sha256:" + "1e" * 32):
    from auditing.sinks.warehouse import AuditKey

    return AuditKey(model, fingerprint, day, run_kind, claim, "046a542281f75f62", inputs)


def test_report_files_are_written_atomically(tmp_path):
    path = run_report_path(tmp_path, _key())
    assert path == (tmp_path / "reports" / "rr-eps1" / "date=2024-01-14"
                    / "nightly__eps-1__046a542281f75f62__in-1e1e1e1e1e1e.html")
    assert trend_report_path(tmp_path, "rr-eps1") == tmp_path / "reports" / "rr-eps1" / "trend.html"
    write_report("<p>first</p>", path)
    with pytest.raises(TypeError):
        write_report(None, path)  # fails mid-write
    assert path.read_text() == "<p>first</p>"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    with pytest.raises(LabelDPInputError):
        run_report_path(tmp_path, _key(model="../../etc"))
    with pytest.raises(TypeError, match="partition_date must be a datetime"):
        run_report_path(tmp_path, _key(day="2024-01-14"))  # parsed at the edge, not here


def test_each_key_has_its_own_report_and_a_row_from_before_the_key_its_old_page(tmp_path):
    """A guardrail, another claim or other inputs never land on the nightly's page; a row written before the key
    had its inputs (schema version 9) or its run kind (4) keeps the page its code wrote."""
    paths = {run_report_path(tmp_path, key) for key in (
        _key(), _key(run_kind="guardrail"), _key(claim=float("inf")), _key(claim=0.1 + 0.2), _key(claim=0.3),
        _key(inputs="sha256:" + "0e" * 32), _key(day=dt.date(2024, 1, 15)))}
    assert len(paths) == 7
    assert run_report_path(tmp_path, _key(claim=float("inf"), run_kind="guardrail")).name == \
        "guardrail__eps-inf__046a542281f75f62__in-1e1e1e1e1e1e.html"
    before_inputs = run_report_path(tmp_path, _key(inputs="unrecorded"))
    assert before_inputs.name == "nightly__eps-1__046a542281f75f62__f0f0f0f0f0f0.html"
    old = run_report_path(tmp_path, _key(run_kind="unrecorded", fingerprint="unrecorded", inputs="unrecorded"))
    assert old == tmp_path / "reports" / "rr-eps1" / "date=2024-01-14" / "046a542281f75f62.html"


# --------------------------------------------------------------------------------------------- in a browser
def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("!!! HTML REPORT NOT CHECKED IN A BROWSER: no chromium found; scripts/run-tests.sh installs "
                "Debian's chromium (apt-get install chromium) !!!")


def _browser(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    command = [_chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
               "--disable-dev-shm-usage", f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_run_report_in_headless_chromium(run, tmp_path):
    path = write_report(_page(run), tmp_path / "run.html")
    dumped = _browser(["--dump-dom", path.as_uri()], tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _parse(dumped.stdout)  # the DOM as Chromium parsed it (SVG included)
    text = dom.visible
    result = run["result"]
    assert "VIOLATION" in text and f"{result.epsilon_lower_bound:.3f}" in text
    assert "valid at 95% confidence" in text and "optimistic" in text and "Lineage" in text
    assert dom.count("curve-point", "circle") == len(result.curve)
    assert dom.count("trend-point") == 14 and dom.count("selected-point", "polygon") == 1

    shot = tmp_path / "report.png"
    taken = _browser(["--window-size=1100,4400", f"--screenshot={shot}", path.as_uri()], tmp_path / "profile")
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    image_module = pytest.importorskip("PIL.Image")
    with image_module.open(shot) as image:
        assert image.size == (1100, 4400)
        colors = image.convert("RGB").getcolors(maxcolors=1 << 20)
    present = {rgb for _count, rgb in colors}
    assert (0xC0, 0x36, 0x2C) in present  # the red VIOLATION badge was painted
    assert (0x2F, 0x6F, 0xDE) in present  # the blue curve was painted
    if os.environ.get("LABELDP_UPDATE_SCREENSHOT"):
        shutil.copyfile(shot, REPO / "docs" / "report-screenshot.png")


def test_score_panel_and_untrusted_control_night_in_headless_chromium(run, tmp_path):
    """the result's own repetition-0 histogram is drawn (no 'not provided'); a night whose control
    failed shows the UNTRUSTED banner; a control's page says what it checks and whether it passed."""
    from auditing.verdict.controls import POSITIVE, check_control, rr_oracle_probabilities

    rng = np.random.default_rng(3)
    n = 20_000
    p = rng.beta(1.0, 3.0, n)
    labels = (rng.random(n) < p).astype(int)
    ids = np.arange(n)
    result = run_audit(rr_oracle_probabilities(ids, labels, 2.0, seed=0), p, labels, ids,
                       GameConfig(repetitions=2), BoundConfig(), expected_curve=True)
    control = check_control(POSITIVE, result, 2.0)
    reason = "control-negative on 2024-01-14: eps_lb 0.4 > 0"
    html_text = render_run_report(judge(result, 2.0, kind="control", night=NightTrust(void_reason=reason),
                                        control=control),
                                  {**run["lineage"], "model_id": "control-positive"}, run["trend"], None)
    path = write_report(html_text, tmp_path / "control.html")
    dumped = _browser(["--dump-dom", path.as_uri()], tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _parse(dumped.stdout)
    text = dom.visible
    hist = result.score_histogram
    assert "not provided" not in text and "repetition 0" in text
    occupied = [i for i, rows in enumerate(hist.rows) if rows]
    bins = occupied[-1] - occupied[0] + 1
    assert dom.count("hist-correct", "rect") == bins and dom.count("hist-wrong", "rect") == bins
    assert "UNTRUSTED: read this verdict as unknown. the night is void: control-negative on 2024-01-14" in text
    assert "Nightly control" in text and "Positive control" in text and "Pre-registered floor" in text
    assert ("passed" if control.passed else "FAILED") in text and f"{control.floor:.3f}" in text
    assert dom.count("untrusted", "div") == 1
    assert "only a night the negative control voided makes it untrusted" not in text  # the reason is shown instead
    assert "Capacity check" not in text  # a control is judged by its own rule

    alone = _parse(render_run_report(judge(result, 2.0, kind="control", control=control), run["lineage"], [], None))
    assert "UNTRUSTED" not in alone.visible and "trust-banner" not in alone.visible
    assert "a control is judged by its own rule (the Nightly control card)" in alone.visible


def _risk_figures(run):
    from auditing.risk.figures import risk_assessment
    from auditing.sinks.report.risk_panel import risk_sentences

    assessment = risk_assessment(run["result"], CLAIMED)
    return assessment, risk_sentences(assessment)


def test_what_this_means_panel(run):
    """one sentence per figure (claimed and demonstrated side by side) and the posterior-ceiling
    chart for both epsilons; an old result without a prior histogram still gets the prior-free figures."""
    assessment, sentences = _risk_figures(run)
    dom = _parse(_page(run))
    text = dom.visible
    assert "What this means" in text and assessment.headline in text
    assert dom.count("risk-sentences", "ul") == 1 and len(sentences) == 7
    assert sum(1 for tag, _ in dom.classes if tag == "li") >= 7
    for sentence in sentences:
        assert sentence in text
    shown = assessment.demonstrated
    assert f"{100 * shown.mia_advantage_bound:.3g}%" in text  # the demonstrated value is printed
    assert dom.count("risk-claimed-line", "polyline") == 1 and dom.count("risk-shown-line", "polyline") == 1
    assert dom.count("risk-prior-line", "polyline") == 1
    assert dom.count("risk-bucket", "tr") == 5  # conditional rates per band of the reference's probability
    old = decode(AuditResult, {k: v for k, v in encode(run["result"]).items() if k != "prior_histogram"})
    dom_old = _parse(_page(run, result=old))
    assert "What this means" in dom_old.visible and dom_old.count("risk-claimed-line", "polyline") == 1


def test_what_this_means_panel_in_headless_chromium(run, tmp_path):
    _assessment, sentences = _risk_figures(run)
    path = write_report(_page(run), tmp_path / "run.html")
    dumped = _browser(["--dump-dom", path.as_uri()], tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _parse(dumped.stdout)
    assert "What this means" in dom.visible and sentences[0] in dom.visible
    assert dom.count("risk-claimed-line", "polyline") == 1 and dom.count("risk-shown-line", "polyline") == 1
    # The panel is painted: a page holding only the panel shows both ceiling curves' colours.
    from auditing.sinks.report.pages import _page as page_with
    from auditing.sinks.report.risk_panel import risk_panel

    panel_path = write_report(page_with("panel", risk_panel(judge(run["result"], CLAIMED))),
                              tmp_path / "panel.html")
    shot = tmp_path / "panel.png"
    taken = _browser(["--window-size=1100,1400", f"--screenshot={shot}", panel_path.as_uri()], tmp_path / "profile")
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    image_module = pytest.importorskip("PIL.Image")
    with image_module.open(shot) as image:
        present = {rgb for _count, rgb in image.convert("RGB").getcolors(maxcolors=1 << 20)}
    assert (0xB7, 0x79, 0x1F) in present  # the claimed-eps curve (--warn)
    assert (0xC0, 0x36, 0x2C) in present  # the demonstrated-eps curve (--bad)


# --------------------------------------------------------------------------------------------- the CLI
@pytest.fixture(scope="module")
def seeded_root(run, tmp_path_factory) -> Path:
    """A data root whose default DuckDB warehouse holds 5 nights of rr-eps1."""
    from auditing.sinks.warehouse import audit_record, open_warehouse

    data_root = tmp_path_factory.mktemp("seeded")
    with open_warehouse(None, data_root=data_root) as wh:
        for d, night in enumerate(run["trend"][:5]):
            data = dataclasses.replace(run["result"], epsilon_lower_bound=night.epsilon_lower_bound)
            row, curve = audit_record(judge(data, CLAIMED), run_kind="nightly", model_id="rr-eps1",
                                      partition_date=night.partition_date, lineage={"flow_run_id": f"run-{d}"})
            wh.write_audit(row, curve)
    return data_root


def test_report_command_renders_from_the_warehouse(seeded_root, tmp_path, capsys):
    assert cli_main(["report", "--model", "rr-eps1", "--data-root", str(seeded_root), "--since", "2024-01-02"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == str(seeded_root / "reports" / "rr-eps1" / "trend.html")
    dom = _parse(Path(printed).read_text())
    assert dom.count("trend-point") == 4 and "2024-01-01" not in dom.visible
    out = tmp_path / "custom.html"
    warehouse = str(seeded_root / "warehouse.duckdb")
    assert cli_main(["report", "--model", "rr-eps1", "--warehouse", warehouse, "--until", "2024-01-02",
                     "--output", str(out)]) == 0
    assert _parse(out.read_text()).count("trend-point") == 2


@pytest.mark.parametrize("argv, message", [
    (["--model", "../etc"], "--model"),
    (["--model", "rr-eps1", "--since", "2024-13-01"], "--since"),
    (["--model", "nobody"], "no audit results"),
    (["--model", "rr-eps1", "--warehouse", "/nonexistent/w.duckdb"], "not found"),
])
def test_report_command_errors_are_one_clear_line(seeded_root, capsys, argv, message):
    assert cli_main(["report", "--data-root", str(seeded_root), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


# --------------------------------------------------------------------------------------------- trust
def test_pass_sentence_states_the_game_aware_floor_in_headless_chromium(tmp_path):
    """a PASS says "flagged only if at least N labels were fully exposed" with the
    game-aware N (exposed_rows_floor, 95% power) and the perfect-attacker floor M as the necessary condition;
    weak when N exceeds 1% of the audited rows."""
    from auditing.verdict.exposure_floor import exposed_rows_floor
    from auditing.verdict.robustness import detection_floor_rows

    rng = np.random.default_rng(3)
    n = 20_000
    p_reference = rng.beta(1.0, 3.0, n)  # a target identical to the reference: nothing leaks
    labels = (rng.random(n) < p_reference).astype(np.int64)
    result = run_audit(p_reference, p_reference, labels, game=GameConfig(repetitions=1))
    claimed = 0.5
    exposed, floor = exposed_rows_floor(result, claimed), detection_floor_rows(result, claimed)
    assert exposed is not None and floor is not None and exposed > floor
    page = render_run_report(judge(result, claimed), {"model_id": "no-leak"}, [], None)
    path = write_report(page, tmp_path / "pass.html")
    dumped = _browser(["--dump-dom", path.as_uri()], tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _parse(dumped.stdout)
    text = dom.visible
    assert "PASS" in text
    assert f"only if at least {exposed:,} labels were fully exposed (flagged then with 95% probability" in text
    assert f"Fewer than {floor:,} correct guesses can never flag it" in text
    assert f"{exposed:,} labels" in text and "Exposed-rows floor (95% power)" in text
    assert ("Weak PASS" in text) == (exposed > 0.01 * n)


def test_trust_card_in_headless_chromium(run, tmp_path):
    """Breaking kappa next to a VIOLATION, read as a factor on the click odds, the detection floor next to a
    PASS (weak when it exceeds 1% of the audited rows), the audited rows and the shift diagnostic labelled a
    diagnostic, not a proof."""
    from auditing.verdict.exposure_floor import exposed_rows_floor
    from auditing.verdict.robustness import breaking_kappa, detection_floor_rows

    result = run["result"]
    kappa = breaking_kappa(result, CLAIMED)
    diagnostic = decode(ShiftDiagnostic, {
        "label": "a diagnostic, not a proof", "reference": "reference@2024-01-13",
        "days": {"previous": "2024-01-13", "current": "2024-01-14"},
        "reference_fit": {"previous": {"log_loss": 0.1209, "ece": 0.0028, "rows": 32138, "click_rate": 0.03,
                                       "rows_rule": "test split"},
                          "current": {"log_loss": 0.1171, "ece": 0.0034, "rows": 31783, "click_rate": 0.03}},
        "reference_log_loss_shift": -0.0037, "reference_ece_shift": 0.0006,
        "feature_shift": {"statistic": "PSI", "bins": "deciles", "max_psi": 0.0023, "median_psi": 0.0003,
                          "mean_psi": 0.0004, "top": [{"feature": "C16", "psi": 0.0023}], "per_feature": {"C16": 0.0023}},
        "feature_shift_max_psi": 0.0023}, "shift_diagnostic")
    path = write_report(_page(run, robustness={"audit_rows": "training", "shift_diagnostic": diagnostic}),
                        tmp_path / "run.html")
    dumped = _browser(["--dump-dom", path.as_uri()], tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    text = _parse(dumped.stdout).visible
    assert 0 < kappa < result.epsilon_lower_bound - CLAIMED + 1e-3  # binomial, delta 0: bound(kappa) = bound(0) - kappa
    factor = f"{math.exp(kappa):.3g}"
    assert factor != "1"
    assert (f"The violation holds unless the reference misjudges some row's click odds by more than a factor "
            f"{factor} (breaking κ = {kappa:.4g}; same counts, bonferroni selection, binomial, 95% confidence, "
            "δ = 0); the verdict itself is computed at the plan's κ = 0.") in text
    assert f"{kappa:.4g} (a factor {factor} in the click odds)" in text  # the Breaking κ row
    assert "τ" not in text
    assert "Trust in this verdict" in text and "Data diagnostic (not a proof)" in text and "C16 0.0023" in text
    assert "day D−1 (the reference's own day), 2024-01-13 0.1209 0.0028 32138" in text
    assert "rows whose labels entered training" in text

    # A PASS (claim far above the bound) where even a fully exposed day is flagged with < 95% probability:
    # the reference is near 0.5, so exposed labels are hard to tell apart in the game; a weak PASS.
    claimed = result.epsilon_lower_bound + 0.5
    floor = detection_floor_rows(result, claimed)
    assert floor is not None and exposed_rows_floor(result, claimed) is None
    page = _parse(_page(run, claimed_epsilon=claimed)).visible
    assert "would flag the claim with probability below 95%" in page and "Weak PASS" in page
    assert f"Fewer than {floor:,} correct guesses can never flag it" in page
    small = dataclasses.replace(result, m=floor * 50)  # no game-aware floor (histogram of other rows): perfect-attacker
    page = _parse(_page(run, result=small, claimed_epsilon=claimed)).visible  # floor, 2% of fewer rows: weak
    assert f"only if at least {floor:,} labels were fully exposed" in page and "Weak PASS" in page
    assert "game-aware floor is not computed" in page
    inconclusive = _parse(_page(run, claimed_epsilon=result.max_certifiable_epsilon + 1)).visible
    assert "No number of fully exposed labels" in inconclusive


# --------------------------------------------------------------------------------------------- kappa and the reference
def _section(html_text: str, section_id: str) -> str:
    """The visible text of one <section id=...> card."""
    start = html_text.index(f'id="{section_id}"')
    return _parse(html_text[start:html_text.index("</section>", start)]).visible


def test_reference_check_panel_for_checked_skipped_and_legacy_nights(run):
    """The Reference check card: the correction's figures before/after on a checked night and one sentence each on
    kappa, recalibration and the capacity check, nothing of the retired label-blind control; "Reference not
    checked" with the reason when skipped or not recorded; a night written while the label-blind control ran
    still shows its figures, labelled retired."""
    explain = ("κ is the audit's one assumption about the reference M′", "Recalibration corrects M′",
               "The misfit that remains is judged per verdict by the capacity check (the Trust card)")
    checked = _section(_page(run), "reference")
    assert "Reference check" in checked and all(sentence in checked for sentence in explain)
    assert "boost: M′ corrected on day D before the game" in checked
    assert "log-loss 0.4731 0.4522" in checked and "calibration error (ECE) 0.0312 0.0061" in checked
    assert "fitted on 6,000 rows (40 boosting rounds), measured on 2,000 other rows" in checked
    assert "not checked" not in checked and "label-blind" not in checked.lower()
    # nowhere on a new verdict's page but in the stored figures, which quote the warehouse columns' comments
    page = _page(run)
    words = page[:page.index('id="stored-figures"')] + page[page.index("</details>", page.index('id="stored-figures"')):]
    assert "label-blind" not in _parse(words).visible.lower()

    legacy = _section(_page(run, reference_check=_reference_check(label_blind=True)), "reference")
    assert "Label-blind control (retired) valid ε lower bound 0.2134 at κ = 0 · FLAGGED: the reference does not " \
           "fit day 2024-01-14" in legacy
    assert "κ = 0.35" in legacy and "by up to a factor 1.42; beyond the plan's κ = 0" in legacy
    assert "On this night the label-blind control ran (retired since: the capacity check replaced it)" in legacy
    at_half = dataclasses.replace(run["result"], bound=dataclasses.replace(run["result"].bound, kappa=0.5))  # a plan with kappa 0.5 (rendering only)
    within = _section(_page(run, result=at_half, reference_check={
        **_reference_check(), "label_blind": {"epsilon_lower_bound": 0.0, "misfit_kappa": 0.3, "flagged": False}}),
        "reference")
    assert "the verdict allows M′ to misjudge every audited row's click odds by up to a factor 1.65 (e^κ)" in within
    assert "by up to a factor 1.35; within the plan's κ = 0.5" in within and "at κ = 0.5 · passed" in within

    skipped = {"calibration": "boost", "checked": False,
               "note": "reference not checked: no held-out rows on 2024-01-14 (audit_rows all)"}
    text = _section(_page(run, reference_check=skipped), "reference")
    assert "Reference not checked: no held-out rows on 2024-01-14 (audit_rows all)" in text
    assert text.lower().count("reference not checked") == 1
    assert "Label-blind" not in text and all(sentence in text for sentence in explain)
    text = _section(_page(run, reference_check=None), "reference")
    assert "Reference not checked: no reference check was recorded for this run" in text

    with pytest.raises(LabelDPInputError, match="differs from the result's reference_calibration 'boost'"):
        _page(run, reference_check=_reference_check(calibration="none"))
    with pytest.raises(LabelDPInputError, match=r"reference_check\.label_blind\.misfit_kappa"):
        _page(run, reference_check={**_reference_check(), "label_blind": {"epsilon_lower_bound": 0.0,
                                                                          "misfit_kappa": -1.0, "flagged": False}})


# --------------------------------------------------------------------------------------------- trust per verdict
@pytest.fixture(scope="module")
def checked():
    """Audits with a capacity check (tests/support/checked_audits.py): a real leak with row groups, and a model whose
    evidence is the reference's misfit."""
    from tests.support import checked_audits
    return {"leaky": checked_audits.leaky(row_groups=checked_audits.groups()), "misfit": checked_audits.misfit()}


class _Order(HTMLParser):
    """The document order of the elements with an id, and whether each <details> starts open."""

    def __init__(self):
        super().__init__()
        self.ids: list[str] = []
        self.details: dict[str, bool] = {}

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        if found.get("id"):
            self.ids.append(found["id"])
            if tag == "details":
                self.details[found["id"]] = "open" in found


def _order(html_text: str) -> _Order:
    order = _Order()
    order.feed(html_text)
    return order


@pytest.mark.parametrize("case", ["act", "unconfirmed", "no_evidence", "no_power"])
def test_the_decision_and_its_meaning_come_before_the_evidence_and_the_trust_details(run, checked, case):
    """Every decision's page opens with the decision card (headline, meaning, why, the next step) and "What this
    means", then the evidence; the trust card, robustness and the reference check sit in a closed <details>
    section after them. An unconfirmed leak's badge is drawn in outline: one red box at most on its first screen."""
    from auditing.audit import no_rows_result
    from auditing.game.row_groups import NO_ROWS_LEFT

    verdict = {"act": lambda: judge(run["result"], CLAIMED, reference_check=_check(run["reference_check"])),
               "unconfirmed": lambda: judge(checked["misfit"], 0.1),
               "no_evidence": lambda: judge(checked["misfit"], 3.0),
               "no_power": lambda: judge(no_rows_result(GameConfig(), BoundConfig(), NO_ROWS_LEFT, None), 0.5)}[case]()
    assert verdict.decision.decision == case
    page = render_run_report(verdict, {"model_id": "m", "partition_date": "2024-01-14"}, run["trend"], None)
    order = _order(page)
    at = {name: order.ids.index(name) for name in ("decision", "decision-headline", "decision-meaning", "risk",
                                                   "summary", "curve", "trust-details", "trust", "robustness",
                                                   "reference")}
    assert at["decision"] == 0 and at["decision-headline"] < at["decision-meaning"] < at["risk"] < at["summary"]
    assert at["summary"] < at["curve"] < at["trust-details"] < at["trust"] < at["robustness"] < at["reference"]
    assert order.details == {"trust-details": False, "stored-figures": False}  # closed until the reader opens them
    if verdict.decision.next_step:
        assert order.ids.index("decision-next") < at["risk"]
    first = _parse(page[:page.index('id="summary"')])
    assert "Trust in this verdict" not in first.visible and "Capacity check" not in first.visible
    assert first.visible.strip().startswith(verdict.decision.headline[0].upper() + verdict.decision.headline[1:])
    assert "What this means" in first.visible
    if case == "unconfirmed":
        assert first.count("unconfirmed", "span") == 1 and "the claim is disproved" not in first.visible
        assert "but this is not confirmed" in first.visible
        # the risk sentence is conditional too: it must not say the bound demonstrates what the decision does not
        assert "would demonstrate" in verdict.risk_headline and "could not confirm" in verdict.risk_headline
        assert " demonstrates:" not in verdict.risk_headline
    if case == "act":
        assert first.count("unconfirmed", "span") == 0 and "the claim is disproved" in first.visible
        assert " demonstrates:" in verdict.risk_headline and "would demonstrate" not in verdict.risk_headline


def test_a_trusted_violation_shows_its_capacity_check_in_the_trust_details(run):
    """The base run is a VIOLATION the capacity check vouches for: 'trusted' plainly with its reason, epsilon_check
    with its confidence and assumption in one sentence, both misfit figures with theirs, the check rows; no
    banner; all in the trust details."""
    verdict = judge(run["result"], CLAIMED, reference_check=_check(run["reference_check"]))
    trust = verdict.trust
    assert verdict.status == "VIOLATION" and trust.state == "trusted" and trust.epsilon_check > CLAIMED
    page = _page(run)
    first = _section(page, "trust")
    assert "UNTRUSTED" not in first and "trust-banner" not in page
    assert f"Trust trusted the capacity check vouches for it: epsilon_check {trust.epsilon_check:.4g} > claim 1" in first
    assert (f"Capacity check (ε_check) {trust.epsilon_check:.4g} > claimed ε 1.000: the check vouches for this "
            "VIOLATION ε_check is a lower bound on ε at 95% confidence that needs no κ: what the model's guesses on "
            "its training rows show beyond what the same guesses show on 20,000 rows it never saw; valid under "
            "assumption T") in first
    assert (f"Misfit where the guesses are κ ≤ {trust.misfit_kappa_upper:.3g} upper confidence limit (one of "
            "ε_check's two limits, within the same 95%)") in first
    assert (f"Misfit the model shows at all κ ≥ {trust.check_misfit_kappa:.3g} lower confidence figure at 95% (the "
            "check rows' own game bounded at κ = 0, Bonferroni over its ") in first
    assert "Check rows 20,000" in first and "Row groups no grouping: this result records none" in first
    assert "Detectability" not in first  # a VIOLATION's floors are not its evidence


def test_an_untrusted_violation_opens_with_its_decision_and_the_figures_that_explain_it(checked):
    """The page opens with the decision (an unconfirmed leak: what it means, why, what would confirm it), never
    beside a contradicting banner; the Trust card keeps the figures."""
    verdict = judge(checked["misfit"], 0.1)
    trust = verdict.trust
    assert verdict.status == "VIOLATION" and trust.state == "untrusted" and trust.epsilon_check <= 0.1
    page = render_run_report(verdict, {"model_id": "misfit", "partition_date": "2024-01-14"}, [], None)
    dom = _parse(page)
    card = _parse(page[:page.index("</section>")]).visible.strip()
    assert card.startswith("Unconfirmed leak The audit's bound exceeds the claim, but the reference's misfit could "
                           "explain it")
    assert "Why: the reference's misfit can explain it: epsilon_check 0 <= claim 0.1" in card
    assert "Next: " in card and dom.count("decision-unconfirmed", "section") == 1
    assert "trust-banner" not in page and dom.count("trust-state") == 1
    text = dom.visible
    assert "Capacity check (ε_check) 0 ≤ claimed ε 0.100: the reference's misfit can explain this VIOLATION" in text
    assert f"κ ≤ {trust.misfit_kappa_upper:.3g} upper confidence limit" in text
    assert f"κ ≥ {trust.check_misfit_kappa:.3g} lower confidence figure at 95%" in text
    assert "above the verdict's κ = 0: the check sees misfit" in text


def test_a_pass_shows_what_its_floors_are_worth(checked, run):
    """measured under a reference that misfits (the check sees misfit), void (the positive control fell below
    its floor), measured: in the Trust card and beside the floors."""
    misfit = render_run_report(judge(checked["misfit"], 3.0), {"model_id": "m"}, [], None)
    assert judge(checked["misfit"], 3.0).status in ("PASS", "WEAK_PASS")
    text = _parse(misfit).visible
    assert ("Detectability of the floors measured under a reference that misfits the model shows misfit up to kappa "
            in text)
    assert "These floors are measured under a reference that misfits: the model shows misfit" in \
        _section(misfit, "robustness")
    void = render_run_report(judge(checked["leaky"], 3.0, night=NightTrust(
        detectability_void_reason="control-positive on 2024-01-14: below its floor")), {"model_id": "v"}, [], None)
    assert "Detectability of the floors void control-positive on 2024-01-14: below its floor" in _parse(void).visible
    assert "These floors are void: control-positive on 2024-01-14: below its floor." in _section(void, "robustness")
    assert "trust-banner" not in void  # the verdict itself stays trusted
    # a check that sees no misfit beyond kappa (its lower confidence figure at 0)
    quiet = dataclasses.replace(run["result"], capacity_check=dataclasses.replace(
        run["result"].capacity_check, check_misfit_kappa=0.0))
    measured = _parse(_page(run, result=quiet, claimed_epsilon=5.0))
    assert "Detectability of the floors measured no control voided them" in measured.visible
    assert "These floors are" not in measured.visible


def test_row_groups_unchecked_accepted_and_nothing_to_bound(checked):
    """The row groups (rule, rows left out, agreement observed against expected); an INCONCLUSIVE with nothing to
    bound opens with its decision (no power, and why) and says why next to its badge; its trust (reference unchecked,
    or accepted, never shown as trusted) is in the Trust card."""
    from auditing.audit import no_rows_result
    from auditing.game.row_groups import NO_ROWS_LEFT
    from tests.support import checked_audits

    text = _parse(render_run_report(judge(checked["leaky"], 0.5), {"model_id": "g"}, [], None)).visible
    assert ("Row groups rows with the same feature vector or rows with the same user_id form a group 311 audited "
            "row(s) left out for sharing a group (290 with another row of the day, 21 with rows of another day an "
            "input used); 12 check row(s) too.") in text
    assert ("labels agree in 98.1% of the 152 pairs of rows sharing a group, against 97.8% for independent labels at "
            "the reference's probabilities (a diagnostic, not a confidence figure") in text

    nothing = no_rows_result(GameConfig(), BoundConfig(), NO_ROWS_LEFT, checked_audits.groups(observed=None))
    unchecked = render_run_report(judge(nothing, 0.5), {"model_id": "u"}, [], None)
    dom = _parse(unchecked)
    assert dom.visible.strip().startswith("No power Tonight's audit could not have disproved the claim")
    assert f"Why: {NO_ROWS_LEFT}" in dom.visible and "Trust reference unchecked" in dom.visible
    header = _parse(unchecked[:unchecked.index("</header>")]).visible
    assert "INCONCLUSIVE" in header and f"Nothing to bound: {NO_ROWS_LEFT}." in header
    assert f"Capacity check did not run: {NO_ROWS_LEFT}" in dom.visible and f"Nothing to bound {NO_ROWS_LEFT}" in dom.visible
    assert "no two rows of the day share a group: no label agreement to measure" in dom.visible

    accepted = render_run_report(judge(nothing, 0.5, night=NightTrust(accept_unchecked=True)), {}, [], None)
    dom = _parse(accepted)
    assert dom.visible.strip().startswith("No power") and dom.count("untrusted", "div") == 0
    assert "Trust reference unchecked, accepted" in dom.visible and "Trust trusted" not in dom.visible


def test_decision_cards_in_headless_chromium(checked, tmp_path):
    """As a person sees it: the amber card of an unconfirmed leak is painted first, with its reason and next step;
    the Trust card's figures are in the DOM Chromium parsed."""
    verdict = judge(checked["misfit"], 0.1)
    path = write_report(render_run_report(verdict, {"model_id": "misfit"}, [], None), tmp_path / "untrusted.html")
    dumped = _browser(["--dump-dom", path.as_uri()], tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _parse(dumped.stdout)
    assert dom.visible.strip().startswith("Unconfirmed leak") and "Next:" in dom.visible
    assert dom.count("decision-unconfirmed", "section") == 1 and "Trust in this verdict" in dom.visible
    assert f"κ ≤ {verdict.trust.misfit_kappa_upper:.3g} upper confidence limit" in dom.visible
    colours = {}
    accepted = judge(run_audit(np.full(3000, 0.7), np.full(3000, 0.5), np.ones(3000, dtype=int),
                               game=GameConfig(repetitions=1)), 0.5, night=NightTrust(accept_unchecked=True))
    assert accepted.decision.decision == "act"  # a VIOLATION on a reference the run accepted unchecked
    for name, page in (("untrusted", path), ("accepted", write_report(render_run_report(
            accepted, {"model_id": "accepted"}, [], None), tmp_path / "accepted.html"))):
        shot = tmp_path / f"{name}.png"
        taken = _browser(["--window-size=1100,900", f"--screenshot={shot}", page.as_uri()], tmp_path / "profile")
        assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
        image_module = pytest.importorskip("PIL.Image")
        with image_module.open(shot) as image:
            colours[name] = {rgb for _count, rgb in image.convert("RGB").getcolors(maxcolors=1 << 20)}
    # the unconfirmed leak's amber card, the leak to act on's red one
    assert (0xFF, 0xFA, 0xEB) in colours["untrusted"] and (0xFE, 0xF3, 0xF2) not in colours["untrusted"]
    assert (0xFE, 0xF3, 0xF2) in colours["accepted"]


def test_trend_reads_rows_of_every_kind_from_the_warehouse(run, checked, tmp_path):
    """The trend page over rows read back from a real warehouse: verdicts with per-verdict trust (their trust
    column and capacity check) beside rows written before it (no trust; the label-blind control's figures and,
    on a flagged night, its untrusted_reason): nothing crashes, each row says what it has."""
    from auditing.sinks.warehouse import audit_record, open_warehouse
    from auditing.sinks.warehouse.schema import TRUST_COLUMNS

    with open_warehouse(None, data_root=tmp_path) as wh:
        for day, result, claim in ((dt.date(2024, 1, 3), checked["leaky"], 0.5),
                                   (dt.date(2024, 1, 4), checked["misfit"], 0.1)):
            wh.write_audit(*audit_record(judge(result, claim, reference_check=_check(_reference_check("none"))),
                                          run_kind="nightly", model_id="m", partition_date=day))
        row, curve = audit_record(judge(checked["leaky"], 0.5,
                                        reference_check=_check(_reference_check("none", label_blind=True)),
                                        night=NightTrust(void_reason="the reference does not fit day 2024-01-02")),
                                  run_kind="nightly", model_id="m", partition_date=dt.date(2024, 1, 2))
        legacy = row.replace(**dict.fromkeys(TRUST_COLUMNS),
                             untrusted_reason="the reference does not fit day 2024-01-02")
        wh.write_audit(legacy, curve)
        plain = legacy.replace(partition_date=dt.date(2024, 1, 1), untrusted_reason=None, label_blind_bound=0.0,
                               reference_misfit_kappa=0.0, label_blind_flagged=0)
        wh.write_audit(plain, curve)
        rows = wh.fetch_results(model_id="m")
    assert [r.trust for r in sorted(rows, key=lambda r: r.partition_date)] == [None, None, "trusted", "untrusted"]
    page = render_trend_report(rows, "m")
    nights = {tr.split("</td>")[0].split(">")[-1]: _parse(tr.split("</tr>")[0]).visible
              for tr in page.split('<tr class="night">')[1:]}
    cells = {day: [_parse(cell).visible.strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", tr.split("</tr>")[0])]
             for day, tr in zip(nights, page.split('<tr class="night">')[1:], strict=True)}
    # date, run kind, decision, status, trust
    assert cells["2024-01-04"][:5] == ["2024-01-04", "nightly", "unconfirmed leak", "VIOLATION", "untrusted"]
    assert cells["2024-01-03"][:5] == ["2024-01-03", "nightly", "confirmed leak: act", "VIOLATION", "trusted"]
    assert f"capacity check on 4,000 rows: ε_check {judge(checked['leaky'], 0.5).trust.epsilon_check:.3f}" in \
        nights["2024-01-03"]
    assert [cells["2024-01-02"][i] for i in (0, 1, 3, 4)] == ["2024-01-02", "nightly", "VIOLATION", "untrusted"]
    assert "calibration none FLAGGED (misfit κ = 0.35)" in nights["2024-01-02"]
    assert [cells["2024-01-01"][i] for i in (0, 1, 3, 4)] == ["2024-01-01", "nightly", "VIOLATION", "–"]
    assert "calibration none fits (misfit κ = 0)" in nights["2024-01-01"]
    assert "capacity check" not in nights["2024-01-01"]
    assert 'title="the reference does not fit day 2024-01-02"' in page  # the reason on hover
    assert _parse(page).count("trend-point") == 4


def _fdp_result(run):
    rng = np.random.default_rng(4)
    n = 4000
    labels = rng.integers(0, 2, n)
    p_target = np.clip(0.5 + 0.3 * (2 * labels - 1) + rng.normal(0, 0.05, n), 0.01, 0.99)
    game, config_bound = GameConfig(repetitions=2, reference_calibration="none"), BoundConfig(method="fdp")
    return run_audit(p_target, np.full(n, 0.5), labels, game=game, bound=config_bound)


def test_fdp_results_are_labelled_by_their_curve_and_a_pre_kappa_result_is_refused(run):
    """An fdp result says "f-DP on the (ε, δ) curve" and shows its Gaussian reading as "not μ-GDP for μ < X". A
    result written before kappa (tau, no kappa: a TV figure, the Gaussian reading) never becomes a verdict:
    `AuditResult.from_dict` refuses it, so no page can show its tau as a kappa (its warehouse rows stay, and
    the trend report labels them legacy)."""
    result = _fdp_result(run)
    assert result.gdp_mu_lower_bound > 0
    page = render_run_report(judge(result, 0.5), {"model_id": "fdp-m"}, [], None)
    text = _parse(page).visible
    assert "method f-DP on the (ε, δ) curve" in text and "κ = 0 · reference calibration: none · f-DP on the (ε, δ) curve" in text
    assert f"Gaussian reading not μ-GDP for μ < {result.gdp_mu_lower_bound:.4g}" in text
    assert "a statement about μ only, never an ε" in text
    assert "legacy" not in text and "τ" not in text and "VIOLATION" in text
    assert "holds unless the reference misjudges some row's click odds by more than a factor" in text

    legacy = {k: v for k, v in encode(result).items()
              if k not in ("kappa", "reference_calibration", "gdp_mu_lower_bound")}
    legacy["tau"] = 0.05
    with pytest.raises(LabelDPInputError, match=r"written before kappa .*audit it again"):
        decode(AuditResult, legacy, "result")
    with pytest.raises(LabelDPInputError, match=r"missing field\(s\) \['kappa'\]"):
        decode(AuditResult, {k: v for k, v in legacy.items() if k != "tau"}, "result")


def test_a_legacy_label_blind_control_page_still_renders(run):
    """A label-blind control's own verdict, from the nights it ran (retired since): what it was, its outcome and
    its measured misfit, labelled retired."""
    from auditing.verdict.controls import LABEL_BLIND, ControlCheck

    rng = np.random.default_rng(8)
    n = 5000
    p = rng.beta(1.0, 3.0, n)
    labels = (rng.random(n) < p).astype(int)
    result = run_audit(p, p, labels, game=GameConfig(repetitions=1))  # knows nothing of the labels
    # the check a night of the retired control stored (the warehouse's result_json and control columns keep it)
    control = ControlCheck(LABEL_BLIND, True, result.epsilon_lower_bound, None, 0.0,
                           "label-blind control: valid eps_lb 0.0000 = 0", None, 0.0)
    assert result.epsilon_lower_bound == 0.0
    text = _parse(render_run_report(judge(result, 0.0, kind="control", control=control),
                                    {"model_id": "control-label-blind"}, [], None)).visible
    assert "Label-blind control (retired: the capacity check replaced it): a model trained like the targets" in text
    assert "its valid bound had to be 0 at the plan's κ" in text and "passed" in text
    assert "Measured reference misfit κ = 0 the smallest κ that brought this control's bound to 0" in text
    assert "Negative control" not in text and "Positive control" not in text


# --------------------------------------------------------------------------------------------- the command line's words
def _summary_row(model: str, verdict):
    """A verdict as a run lists it after publishing (its warehouse row, its report's path, written)."""
    from auditing.sinks.listing import ListedVerdict
    from auditing.sinks.warehouse import audit_record

    row, _ = audit_record(verdict, model_id=model, partition_date="2024-01-14", run_kind="nightly")
    return ListedVerdict(row, report=f"/r/{model}.html", verdict=verdict, warehouse="written")


def test_the_run_summary_names_untrusted_violations_beside_trusted_ones(checked):
    """exit 1 names the trusted VIOLATION with its epsilon_check and, beside it, the untrusted one (not acted on);
    exit 4 names the untrusted verdicts with why, and the trusted VIOLATION that stands."""
    from flows import exit_codes

    rows = [_summary_row("leaky", judge(checked["leaky"], 0.5)), _summary_row("drift", judge(checked["misfit"], 0.1)),
            _summary_row("rr", judge(run_audit(np.full(3000, 0.7), np.full(3000, 0.5), np.ones(3000, dtype=int),
                                               game=GameConfig(repetitions=1)), 50.0))]
    assert [(r.row.status, r.row.trust) for r in rows] == [("VIOLATION", "trusted"), ("VIOLATION", "untrusted"),
                                                           ("INCONCLUSIVE", "reference unchecked")]
    outcome = exit_codes.Outcome(rows=rows, untrusted=[r.row.untrusted_reason for r in rows[1:]],
                                 fail_on_violation=True)
    first, second = exit_codes.summary_lines(outcome, "nightly", "")
    leaky = rows[0].row.epsilon_check
    assert first.startswith("labeldp-audit nightly: exit 1: 1 VIOLATION: the claimed epsilon is disproved for "
                            f"leaky@2024-01-14 (valid eps_lb {rows[0].row.epsilon_lower_bound:.4g} > claimed 0.5 at 95% "
                            f"confidence; trusted: epsilon_check {leaky:.4g} > claim too, without kappa; report "
                            "/r/leaky.html); beside it, 1 untrusted VIOLATION(s), not acted on as a violation (exit 4): "
                            "drift@2024-01-14 (")
    assert "untrusted: the reference's misfit can explain it: epsilon_check 0 <= claim 0.1" in first
    assert second.startswith("labeldp-audit nightly: also 4: UNTRUSTED: 1 VIOLATION(s) not trusted, do not act on "
                             "them as violations: drift@2024-01-14 (")
    assert ("1 other verdict(s) not trusted, read them as unknown: rr@2024-01-14 (INCONCLUSIVE, reference unchecked: "
            "no check rows") in second
    assert f"beside them the VIOLATION(s) leaky@2024-01-14 stand (trusted: epsilon_check {leaky:.4g}" in second
    assert second.count("the reference's misfit can explain it") == 1  # each reason once, with its verdict
    alone = exit_codes.summary_lines(exit_codes.Outcome(rows=rows[:1], fail_on_violation=True), "guardrail", "")
    assert len(alone) == 1 and "leaky@2024-01-14" in alone[0] and "beside" not in alone[0]


def test_a_published_verdicts_json_carries_its_one_decision(checked):
    """`nightly --json` / `guardrail --json`: each target's record carries the decision its warehouse row stores (the
    same words as the terminal, the report and the alert), with its reason, its next step and what would confirm it."""
    from auditing.sinks.warehouse.schema import DECISION_COLUMNS

    act = _summary_row("leaky", judge(checked["leaky"], 0.5))
    unconfirmed = _summary_row("drift", judge(checked["misfit"], 0.1))
    for listed, decision in ((act, "act"), (unconfirmed, "unconfirmed")):
        record = encode(listed)
        assert {name: record[name] for name in DECISION_COLUMNS} == {
            name: getattr(listed.row, name) for name in DECISION_COLUMNS}
        assert record["decision"] == decision and record["decision_reason"]
    assert encode(unconfirmed)["decision_next_step"]


# --------------------------------------------------------------------------------------------- the attack curve
def _attack_points(curve) -> int:
    from auditing.game.attack_curve import roc_points

    fpr, tpr = roc_points(curve.positives, curve.negatives)
    return len(set(zip(fpr.tolist(), tpr.tolist(), strict=True)))


def test_attack_panel_states_the_figures_and_what_they_are_not(run):
    from auditing.sinks.report.attack_panel import LABEL, attack_sentence

    curve = run["result"].attack_curve
    dom = _parse(_page(run))
    text = dom.visible
    assert "Attack ROC (descriptive)" in text and attack_sentence(curve) in text
    assert "negatives (descriptive: how well this attack separates the labels; not a bound on epsilon)." in text
    assert LABEL in text
    assert f"AUROC {curve.auroc:.3f} ({curve.auroc_lower:.3f} – {curve.auroc_upper:.3f})" in text
    assert "TPR at FPR ≤ 0.1%" in text and "TPR at FPR ≤ 1%" in text and "95% bootstrap intervals" in text
    assert "not their convex hull" in text
    assert dom.count("attack-point", "circle") == _attack_points(curve)
    assert dom.count("attack-roc-line", "polyline") == 1 and dom.count("attack-chance-line", "polyline") == 1
    assert dom.count("attack-target", "polygon") == 2
    old = decode(AuditResult, {k: v for k, v in encode(run["result"]).items() if k != "attack_curve"})  # before it
    assert "No attack curve was recorded for this run" in _parse(_page(run, result=old)).visible


def test_attack_panel_in_headless_chromium(run, tmp_path):
    from auditing.sinks.report.attack_panel import LABEL, attack_panel
    from auditing.sinks.report.pages import _page as page_with

    curve = run["result"].attack_curve
    path = write_report(_page(run), tmp_path / "run.html")
    dumped = _browser(["--dump-dom", path.as_uri()], tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _parse(dumped.stdout)
    text = dom.visible
    assert "Attack ROC (descriptive)" in text and LABEL in text
    assert f"AUROC {curve.auroc:.3f}" in text and f"{curve.rows_positive:,} positives" in text
    assert dom.count("attack-point", "circle") == _attack_points(curve)
    assert dom.count("attack-chance-line", "polyline") == 1 and dom.count("attack-target", "polygon") == 2
    # The panel is painted: a page holding only the panel shows the curve's and the targets' colours.
    panel_path = write_report(page_with("panel", attack_panel(run["result"])), tmp_path / "panel.html")
    present = _painted_colours(panel_path, tmp_path, height=900)
    assert (0x2F, 0x6F, 0xDE) in present  # the ROC staircase (--accent)
    assert (0xB7, 0x79, 0x1F) in present  # the TPR figures' diamonds (--warn)


def _painted_colours(page: Path, tmp_path: Path, *, height: int) -> set[tuple[int, int, int]]:
    """The RGB colours of a headless-Chromium screenshot of ``page`` (1100 px wide)."""
    shot = tmp_path / f"{page.stem}.png"
    taken = _browser([f"--window-size=1100,{height}", f"--screenshot={shot}", page.as_uri()], tmp_path / "profile")
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    image_module = pytest.importorskip("PIL.Image")
    with image_module.open(shot) as image:
        return {rgb for _count, rgb in image.convert("RGB").getcolors(maxcolors=1 << 20)}


def _family(confirm_after: int = 3):
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


def test_family_panel_shows_the_evidence_and_the_confirmation(run):
    family = _family()
    verdict = judge(run["result"], CLAIMED)
    dom = _parse(render_run_report(verdict, run["lineage"], run["trend"], run["histogram"], family=family))
    text = dom.visible
    assert "Evidence across nights" in text and family.sentence() in text and "CONFIRMED since 2024-01-04" in text
    assert "Ville's inequality" in text and "docs/soundness.md section 10" in text
    assert "not a reason to act" in text  # the kappa-based evidence is labelled with its condition
    assert dom.count("family-point", "circle") == 3 and dom.count("family-confirmed", "circle") == 2
    assert dom.count("family-line", "polyline") == 1 and dom.count("family-kappa-line", "polyline") == 1
    none = _parse(render_run_report(verdict, run["lineage"], run["trend"], run["histogram"])).visible
    assert "No family evidence for this run" in none


def test_family_panel_in_headless_chromium(run, tmp_path):
    from auditing.sinks.report.family_panel import family_panel
    from auditing.sinks.report.pages import _page as page_with

    family = _family()
    path = write_report(page_with("panel", family_panel(family)), tmp_path / "family.html")
    dumped = _browser(["--dump-dom", path.as_uri()], tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _parse(dumped.stdout)
    assert "CONFIRMED since 2024-01-04" in dom.visible and dom.count("family-confirmed", "circle") == 2
    present = _painted_colours(path, tmp_path, height=700)
    assert (0x2F, 0x6F, 0xDE) in present  # the evidence line (--accent)
    assert (0xC0, 0x36, 0x2C) in present  # the confirmation line and the confirmed nights (--bad)


def test_a_runs_table_has_the_attack_and_the_familys_evidence_per_verdict(run):
    """A published verdict: the run's table prints its attack figures at the verdict's bootstrap confidence and its
    family's evidence after the night with the nights counted (the run knows them), FLAGGED; a verdict without a
    family (a guardrail) has no family line."""
    from auditing.sinks.listing import ListedVerdict
    from auditing.sinks.report.text import format_rows
    from auditing.sinks.warehouse import audit_record

    family, verdict = _family(), judge(run["result"], CLAIMED)
    curve = verdict.result.attack_curve
    row, _ = audit_record(verdict, model_id="leaky", partition_date="2024-01-05", run_kind="nightly",
                          family=family.nights[-1])
    guard, _ = audit_record(verdict, model_id="guard", partition_date="2024-01-05", run_kind="guardrail")
    table = format_rows([ListedVerdict(row, verdict=verdict, family_nights=len(family.nights)),
                         ListedVerdict(guard, verdict=verdict)], wide=True).splitlines()
    attack = next(line for line in table if line.startswith("leaky@2024-01-05 attack ("))
    assert attack.endswith(f"AUROC {curve.auroc:.3f} [{curve.auroc_lower:.3f}, {curve.auroc_upper:.3f}] "
                           f"({100 * curve.bootstrap_confidence:g}% percentile bootstrap intervals)")
    assert f"TPR {100 * curve.tpr_at_fpr_0_01:.1f}% at 1% FPR [" in attack and "not a bound on eps" in attack
    assert ("leaky@2024-01-05 family across nights after 5 nights: the check's evidence 81 (kappa-free, this night's "
            "e-value") in "\n".join(table)
    assert ("CONFIRMED: a leak, act (both evidences reached 1/alpha = 20, anytime-valid at alpha 0.05); kappa-based "
            "evidence 162 (at 1/alpha): secondary, it holds only if kappa covers") in "\n".join(table)
    assert any(line.startswith("guard@2024-01-05 attack (") for line in table)
    assert not any(line.startswith("guard@2024-01-05 family") for line in table)


# --------------------------------------------------------------------------------------------- slices
@pytest.fixture(scope="module")
def sliced_verdict():
    """A trusted VIOLATION at claimed eps 1 with 12 declared slices: a trusted and an untrusted slice VIOLATION,
    the rest PASS (tests/support/sliced_audits.py)."""
    from tests.support.sliced_audits import sliced

    return judge(sliced(), CLAIMED)


def test_slice_panel_lists_every_slice_against_the_claim(run, sliced_verdict):
    from auditing.sinks.report.slice_panel import slice_panel
    from auditing.sinks.report.wording import SLICE_VIOLATION_MEANING

    verdict = sliced_verdict
    audit = verdict.result.slices
    html_text = render_run_report(verdict, run["lineage"], [], None)
    start = html_text.index('id="slices"')
    dom = _parse(html_text[start:html_text.index("</section>", start)])
    text = dom.visible
    assert "Valid bounds per slice" in text
    assert (f"Own budget {audit.budget:.3g} over 12 slices, each at confidence {100 * audit.confidence:.4g}%; "
            "claimed ε 1; 2 slice VIOLATION(s).") in text
    assert SLICE_VIOLATION_MEANING[1:] in text and audit.design in text
    # one row per slice, largest bound first; each with its bar, the claim's marker and its badge
    assert dom.count("slice-row", "tr") == 12 and dom.count("slice-claim", "line") == 12
    assert dom.count("slice-fill", "rect") == 12 and dom.count("violation", "rect") == 2
    assert dom.count("status-violation", "tr") == 2 and dom.count("VIOLATION", "span") == 2
    names = [piece.name for piece in verdict.slices]
    assert [text.index(name) for name in names] == sorted(text.index(name) for name in names)
    first, second = verdict.slices[:2]
    assert f"{first.epsilon_lower_bound:.3f} above the claim" in text and "at or below the claim" in text
    assert text.index(first.name) < text.index("trusted") < text.index(second.name) < text.index("untrusted")
    # right after the curve; omitted when no slice was declared
    assert html_text.index('id="curve"') < html_text.index('id="slices"') < html_text.index('id="scores"')
    assert 'id="slices"' not in _page(run) and slice_panel(judge(run["result"], CLAIMED)) == ""


def test_slice_panel_in_headless_chromium(run, sliced_verdict, tmp_path):
    from auditing.sinks.report.pages import _page as page_with
    from auditing.sinks.report.slice_panel import slice_panel

    path = write_report(render_run_report(sliced_verdict, run["lineage"], [], None), tmp_path / "run.html")
    dumped = _browser(["--dump-dom", path.as_uri()], tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _parse(dumped.stdout)
    assert "Valid bounds per slice" in dom.visible and dom.count("slice-row", "tr") == 12
    # The panel is painted: the violation colour for the slice VIOLATIONs' bars and badges, the bars' accent.
    panel_path = write_report(page_with("panel", slice_panel(sliced_verdict)), tmp_path / "slices.html")
    present = _painted_colours(panel_path, tmp_path, height=900)
    assert (0xC0, 0x36, 0x2C) in present  # slice VIOLATION (--bad)
    assert (0x17, 0x80, 0x4D) in present  # PASS badges (--good)
    # the same slices as trusted PASSes: no red anywhere (an untrusted slice's trust is red too)
    passing = dataclasses.replace(sliced_verdict, slices=tuple(dataclasses.replace(s, status="PASS", trust="trusted")
                                                               for s in sliced_verdict.slices))
    quiet = write_report(page_with("panel", slice_panel(passing)), tmp_path / "quiet.html")
    assert (0xC0, 0x36, 0x2C) not in _painted_colours(quiet, tmp_path, height=900)


def test_a_runs_table_and_json_carry_the_slices(run, sliced_verdict):
    """A published verdict with slices: the run's --json row has the slices object (budget, declared, confidence,
    design, every slice verdict, the largest bound first), its table lists the largest bounds under it with what a
    slice VIOLATION means; a verdict without slices has "slices": null and no slice lines. Slices change no exit
    code: the global verdict is judged separately."""
    from auditing.sinks.report.text import format_rows
    from auditing.sinks.report.wording import SLICE_VIOLATION_MEANING
    from flows import exit_codes

    audit = sliced_verdict.result.slices
    rows = [_summary_row("sliced", sliced_verdict), _summary_row("plain", judge(run["result"], CLAIMED))]
    record = encode(exit_codes.Outcome(rows=rows))["rows"]
    assert record[0]["slices"] == {"budget": audit.budget, "declared": 12, "confidence": audit.confidence,
                                   "design": audit.design, "slices": [encode(s) for s in sliced_verdict.slices]}
    assert record[1]["slices"] is None
    table = format_rows(rows)
    assert (f"sliced@2024-01-14 slices (own budget {audit.budget:.3g} over 12 slices, each at confidence "
            f"{100 * audit.confidence:.4g}%); claim eps 1:") in table
    assert "plain@2024-01-14 slices" not in table and table.count(SLICE_VIOLATION_MEANING) == 1
    assert exit_codes.Outcome(rows=rows[:1], fail_on_violation=True).codes() == \
        exit_codes.Outcome(rows=[dataclasses.replace(rows[0], verdict=dataclasses.replace(
            sliced_verdict, slices=()))], fail_on_violation=True).codes()


def test_the_index_page_lists_every_model_with_its_latest_decision_per_run_kind(run, checked, sliced_verdict, tmp_path):
    """Written from the warehouse at the data root: every model once, its latest decision per run kind linked to its
    report (a relative link), its family's state, its flagged slices; a model without a report page is listed
    without a link."""
    from auditing.sinks.report.index_page import index_report_path
    from auditing.sinks.warehouse import audit_record, open_warehouse, slice_record
    from flows.steps import write_index

    verdicts = {"leaky": judge(checked["leaky"], 0.5), "misfit": judge(checked["misfit"], 0.1),
                "clean": judge(checked["misfit"], 3.0), "sliced": sliced_verdict}
    plan = [("leaky", "2024-01-01", "nightly"), ("leaky", "2024-01-02", "nightly"), ("leaky", "2024-01-02", "guardrail"),
            ("misfit", "2024-01-02", "nightly"), ("clean", "2024-01-02", "rejudge"), ("sliced", "2024-01-02", "nightly")]
    with open_warehouse(str(tmp_path / "warehouse.duckdb")) as wh:
        for model, day, kind in plan:
            row, curve = audit_record(verdicts[model], model_id=model, partition_date=day, run_kind=kind,
                                      lineage={"flow_run_id": f"{model}-{day}-{kind}"})
            wh.write_audit(row, curve, slices=slice_record(verdicts[model]) if model == "sliced" else ())
            if (model, kind) != ("misfit", "nightly"):
                write_report("<html></html>", run_report_path(tmp_path, row))
    path = write_index(tmp_path, None)
    assert path == index_report_path(tmp_path) == tmp_path / "reports" / "index.html"
    page = path.read_text()
    dom = _parse(page)
    assert dom.count("model", "tr") == 4 and "4 model(s)" in dom.visible
    names = re.findall(r'<tr class="model"><td><strong>([^<]+)</strong>', page)
    assert names == ["clean", "leaky", "misfit", "sliced"]  # every model, once
    head = dom.visible[dom.visible.index("Model Latest"):dom.visible.index("Trend")]
    assert head.split() == ["Model", "Latest", "nightly", "Latest", "guardrail", "Latest", "rejudge", "Family",
                            "Slices", "flagged"]
    leaky = page[page.index("<strong>leaky</strong>"):page.index("</tr>", page.index("<strong>leaky</strong>"))]
    links = re.findall(r'href="([^"]+)"', leaky)
    assert len(links) == 2 and all(link.startswith("leaky/date=2024-01-02/") for link in links)  # the latest only
    assert (tmp_path / "reports" / links[0]).is_file() and "confirmed leak: act" in _parse(leaky).visible
    misfit = page[page.index("<strong>misfit</strong>"):page.index("</tr>", page.index("<strong>misfit</strong>"))]
    assert "href" not in misfit and "unconfirmed leak" in _parse(misfit).visible  # no page: no link
    sliced = page[page.index("<strong>sliced</strong>"):page.index("</tr>", page.index("<strong>sliced</strong>"))]
    flagged = [f"{s.slicing}={s.name}" for s in sliced_verdict.slices if s.status == "VIOLATION"]
    assert flagged and all(name in _parse(sliced).visible for name in flagged)
    assert "no family (no nightly or backfill night)" in _parse(page[page.index("<strong>clean</strong>"):]).visible
