"""auditing/sinks/report/attack_panel.py: the descriptive attack ROC panel (its figures, what they are not, the
curve's points), on the run page and painted in headless Chromium."""

from __future__ import annotations

from auditing.result import AuditResult
from auditing.sinks.report import write_report
from labeldp.codec import decode, encode
from tests.support.report_pages import headless_chromium as _browser
from tests.support.report_pages import painted_colours as _painted_colours
from tests.support.report_pages import parse_page as _parse
from tests.support.report_pages import run_page as _page


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
