"""Days are never replaced silently: `data ingest`, `ingest-criteo` and `synth` refuse an existing day (exit 2,
nothing written) unless --replace; a replacement records the partition it replaced, so that its verdicts read
"inputs replaced since" (results, the reports) and a model registered on it is refused before scoring.

Small synthetic days (2,000 rows); the command line is run in this process (`flows.cli.main`)."""

from __future__ import annotations

import datetime as dt
import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditing.config import config_hash
from flows.cli import main
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError

DAY = dt.date(2026, 10, 2)
ROWS = 2_000


def _tree(root) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def day(tmp_path):
    """A data root with one day ingested from a Criteo TSV of a synthetic day's rows, and a 1,500-row subset of it."""
    from pipelines.data import schema
    from pipelines.data.criteo_ingest import ingest_criteo, write_criteo_tsv
    from pipelines.data.synth import write_synthetic_day

    write_synthetic_day(tmp_path / "synth", DAY, rows=ROWS)
    table = schema.read_partition(tmp_path / "synth", DAY)
    full = write_criteo_tsv(table, tmp_path / "full.tsv")
    subset = write_criteo_tsv(table.slice(0, 1_500), tmp_path / "subset.tsv")
    root = tmp_path / "root"
    ingest_criteo(full, root, DAY)
    return root, full, subset


