"""auditing/sinks/report/reference_panel.py: the Reference check card on a checked, a skipped and a legacy night
(the label-blind control's figures, retired), and the reference checks a page refuses."""

from __future__ import annotations

import dataclasses

import pytest

from labeldp.errors import LabelDPInputError
from tests.support.report_pages import page_section as _section
from tests.support.report_pages import parse_page as _parse
from tests.support.report_pages import reference_check_json as _reference_check
from tests.support.report_pages import run_page as _page


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
