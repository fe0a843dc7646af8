"""Reports (a sink of the auditing stage): self-contained HTML pages with inline SVG charts."""

from auditing.report.pages import (
    render_run_report,
    render_trend_report,
    run_report_path,
    trend_report_path,
    write_report,
)

__all__ = ["render_run_report", "render_trend_report", "run_report_path", "trend_report_path", "write_report"]