def test_an_existing_day_is_refused_and_nothing_is_written(day, capsys):
    root, full, _ = day
    before = _tree(root)
    commands = (["ingest-criteo", full, "--date", DAY.isoformat()],
                ["synth", "--start", (DAY - dt.timedelta(days=1)).isoformat(), "--end", DAY.isoformat(), "--rows",
                 "500"])
    for command in commands:
        code = main(["data", *map(str, command), "--data-root", str(root)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1, err
        assert f"the partition of {DAY.isoformat()} already exists" in err[0] and "pass --replace" in err[0]
        assert _tree(root) == before  # not even the synth range's first day, nor an oracle
    spec = root.parent / "spec.json"
    spec.write_text('{"name": "clicks", "label": "clicked", "classes": 2, "row_key": "id", "numeric": ["f1"], '
                    '"categorical": [], "carry": []}')
    csv = root.parent / "clicks.csv"
    csv.write_text("id,clicked,f1\n1,0,0.5\n2,1,0.25\n")
    code = main(["data", "ingest", str(csv), "--dataset", str(spec), "--date", DAY.isoformat(), "--data-root",
                 str(root)])
    assert code == 2 and "pass --replace" in capsys.readouterr().err and _tree(root) == before


def test_a_replaced_day_records_what_it_replaced(day, capsys):
    from pipelines.data import schema

    root, full, subset = day
    old = schema.partition_fingerprint(root, DAY)
    code = main(["data", "ingest-criteo", str(subset), "--date", DAY.isoformat(), "--replace", "--data-root",
                 str(root)])
    out = capsys.readouterr().out
    assert code == 0 and f"replaced the partition of {DAY.isoformat()} ({old[:19]}..., {ROWS} rows)" in out
    new = schema.partition_fingerprint(root, DAY)
    assert new != old and schema.read_partition(root, DAY).num_rows == 1_500
    (entry,) = schema.replaced_partitions(root, DAY)
    assert (entry["fingerprint"], entry["rows"]) == (old, ROWS)
    assert schema.replaced_since(root, DAY, old) == entry["replaced_at"]
    assert schema.replaced_since(root, DAY, new) is None and schema.replaced_since(root, DAY, None) is None
    # the same file again: the same bytes, nothing replaced (no new entry, nothing said)
    assert main(["data", "ingest-criteo", str(subset), "--date", DAY.isoformat(), "--replace", "--data-root",
                 str(root)]) == 0
    assert "replaced the partition" not in capsys.readouterr().out and len(schema.replaced_partitions(root, DAY)) == 1
    # back to the first rows: the first partition is today's again, and the subset's is the replaced one
    main(["data", "ingest-criteo", str(full), "--date", DAY.isoformat(), "--replace", "--data-root", str(root)])
    assert [e["fingerprint"] for e in schema.replaced_partitions(root, DAY)] == [old, new]
    assert schema.replaced_since(root, DAY, old) is None and schema.replaced_since(root, DAY, new) is not None


def test_reports_of_a_replaced_partition_are_marked_once(tmp_path):
    from auditing.sinks.report.html import page
    from auditing.sinks.report.pages import mark_replaced_reports, write_report

    old, new = "sha256:" + "1d" * 32, "sha256:" + "2e" * 32
    directory = tmp_path / "reports" / "m" / f"date={DAY.isoformat()}"
    pages = {name: write_report(page("t", f"<!--labeldp:partition {fp}--><h1>verdict</h1>"), directory / name)
             for name, fp in (("old.html", old), ("new.html", new))}
    legacy = write_report(page("t", f"<table><tr><th>partition fingerprint</th><td><code>{old}</code></td></tr>"
                                    "</table>"), directory / "legacy.html")
    since = {old: "2026-10-03T01:00:00+00:00"}.get
    assert mark_replaced_reports(tmp_path, DAY, since) == 2
    assert mark_replaced_reports(tmp_path, DAY, since) == 0  # once
    marked = pages["old.html"].read_text()
    assert marked.count('id="inputs-replaced"') == 1 and "INPUTS REPLACED SINCE 2026-10-03T01:00:00+00:00" in marked
    assert marked.index('id="inputs-replaced"') < marked.index("<h1>verdict</h1>")
    assert 'id="inputs-replaced"' in legacy.read_text() and 'id="inputs-replaced"' not in pages["new.html"].read_text()


def test_a_model_registered_on_a_replaced_day_is_refused_naming_what_changed(day):
    from pipelines.data import schema
    from pipelines.data.criteo_ingest import ingest_criteo
    from pipelines.data.day import listed_day
    from pipelines.models.registration import check_registration_matches_day, register_model
    from pipelines.models.registry import read_metadata

    root, _, subset = day
    ids = schema.read_partition(root, DAY, columns=[schema.ROW_ID]).column(schema.ROW_ID).to_numpy()
    keys = root.parent / "keys.parquet"
    pq.write_table(pa.table({"row_id": np.sort(ids)[::2]}), keys)
    predictions = root.parent / "p.parquet"
    pq.write_table(pa.table({"row_id": ids, "prob_0": np.full(ids.size, 0.9), "prob_1": np.full(ids.size, 0.1)}),
                   predictions)
    register_model(root, "team", DAY, predictions, fmt="predictions", claimed_epsilon=1.0, dataset=None,
                   training_rows=keys)
    old = schema.partition_fingerprint(root, DAY)
    check_registration_matches_day(listed_day(root, DAY), read_metadata(root, "team", DAY))  # as registered: fine
    ingest_criteo(subset, root, DAY, replace=True)
    new = schema.partition_fingerprint(root, DAY)
    with pytest.raises(LabelDPInputError) as refused:
        check_registration_matches_day(listed_day(root, DAY), read_metadata(root, "team", DAY))
    message = str(refused.value)
    assert f"registered target team@{DAY.isoformat()} was registered on the partition {old}" in message
    assert f"is now {new} (replaced 20" in message and "--replace" in message and refused.value.field == "model"


def _row(run_id: str, hour: int, run_kind: str = "nightly", **fingerprints):
    from auditing.sinks.warehouse import normalize_row, upgrade_row

    return upgrade_row(normalize_row({
        "model_id": "m", "partition_date": DAY, "audit_config_hash": "abc123", "run_kind": run_kind,
        "model_fingerprint": "sha256:" + "ab" * 32, "partition_fingerprint": "sha256:" + "1d" * 32,
        "claimed_epsilon": 0.5, "delta": 0.0, "confidence": 0.95, "m": 1000, "selected_guesses": 100,
        "selected_correct": 80, "epsilon_lower_bound": 1.336, "strategy": "bonferroni", "method": "binomial",
        "status": "VIOLATION", "max_certifiable_epsilon": 5.0, "repetitions": 3, "seed": 7, "run_id": run_id,
        "started_at": dt.datetime(2026, 10, 3, hour, tzinfo=dt.UTC), "result_json": {}, **fingerprints}))


def test_the_family_takes_a_nights_first_run_and_says_when_a_later_one_saw_other_inputs():
    from auditing.sinks.family import family_rows, later_runs
    from auditing.sinks.report.text import later_run_line

    first = _row("r1", 1)
    backfill = _row("r2", 2, run_kind="backfill")  # the same inputs, another run kind: not "other inputs"
    replaced = _row("r3", 3, partition_fingerprint="sha256:" + "3f" * 32, training_rows_fingerprint="sha256:" + "4a" * 32)
    replaced = replaced.replace(status="WEAK_PASS", epsilon_lower_bound=0.0)
    rows = [replaced, backfill, first]
    assert family_rows(rows, "m") == [first]
    (later,) = later_runs(rows, "m")
    assert (later.first, later.later, later.changed) == (first, replaced, ("partition_fingerprint",))
    assert encode(later)["changed"] == ["partition_fingerprint"] and encode(later)["first_run_id"] == "r1"
    assert later_run_line(later.first, later.later, later.changed) == (
        f"{DAY.isoformat()}: a later run (r3: WEAK_PASS, eps_lb 0) saw other inputs (partition_fingerprint); the "
        "family counts the night's first run (r1: VIOLATION, eps_lb 1.336)")


def test_the_backfill_skips_a_day_by_its_one_rule(day, tmp_path):
    """`steps.day_is_complete` follows `BACKFILL_SKIP_RULE`: every target has a nightly or backfill verdict of the
    day at the plan's configuration on the day's partition as it is now, trusted or not; a guardrail's verdict does
    not count, and a day ingested again since is audited again."""
    import json

    from auditing.sinks.report.text import BACKFILL_SKIP_RULE
    from auditing.sinks.warehouse import open_warehouse
    from flows.plan import load_plan
    from flows.steps import day_is_complete
    from pipelines.data import schema
    from pipelines.data.criteo_ingest import ingest_criteo

    root, _, subset = day
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"targets": [{"name": "m", "source": "registered"}]}))
    plan = load_plan(path)
    current = schema.partition_fingerprint(root, DAY)
    config = config_hash(plan.game, plan.bound)
    assert not day_is_complete(root, DAY, plan, None)  # no warehouse yet: nothing is complete
    with open_warehouse(None, data_root=root) as store:
        store.write_audit(_row("g", 1, run_kind="guardrail", partition_fingerprint=current, audit_config_hash=config),
                          [])
    assert not day_is_complete(root, DAY, plan, None)  # a guardrail's verdict does not audit the night
    from auditing.verdict.types import void_night_reason
    void = _row("v", 2, partition_fingerprint=current, audit_config_hash=config,
                model_fingerprint="sha256:" + "cd" * 32)  # its own key: an identical one would keep the void row
    with open_warehouse(None, data_root=root) as store:
        store.write_audit(void.replace(trust="untrusted", untrusted_reason=void_night_reason("a control failed")), [])
    assert not day_is_complete(root, DAY, plan, None)  # a night a control voided is audited again
    untrusted = _row("n", 3, partition_fingerprint=current, audit_config_hash=config)
    with open_warehouse(None, data_root=root) as store:
        store.write_audit(untrusted.replace(trust="untrusted", untrusted_reason="the reference misfits"), [])
    assert day_is_complete(root, DAY, plan, None)  # untrusted too: a re-run on identical inputs changes nothing
    ingest_criteo(subset, root, DAY, replace=True)
    assert not day_is_complete(root, DAY, plan, None)  # the day ingested again: audited again
    assert "judged on the day's partition as it is now" in BACKFILL_SKIP_RULE and "--force" in BACKFILL_SKIP_RULE
