"""The report's "Robustness and detection floors" card (auditing/sinks/report/robustness_panel.py) rendered alone
from a verdict's figures: the PASS sentence for each state of the floors, escaped notes, and the audited rows. The
card on whole pages (and in a browser): tests/auditing/sinks/report/test_pages.py."""

import dataclasses

from auditing.sinks.report.robustness_panel import AUDIT_ROWS_TEXT, robustness_panel
from auditing.sinks.report.svg import esc
from auditing.verdict.judge import judge
from auditing.verdict.types import Robustness
from tests.support.report_pages import CLAIMED


def _panel(run, status="PASS", **figures):
    verdict = judge(run["result"], CLAIMED)
    base = dict(audit_rows="training", breaking_kappa=None, detection_floor_rows=40, exposed_rows_floor=None,
                exposed_rows_floor_power=0.95, exposed_rows_floor_note=None, exposed_floor_computed=True,
                weak_pass=False)
    return robustness_panel(dataclasses.replace(verdict, status=status, robustness=Robustness(**{**base, **figures})))


def test_a_pass_states_the_game_aware_floor_at_its_power_and_the_necessary_one(run):
    html = _panel(run, exposed_rows_floor=4_000, exposed_rows_floor_power=0.8)
    assert ("flagged the claim only if at least <strong>4,000 labels</strong> were fully exposed (flagged then with "
            "80% probability") in html
    assert "Fewer than <strong>40</strong> correct guesses can never flag it" in html
    assert "Exposed-rows floor (80% power)</th><td id=\"exposed-rows-floor\">4,000 labels" in html
    assert "weak-pass" not in html


def test_a_pass_no_exposure_flags_is_weak_and_says_so(run):
    html = _panel(run, weak_pass=True, exposed_rows_floor_note="even with every audited row's label fully exposed")
    assert "Even if every one of the 20,000 audited labels were fully exposed" in html
    assert "Weak PASS: no number of exposed labels is flagged with 95% probability." in html
    assert "none: even with every audited row&#x27;s label fully exposed" in html  # the note escaped


def test_a_pass_without_the_game_aware_floor_gives_the_perfect_attacker_floor_and_why(run):
    html = _panel(run, exposed_floor_computed=False, weak_pass=True, exposed_rows_floor_note="split <strategy>")
    assert "only if at least <strong>40 labels</strong> were fully exposed" in html
    assert "game-aware floor is not computed: split &lt;strategy&gt;." in html
    assert "Weak PASS: the floor exceeds 1% of the 20,000 audited rows." in html
    assert "Detection floors were not computed" in _panel(run, exposed_floor_computed=False, detection_floor_rows=None)


def test_the_audited_rows_are_named_and_a_violation_without_breaking_kappa_says_so(run):
    html = _panel(run, status="VIOLATION")
    assert "Breaking κ and detection floor were not computed for this result." in html
    assert f"20,000 · <code>training</code><span class=\"labels\">{esc(AUDIT_ROWS_TEXT['training'])}" in html
    assert "<td id=\"breaking-kappa\">–" in html
