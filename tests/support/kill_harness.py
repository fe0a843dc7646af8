"""Crash consistency, proven by killing the job: real nightlies (the command line, Prefect, CatBoost, the Beam job,
DuckDB or PostgreSQL) killed with SIGKILL at a named point (`labeldp.faults`), then run again; the state after that
run is checked against a night never killed. Used by tests/behaviour/test_kill_points.py (a handful of points,
tiny days) and
benchmarks/bench_kill.py (every point, bigger days, figures in benchmarks/results/kill.md).

A `Base` is a data root whose night ran once through (its partitions, models, recalibrated reference), with that
night's outcome kept as the golden `Snapshot` and everything the night wrote from its games on removed (games,
warehouse, reports, stored night, spool): each scenario copies it, so the killed run scores, judges and publishes
every verdict again, on identical inputs, and the recovered night must equal the golden one.

`inconsistencies` lists what is lost, duplicated, changed or half-written: a verdict missing or of other inputs, a
verdict's figures, curve or slices not the golden ones, a run record without its row, a row without its run or its
report, a page cut short, a model that does not resolve, a stored game or night that does not load, a payload left in
the spool, a temporary left behind.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
D0, D1 = "2026-10-01", "2026-10-02"
DAY = dt.date.fromisoformat(D1)
KILLED = -9  # the returncode of a process killed by SIGKILL
# What the recovered night's verdicts must hold as the golden ones did (the run's own id, times and durations aside).
COMPARED = ("status", "epsilon_lower_bound", "m", "selected_guesses", "selected_correct", "trust", "kind",
            "control_passed", "detection_floor_rows", "partition_fingerprint", "training_rows_fingerprint",
            "reference_fingerprint", "correction_fingerprint", "scoring_key", "night_fingerprint")
# What a night writes from its games on: removed from the base, written again by each scenario.
WRITTEN_BY_THE_NIGHT = ("sweeps", "reports", "nights", "spool", "logs", "warehouse.duckdb", "warehouse.duckdb.wal")


def env(api: str | None = None, **extra: str) -> dict:
    out = {k: v for k, v in os.environ.items() if k not in ("LABELDP_FAULT", "PREFECT_API_URL")}
    out.setdefault("NUMBA_CACHE_DIR", str(REPO / ".venv" / "numba-cache"))
    return {**out, **({"PREFECT_API_URL": api} if api else {}), **extra}


def cli(*argv: str, environment: dict, timeout: float = 1200) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flows.cli", *map(str, argv)], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env=environment)


@dataclass(frozen=True)
class World:
    """One data root and its plan; ``warehouse`` None: the data root's DuckDB file."""

    root: Path
    plan: Path
    warehouse: str | None = None

    def nightly(self, api: str | None, fault: str | None = None, warehouse: str | None = None,
                timeout: float = 1200) -> subprocess.CompletedProcess:
        target = warehouse if warehouse is not None else self.warehouse
        extra = ["--warehouse", target] if target else []
        return cli("nightly", "--date", D1, "--data-root", self.root, "--plan", self.plan, *extra,
                   environment=env(api, **({"LABELDP_FAULT": fault} if fault else {})), timeout=timeout)


def write_plan(path: Path, controls: bool) -> Path:
    path.write_text(json.dumps({
        "targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0},
                    {"name": "leaky", "source": "registered", "claimed_epsilon": 0.0}],
        "catboost_iterations": 40, "audit": {"repetitions": 2, "grid_points": 20}, "slices": ["shown-label"],
        "controls": {"enabled": controls}}))
    return path


@dataclass
class Base:
    world: World
    golden: Snapshot


