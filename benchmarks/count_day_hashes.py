"""How many times a nightly reads every byte of the audited day to fingerprint it: a real `labeldp-audit nightly`
(the default plan: three trained targets and both controls) on two small synthetic days, each command in its own
process with the partition hashing function counted (each call hashes every file of one day's partition).

    PYTHONPATH=. .venv/bin/python benchmarks/count_day_hashes.py [--rows 20000]

Prints the number of whole-day hashes per day for the nightly, run twice (the second run reuses the trained
models and stored games). With COUNT_TRACE=FILE, each hash's call stack is appended to FILE (where they come from).
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs the CLI with `files_fingerprint` counted: one line per hashed day appended to $COUNT_FILE (appended as it
# goes, since a nightly may end without the interpreter's shutdown).
WRAPPER = """
import os, sys
from pathlib import Path
from pipelines.data import schema
original = schema.files_fingerprint
def counting(files):
    with open(os.environ["COUNT_FILE"], "a") as out:
        for day in sorted({Path(f).parent.name for f in files}):
            out.write(day + "\\n")
        if os.environ.get("COUNT_TRACE"):
            import traceback
            with open(os.environ["COUNT_TRACE"], "a") as trace:
                trace.write("".join(traceback.format_stack(limit=6)[:-1]) + "----\\n")
    return original(files)
schema.files_fingerprint = counting
from flows import cli
sys.exit(cli.main(sys.argv[1:]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = ["--data-root", str(Path(tmp) / "root")]
        count_file = Path(tmp) / "hashes.txt"
        environment = {**os.environ, "COUNT_FILE": str(count_file), "PYTHONPATH": str(ROOT)}

        def run(command: list[str]) -> tuple[int, dict]:
            count_file.write_text("")
            code = subprocess.run([sys.executable, "-c", WRAPPER, *command, *base], env=environment,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
            return code, dict(sorted(collections.Counter(count_file.read_text().split()).items()))

        run(["data", "synth", "--start", "2026-11-01", "--end", "2026-11-02", "--rows", str(args.rows)])
        for which in ("first", "second"):
            code, counted = run(["nightly", "--date", "2026-11-02", "--warehouse", str(Path(tmp) / "wh.duckdb")])
            print(f"nightly ({which} run, exit {code}): whole-day hashes per day {counted}", flush=True)


if __name__ == "__main__":
    main()
