"""`labeldp-audit data ...`: create and check daily partitions.

Subcommands: `synth` (deterministic Criteo-like days with an oracle), `ingest` (CSV/TSV/Parquet click logs of any
dataset spec into one day), `ingest-criteo` (a Criteo TSV click log into one day), `validate` (read a day through
its dataset spec and print its dataset, row count, click rate and fingerprint).
Heavy libraries are imported inside the handlers, so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time

HELP = "create or check daily partitions: synth, ingest, ingest-criteo, validate"
DESCRIPTION = """\
Daily partitions live under the data root (--data-root, else $LABELDP_DATA_ROOT, else ./.labeldp):
  partitions/date=YYYY-MM-DD/part-*.parquet   the columns of the day's dataset spec (default, Criteo: row_id,
                                              label (int8), I1..I13 (int64, null = missing), C1..C26
                                              (8-hex-digit strings, dictionary-encoded)); _dataset.json
                                              records any other spec (see `data ingest --help`)
  oracle/date=YYYY-MM-DD/p_click.parquet      true click probability per row_id (synthetic days only;
                                              never read by training)
Every write is atomic: a failed command leaves the partition area as it was. A day that already has a partition
is refused (exit 2, nothing written) unless --replace: its verdicts then stay in the warehouse, marked "inputs
replaced since" in `labeldp-audit results` and in their reports, and the day records the partition it replaced
(partitions/date=D/_replaced.json).

Examples:
  labeldp-audit data synth --start 2024-01-01 --end 2024-01-07
  labeldp-audit data ingest clicks_part1.csv.gz clicks_part2.csv.gz --dataset clicks.json --date 2024-01-01
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
reads it). A day that already exists is refused before any day is written, unless --replace: the day's oracle and
partition are then replaced as one pair, so that a run killed anywhere leaves the old day or a journal from which
the next command that writes under the data root moves the whole new day in (until then the oracle is not read).
Prints one line per day with its timing.

