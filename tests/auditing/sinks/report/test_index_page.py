"""auditing/sinks/report/index_page.py: the page across models, written from the warehouse at the data root."""

from __future__ import annotations

import re

from auditing.sinks.report import run_report_path, write_report
from auditing.verdict.judge import judge
from tests.support.report_pages import parse_page as _parse


def test_the_index_page_lists_every_model_with_its_latest_decision_per_run_kind(run, checked, sliced_verdict, tmp_path):
    """Written from the warehouse at the data root: every model once, its latest decision per run kind linked to its
    report (a relative link), its family's state, its flagged slices; a model without a report page is listed
    without a link."""
    from auditing.sinks.report.index_page import index_report_path
    from auditing.sinks.warehouse import audit_record, open_warehouse, slice_record
    from flows.steps import write_index

    verdicts = {"leaky": judge(checked["leaky"], 0.5), "misfit": judge(checked["misfit"], 0.1),
                "clean": judge(checked["misfit"], 3.0), "sliced": sliced_verdict}
    plan = [("leaky", "2024-01-01", "nightly"), ("leaky", "2024-01-02", "nightly"), ("leaky", "2024-01-02", "guardrail"),
            ("misfit", "2024-01-02", "nightly"), ("clean", "2024-01-02", "rejudge"), ("sliced", "2024-01-02", "nightly")]
    with open_warehouse(str(tmp_path / "warehouse.duckdb")) as wh:
        for model, day, kind in plan:
            row, curve = audit_record(verdicts[model], model_id=model, partition_date=day, run_kind=kind,
                                      lineage={"flow_run_id": f"{model}-{day}-{kind}"})
            wh.write_audit(row, curve, slices=slice_record(verdicts[model]) if model == "sliced" else ())
            if (model, kind) != ("misfit", "nightly"):
                write_report("<html></html>", run_report_path(tmp_path, row))
    path = write_index(tmp_path, None)
    assert path == index_report_path(tmp_path) == tmp_path / "reports" / "index.html"
    page = path.read_text()
    dom = _parse(page)
    assert dom.count("model", "tr") == 4 and "4 model(s)" in dom.visible
    names = re.findall(r'<tr class="model"><td><strong>([^<]+)</strong>', page)
    assert names == ["clean", "leaky", "misfit", "sliced"]  # every model, once
    head = dom.visible[dom.visible.index("Model Latest"):dom.visible.index("Trend")]
    assert head.split() == ["Model", "Latest", "nightly", "Latest", "guardrail", "Latest", "rejudge", "Family",
                            "Slices", "flagged"]
    leaky = page[page.index("<strong>leaky</strong>"):page.index("</tr>", page.index("<strong>leaky</strong>"))]
    links = re.findall(r'href="([^"]+)"', leaky)
    assert len(links) == 2 and all(link.startswith("leaky/date=2024-01-02/") for link in links)  # the latest only
    assert (tmp_path / "reports" / links[0]).is_file() and "confirmed leak: act" in _parse(leaky).visible
    misfit = page[page.index("<strong>misfit</strong>"):page.index("</tr>", page.index("<strong>misfit</strong>"))]
    assert "href" not in misfit and "unconfirmed leak" in _parse(misfit).visible  # no page: no link
    sliced = page[page.index("<strong>sliced</strong>"):page.index("</tr>", page.index("<strong>sliced</strong>"))]
    flagged = [f"{s.slicing}={s.name}" for s in sliced_verdict.slices if s.status == "VIOLATION"]
    assert flagged and all(name in _parse(sliced).visible for name in flagged)
    assert "no family (no nightly or backfill night)" in _parse(page[page.index("<strong>clean</strong>"):]).visible