def build_base(directory: Path, rows: int, api: str | None, controls: bool = False) -> Base:
    """Two synthetic days of ``rows`` rows, the planted memoriser registered (tests/support/planted.py) and a trained RR
    target; its night run once (the golden snapshot), then what it wrote from its games on removed."""
    from pipelines.data.synth import write_synthetic_day
    from tests.support.planted import register_memorizer

    root = directory / "base"
    for day in (D0, D1):
        write_synthetic_day(root, dt.date.fromisoformat(day), rows=rows)
    register_memorizer(root, D1, "leaky", claimed_epsilon=0.0)
    world = World(root, write_plan(directory / "plan.json", controls))
    done = world.nightly(api)
    assert done.returncode == 0, done.stderr[-3000:]
    golden = snapshot(world)
    for name in WRITTEN_BY_THE_NIGHT:
        path = root / name
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    return Base(world, golden)


def fresh(base: Base, directory: Path, warehouse: str | None = None) -> World:
    """A copy of the base's data root (and its plan) to kill a night in."""
    shutil.copytree(base.world.root, directory / "data", symlinks=True)
    return World(directory / "data", base.world.plan, warehouse)


# ------------------------------------------------------------------------------------------------ snapshots
@dataclass
class Snapshot:
    """What a night left: its verdicts by key (the `COMPARED` figures), their curves, slices and runs, and every
    page, model, stored game, stored night, spool file and temporary under the data root."""

    rows: dict = field(default_factory=dict)
    curves: dict = field(default_factory=dict)
    slices: dict = field(default_factory=dict)
    runs: list = field(default_factory=list)  # (key, run id, whether that run wrote the row)
    orphan_runs: int = 0  # run records whose row is missing
    reports: dict = field(default_factory=dict)  # relative path -> complete page
    report_of: dict = field(default_factory=dict)  # key -> its page exists and is complete
    models: dict = field(default_factory=dict)  # relative directory -> None or why it does not resolve
    games: dict = field(default_factory=dict)
    nights: dict = field(default_factory=dict)
    spool: list = field(default_factory=list)
    temporaries: list = field(default_factory=list)


def _key(row) -> tuple:
    return tuple(str(v) for v in row.key)


def snapshot(world: World) -> Snapshot:
    from auditing.game.counts import GameCounts
    from auditing.sinks.report.pages import run_report_path
    from auditing.sinks.warehouse import open_warehouse
    from auditing.sinks.warehouse.schema import KEY_COLUMNS
    from pipelines.models.handle import resolve_model

    shot = Snapshot()
    with open_warehouse(world.warehouse, data_root=world.root) as store:
        for row in store.fetch_results():
            if row.partition_date != DAY:
                continue
            key = _key(row)
            shot.rows[key] = {name: getattr(row, name) for name in COMPARED}
            shot.curves[key] = [(p["guesses"], p["correct"], p["epsilon_lower_bound"]) for p in store.fetch_curve(row)]
            shot.slices[key] = [(s["slicing"], s["slice_name"], s["epsilon_lower_bound"], s["status"])
                                for s in store.fetch_slices(row)]
            runs = store.fetch_runs(row)
            shot.runs += [(key, r["run_id"], r["run_id"] == row.run_id) for r in runs]
            page = run_report_path(world.root, row.key)
            shot.report_of[key] = page.is_file() and _complete(page)
        (shot.orphan_runs,), = store._query(
            "SELECT COUNT(*) FROM audit_runs r WHERE NOT EXISTS (SELECT 1 FROM audit_results a WHERE "
            + " AND ".join(f"a.{k} = r.{k}" for k in KEY_COLUMNS) + ")", [])
    root = world.root
    for page in sorted((root / "reports").rglob("*.html")) if (root / "reports").is_dir() else []:
        shot.reports[str(page.relative_to(root))] = _complete(page)
    for directory in sorted(root.glob("models/*/date=*")):
        try:
            resolve_model(root, directory.parent.name, dt.date.fromisoformat(directory.name.removeprefix("date=")))
            shot.models[str(directory.relative_to(root))] = None
        except Exception as exc:  # the reason is the finding
            shot.models[str(directory.relative_to(root))] = f"{type(exc).__name__}: {exc}"
    for directory in sorted(root.glob("sweeps/*/date=*/*")):
        if directory.name.startswith("."):
            continue
        try:
            GameCounts.load(directory)
            json.loads((directory / "result.json").read_text(encoding="utf-8"))
            shot.games[str(directory.relative_to(root))] = None
        except Exception as exc:
            shot.games[str(directory.relative_to(root))] = f"{type(exc).__name__}: {exc}"
    for path in sorted(root.glob("nights/date=*/*.json")):
        try:
            json.loads(path.read_text(encoding="utf-8"))
            shot.nights[str(path.relative_to(root))] = None
        except (OSError, ValueError) as exc:
            shot.nights[str(path.relative_to(root))] = str(exc)
    shot.spool = sorted(p.name for p in (root / "spool").glob("*.json")) if (root / "spool").is_dir() else []
    shot.temporaries = sorted(str(p.relative_to(root)) for pattern in (".tmp-*", ".old-*", ".swap-*")
                              for p in root.rglob(pattern)
                              if "logs" not in p.relative_to(root).parts)
    return shot


