"""auditing/sinks/report/pages.py: the run page and the trend page as a whole (content, labels, charts, the order of
the cards, escaping, refused inputs), their paths and atomic writes, and the run page opened in headless Chromium
(what a person sees; skipped loudly without Debian's `chromium`). LABELDP_UPDATE_SCREENSHOT=1 also copies the run
report's screenshot to docs/report-screenshot.png.

A panel's own tests, where the panel is called directly or is all the test reads, are in the panel's test file
beside this one (test_risk_panel.py, test_attack_panel.py, ...); the `report` command's in
tests/behaviour/test_cli_report.py. Fixtures (``run``, ``checked``): conftest.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from auditing.audit import run_audit
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
from auditing.verdict.judge import judge
from auditing.verdict.shift_diagnostic import ShiftDiagnostic
from auditing.verdict.trust import NightTrust
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from tests.support.report_pages import CLAIMED
from tests.support.report_pages import headless_chromium as _browser
from tests.support.report_pages import page_section as _section
from tests.support.report_pages import parse_page as _parse
from tests.support.report_pages import reference_check_json as _reference_check
from tests.support.report_pages import reference_check_of as _check
from tests.support.report_pages import run_page as _page

REPO = Path(__file__).resolve().parents[4]


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
