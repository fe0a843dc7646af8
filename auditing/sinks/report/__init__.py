"""Reports (a sink of the auditing stage): self-contained HTML pages with inline SVG charts, and the plain text
of the command line (``auditing.sinks.report.text``). Names load on first use, so the command line's words do not
import the pages."""

from labeldp.exports import lazy_exports

_EXPORTS = {name: "auditing.sinks.report.pages" for name in (
    "render_run_report", "render_trend_report", "run_report_path", "trend_report_path", "write_report")}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports("auditing.sinks.report", _EXPORTS, globals())
