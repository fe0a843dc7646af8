"""auditing/sinks/report/family_panel.py: the family's evidence across nights and its confirmation, on the run
page (or its absence) and painted in headless Chromium."""

from __future__ import annotations

from auditing.sinks.report import render_run_report, write_report
from auditing.verdict.judge import judge
from tests.support.report_pages import CLAIMED
from tests.support.report_pages import five_night_family as _family
from tests.support.report_pages import headless_chromium as _browser
from tests.support.report_pages import painted_colours as _painted_colours
from tests.support.report_pages import parse_page as _parse


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
