"""The report pages' one style sheet (auditing/sinks/report/stylesheet.py): the page's rules and every panel's, in
the order the pages inline them, each rule closed."""

import re

from auditing.sinks.report import stylesheet
from auditing.sinks.report.stylesheet import CSS

PARTS = ("PAGE_CSS", "RISK_CSS", "ROBUSTNESS_CSS", "REFERENCE_CSS", "ATTACK_CSS", "FAMILY_CSS", "SLICE_CSS")


def test_the_sheet_is_every_part_in_the_page_s_order():
    assert CSS == "".join(getattr(stylesheet, part) for part in PARTS)


def test_every_rule_is_closed_and_every_colour_variable_is_defined():
    for part in PARTS:
        text = getattr(stylesheet, part)
        depth = 0
        for char in text:
            depth += {"{": 1, "}": -1}.get(char, 0)
            assert 0 <= depth <= 2, part  # never closed twice; rules nest only inside an @media block
        assert depth == 0, part
    defined = set(re.findall(r"(--[\w-]+)\s*:", CSS))
    assert set(re.findall(r"var\((--[\w-]+)\)", CSS)) <= defined


def test_the_classes_the_panels_draw_are_styled():
    for css_class in ("badge", "VIOLATION", "weak", "diagnostic", "reference-flagged", "attack-roc-line",
                      "family-confirmed", "slice-fill", "risk-point", "key-attack-target"):
        assert re.search(rf"\.{css_class}\b", CSS), css_class