Drift on demand: --shift-days picks days of the range on which a sudden shift is applied on top of the slow
drift (a campaign, a holiday); the other days are generated exactly as without the shift options.
  --logit-shift X            logit(p_click) of every row moves by X (-10..10): +0.7 takes ~3% clicks to ~5.5%
                             (the mean click probability x1.8-1.9)
  --segment-shift Cj=V:X     logit(p_click) moves by X on the rows whose column Cj has the value V, where V is
                             8 hex digits as in the data, or rank:K = that day's K-th most popular value of Cj
                             (0 = the most popular, by the day's sampling weights; rank:0 of C9, a 3-value
                             column, covers ~40-70% of the rows). Rows where Cj is missing are never in it.
                             Repeatable; shifts add up. The rank is resolved per day (printed per day and
                             recorded in _provenance.json): to shift the same value every day, give its hex.
  --popularity-shift Cj:rotate=K[,exponent=S]  or  Cj:exponent=S
                             changes the popularity (sampling weights) of Cj's values: exponent=S replaces the
                             Zipf exponent (1.05..1.35 by default; 0 = uniform, up to 5); rotate=K (1..n-1, n =
                             Cj's number of values, e.g. 3 for C9) then rotates the Zipf ordering by K places
                             (the K least popular values become the most popular). P(label | features) keeps
                             its form; only the features move.
                             Repeatable, one per column.
A shifted day is the unshifted day (same seed, same random stream, same intercept) with the shift applied:
rows no shift touches keep their exact click probability, and the oracle holds the shifted one (the truth of
that day). The settings, the segment's resolved value and row count, are recorded under "shift" in
partitions/date=D/_provenance.json; the output stays a deterministic function of seed, date, rows and shift.

Examples:
  labeldp-audit data synth --start 2024-01-01 --end 2024-01-02 --shift-days 2024-01-02 --logit-shift 0.7
  labeldp-audit data synth --start 2024-01-01 --end 2024-01-07 --shift-days 2024-01-05..2024-01-07 \\
      --segment-shift C9=rank:0:+0.5 --popularity-shift C3:rotate=100
"""

INGEST_DESCRIPTION = """\
Converts a Criteo click-log TSV file (label, I1..I13 integers, C1..C26 8-hex-digit categoricals; tab
separated, empty field = missing, no header; plain or gzip, recognised by content) into
partitions/date=D/. Streams the file in 32 MiB blocks, so multi-GB files need little memory.
row_id is the line number (from 1). --sample-rows N keeps a deterministic uniform sample of N lines
(the paper uses 1M per day): the N lines with the smallest hash of (line number, --seed), found in one
pass. A malformed line (wrong number of fields, label not 0/1, non-integer I, bad hex C) stops the
command with its line number and nothing is written, unless --skip-bad-lines, which skips such lines
and reports how many, by reason (also recorded in _provenance.json). A day whose rows all have one label
is refused (nothing to audit), and so is a --date after tomorrow (UTC) unless --allow-future. An existing
partition of that day is refused before the file is read, unless --replace: then it is replaced atomically, and
only when the whole file was read successfully.
"""

TABLE_DESCRIPTION = """\
Reads click-log files (CSV or TSV, plain or gzip; or Parquet) into partitions/date=D/, with the columns of a
dataset spec (docs/datasets.md), e.g. clicks.json:
  {"name": "clicks", "label": "clicked", "classes": 2, "row_key": "impression_id",
   "numeric": ["f1", "f2"], "categorical": ["country", "slot"], "carry": ["campaign"]}
row_key: a unique integer per row of the day; label: whole numbers 0..classes-1 (1.0 is 1); numeric: numbers
(numeric_type float64 by default, or int64); categorical: text or integers (kept as text); carry: kept as
text, never fed to a model. Example:
  labeldp-audit data ingest part1.csv part2.csv.gz --dataset clicks.json --date 2024-01-01
Format by name: .csv (comma), .tsv (tab), either + .gz (gzip is also recognised by its bytes), .parquet;
--delimiter C for other names. With a header row (default) columns are found by name; with --no-header they
are the spec's columns in order: row_key, label, numeric, categorical, carry. Empty field = missing. A column
the spec does not name is refused (--drop-extra-columns drops it), except a pandas index stored in a Parquet
file (__index_level_0__, named in its pandas metadata), which is ignored; a spec column missing from a file is
refused. Bad lines (wrong field count, empty line, a row key that is not an integer, a label outside
0..classes-1, a non-number in a numeric column) stop the command with the first one's file and line, unless
--max-bad-lines N allows up to N (over all files): they are skipped, counted by reason, and recorded in
_provenance.json. Row keys must be unique over all files, and the labels must take two values at least
(nothing to audit otherwise). A --date after tomorrow (UTC) is refused as a mistyped date unless
--allow-future. An empty (0-byte) file is refused as empty. An existing partition of the day is refused before
any file is read, unless --replace. Nothing is written unless everything was read.
"""

VALIDATE_DESCRIPTION = """\
Reads partitions/date=D/ through its dataset spec (the one recorded in _dataset.json, else Criteo; the same
validation training and scoring use) and prints its dataset, file count, row count, click rate, how it was
produced, and its fingerprint (sha256 over the Parquet files; recorded by trained models as lineage). Exits 2
with one line naming the file, column and count of bad rows if the partition is not valid, if every row has
the same label (nothing to audit), or if --dataset names a spec other than the one the partition was written
with.
"""


def _add_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-root", default=None, metavar="PATH",
                        help="data root (default: $LABELDP_DATA_ROOT, else ./.labeldp)")


def _add_replace(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replace", action="store_true",
                        help="replace the day's existing partition (default: refused, exit 2, nothing written); its "
                             "verdicts stay in the warehouse, marked 'inputs replaced since'")


def _add_allow_future(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-future", action="store_true",
                        help="accept a --date after tomorrow (UTC; default: refused, exit 2, as a mistyped date)")


def _whole(value, name: str, minimum: int) -> int:
    from labeldp.errors import LabelDPInputError

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
    g = s.add_argument_group("drift on demand (applied on --shift-days only; default: no shift)")
    g.add_argument("--shift-days", default=None, metavar="DAYS",
                   help="the days to shift, within --start..--end: comma-separated days and inclusive ranges, "
                        "e.g. 2024-01-03 or 2024-01-03,2024-01-05..2024-01-07")
    g.add_argument("--logit-shift", default=None, metavar="X",
                   help="add X (-10..10) to logit(p_click) of every row on the shift days, e.g. 0.7")
    g.add_argument("--segment-shift", action="append", default=[], metavar="Cj=V:X",
                   help="add X to logit(p_click) of the rows whose Cj is V (8 hex digits, or rank:K = the day's "
                        "K-th most popular value, 0 = most popular), e.g. C9=rank:0:+0.5; repeatable")
    g.add_argument("--popularity-shift", action="append", default=[], metavar="Cj:SPEC",
                   help="change the popularity of Cj's values: SPEC = rotate=K (Zipf ordering rotated by K "
                        "places), exponent=S (Zipf exponent S, 0..5), or both comma-separated, e.g. "
                        "C3:rotate=100; repeatable, one per column")
    _add_replace(s)
    _add_root(s)
    s.set_defaults(func=_synth, writes_data_root=True)

    t = sub.add_parser("ingest", help="read CSV/TSV/Parquet click logs of a dataset spec into one day",
                       description=TABLE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("files", nargs="+", metavar="FILE", help="input files, read in this order into one day")
    t.add_argument("--dataset", required=True, metavar="SPEC", help="the dataset spec (JSON file)")
    t.add_argument("--date", required=True, metavar="D", help="the day D the files become (YYYY-MM-DD)")
    t.add_argument("--no-header", dest="header", action="store_false",
                   help="CSV/TSV files have no header row: their columns are the spec's, in order")
    t.add_argument("--delimiter", default=None, metavar="C",
                   help="field separator, one character (\\t or tab for a tab; default: from .csv/.tsv)")
    t.add_argument("--max-bad-lines", default="0", metavar="N",
                   help="skip and count up to N bad lines over all files (default 0: stop at the first)")
    t.add_argument("--drop-extra-columns", action="store_true",
                   help="drop the files' columns the spec does not name, instead of refusing them")
    _add_replace(t)
    _add_allow_future(t)
    _add_root(t)
    t.set_defaults(func=_ingest_tables, writes_data_root=True)

    i = sub.add_parser("ingest-criteo", help="convert a Criteo TSV click log (plain or gzip) into one day",
                       description=INGEST_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    i.add_argument("file", metavar="FILE", help="Criteo TSV file, plain or gzip")
    i.add_argument("--date", required=True, metavar="D", help="the day D the file becomes (YYYY-MM-DD)")
    i.add_argument("--sample-rows", default=None, metavar="N",
                   help="keep a deterministic uniform sample of this many lines (default: keep all)")
    i.add_argument("--seed", default="0", metavar="S", help="seed of the sample (default 0)")
    i.add_argument("--skip-bad-lines", action="store_true",
                   help="skip malformed lines and report them, instead of failing at the first one")
    _add_replace(i)
    _add_allow_future(i)
    _add_root(i)
    i.set_defaults(func=_ingest, writes_data_root=True)

    v = sub.add_parser("validate", help="check a day against the schema; print rows, click rate, fingerprint",
                       description=VALIDATE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("--date", required=True, metavar="D", help="the day to check (YYYY-MM-DD)")
    v.add_argument("--dataset", default=None, metavar="SPEC",
                   help="the spec the day must have been written with (default: the one it records)")
    _add_root(v)
    v.set_defaults(func=_validate)


def _no_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _number(text, flag: str, low: float, high: float) -> float:
    import math

    from labeldp.errors import LabelDPInputError

    try:
        value = float(str(text).strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not low <= value <= high:
        raise LabelDPInputError(f"{flag} must be a finite number in {low:g}..{high:g}; got {text!r}")
    return value


def _shift_days(text: str, start: dt.date, end: dt.date) -> set[dt.date]:
    """The days of ``--shift-days`` (comma-separated days and inclusive D1..D2 ranges), all within start..end."""
    from labeldp.errors import LabelDPInputError
    from labeldp.names import parse_date

    days: set[dt.date] = set()
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            raise LabelDPInputError(f"--shift-days has an empty item (expected days YYYY-MM-DD or ranges "
                                    f"D1..D2, comma-separated); got {text!r}")
        first, dots, last = item.partition("..")
        low = parse_date(first, "--shift-days")
        high = parse_date(last, "--shift-days") if dots else low
        if high < low:
            raise LabelDPInputError(f"--shift-days range {item!r} ends before it starts")
        if low < start or high > end:
            raise LabelDPInputError(f"--shift-days {item!r} is outside --start..--end ({start}..{end})")
        days.update(low + dt.timedelta(days=k) for k in range((high - low).days + 1))
    return days


def _segment_shift(text: str, seed: int):
    """``Cj=V:X`` (V = 8 hex digits or rank:K) as a synth.SegmentShift, checked against the world of ``seed``."""
    from labeldp.errors import LabelDPInputError
    from pipelines.data import synth

    flag = "--segment-shift"
    column, equals, rest = str(text).partition("=")
    selector, colon, amount = rest.rpartition(":")
    if not equals or not colon or not selector:
        raise LabelDPInputError(f"{flag} must look like Cj=V:X (V = 8 hex digits or rank:K, X = the logit "
                                f"shift), e.g. C9=rank:0:+0.5; got {text!r}")
    logit = _number(amount, f"{flag} {text!r}: the shift X", -synth.MAX_LOGIT_SHIFT, synth.MAX_LOGIT_SHIFT)
    try:
        if selector.startswith("rank:"):
            rank = _whole(selector[len("rank:"):], f"{flag} {text!r}: the rank K", 0)
            segment = synth.SegmentShift(column=column.strip(), rank=rank, logit=logit)
        else:
            segment = synth.SegmentShift(column=column.strip(), value=selector.strip(), logit=logit)
        synth.check_shift(synth.DayShift(segments=(segment,)), seed)
    except LabelDPInputError as exc:
        if str(exc).startswith(flag):
            raise
        raise LabelDPInputError(f"{flag} {text!r}: {exc}") from None
    return segment


def _popularity_shift(text: str):
    """``Cj:rotate=K[,exponent=S]`` / ``Cj:exponent=S`` as a synth.PopularityShift."""
    from labeldp.errors import LabelDPInputError
    from pipelines.data import synth

    flag = "--popularity-shift"
    column, colon, spec = str(text).partition(":")
    settings: dict[str, str] = {}
    for part in spec.split(",") if colon else ():
        key, equals, value = part.partition("=")
        key = key.strip()
        if not equals or key not in ("rotate", "exponent") or key in settings:
            settings = {}
            break
        settings[key] = value
    if not settings:
        raise LabelDPInputError(f"{flag} must look like Cj:rotate=K, Cj:exponent=S or Cj:rotate=K,exponent=S, "
                                f"e.g. C3:rotate=100; got {text!r}")
    try:
        rotate = _whole(settings["rotate"], f"{flag} {text!r}: the rotation K", 0) if "rotate" in settings else 0
        exponent = (_number(settings["exponent"], f"{flag} {text!r}: the exponent S", 0.0, synth.MAX_ZIPF_EXPONENT)
                    if "exponent" in settings else None)
        return synth.PopularityShift(column=column.strip(), rotate=rotate, exponent=exponent)
    except LabelDPInputError as exc:
        if str(exc).startswith(flag):
            raise
        raise LabelDPInputError(f"{flag} {text!r}: {exc}") from None


def _day_shift(args: argparse.Namespace, start: dt.date, end: dt.date, seed: int):
    """(the synth.DayShift of the shift options, the days it applies to); (None, empty) without options."""
    from labeldp.errors import LabelDPInputError
    from pipelines.data import synth

    given = [flag for flag, value in (("--logit-shift", args.logit_shift), ("--segment-shift", args.segment_shift),
                                      ("--popularity-shift", args.popularity_shift)) if value]
    if args.shift_days is None:
        if given:
            raise LabelDPInputError(f"{given[0]} needs --shift-days (the days of --start..--end to shift)")
        return None, set()
    if not given:
        raise LabelDPInputError("--shift-days needs a shift: --logit-shift, --segment-shift or --popularity-shift")
    days = _shift_days(args.shift_days, start, end)
    logit = (0.0 if args.logit_shift is None
             else _number(args.logit_shift, "--logit-shift", -synth.MAX_LOGIT_SHIFT, synth.MAX_LOGIT_SHIFT))
    segments = tuple(_segment_shift(text, seed) for text in args.segment_shift)
    popularity = tuple(_popularity_shift(text) for text in args.popularity_shift)
    columns = [item.column for item in popularity]
    for column in columns:
        if columns.count(column) > 1:
            raise LabelDPInputError(f"--popularity-shift: at most one per column; {column} is given "
                                    f"{columns.count(column)} times")
    return synth.DayShift(logit=logit, segments=segments, popularity=popularity), days


def _describe_shift(record: dict) -> str:
    """One line describing a provenance "shift" record (what the day got)."""
    parts = [f"logit {record['logit']:+g}"] if record["logit"] else []
    parts += [f"{s['column']}={s['value']} (rank {s['day_rank']}, {s['rows']} rows) {s['logit']:+g}"
              for s in record["segments"]]
    parts += [f"{p['column']} popularity" + (f" rotate {p['rotate']}" if p["rotate"] else "")
              + (f" exponent {p['exponent']:g}" if p["exponent"] is not None else "") for p in record["popularity"]]
    return ", ".join(parts)


def _synth(args: argparse.Namespace) -> int:
    from labeldp.errors import LabelDPInputError
    from labeldp.names import parse_date, resolve_data_root
    from pipelines.data import schema, synth

    start = parse_date(args.start, "--start")
    end = parse_date(args.end, "--end")
    if end < start:
        raise LabelDPInputError(f"--end ({end}) is before --start ({start})")
    rows = _whole(args.rows, "--rows", 1)
    if rows >= synth.MAX_ROWS:
        raise LabelDPInputError(f"--rows must be below {synth.MAX_ROWS}; got {rows}")
    seed = _whole(args.seed, "--seed", 0)
    shift, shift_days = _day_shift(args, start, end, seed)
    root = resolve_data_root(args.data_root)
    days = (end - start).days + 1
    for offset in range(days):  # every day of the range before the first is written
        schema.refuse_existing_partition(root, start + dt.timedelta(days=offset), args.replace)
    before = {start + dt.timedelta(days=k): len(schema.replaced_partitions(root, start + dt.timedelta(days=k)))
              for k in range(days)}
    print(f"synthesizing {days} day(s) of {rows} rows (seed {seed}) into {root}"
          + (f", {len(shift_days)} of them shifted" if shift_days else ""), flush=True)
    total = time.perf_counter()
    for offset in range(days):
        day = start + dt.timedelta(days=offset)
        began = time.perf_counter()
        directory, info = synth.write_synthetic_day(root, day, rows=rows, seed=seed,
                                                    shift=shift if day in shift_days else None, replace=args.replace)
        shifted = f"; shifted: {_describe_shift(info['shift'])}" if "shift" in info else ""
        print(f"  {day}: {info['rows']} rows, click rate {100 * info['click_rate']:.2f}% "
              f"(day seed {info['day_seed']}), {time.perf_counter() - began:.1f} s -> {directory}{shifted}",
              flush=True)
        _replaced(root, day, before[day])
    print(f"done: {days} day(s) in {time.perf_counter() - total:.1f} s")
    return 0


def _replaced(root, day: dt.date, before: int) -> None:
    """After a write: when it replaced a partition of other bytes (the day's replacements grew from ``before``),
    says so; and marks the reports of the verdicts judged on a replaced partition
    (`auditing.sinks.report.pages.mark_replaced_reports`, which a nightly of the day also does)."""
    from auditing.sinks.report import text
    from flows.steps import mark_replaced_reports
    from pipelines.data import schema

    replaced = schema.replaced_partitions(root, day)
    marked = mark_replaced_reports(root, day)
    if len(replaced) > before:
        print(text.partition_replaced_line(day, replaced[-1], marked), flush=True)


def _ingest(args: argparse.Namespace) -> int:
    from labeldp.names import parse_date, refuse_future, resolve_data_root
    from pipelines.data import criteo_ingest, schema

    date = refuse_future(parse_date(args.date, "--date"), "--date", args.allow_future)
    sample_rows = None if args.sample_rows is None else _whole(args.sample_rows, "--sample-rows", 1)
    seed = _whole(args.seed, "--seed", 0)
    root = resolve_data_root(args.data_root)
    schema.refuse_existing_partition(root, date, args.replace)
    before = len(schema.replaced_partitions(root, date))
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
                                         skip_bad_lines=args.skip_bad_lines, progress=progress, replace=args.replace)
    print(f"done: {report.lines_read} lines read ({report.compression}), {report.rows_written} rows written, "
          f"{report.skipped_lines} bad lines skipped, {report.seconds:.1f} s -> {report.partition}")
    if report.skipped_lines:
        reasons = ", ".join(f"{count} {reason}" for reason, count in report.skipped_by_reason.items())
        lines = ", ".join(str(x) for x in report.first_skipped_lines)
        print(f"skipped: {reasons} (first: lines {lines})")
    _replaced(root, date, before)
    return 0


def _ingest_tables(args: argparse.Namespace) -> int:
    from labeldp.errors import LabelDPInputError
    from labeldp.names import parse_date, refuse_future, resolve_data_root
    from pipelines.data import schema
    from pipelines.data.dataset_spec import load_spec
    from pipelines.data.tabular_ingest import ingest_table_files

    spec = load_spec(args.dataset)
    date = refuse_future(parse_date(args.date, "--date"), "--date", args.allow_future)
    schema.refuse_existing_partition(resolve_data_root(args.data_root), date, args.replace)
    before = len(schema.replaced_partitions(resolve_data_root(args.data_root), date))
    cap = _whole(args.max_bad_lines, "--max-bad-lines", 0)
    delimiter = {"\\t": "\t", "tab": "\t"}.get(args.delimiter, args.delimiter)
    if delimiter is not None and len(delimiter) != 1:
        raise LabelDPInputError(f"--delimiter must be one character (or \\t / tab); got {args.delimiter!r}")
    root = resolve_data_root(args.data_root)
    last = [time.perf_counter()]

    def progress(counts: dict) -> None:
        now = time.perf_counter()
        if now - last[0] >= 10.0:
            last[0] = now
            print(f"  ... {counts['file']}: {counts['bytes_read'] / 1e6:.0f} of {counts['file_bytes'] / 1e6:.0f} MB; "
                  f"{counts['rows_read']} rows read, {counts['bad_lines']} bad lines skipped", flush=True)

    print(f"ingesting {len(args.files)} file(s) as {date} of dataset {spec.name!r} into {root}", flush=True)
    report = ingest_table_files(root, date, args.files, spec, header=args.header, delimiter=delimiter,
                                max_bad_lines=cap, drop_extra_columns=args.drop_extra_columns, progress=progress,
                                replace=args.replace)
    reasons = ", ".join(f"{count} {reason}" for reason, count in report["bad_lines_by_reason"].items())
    dropped = f", {report['extra_columns_dropped']} extra column(s) dropped" if report["extra_columns_dropped"] else ""
    print(f"done: {report['rows_written']} rows written, {report['bad_lines_skipped']} bad lines skipped"
          + (f" ({reasons})" if reasons else "") + f"{dropped}, {report['seconds']:.1f} s -> {report['partition']}")
    _replaced(root, date, before)
    return 0


def _validate(args: argparse.Namespace) -> int:
    import pyarrow.compute as pc

    from labeldp.errors import LabelDPInputError
    from labeldp.names import parse_date, resolve_data_root
    from pipelines.data import schema
    from pipelines.data.dataset_spec import dataset_of, load_spec
    from pipelines.data.layout import partition_listing

    date = parse_date(args.date, "--date")
    root = resolve_data_root(args.data_root)
    began = time.perf_counter()
    listing = partition_listing(root, date)
    directory = listing.directory
    spec = dataset_of(root, date)
    if args.dataset is not None and listing.exists:
        given = load_spec(args.dataset)
        if given.fingerprint() != spec.fingerprint():
            raise LabelDPInputError(f"partition {directory} was written for dataset {spec.name!r} "
                                    f"({spec.fingerprint()[:19]}...), not for {given.name!r} ({args.dataset}, "
                                    f"{given.fingerprint()[:19]}...); validate it without --dataset or with its spec")
    table = schema.read_partition(root, date, dataset=spec)
    fingerprint = schema.partition_fingerprint(root, date)
    files = sorted(directory.glob(schema.PART_GLOB))
    labels = table.column(spec.label)
    schema.check_labels_vary(labels, directory, spec.label)  # a day of one label value has nothing to audit
    provenance = schema.read_provenance(root, date) or {}
    print(f"partition:   {directory}")
    print(f"dataset:     {spec.name} ({spec.fingerprint()})")
    print(f"files:       {len(files)}")
    print(f"rows:        {table.num_rows}")
    if spec.classes == 2:
        clicks = pc.sum(labels).as_py() or 0
        print(f"click rate:  {100 * clicks / table.num_rows:.3f}% ({clicks} clicks)")
    else:
        counts = {item["values"]: item["counts"] for item in pc.value_counts(labels).to_pylist()}
        print("labels:      " + ", ".join(f"{k}: {counts.get(k, 0)}" for k in range(spec.classes)))
    if provenance:
        source = provenance.get("source", "?")
        detail = (f"seed {provenance.get('base_seed')} (day seed {provenance.get('day_seed')})"
                  if source == "synthetic" else
                  f"{len(provenance.get('files', []))} file(s), {provenance.get('bad_lines_skipped')} bad lines "
                  f"skipped" if source == "tabular" else f"file {provenance.get('file')}")
        print(f"source:      {source}, {detail}")
    print(f"fingerprint: {fingerprint}")
    print(f"valid ({time.perf_counter() - began:.1f} s)")
    return 0