def _complete(page: Path) -> bool:
    try:
        return page.read_text(encoding="utf-8").endswith("</html>\n")
    except (OSError, UnicodeDecodeError):
        return False


def inconsistencies(after: Snapshot, golden: Snapshot) -> list[str]:
    """What is lost, duplicated, changed or half-written after recovery, against the night never killed."""
    found = []
    for key in golden.rows.keys() - after.rows.keys():
        found.append(f"lost verdict {key[0]} (run kind {key[3]}, claim {key[4]})")
    for key in after.rows.keys() - golden.rows.keys():
        found.append(f"a verdict the golden night does not have: {key[0]} inputs {key[6][:19]} (duplicated or other "
                     "inputs)")
    for key in golden.rows.keys() & after.rows.keys():
        changed = [n for n in COMPARED if golden.rows[key][n] != after.rows[key][n]]
        if changed:
            found.append(f"{key[0]}: {', '.join(changed)} changed")
        if golden.curves[key] != after.curves[key]:
            found.append(f"{key[0]}: curve of {len(after.curves[key])} points, golden {len(golden.curves[key])}")
        if golden.slices[key] != after.slices[key]:
            found.append(f"{key[0]}: slices differ ({len(after.slices[key])} vs {len(golden.slices[key])})")
        if not after.report_of[key]:
            found.append(f"{key[0]}: its run report is missing or cut short")
    writers = {key for key, _, wrote in after.runs if wrote}
    found += [f"{key[0]}: no run record of the run that wrote it" for key in after.rows.keys() - writers]
    if after.orphan_runs:
        found.append(f"{after.orphan_runs} run record(s) without their row")
    found += [f"page cut short: {page}" for page, complete in after.reports.items() if not complete]
    found += [f"model {path}: {error}" for path, error in after.models.items() if error]
    found += [f"model lost: {path}" for path in golden.models.keys() - after.models.keys()]
    found += [f"stored game {path}: {error}" for path, error in after.games.items() if error]
    found += [f"stored game lost: {path}" for path in golden.games.keys() - after.games.keys()]
    found += [f"stored night {path}: {error}" for path, error in after.nights.items() if error]
    found += [f"left in the spool: {name}" for name in after.spool]
    found += [f"temporary left behind: {path}" for path in after.temporaries]
    return sorted(found)


# ------------------------------------------------------------------------------------------------ scenarios
@dataclass(frozen=True)
class Scenario:
    """One kill: the fault point setting, the warehouse backend, and whether the killed run spools (its
    PostgreSQL warehouse unreachable: a gate closed, `tests/support/pg_gate.py`)."""

    fault: str
    backend: str = "duckdb"
    spooling: bool = False

    @property
    def name(self) -> str:
        return f"{self.fault.split(':')[0]} ({self.backend}{', spooling' if self.spooling else ''})"


@dataclass
class Outcome:
    scenario: Scenario
    killed: bool  # the point was reached and the process died there
    recovery_code: int
    found: list[str]
    killed_stderr: str = ""
    recovery_stderr: str = ""


