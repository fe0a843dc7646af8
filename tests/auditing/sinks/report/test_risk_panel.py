"""auditing/sinks/report/risk_panel.py: the "What this means" panel, its sentences (one per figure, the claimed and
the demonstrated epsilon side by side) and its posterior-ceiling chart, on the run page and painted in headless
Chromium."""

from __future__ import annotations

import pytest

from auditing.result import AuditResult
from auditing.sinks.report import write_report
from auditing.verdict.judge import judge
from labeldp.codec import decode, encode
from tests.support.report_pages import CLAIMED
from tests.support.report_pages import headless_chromium as _browser
from tests.support.report_pages import parse_page as _parse
from tests.support.report_pages import run_page as _page


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
