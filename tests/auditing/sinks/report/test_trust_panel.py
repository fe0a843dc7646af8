"""auditing/sinks/report/trust_panel.py: the Trust card of a trusted VIOLATION (its capacity check, both misfit
figures, the check rows), with no banner. The decision card's place on the page and the trust card beside the
other cards: test_pages.py."""

from __future__ import annotations

from auditing.verdict.judge import judge
from tests.support.report_pages import CLAIMED
from tests.support.report_pages import page_section as _section
from tests.support.report_pages import reference_check_of as _check
from tests.support.report_pages import run_page as _page


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