def run_scenario(base: Base, scenario: Scenario, directory: Path, api: str | None,
                 postgres_url: str | None = None) -> Outcome:
    """Kills a night at ``scenario``'s point in a copy of ``base``, runs the night again (the warehouse reachable),
    and lists the inconsistencies against the golden night."""
    warehouse = postgres_url if scenario.backend == "postgres" else None
    world = fresh(base, directory, warehouse)
    if scenario.spooling:
        from tests.support.pg_gate import PostgresGate

        with PostgresGate(postgres_url) as gate:  # closed: the killed run spools for the gate's address
            world = World(world.root, world.plan, gate.url)
            killed = world.nightly(api, scenario.fault)
            gate.open()
            recovered = world.nightly(api)
            after = snapshot(world)
    else:
        killed = world.nightly(api, scenario.fault)
        recovered = world.nightly(api)
        after = snapshot(world)
    found = inconsistencies(after, base.golden)
    if recovered.returncode != 0:
        found.append(f"the night after the kill exited {recovered.returncode}")
    return Outcome(scenario, killed.returncode == KILLED, recovered.returncode, found, killed.stderr,
                   recovered.stderr)


# ------------------------------------------------------------------------------------------ a day replaced
# Every point a day replaced by `data synth --replace` reaches (`pipelines.data.layout.atomic_directories`), and the
# generation the day must be after the next command: the new directories complete, no journal yet (pair@1: old);
# the journal written (pair@2), the oracle's swap window (swap@1), the oracle moved in and the partition not yet moved
# aside (pair@3: where two independent swaps left the new oracle beside the old partition), the partition's swap
# window (swap@2), both moved in (pair@4): new.
DAY_SWAP_POINTS = {"directory.pair@1": "old", "directory.pair@2": "new", "directory.swap@1": "new",
                   "directory.pair@3": "new", "directory.swap@2": "new", "directory.pair@4": "new"}


def kill_a_replaced_day(point: str, old_root: Path, new_root: Path, root: Path, rows: int) -> tuple[bool, list[str]]:
    """Copies ``old_root`` (day `DAY` synthesized with seed 1) to ``root``, kills `data synth --replace` (seed 2, as
    ``new_root`` holds it) at ``point``, reads the oracle before any recovery, runs the next command that writes
    under the data root (another day synthesized), and lists what is wrong: an oracle read beside a partition of
    another generation, a day that is not the whole replacement (its partition, oracle, and the oracle's rows the
    partition's), the replaced partition not recorded once in `_replaced.json`, a temporary or journal behind. The
    day must be the generation `DAY_SWAP_POINTS` gives: the old one (``old_root``'s, never replaced) when the kill
    came before the journal, else the new one. Returns (killed at the point, what is wrong)."""
    from labeldp.errors import LabelDPInputError
    from pipelines.data import schema

    shutil.copytree(old_root, root)
    old = schema.partition_fingerprint(root, DAY)
    killed = cli("data", "synth", "--start", D1, "--end", D1, "--rows", rows, "--seed", 2, "--replace",
                 "--data-root", root, environment=env(LABELDP_FAULT=f"{point}:kill"))
    wrong = [] if killed.returncode == KILLED else [f"not killed (exit {killed.returncode})"]
    try:  # before any recovery: the old pair, or a refusal; never the new oracle beside the old partition
        oracle = schema.read_oracle(root, DAY)
    except LabelDPInputError as exc:
        if "being replaced together" not in str(exc):
            wrong.append(f"the oracle unreadable before the recovery: {exc}")
    else:
        if not (oracle.equals(schema.read_oracle(old_root, DAY)) and schema.partition_fingerprint(root, DAY) == old):
            wrong.append("before the recovery, the oracle read is not the one of the day's partition")
    after = cli("data", "synth", "--start", "2026-10-03", "--end", "2026-10-03", "--rows", 500, "--data-root", root,
                environment=env())
    if after.returncode != 0:
        wrong.append(f"the next command exited {after.returncode}: {after.stderr[-500:]}")
    if killed.returncode == KILLED and "recovered after an interrupted run" not in after.stderr:
        wrong.append("the next command did not say it recovered")
    generation = DAY_SWAP_POINTS[point]
    expected = new_root if generation == "new" else old_root
    try:
        if schema.partition_fingerprint(root, DAY) != schema.partition_fingerprint(expected, DAY):
            wrong.append(f"the day's partition is not the {generation} one")
        oracle = schema.read_oracle(root, DAY)
        if not oracle.equals(schema.read_oracle(expected, DAY)):
            wrong.append(f"the day's oracle is not the {generation} one")
        ids = schema.read_partition(root, DAY, columns=[schema.ROW_ID]).column(schema.ROW_ID)
        if not oracle.column(schema.ROW_ID).equals(ids):
            wrong.append("the oracle's rows are not the partition's")
        now = schema.partition_fingerprint(root, DAY)
        replaced = [e["fingerprint"] for e in schema.replaced_partitions(root, DAY)]
        if replaced != ([old] if generation == "new" else []) or schema.replaced_since(root, DAY, now) is not None \
                or (generation == "new" and schema.replaced_since(root, DAY, old) is None):
            wrong.append(f"_replaced.json does not record the replaced partition once: {replaced}")
    except LabelDPInputError as exc:
        wrong.append(f"the day does not read: {exc}")
    wrong += [f"left behind: {p.relative_to(root)}" for pattern in (".tmp-*", ".old-*", ".swap-*")
              for p in root.rglob(pattern)]
    return killed.returncode == KILLED, wrong


