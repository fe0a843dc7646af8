"""Tiny inline-SVG chart helpers for the self-contained HTML reports (no plotting library, no network).

A chart is a ``Plot``: a pixel frame plus an x and a y scale. Helpers return SVG text fragments; every piece of
text goes through ``esc``. Each data mark carries a CSS class (e.g. ``curve-point``) and a ``<title>`` tooltip,
so tests and people can find and read them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def num(value: float) -> str:
    """Compact coordinate text (two decimals are plenty for pixels)."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def nice_step(span: float, target_ticks: int) -> float:
    """A step of 1, 2 or 5 x 10^k giving about ``target_ticks`` ticks over ``span``."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(target_ticks, 1)
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


@dataclass(frozen=True)
class LinearScale:
    lo: float
    hi: float

    @classmethod
    def nice(cls, lo: float, hi: float, ticks: int = 5) -> LinearScale:
        """Extends [lo, hi] outward to round tick values (an empty range becomes [lo, lo + 1])."""
        if not hi > lo:
            hi = lo + 1.0
        step = nice_step(hi - lo, ticks)
        return cls(math.floor(lo / step) * step, math.ceil(hi / step) * step)

    def fraction(self, value: float) -> float:
        return (value - self.lo) / (self.hi - self.lo)

    def ticks(self, count: int = 5) -> list[float]:
        step = nice_step(self.hi - self.lo, count)
        first = math.ceil(self.lo / step - 1e-9)
        values = []
        k = first
        while k * step <= self.hi + 1e-9 * step:
            values.append(round(k * step, 12))
            k += 1
        return values


@dataclass(frozen=True)
class LogScale:
    """log10 axis; the domain is widened to whole decades so the tick labels are powers of ten."""

    lo: float
    hi: float

    @classmethod
    def nice(cls, lo: float, hi: float) -> LogScale:
        """[lo, hi] padded by a quarter decade on each side (at least one decade wide)."""
        lo = max(lo, 1e-12)
        hi = max(hi, lo)
        log_lo, log_hi = math.log10(lo) - 0.1, math.log10(hi) + 0.1
        if log_hi - log_lo < 1:
            middle = (log_lo + log_hi) / 2
            log_lo, log_hi = middle - 0.5, middle + 0.5
        return cls(10.0**log_lo, 10.0**log_hi)

    def fraction(self, value: float) -> float:
        value = max(value, self.lo)
        return (math.log10(value) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))

    def _decades(self) -> range:
        return range(math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi)) + 1)

    def _inside(self, values: list[float]) -> list[float]:
        return [v for v in values if self.lo * (1 - 1e-9) <= v <= self.hi * (1 + 1e-9)]

    def ticks(self, count: int = 0) -> list[float]:
        """Powers of ten inside the domain; 1-2-5 steps too when fewer than three decades show."""
        majors = self._inside([10.0**d for d in self._decades()])
        if len(majors) >= 3:
            return majors
        return self._inside([k * 10.0**d for d in self._decades() for k in (1, 2, 5)])

    def minor_ticks(self) -> list[float]:
        return self._inside([k * 10.0**d for d in self._decades() for k in range(2, 10)])


Scale = LinearScale | LogScale


@dataclass(frozen=True)
class Plot:
    """A chart area: ``width`` x ``height`` pixels with margins for the axes, and its two scales."""

    x: Scale
    y: Scale
    width: int = 880
    height: int = 320
    left: int = 64
    right: int = 24
    top: int = 20
    bottom: int = 52

    def px(self, value: float) -> float:
        return self.left + self.x.fraction(value) * (self.width - self.left - self.right)

    def py(self, value: float) -> float:
        return self.height - self.bottom - self.y.fraction(value) * (self.height - self.top - self.bottom)

    @property
    def x0(self) -> float:
        return self.left

    @property
    def x1(self) -> float:
        return self.width - self.right

    @property
    def y0(self) -> float:
        return self.height - self.bottom

    @property
    def y1(self) -> float:
        return self.top


def open_svg(plot: Plot, label: str, css_class: str) -> str:
    return (f'<svg class="chart {esc(css_class)}" viewBox="0 0 {plot.width} {plot.height}" '
            f'width="{plot.width}" height="{plot.height}" role="img" aria-label="{esc(label)}" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{esc(label)}</title>')


def close_svg() -> str:
    return "</svg>"


def format_tick(value: float) -> str:
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1e9 or magnitude < 1e-3:
        exponent = math.floor(math.log10(magnitude))
        mantissa = value / 10**exponent
        return f"10^{exponent}" if math.isclose(mantissa, 1) else f"{mantissa:g}e{exponent}"
    if magnitude >= 1e4 and float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.6g}"


def axes(plot: Plot, *, x_label: str, y_label: str, x_ticks: Sequence[float] | None = None,
         x_format: Callable[[float], str] = format_tick, y_format: Callable[[float], str] = format_tick) -> str:
    """Grid lines, tick labels and axis titles."""
    out = ['<g class="axes">']
    if isinstance(plot.x, LogScale):
        for minor in plot.x.minor_ticks():
            x = plot.px(minor)
            out.append(f'<line class="grid minor" x1="{num(x)}" y1="{plot.y1}" x2="{num(x)}" y2="{plot.y0}"/>')
    for tick in plot.x.ticks() if x_ticks is None else x_ticks:
        x = plot.px(tick)
        out.append(f'<line class="grid" x1="{num(x)}" y1="{plot.y1}" x2="{num(x)}" y2="{plot.y0}"/>')
        out.append(f'<text class="tick" x="{num(x)}" y="{plot.y0 + 18}" text-anchor="middle">'
                   f'{esc(x_format(tick))}</text>')
    for tick in plot.y.ticks():
        y = plot.py(tick)
        out.append(f'<line class="grid" x1="{plot.x0}" y1="{num(y)}" x2="{plot.x1}" y2="{num(y)}"/>')
        out.append(f'<text class="tick" x="{plot.x0 - 8}" y="{num(y + 4)}" text-anchor="end">'
                   f'{esc(y_format(tick))}</text>')
    out.append(f'<line class="axis" x1="{plot.x0}" y1="{plot.y0}" x2="{plot.x1}" y2="{plot.y0}"/>')
    out.append(f'<line class="axis" x1="{plot.x0}" y1="{plot.y0}" x2="{plot.x0}" y2="{plot.y1}"/>')
    out.append(f'<text class="axis-title" x="{num((plot.x0 + plot.x1) / 2)}" y="{plot.height - 10}" '
               f'text-anchor="middle">{esc(x_label)}</text>')
    out.append(f'<text class="axis-title" transform="translate(16 {num((plot.y0 + plot.y1) / 2)}) rotate(-90)" '
               f'text-anchor="middle">{esc(y_label)}</text>')
    out.append("</g>")
    return "".join(out)


def polyline(plot: Plot, points: Sequence[tuple[float, float]], css_class: str) -> str:
    if len(points) < 2:
        return ""
    coords = " ".join(f"{num(plot.px(x))},{num(plot.py(y))}" for x, y in points)
    return f'<polyline class="{esc(css_class)}" points="{coords}"/>'


def step_line(plot: Plot, points: Sequence[tuple[float, float]], css_class: str) -> str:
    """A horizontal segment per value, stepping at each new x (a claimed epsilon that changes over nights)."""
    if not points:
        return ""
    stepped = []
    for i, (x, y) in enumerate(points):
        if i:
            stepped.append((x, points[i - 1][1]))
        stepped.append((x, y))
    if len(stepped) == 1:
        stepped.append(stepped[0])
    return polyline(plot, stepped, css_class)


def hline(plot: Plot, y: float, css_class: str, label: str) -> str:
    py = plot.py(y)
    return (f'<g class="{esc(css_class)}"><line x1="{plot.x0}" y1="{num(py)}" x2="{plot.x1}" y2="{num(py)}"/>'
            f'<text x="{plot.x0 + 6}" y="{num(py - 6)}" text-anchor="start">{esc(label)}</text></g>')


def marker(plot: Plot, x: float, y: float, css_class: str, tooltip: str, *, radius: float = 3.5,
           shape: str = "circle") -> str:
    """One data mark with a hover tooltip; shape: circle | diamond | square."""
    cx, cy = plot.px(x), plot.py(y)
    title = f"<title>{esc(tooltip)}</title>"
    if shape == "circle":
        return f'<circle class="{esc(css_class)}" cx="{num(cx)}" cy="{num(cy)}" r="{num(radius)}">{title}</circle>'
    if shape == "diamond":
        r = radius * 1.4
        pts = f"{num(cx)},{num(cy - r)} {num(cx + r)},{num(cy)} {num(cx)},{num(cy + r)} {num(cx - r)},{num(cy)}"
        return f'<polygon class="{esc(css_class)}" points="{pts}">{title}</polygon>'
    if shape == "square":
        return (f'<rect class="{esc(css_class)}" x="{num(cx - radius)}" y="{num(cy - radius)}" '
                f'width="{num(2 * radius)}" height="{num(2 * radius)}">{title}</rect>')
    raise ValueError(f"shape must be circle, diamond or square; got {shape!r}")


def bar(plot: Plot, x_lo: float, x_hi: float, height: float, css_class: str, tooltip: str) -> str:
    left, right = plot.px(x_lo), plot.px(x_hi)
    top, base = plot.py(height), plot.py(plot.y.lo)
    return (f'<rect class="{esc(css_class)}" x="{num(left + 0.5)}" y="{num(top)}" '
            f'width="{num(max(right - left - 1, 0.5))}" height="{num(max(base - top, 0))}">'
            f"<title>{esc(tooltip)}</title></rect>")


def label(x: float, y: float, text: str, css_class: str = "note", anchor: str = "start") -> str:
    return f'<text class="{esc(css_class)}" x="{num(x)}" y="{num(y)}" text-anchor="{anchor}">{esc(text)}</text>'


def legend(plot: Plot, entries: Sequence[tuple[str, str]], *, x: float | None = None, y: float | None = None) -> str:
    """Entries of (css class, text), stacked in the top-left corner of the plot area.

    A class ending in ``-line`` gets a line swatch (styled like the series), any other a square of
    class ``key-<class>``.
    """
    x = plot.x0 + 12 if x is None else x
    y = plot.y1 + 14 if y is None else y
    out = ['<g class="legend">']
    for i, (css_class, text) in enumerate(entries):
        row = y + 18 * i
        if css_class.endswith("-line"):
            out.append(f'<g class="{esc(css_class)}"><line x1="{num(x - 2)}" y1="{num(row - 3)}" '
                       f'x2="{num(x + 14)}" y2="{num(row - 3)}"/></g>')
        else:
            # "key-<class>", not the series' own class: counting a class counts data marks only.
            out.append(f'<rect class="swatch key-{esc(css_class)}" x="{num(x)}" y="{num(row - 9)}" width="12" '
                       'height="12"/>')
        out.append(f'<text x="{num(x + 20)}" y="{num(row + 1)}">{esc(text)}</text>')
    out.append("</g>")
    return "".join(out)
