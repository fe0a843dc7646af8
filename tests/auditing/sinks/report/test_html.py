"""The report's HTML helpers (auditing/sinks/report/html.py): numbers as the pages show them, a status badge (a
VIOLATION not acted on drawn in outline), and a self-contained page whose text is escaped."""

import math

from auditing.sinks.report.html import badge, fmt_eps, fmt_g, fmt_int, fmt_pct, page, status_badge, table
from auditing.sinks.report.stylesheet import CSS


def test_numbers_are_shown_with_a_dash_for_none():
    assert [fmt_eps(v) for v in (None, 1.23456, math.inf, -math.inf, math.nan, "2")] == \
        ["–", "1.235", "∞", "-∞", "NaN", "2.000"]
    assert (fmt_int(None), fmt_int(1234567), fmt_int(3.0)) == ("–", "1,234,567", "3")
    assert (fmt_pct(0.05), fmt_pct(0.00125), fmt_pct(1.0)) == ("5%", "0.125%", "100%")
    assert (fmt_g(None), fmt_g(0.5), fmt_g(1e-7)) == ("–", "0.5", "1e-07")


def test_a_violation_not_acted_on_is_drawn_in_outline():
    assert badge("PASS") == '<span class="badge PASS">PASS</span>'
    assert badge("<odd>", small=True) == '<span class="badge NONE small">&lt;odd&gt;</span>'
    assert status_badge("VIOLATION", "act") == badge("VIOLATION")
    assert status_badge("VIOLATION", None) == badge("VIOLATION")
    assert 'class="badge VIOLATION unconfirmed small"' in status_badge("VIOLATION", "unconfirmed", small=True)
    assert status_badge("PASS", "no_evidence") == badge("PASS")


def test_a_page_carries_its_stylesheet_and_escapes_its_title_and_table_keys():
    html = page("a <title>", "<p>body</p>", wide=True)
    assert html.startswith("<!DOCTYPE html>") and "<title>a &lt;title&gt;</title>" in html
    assert f"<style>{CSS}</style>" in html and '<main class="wide"><p>body</p>' in html
    assert "http" not in html.replace("http-equiv", "")  # self-contained: nothing fetched
    assert table([("<k>", "<b>v</b>")]) == "<table><tr><th>&lt;k&gt;</th><td><b>v</b></td></tr></table>"