# ------------------------------------------------------------------------------------------------ signals
# phase -> (plan changes, the stderr line it waits for, seconds after it, fault point setting); each run but the
# warehouse's plays a game of its own (repetitions), so that it has something to score; the warehouse's judges the
# first night's game at another confidence, a verdict of other inputs: a row to write
PHASES = {
    "prefect": ({}, "[labeldp-audit] nightly audit of", 0.0, None),
    "training": ({"targets": [{"name": "rr-eps2", "mechanism": "rr", "epsilon": 2.0}], "catboost_iterations": 600},
                 "rr eps=2: fitting CatBoost", 2.0, None),
    # held at the scoring fault point: a day small enough to score within a fixed delay would let the signal land
    # after the verdict is written (under load it did)
    "scoring": ({}, "[labeldp-audit fault] scoring", 0.5, "scoring:pause=120"),
    "warehouse": ({"audit": {"repetitions": 3, "grid_points": 30, "confidence": 0.9}},  # a new row, the stored game
                  "[labeldp-audit fault] warehouse.transaction", 0.0, "warehouse.transaction:pause=120"),
}


def phase_changes(phase: str, number: int) -> dict:
    """The plan changes of a signal's run at ``phase`` (`PHASES`): a game not stored yet (its own repetitions) but at
    the warehouse phase, a target of its own at the training phase, one per signal."""
    import signal

    changes = dict(PHASES[phase][0])
    if phase != "warehouse":
        repetitions = 4 + list(PHASES).index(phase) * 2 + (number == signal.SIGINT)
        changes = {"audit": {"repetitions": repetitions, "grid_points": 30}, **changes}
    if phase == "training":
        changes["targets"] = [{**changes["targets"][0], "name": f"rr-eps2-{signal.Signals(number).name.lower()}"}]
    return changes


def signal_when(argv: list[str], marker: str, delay: float, number: int, environment: dict,
                timeout: float = 60) -> tuple[int, str, float]:
    """Runs ``argv``, sends signal ``number`` to its process (as a scheduler does: the process, not its group)
    ``delay`` seconds after a stderr line holds ``marker``; (exit code, stderr, seconds from the signal to the exit).
    AssertionError when the run ends before the marker."""
    import signal
    import time

    child = subprocess.Popen(argv, cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=environment, start_new_session=True)
    seen = []
    for line in child.stderr:
        seen.append(line)
        if marker in line:
            break
    assert child.poll() is None, f"the run ended before {marker!r}:\n" + "".join(seen)
    time.sleep(delay)
    sent = time.monotonic()
    os.kill(child.pid, number)
    try:
        _out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        raise
    return child.returncode, "".join(seen) + err, time.monotonic() - sent
