"""auditing/sinks/report/slice_panel.py: the valid bounds per slice against the claim, on the run page and
painted in headless Chromium. Fixture ``sliced_verdict``: conftest.py."""

from __future__ import annotations

import dataclasses

from auditing.sinks.report import render_run_report, write_report
from auditing.verdict.judge import judge
from tests.support.report_pages import CLAIMED
from tests.support.report_pages import headless_chromium as _browser
from tests.support.report_pages import painted_colours as _painted_colours
from tests.support.report_pages import parse_page as _parse
from tests.support.report_pages import run_page as _page


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
