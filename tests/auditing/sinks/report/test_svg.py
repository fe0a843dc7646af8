"""The report's SVG primitives (auditing/sinks/report/svg.py): round tick steps, scales that map their domain onto
[0, 1], marks placed in pixels, and every text escaped. The charts they draw: the report's panel tests."""

import math

import pytest

from auditing.sinks.report.svg import (
    LinearScale,
    LogScale,
    Plot,
    format_tick,
    legend,
    marker,
    nice_step,
    num,
    polyline,
    step_line,
)


def test_a_tick_step_is_one_two_or_five_times_a_power_of_ten():
    assert [nice_step(span, 5) for span in (1.0, 2.0, 7.0, 0.03, 4_000)] == [0.2, 0.5, 2.0, 0.01, 1_000]
    assert nice_step(0.0, 5) == nice_step(math.inf, 5) == 1.0
    assert num(3.14159) == "3.14" and num(2.0) == "2" and num(0.5) == "0.5"


def test_a_linear_scale_widens_to_round_ticks_and_maps_its_ends_to_zero_and_one():
    scale = LinearScale.nice(0.13, 0.87)
    assert (scale.lo, scale.hi) == (pytest.approx(0.0), pytest.approx(1.0))
    assert scale.ticks() == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert scale.fraction(scale.lo) == 0 and scale.fraction(scale.hi) == 1
    assert LinearScale.nice(3.0, 3.0).hi > 3.0  # an empty range still has a width


def test_a_log_scale_spans_at_least_a_decade_and_ticks_at_powers_of_ten():
    wide = LogScale.nice(1e-3, 10.0)
    assert wide.ticks() == [1e-3, 1e-2, 1e-1, 1.0, 10.0] and wide.fraction(wide.lo) == 0.0
    assert wide.fraction(0.0) == 0.0  # below the domain: at its floor
    narrow = LogScale.nice(2.0, 3.0)
    assert math.log10(narrow.hi / narrow.lo) == pytest.approx(1.0)
    assert 2.0 in narrow.ticks() and 5.0 in narrow.ticks()  # 1-2-5 steps inside one decade


def test_tick_labels_are_compact():
    assert [format_tick(v) for v in (0, 1e-4, 2.5e-5, 1e9, 25_000.0, 0.125)] == \
        ["0", "10^-4", "2.5e-5", "10^9", "25,000", "0.125"]


def test_marks_are_placed_in_the_plot_s_pixels_and_their_text_is_escaped():
    plot = Plot(LinearScale(0, 1), LinearScale(0, 1), width=200, height=100, left=0, right=0, top=0, bottom=0)
    assert polyline(plot, [(0, 0), (1, 1)], "a") == '<polyline class="a" points="0,100 200,0"/>'
    assert polyline(plot, [(0, 0)], "a") == ""
    assert step_line(plot, [(0, 0.5), (0.5, 1)], "s") == '<polyline class="s" points="0,50 100,50 100,0"/>'
    assert step_line(plot, [(0.5, 0.5)], "s") == '<polyline class="s" points="100,50 100,50"/>'  # one night: drawn
    assert step_line(plot, [], "s") == ""
    assert marker(plot, 0.5, 0.5, "p", "<b>&") == '<circle class="p" cx="100" cy="50" r="3.5"><title>&lt;b&gt;&amp;</title></circle>'
    with pytest.raises(ValueError, match="shape must be circle, diamond or square"):
        marker(plot, 0, 0, "p", "t", shape="star")
    entries = legend(plot, [("claimed-line", "claim"), ("point", "a <night>")])
    assert '<g class="claimed-line"><line' in entries and 'class="swatch key-point"' in entries
    assert "a &lt;night&gt;" in entries
