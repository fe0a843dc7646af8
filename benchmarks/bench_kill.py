"""Crash consistency at every kill point (tests/support/kill_harness.py): a real nightly on bigger synthetic days,
with its controls, killed with SIGKILL at every point it reaches (labeldp.faults), on DuckDB and (inside and around
the transaction, and while spooling) PostgreSQL, then run again; each recovered night checked against the night
never killed. Also: a day replaced (`data synth --replace`) killed at every point of its oracle's and partition's
swaps, a model registered again killed in its swap's window, a PostgreSQL connection terminated mid-transaction
(pg_terminate_backend of this run's own backend, found by its application_name; the shared server is never stopped),
a disk that fills while spooling (injected ENOSPC), and the seconds from SIGTERM / SIGINT to the exit at four phases
of a night.

    .venv/bin/python benchmarks/bench_kill.py [--rows 50000] [--out benchmarks/results/kill.md]
    .venv/bin/python benchmarks/bench_kill.py --rows 20000 --points 'directory.*'   (only those points)

Writes the figures to --out (Markdown) and prints them. Needs PostgreSQL (LABELDP_TEST_POSTGRES_URL, default
postgresql://127.0.0.1:5432/test).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import signal
import sys
import tempfile
import time
import urllib.parse
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.kill_harness import (  # noqa: E402  (the repository on the path first)
    D1,
    DAY_SWAP_POINTS,
    KILLED,
    PHASES,
    Scenario,
    World,
    build_base,
    cli,
    env,
    fresh,
    inconsistencies,
    kill_a_replaced_day,
    phase_changes,
    run_scenario,
    signal_when,
    snapshot,
)

PG_URL = os.environ.get("LABELDP_TEST_POSTGRES_URL", "postgresql://127.0.0.1:5432/test")
REACHED = re.compile(r"\[labeldp-audit fault\] ([\w.-]+)@(\d+): reached")
DAY_SWAP_WHAT = {
    "directory.pair@1": "the new oracle and partition complete, no journal yet (the old day stays)",
    "directory.pair@2": "the journal written, nothing swapped",
    "directory.swap@1": "the day's oracle moved aside, the new one not yet in",
    "directory.pair@3": "between the two swaps: the new oracle in, the old partition not yet moved aside",
    "directory.swap@2": "the day's partition moved aside, the new one not yet in",
    "directory.pair@4": "both swapped, the journal not yet removed",
}


class Schemas:
    """PostgreSQL schemas of this benchmark, one per scenario, dropped at the end."""

    def __init__(self, url: str):
        import psycopg

        self.url, self.names = url, []
        self.admin = psycopg.connect(url, autocommit=True, connect_timeout=5)

    def new(self, **options: str) -> str:
        from psycopg import sql

        name = f"labeldp_bench_kill_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        self.admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
        self.names.append(name)
        parts = urllib.parse.urlsplit(self.url)
        query = [*urllib.parse.parse_qsl(parts.query), ("options", f"-csearch_path={name}"), *options.items()]
        return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))

    def close(self) -> None:
        from psycopg import sql

        for name in self.names:
            self.admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
        self.admin.close()


def traced_points(base, directory: Path, api: str) -> dict[str, int]:
    """point -> how many times a night reaches it (a night run with LABELDP_FAULT=trace)."""
    world = fresh(base, directory)
    done = world.nightly(api, "trace")
    assert done.returncode == 0, done.stderr[-3000:]
    counts: dict[str, int] = {}
    for name, n in REACHED.findall(done.stderr):
        counts[name] = max(counts.get(name, 0), int(n))
    return counts


def scenarios_of(counts: dict[str, int]) -> list[Scenario]:
    """Every point at every reach (a batch scored: the first, middle and last), on DuckDB; the warehouse's
    transaction at every reach and the moments around it once, on PostgreSQL; a spool payload at every reach."""
    out = []
    for point, times in sorted(counts.items()):
        reaches = sorted({1, (times + 1) // 2, times}) if point == "scoring" else range(1, times + 1)
        out += [Scenario(f"{point}@{n}:kill") for n in reaches]
    verdicts = counts.get("warehouse.transaction", 0)
    out += [Scenario(f"warehouse.transaction@{n}:kill", backend="postgres") for n in range(1, verdicts + 1)]
    out += [Scenario(f"{point}@1:kill", backend="postgres") for point in ("publish.before-warehouse",
                                                                         "publish.after-warehouse")]
    out += [Scenario(f"spool.write@{n}:kill", backend="postgres", spooling=True) for n in range(1, verdicts + 1)]
    return out


def swap_scenarios(directory: Path, rows: int, wanted) -> list[tuple[str, list[str]]]:
    """A day replaced, killed at every point of its two swaps (`kill_harness.DAY_SWAP_POINTS`), and a model
    registered again, killed between moving the old directory aside and moving the new one in; the next command that
    writes finishes the swaps. ``wanted(point)``: whether to run a point. (name, what is wrong after it)."""
    from pipelines.data import schema
    from pipelines.data.synth import write_synthetic_day
    from pipelines.models.handle import resolve_model

    day = dt.date.fromisoformat(D1)
    out = []
    points = [point for point in DAY_SWAP_POINTS if wanted(point)]
    if points:
        old_root, new_root = directory / "day-old", directory / "day-new"
        write_synthetic_day(old_root, day, rows=rows, seed=1)
        write_synthetic_day(new_root, day, rows=rows, seed=2)  # what the replacement writes
    for index, point in enumerate(points):
        killed, wrong = kill_a_replaced_day(point, old_root, new_root, directory / f"swap-{index}", rows)
        out.append((f"{point}: `data synth --replace`, {DAY_SWAP_WHAT[point]}", wrong))
    if not wanted("directory.swap@1"):
        return out
    root = directory / "swap-model"
    write_synthetic_day(root, day, rows=rows, seed=1)
    files = directory / "swap-files"
    files.mkdir()
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = schema.read_partition(root, day, columns=[schema.ROW_ID]).column(schema.ROW_ID).to_numpy()
    for name, p in (("a", 0.2), ("b", 0.3)):
        pq.write_table(pa.table({"row_id": ids, "prob_0": np.full(ids.size, 1 - p), "prob_1": np.full(ids.size, p)}),
                       files / f"{name}.parquet")
    common = ("--name", "team", "--date", D1, "--claimed-epsilon", 1, "--data-root", root)
    assert cli("models", "register", "--file", files / "a.parquet", *common, environment=env()).returncode == 0
    killed = cli("models", "register", "--file", files / "b.parquet", *common, "--replace",
                 environment=env(LABELDP_FAULT="directory.swap@1:kill"))
    from labeldp.files import recover_interrupted

    recover_interrupted(root)
    wrong = [] if killed.returncode == KILLED else [f"not killed (exit {killed.returncode})"]
    try:
        model = resolve_model(root, "team", day)
        if model.artifact.read_bytes() != (files / "b.parquet").read_bytes():
            wrong.append("the model is not the new registration")
    except Exception as exc:  # the finding
        wrong.append(f"the model does not resolve: {exc}")
    wrong += [f"left behind: {p}" for p in (*root.rglob(".tmp-*"), *root.rglob(".old-*"))]
    out.append(("directory.swap@1: `models register --replace`", wrong))
    return out


def terminated_connection(base, directory: Path, api: str, schemas: Schemas) -> dict:
    """The night's first warehouse transaction on PostgreSQL held by the pause point while this benchmark terminates
    that run's own backend (pg_terminate_backend, found by the unique application_name of its URL); the run then
    reconnects and writes its verdict again, in a new transaction."""
    import subprocess

    tag = f"labeldp-kill-{uuid.uuid4().hex[:12]}"
    url = schemas.new(application_name=tag)
    world = fresh(base, directory, url)
    argv = [sys.executable, "-m", "flows.cli", "nightly", "--date", D1, "--data-root", str(world.root), "--plan",
            str(world.plan), "--warehouse", url]
    child = subprocess.Popen(argv, cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env(api, LABELDP_FAULT="warehouse.transaction@1:pause=20"))
    for line in child.stderr:
        if "[labeldp-audit fault] warehouse.transaction@1" in line:
            break
    terminated = []
    for _ in range(100):
        rows = schemas.admin.execute("SELECT pid, state FROM pg_stat_activity WHERE application_name = %s "
                                     "AND pid <> pg_backend_pid()", [tag]).fetchall()
        busy = [pid for pid, state in rows if state == "idle in transaction"]
        if busy:
            terminated = [schemas.admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()[0]
                          for pid in busy]
            break
        time.sleep(0.1)
    _out, err = child.communicate(timeout=1200)
    found = inconsistencies(snapshot(world), base.golden)
    return {"terminated": len(terminated), "exit": child.returncode, "found": found, "stderr": err[-2000:]}


def full_disk(base, directory: Path, api: str, schemas: Schemas) -> dict:
    """The warehouse unreachable and the disk full when the night spools its first verdict (ENOSPC from then on):
    what the run says and exits with, what it leaves; then the night again once the disk and warehouse are back."""
    from tests.support.pg_gate import PostgresGate

    world = fresh(base, directory)
    with PostgresGate(schemas.new()) as gate:
        spooling = World(world.root, world.plan, gate.url)
        first = spooling.nightly(api, "spool.write@1:enospc")
        left = sorted(p.name for p in (world.root / "spool").iterdir()) if (world.root / "spool").is_dir() else []
        gate.open()
        second = spooling.nightly(api)
        found = inconsistencies(snapshot(spooling), base.golden)
    said = [line for line in first.stderr.splitlines() if "No space left" in line or "cannot spool" in line]
    return {"exit": first.returncode, "said": said[:2], "left": left, "after": second.returncode, "found": found}


def signal_timings(base, directory: Path, api: str) -> list[tuple[str, str, int, float]]:
    """(phase, signal, exit code, seconds from the signal to the exit) at the four phases of `PHASES`."""
    out = []
    world = fresh(base, directory)
    plan = json.loads(Path(world.plan).read_text())
    for phase, (_, marker, delay, fault) in PHASES.items():
        for number in (signal.SIGTERM, signal.SIGINT):
            path = directory / f"plan-{phase}-{number}.json"
            path.write_text(json.dumps({**plan, **phase_changes(phase, number)}))
            argv = [sys.executable, "-m", "flows.cli", "nightly", "--date", D1, "--data-root", str(world.root),
                    "--plan", str(path)]
            code, _err, took = signal_when(argv, marker, delay, number,
                                           env(api, **({"LABELDP_FAULT": fault} if fault else {})))
            out.append((phase, signal.Signals(number).name, code, took))
    return out


def table_rows(outcomes: list, swaps: list[tuple[str, list[str]]]) -> list[str]:
    """The Markdown rows of the kill points' table: a night's points, then the directory swaps."""
    return [
        *(f"| `{o.scenario.fault.split(':')[0]}` ({o.scenario.backend}{', spooling' if o.scenario.spooling else ''})"
          f" | {'yes' if o.killed else 'NO'} | {o.recovery_code} | {len(o.found)}"
          + (f": {'; '.join(o.found)}" if o.found else "") + " |" for o in outcomes),
        *(f"| {name} | {'no' if any('not killed' in w for w in wrong) else 'yes'} | (finished by the next command "
          f"that writes) | {len(wrong)}" + (f": {'; '.join(wrong)}" if wrong else "") + " |" for name, wrong in swaps),
    ]


def run_points(args) -> int:
    """``--points``: only the kill points matching the patterns (fnmatch on ``<point>@<n>`` or ``<point>``); a night
    (its base built, its points traced) only when a pattern can match one of its points, PostgreSQL only when a
    PostgreSQL scenario is chosen; none of the sections after the table. Prints the rows, and writes them to --out
    when it is given."""
    import contextlib
    import fnmatch

    from labeldp import faults

    patterns = [p.strip() for p in args.points.split(",") if p.strip()]

    def wanted(at: str) -> bool:
        return any(fnmatch.fnmatch(at, p) or fnmatch.fnmatch(at.split("@")[0], p) for p in patterns)

    began = time.monotonic()
    night = [name for name in faults.POINTS if not name.startswith("directory.")]
    outcomes = []
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-kill-")))
        if any(fnmatch.fnmatch(name, p.split("@")[0]) for name in night for p in patterns):
            from prefect.settings import PREFECT_API_URL
            from prefect.testing.utilities import prefect_test_harness

            stack.enter_context(prefect_test_harness(server_startup_timeout=300))
            api = PREFECT_API_URL.value()
            base = build_base(work / "base", args.rows, api, controls=True)
            counts = traced_points(base, work / "trace", api)
            chosen = [sc for sc in scenarios_of(counts) if wanted(sc.fault.split(":")[0])]
            schemas = None
            for index, scenario in enumerate(chosen):
                if scenario.backend == "postgres" and schemas is None:
                    schemas = Schemas(PG_URL)
                    stack.callback(schemas.close)
                url = schemas.new() if scenario.backend == "postgres" else None
                outcomes.append(run_scenario(base, scenario, work / f"s{index}", api, url))
        swaps = swap_scenarios(work / "swaps", args.rows, wanted)
    killed = sum(o.killed for o in outcomes) + sum(not any("not killed" in w for w in wrong) for _, wrong in swaps)
    found = sum(len(o.found) for o in outcomes) + sum(len(w) for _, w in swaps)
    lines = [
        f"`.venv/bin/python benchmarks/bench_kill.py --rows {args.rows} --points '{args.points}'` "
        f"({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} cores shared with "
        f"other work, load average {os.getloadavg()[0]:.1f}; {time.monotonic() - began:.0f} s): only these points "
        "re-run.",
        "",
        f"**{killed} kill points re-run, {found} inconsistencies found.**",
        "",
        "| kill point | killed there | the next night's exit | inconsistencies |",
        "| --- | --- | --- | --- |",
        *table_rows(outcomes, swaps),
    ]
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0 if found == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=50_000, help="rows per synthetic day (default 50000)")
    parser.add_argument("--out", default=None, help="the Markdown file written (default, without --points: "
                                                    "benchmarks/results/kill.md; with --points: none, printed only)")
    parser.add_argument("--points", default=None,
                        help="only the kill points matching these comma-separated patterns (fnmatch on <point>@<n> "
                             "or <point>, e.g. 'directory.*' or 'directory.swap@1,scoring@2'), and none of the "
                             "sections after them; default: every point and every section")
    args = parser.parse_args(argv)
    if args.points:
        return run_points(args)
    args.out = args.out or str(ROOT / "benchmarks" / "results" / "kill.md")
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    began = time.monotonic()
    schemas = Schemas(PG_URL)
    lines = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-kill-") as tmp, prefect_test_harness(server_startup_timeout=300):
            api = PREFECT_API_URL.value()
            work = Path(tmp)
            base = build_base(work / "base", args.rows, api, controls=True)
            counts = traced_points(base, work / "trace", api)
            print(f"a night reaches: {counts}", flush=True)
            outcomes = []
            for index, scenario in enumerate(scenarios_of(counts)):
                url = schemas.new() if scenario.backend == "postgres" else None
                outcome = run_scenario(base, scenario, work / f"s{index}", api, url)
                outcomes.append(outcome)
                print(f"{scenario.name}: killed {outcome.killed}, recovered exit {outcome.recovery_code}, "
                      f"{len(outcome.found)} inconsistencies {outcome.found}", flush=True)
            swaps = swap_scenarios(work / "swaps", args.rows, lambda _point: True)
            for name, wrong in swaps:
                print(f"{name}: {wrong}", flush=True)
            connection = terminated_connection(base, work / "terminate", api, schemas)
            print(f"pg_terminate_backend: {connection}", flush=True)
            disk = full_disk(base, work / "enospc", api, schemas)
            print(f"ENOSPC: {disk}", flush=True)
            timings = signal_timings(base, work / "signals", api)
            print(f"signals: {timings}", flush=True)
    finally:
        schemas.close()
    killed = sum(o.killed for o in outcomes) + sum(not any("not killed" in w for w in wrong) for _, wrong in swaps)
    found = sum(len(o.found) for o in outcomes) + sum(len(w) for _, w in swaps)
    lines += [
        "# Kill points: crash consistency proven by killing the job",
        "",
        f"`.venv/bin/python benchmarks/bench_kill.py --rows {args.rows}` ({dt.date.today().isoformat()}, "
        f"{platform.machine()}, {os.cpu_count()} cores shared with other work, load average "
        f"{os.getloadavg()[0]:.1f}; {time.monotonic() - began:.0f} s in all). Two synthetic days of {args.rows:,} "
        "rows; the night audits a trained RR target and the planted memoriser (tests/support/planted.py) "
        "with both controls and one declared slicing (4 verdicts). Each scenario copies a data root whose night "
        "ran once (its "
        "partitions and models), kills the night with SIGKILL at one point (`LABELDP_FAULT`, labeldp/faults.py), "
        "runs it again, and compares everything with the night never killed "
        "(tests/support/kill_harness.py: verdicts, curves, slices, run records, reports, models, stored games and "
        "nights, spool, temporaries).",
        "",
        f"**{killed} kill points, {found} inconsistencies found.**",
        "",
        "| kill point | killed there | the next night's exit | inconsistencies |",
        "| --- | --- | --- | --- |",
        *table_rows(outcomes, swaps),
        "",
        "A night reaches each point this many times: "
        + ", ".join(f"`{name}` {times}" for name, times in sorted(counts.items())) + " (`directory.swap` only when a "
        "directory is replaced: a day ingested again, a model registered again, above).",
        "",
        "## A PostgreSQL connection terminated mid-transaction",
        "",
        "The night's first warehouse transaction held open (`warehouse.transaction@1:pause=20`) while this benchmark "
        "ran `pg_terminate_backend` on that run's own backend only (found by the unique `application_name` in its "
        f"warehouse URL; the shared server is never stopped): {connection['terminated']} backend terminated, the run "
        f"exited {connection['exit']} (it reconnected and wrote the verdict in a new transaction), "
        f"{len(connection['found'])} inconsistencies"
        + (f": {'; '.join(connection['found'])}" if connection["found"] else "") + ".",
        "",
        "## A full disk while spooling",
        "",
        "The warehouse unreachable (a closed gate in front of PostgreSQL) and every spool write failing with ENOSPC "
        f"from the first: the run exited {disk['exit']} and said `{disk['said'][0] if disk['said'] else '(nothing)'}`; "
        f"the spool held {disk['left'] or 'nothing'} afterwards (no partial payload); with the disk and the warehouse "
        f"back, the next night exited {disk['after']} with {len(disk['found'])} inconsistencies"
        + (f": {'; '.join(disk['found'])}" if disk["found"] else "") + ".",
        "",
        "## Signals",
        "",
        "SIGTERM must end a run with 143 and SIGINT with 130, within 5 s, wherever it lands (the process is signalled, "
        "as a scheduler does):",
        "",
        "| phase | signal | exit | seconds to the exit |",
        "| --- | --- | --- | --- |",
        *(f"| {phase} | {name} | {code} | {took:.1f} |" for phase, name, code, took in timings),
    ]
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)
    return 0 if found == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
