"""A day of up to 1e8 rows scored and audited through the command line, on FnApiRunner and on a local Dask cluster.

For each --rows: a synthetic day of that size (written streamed, `big_day`), then per --runners one
`labeldp-audit score` of it (the 250-tree target and reference models of benchmarks/bench_beam_scoring.py's
setup, R = --repetitions, every row audited). Measured per run:

- wall time, and wall time per 1e6 rows;
- the peak resident memory of every process: the command (its Beam driver; FnApiRunner's workers run in it) and,
  on Dask, the scheduler and each worker process (sampled every 0.2 s from /proc by psutil: VmHWM where the
  process is still alive when it ends, else the largest sample);
- the disk used by the partition and by the job's output directory;
- the command's own stage timings (its --json record).

The Dask cluster is what scripts/ops.sh starts: one `dask scheduler` and --dask-workers `dask worker` processes
of 1 thread each, started for each run and stopped after it (so each run's worker peaks are its own).

A day above 1e7 rows cannot be made in one call of `synth.generate_day` on this machine (it holds the whole
table), so `big_day` writes it in chunks of 5e6 rows: chunk k is `generate_day(D, 5e6, seed = base + k)` with its
row ids moved to k * 5e6 + i, streamed into one partition (`schema.write_partition` holds one chunk and 8 bytes a
row for the row-id check). Every chunk follows the same law; the rows differ from a one-call day of that size.

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/bench_big_day.py --work /work/big \
        --models-root /work/big/models --rows 1000000,10000000,100000000 --runners fnapi,dask
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHUNK_ROWS = 5_000_000


def write_day(root: Path, date, rows: int, chunk_above: int = CHUNK_ROWS) -> None:
    """Writes a synthetic day of ``rows`` rows under ``root``: one `synth.write_synthetic_day` call up to
    ``chunk_above`` rows, else chunks of CHUNK_ROWS (module docstring) streamed into one partition (no oracle)."""
    import numpy as np
    import pyarrow as pa

    from pipelines.data import schema, synth

    if rows <= chunk_above:
        synth.write_synthetic_day(root, date, rows=rows)
        return
    began = time.perf_counter()
    chunks = -(-rows // CHUNK_ROWS)

    def batches():
        for k in range(chunks):
            size = min(CHUNK_ROWS, rows - k * CHUNK_ROWS)
            table = synth.generate_day(date, rows=size, seed=synth.DEFAULT_SEED + k).table
            ids = table.column(schema.ROW_ID).to_numpy() + np.int64(k * CHUNK_ROWS)
            table = table.set_column(table.schema.get_field_index(schema.ROW_ID), schema.ROW_ID, pa.array(ids))
            print(f"  {date}: chunk {k + 1}/{chunks} ({size:,} rows) after {time.perf_counter() - began:.0f} s",
                  file=sys.stderr, flush=True)
            yield table

    schema.write_partition(root, date, batches(), source=f"synthetic day {date} ({rows} rows in chunks)",
                           provenance={"source": "synthetic", "rows": rows, "chunk_rows": CHUNK_ROWS,
                                       "generator": "benchmarks/bench_big_day.py"})


def big_day(work: Path, models_root: Path, rows: int) -> Path:
    """A data root holding a synthetic day of ``rows`` rows (chunked above CHUNK_ROWS) and the benchmark's models."""
    from benchmarks.bench_beam_scoring import DAY

    root = work / f"rows-{rows}"
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "partitions" / f"date={DAY}").is_dir():
        began = time.perf_counter()
        write_day(root, DAY, rows)
        print(f"wrote {rows:,} rows in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    if not (root / "models").exists():
        (root / "models").symlink_to((models_root / "models").resolve(), target_is_directory=True)
    return root


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


class Sampler:
    """Peak RSS per process of the watched trees, sampled every 0.2 s."""

    def __init__(self) -> None:
        import psutil

        self.psutil, self.roots, self.peaks, self.names = psutil, [], {}, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def watch(self, pid: int, name: str) -> None:
        self.roots.append((pid, name))

    def _sample(self) -> None:
        for pid, name in self.roots:
            try:
                root = self.psutil.Process(pid)
                procs = [root, *root.children(recursive=True)]
            except self.psutil.NoSuchProcess:
                continue
            for i, proc in enumerate(procs):
                try:
                    rss = proc.memory_info().rss
                    with open(f"/proc/{proc.pid}/status") as status:
                        hwm = next((int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:")), 0)
                except (self.psutil.NoSuchProcess, FileNotFoundError, ProcessLookupError):
                    continue
                key = proc.pid
                self.names.setdefault(key, name if i == 0 else f"{name} child {proc.pid}")
                self.peaks[key] = max(self.peaks.get(key, 0), rss, hwm)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(0.2)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._sample()
        self._stop.set()
        self._thread.join()

    def report(self) -> dict:
        return {self.names[pid]: round(peak / 2**20) for pid, peak in sorted(self.peaks.items())}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_score(root: Path, runner: str, repetitions: int, dask_workers: int) -> dict:
    from benchmarks.bench_beam_scoring import DAY, MODEL

    shutil.rmtree(root / "sweeps", ignore_errors=True)  # a stored game would be reused
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "flows.cli", "score", "--data-root", str(root), "--date", DAY.isoformat(),
               "--model", MODEL, "--reference", MODEL, "--repetitions", str(repetitions), "--audit-rows", "all",
               "--json", "--runner", runner]
    cluster: list[subprocess.Popen] = []
    sampler = Sampler()
    try:
        if runner == "dask":
            port = _free_port()
            cluster.append(subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port",
                                             str(port), "--dashboard-address", ":0"], env=env,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            sampler.watch(cluster[-1].pid, "dask scheduler")
            time.sleep(3)
            for w in range(dask_workers):
                cluster.append(subprocess.Popen([str(bin_dir / "dask"), "worker", f"tcp://127.0.0.1:{port}",
                                                 "--nthreads", "1", "--nworkers", "1", "--memory-limit", "0",
                                                 "--no-dashboard"], env=env, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL))
                sampler.watch(cluster[-1].pid, f"dask worker {w + 1}")
            time.sleep(5)
            command += ["--catboost-threads", "1", "--", f"--dask_client_address=127.0.0.1:{port}"]
        began = time.perf_counter()
        with sampler:
            child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            sampler.watch(child.pid, "score command")
            stdout, stderr = child.communicate()
        wall = time.perf_counter() - began
    finally:
        for proc in reversed(cluster):
            proc.send_signal(signal.SIGINT)
        for proc in cluster:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    if child.returncode:
        print(stderr[-4000:], file=sys.stderr)
        raise SystemExit(f"score on {runner} at {root} exited {child.returncode}")
    record = json.loads(stdout.strip().splitlines()[-1])
    return {"runner": runner, "wall_s": round(wall, 2), "peak_rss_mib": sampler.report(),
            "partition_bytes": _du(root / "partitions"), "output_bytes": _du(Path(record["output_dir"])),
            "timings": record.get("timings"), "epsilon_lower_bound": record["result"]["epsilon_lower_bound"],
            "m": record["result"]["m"], "load": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="where the days are written (reused)")
    parser.add_argument("--models-root", type=Path, required=True,
                        help="a root made by bench_beam_scoring.py's setup (made here when missing)")
    parser.add_argument("--rows", default="1000000,10000000,100000000", help="comma-separated day sizes")
    parser.add_argument("--runners", default="fnapi,dask", help="comma-separated: fnapi, dask")
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--dask-workers", type=int, default=2)
    parser.add_argument("--make-only", action="store_true", help="write the days and stop")
    args = parser.parse_args()

    if not (args.models_root / "models").is_dir():
        from benchmarks.bench_beam_scoring import setup

        setup(args.models_root, 100_000, 100_000)
    for rows in (int(float(v)) for v in args.rows.split(",") if v):
        root = big_day(args.work, args.models_root, rows)
        if args.make_only:
            continue
        for runner in (r for r in args.runners.split(",") if r):
            out = run_score(root, runner, args.repetitions, args.dask_workers)
            out.update(rows=rows, wall_per_1e6_s=round(out["wall_s"] / rows * 1e6, 2))
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
