"""`labeldp-audit data ...`: create and check daily partitions (issue 3, data half).

Subcommands: `synth` (deterministic Criteo-like days with an oracle), `ingest-criteo` (a Criteo TSV click log into
one day), `validate` (read a day through the schema and print its row count, click rate and fingerprint).
Heavy libraries are imported inside the handlers, so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time

HELP = "create or check daily partitions: synth, ingest-criteo, validate"
DESCRIPTION = """\
Daily partitions live under the data root (--data-root, else $LABELDP_DATA_ROOT, else ./.labeldp):
  partitions/date=YYYY-MM-DD/part-*.parquet   row_id, label (int8), I1..I13 (int64, null = missing),
                                              C1..C26 (8-hex-digit strings, dictionary-encoded)
  oracle/date=YYYY-MM-DD/p_click.parquet      true click probability per row_id (synthetic days only;
                                              never read by training)
Every write is atomic: a failed command leaves the partition area as it was.

Examples:
  labeldp-audit data synth --start 2024-01-01 --end 2024-01-07
  labeldp-audit data ingest-criteo day_0.gz --date 2024-01-01 --sample-rows 1000000
  labeldp-audit data validate --date 2024-01-01
"""

SYNTH_DESCRIPTION = """\
Generates one synthetic Criteo-like partition per day from --start to --end (inclusive) and its oracle:
about 3% clicks, Zipf-popular hashed categoricals, count features with missing values, a logistic click
model over 6 numeric and 10 categorical features (the other 23 are noise), and slow day-over-day drift of
coefficients and popularity. Deterministic: the same --seed, day and --rows give byte-identical files;
each day's seed (derived from --seed and the date) is recorded in partitions/date=D/_provenance.json.
The true click probability of every row goes to oracle/date=D/ (for audits with D' = D; training never
reads it). An existing day is replaced atomically. Prints one line per day with its timing.
"""

INGEST_DESCRIPTION = """\
Converts a Criteo click-log TSV file (label, I1..I13 integers, C1..C26 8-hex-digit categoricals; tab
separated, empty field = missing, no header; plain or gzip, recognised by content) into
partitions/date=D/. Streams the file in 32 MiB blocks, so multi-GB files need little memory.
row_id is the line number (from 1). --sample-rows N keeps a deterministic uniform sample of N lines
(the paper uses 1M per day): the N lines with the smallest hash of (line number, --seed), found in one
pass. A malformed line (wrong number of fields, label not 0/1, non-integer I, bad hex C) stops the
command with its line number and nothing is written, unless --skip-bad-lines, which skips such lines
and reports how many, by reason (also recorded in _provenance.json). An existing partition of that
day is replaced atomically, and only when the whole file was read successfully.
"""

VALIDATE_DESCRIPTION = """\
Reads partitions/date=D/ through the partition schema (the same validation training and scoring use) and
prints its file count, row count, click rate, how it was produced, and its fingerprint (sha256 over the
Parquet files; recorded by trained models as lineage). Exits 2 with one line naming the file, column and
count of bad rows if the partition is not valid.
"""


def _add_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-root", default=None, metavar="PATH",
                        help="data root (default: $LABELDP_DATA_ROOT, else ./.labeldp)")


def _whole(value, name: str, minimum: int) -> int:
    from auditing.errors import LabelDPInputError

    try:
        number = int(value)
    except (TypeError, ValueError):
        raise LabelDPInputError(f"{name} must be a whole number >= {minimum}; got {value!r}") from None
    if str(number) != str(value).strip().lstrip("+") or number < minimum:
        raise LabelDPInputError(f"{name} must be a whole number >= {minimum}; got {value!r}")
    return number


def register(subparsers) -> None:
    p = subparsers.add_parser("data", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="data_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: _no_subcommand(p))

    s = sub.add_parser("synth", help="generate synthetic Criteo-like days (with an oracle)",
                       description=SYNTH_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--start", required=True, metavar="D1", help="first day, YYYY-MM-DD")
    s.add_argument("--end", required=True, metavar="D2", help="last day, YYYY-MM-DD (inclusive; may equal --start)")
    s.add_argument("--rows", default="1000000", metavar="N", help="rows per day (default 1000000)")
    s.add_argument("--seed", default="20240101", metavar="S",
                   help="base seed of the synthetic world (default 20240101)")
    _add_root(s)
    s.set_defaults(func=_synth)

    i = sub.add_parser("ingest-criteo", help="convert a Criteo TSV click log (plain or gzip) into one day",
                       description=INGEST_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    i.add_argument("file", metavar="FILE", help="Criteo TSV file, plain or gzip")
    i.add_argument("--date", required=True, metavar="D", help="the day D the file becomes (YYYY-MM-DD)")
    i.add_argument("--sample-rows", default=None, metavar="N",
                   help="keep a deterministic uniform sample of this many lines (default: keep all)")
    i.add_argument("--seed", default="0", metavar="S", help="seed of the sample (default 0)")
    i.add_argument("--skip-bad-lines", action="store_true",
                   help="skip malformed lines and report them, instead of failing at the first one")
    _add_root(i)
    i.set_defaults(func=_ingest)

    v = sub.add_parser("validate", help="check a day against the schema; print rows, click rate, fingerprint",
                       description=VALIDATE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("--date", required=True, metavar="D", help="the day to check (YYYY-MM-DD)")
    _add_root(v)
    v.set_defaults(func=_validate)


def _no_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _synth(args: argparse.Namespace) -> int:
    from auditing.errors import LabelDPInputError
    from pipelines import synth
    from pipelines.layout import parse_date, resolve_data_root

    start = parse_date(args.start, "--start")
    end = parse_date(args.end, "--end")
    if end < start:
        raise LabelDPInputError(f"--end ({end}) is before --start ({start})")
    rows = _whole(args.rows, "--rows", 1)
    if rows >= synth.MAX_ROWS:
        raise LabelDPInputError(f"--rows must be below {synth.MAX_ROWS}; got {rows}")
    seed = _whole(args.seed, "--seed", 0)
    root = resolve_data_root(args.data_root)
    days = (end - start).days + 1
    print(f"synthesizing {days} day(s) of {rows} rows (seed {seed}) into {root}", flush=True)
    total = time.perf_counter()
    for offset in range(days):
        day = start + dt.timedelta(days=offset)
        began = time.perf_counter()
        directory, info = synth.write_synthetic_day(root, day, rows=rows, seed=seed)
        print(f"  {day}: {info['rows']} rows, click rate {100 * info['click_rate']:.2f}% "
              f"(day seed {info['day_seed']}), {time.perf_counter() - began:.1f} s -> {directory}", flush=True)
    print(f"done: {days} day(s) in {time.perf_counter() - total:.1f} s")
    return 0


def _ingest(args: argparse.Namespace) -> int:
    from pipelines import criteo_ingest
    from pipelines.layout import parse_date, resolve_data_root

    date = parse_date(args.date, "--date")
    sample_rows = None if args.sample_rows is None else _whole(args.sample_rows, "--sample-rows", 1)
    seed = _whole(args.seed, "--seed", 0)
    root = resolve_data_root(args.data_root)
    last = [time.perf_counter()]

    def progress(report) -> None:
        now = time.perf_counter()
        if now - last[0] >= 10.0:
            last[0] = now
            print(f"  ... {report.lines_read} lines ({report.bytes_read / 1e6:.0f} MB) read, "
                  f"{report.skipped_lines} skipped", flush=True)

    print(f"ingesting {args.file} as {date} into {root}"
          + (f" (sample of {sample_rows} rows, seed {seed})" if sample_rows else ""), flush=True)
    report = criteo_ingest.ingest_criteo(args.file, root, date, sample_rows=sample_rows, seed=seed,
                                         skip_bad_lines=args.skip_bad_lines, progress=progress)
    print(f"done: {report.lines_read} lines read ({report.compression}), {report.rows_written} rows written, "
          f"{report.skipped_lines} bad lines skipped, {report.seconds:.1f} s -> {report.partition}")
    if report.skipped_lines:
        reasons = ", ".join(f"{count} {reason}" for reason, count in report.skipped_by_reason.items())
        lines = ", ".join(str(x) for x in report.first_skipped_lines)
        print(f"skipped: {reasons} (first: lines {lines})")
    return 0


def _validate(args: argparse.Namespace) -> int:
    import pyarrow.compute as pc

    from pipelines import schema
    from pipelines.layout import parse_date, partition_dir, resolve_data_root

    date = parse_date(args.date, "--date")
    root = resolve_data_root(args.data_root)
    began = time.perf_counter()
    table = schema.read_partition(root, date)
    fingerprint = schema.partition_fingerprint(root, date)
    directory = partition_dir(root, date)
    files = sorted(directory.glob(schema.PART_GLOB))
    clicks = pc.sum(table.column(schema.LABEL)).as_py() or 0
    provenance = schema.read_provenance(root, date) or {}
    print(f"partition:   {directory}")
    print(f"files:       {len(files)}")
    print(f"rows:        {table.num_rows}")
    print(f"click rate:  {100 * clicks / table.num_rows:.3f}% ({clicks} clicks)")
    if provenance:
        source = provenance.get("source", "?")
        detail = (f"seed {provenance.get('base_seed')} (day seed {provenance.get('day_seed')})"
                  if source == "synthetic" else f"file {provenance.get('file')}")
        print(f"source:      {source}, {detail}")
    print(f"fingerprint: {fingerprint}")
    print(f"valid ({time.perf_counter() - began:.1f} s)")
    return 0
