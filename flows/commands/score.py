"""`labeldp-audit score`: the Beam scoring job for one day."""

from __future__ import annotations

import argparse
import json

from flows.commands.audit_options import add_audit_arguments, bound_config_from, game_config_from

HELP = "score day D's partition with a model and its reference on Beam, and audit the sweep counts"
DESCRIPTION = """\
Runs the observational label-inference game (paper Alg. 2) at scale with Apache Beam: reads
partitions/date=D as Arrow batches, runs the target model (models/<MODEL>/date=D) and the reference model M'
through RunInference, plays --repetitions repetitions of the game per row (randomness keyed by seed, the day D,
repetition and row_id: fresh coins each night, docs/soundness.md section 10), and reduces them to the exact
per-repetition sweep counts of the in-process audit
(histograms of |score| in order-preserving bins, then only the rows of the bins a grid point cuts). The counts
are audited exactly as `labeldp-audit audit-scores` would audit the same rows.

Reference (M', a checkpoint that never saw day D's labels): by default MODEL's own checkpoint of D-1
(models/<MODEL>/date=D-1) if it exists, else the model named `reference` of D-1 (what `labeldp-audit train`
registers). --reference NAME takes NAME's checkpoint of D-1 (or of --reference-date).

Runners: --runner fnapi (default: Beam's FnApiRunner in this process), dask (Beam's Dask runner; give the
scheduler after --, e.g. -- --dask_client_address=127.0.0.1:8786), or any Beam runner name or class path
(DataflowRunner, FlinkRunner, ...; see infra/README.md). Every argument after -- is passed to Beam unchanged.

Rows: --audit-rows training (default) plays the game only on the rows whose labels entered training (train
split, plus validation when its labels chose the best iteration), as MODEL's registry metadata records them;
a model registered before that record existed is refused (re-train it, or pass --audit-rows all).

Writes, atomically, <data-root>/sweeps/<MODEL>/date=D/<scoring key>/: counts.npz (the game's claim-free
output: the sweep counts of every repetition and of both halves of repetition 0, the histograms a verdict
reads) and result.json (the audit at these bound settings, rows read / without row_id / with bad
probabilities, lineage: model and reference fingerprints, partition fingerprint, runner, timings). The key
covers what the counts depend on (the game settings, the model, reference and partition files, the audited
rows) and no bound setting: a re-run that changes only --method, --strategy, --confidence, --delta or --kappa
re-judges the stored counts in a moment instead of scoring again. --write-scored also writes
<data-root>/scored/<MODEL>/date=D/<key>/part-*.parquet: row_id and, per repetition r, score_r, correct_r,
the secret bit b_r (1: the released label is the counterfactual one) and released_label_r.
A missing partition or model, or a model whose features the partition lacks, fails before any work and
writes nothing.

Examples:
  labeldp-audit score --date 2024-01-02 --model lp-1st-eps4
  labeldp-audit score --date 2024-01-02 --model rr-1 --reference reference --repetitions 20 --strategy split
  labeldp-audit score --date 2024-01-02 --model rr-1 --runner dask -- --dask_client_address=127.0.0.1:8786

Exit status: 0 on success, 2 on bad input (a message naming the argument, file or column).
"""

RUNNER_ALIASES = {
    "fnapi": "apache_beam.runners.portability.fn_api_runner.FnApiRunner",
    "dask": "apache_beam.runners.dask.dask_runner.DaskRunner",
}


def register(subparsers) -> None:
    p = subparsers.add_parser("score", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--date", required=True, help="the partition day D (YYYY-MM-DD)")
    p.add_argument("--model", required=True, help="the registered model under audit (models/<MODEL>/date=D)")
    p.add_argument("--reference", default=None,
                   help="reference model name, taken at D-1 (default: MODEL's D-1 checkpoint if present, else "
                        "'reference' of D-1)")
    p.add_argument("--reference-date", default=None, help="date of the reference checkpoint (default: D-1)")
    p.add_argument("--data-root", default=None,
                   help="data root (default: $LABELDP_DATA_ROOT, else ./.labeldp)")
    add_audit_arguments(p, audit_rows=True)
    p.add_argument("--runner", default="fnapi",
                   help="Beam runner: fnapi (default), dask, or a Beam runner name / class path")
    p.add_argument("--batch-size", type=int, default=262_144,
                   help="rows per Arrow batch, the unit of inference and of the game (default 262144)")
    p.add_argument("--catboost-threads", type=int, default=None,
                   help="CatBoost threads per predict call (default: all cores on an in-process runner, else 1; "
                        "set cores / worker processes on a cluster)")
    p.add_argument("--plan", choices=["auto", "side-input", "two-stage"], default="auto",
                   help="how pass 2 gets the pass-1 histograms: side-input (one pipeline), two-stage (two "
                        "pipelines; scored batches kept in a work directory), auto (two-stage on Dask and on "
                        "the local runners, which would hold every scored batch in memory; side-input elsewhere; "
                        "see infra/README.md)")
    p.add_argument("--bin-bits", type=int, default=8,
                   help="|score| bins per power of two, as bits (default 8: 256); more bits, fewer boundary rows "
                        "but larger histograms")
    p.add_argument("--slice", action="append", default=[], metavar="SPEC", dest="slices",
                   help="also bound each slice of the audited rows (repeatable): column:NAME[:top=K], column:NAME=A,B, "
                        "group:NAME (a feature or carry column of the dataset), prior-deciles or shown-label; "
                        "slices have their own status and budget (docs/slices.md)")
    p.add_argument("--slice-budget", type=float, default=None,
                   help="the slices' own false-alarm rate, split over all declared slices (default: 1 - confidence)")
    p.add_argument("--write-scored", action="store_true",
                   help="also write row_id, score_r, correct_r, b_r and released_label_r per repetition as Parquet "
                        "under scored/")
    p.add_argument("--beam-options-file", default=None,
                   help="a file of Beam options, one a line ('#' comments, ${VAR} from the environment), e.g. "
                        "infra/beam/dataflow.options; options after -- come after it")
    p.add_argument("--json", action="store_true", help="print result.json instead of text")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("beam_args", nargs="*", metavar="-- BEAM_OPTION",
                   help="Beam pipeline options, after --, passed through unchanged")
    p.set_defaults(func=run, writes_data_root=True)


def read_options_file(path: str) -> list[str]:
    """Beam options from a file: one per line, blank lines and '#' comments skipped, ${VAR} expanded."""
    import os
    import re

    from labeldp.errors import LabelDPInputError

    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as exc:
        raise LabelDPInputError(f"--beam-options-file {path}: cannot read ({exc.strerror})") from None
    options = []
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        expanded = os.path.expandvars(line)
        unset = re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", expanded)
        if unset:
            raise LabelDPInputError(f"--beam-options-file {path}, line {number}: environment variable(s) {unset} "
                                    f"are not set")
        if not expanded.startswith("--"):
            raise LabelDPInputError(f"--beam-options-file {path}, line {number}: expected an option starting "
                                    f"with --; got {line!r}")
        options.append(expanded)
    return options


def run(args) -> int:
    from auditing.game.sweep_reduce import BinSpec
    from auditing.result import AuditResult
    from auditing.sinks.report.text import format_audit_result
    from auditing.verdict.judge import demonstrated_risk
    from labeldp.codec import decode, encode
    from labeldp.names import parse_date, resolve_data_root
    from labeldp.progress import live, no_progress, stderr_progress
    from pipelines.scoring.beam_request import (
        ScoringRequest,
        json_safe,
        prepare_scoring,
        reused_record,
        stored_scoring,
    )

    date = parse_date(args.date, "--date")
    reference_date = parse_date(args.reference_date, "--reference-date") if args.reference_date else None
    request = ScoringRequest(
        data_root=str(resolve_data_root(args.data_root)), date=date, model=args.model, game=game_config_from(args),
        bound=bound_config_from(args),
        reference=args.reference, reference_date=reference_date, batch_size=args.batch_size,
        thread_count=args.catboost_threads, bins=BinSpec(mantissa_bits=args.bin_bits), plan_mode=args.plan,
        write_scored=args.write_scored, night=date, slices=tuple(args.slices), slice_budget=args.slice_budget,
    )
    runner = RUNNER_ALIASES.get(args.runner, args.runner)
    file_args = read_options_file(args.beam_options_file) if args.beam_options_file else []
    beam_args = [f"--runner={runner}", *file_args, *args.beam_args]
    progress = no_progress if args.quiet else stderr_progress("score")
    prepared = prepare_scoring(request, beam_args, progress)
    stored = None if args.write_scored else stored_scoring(prepared)
    if stored is not None:
        progress(f"reusing the game stored at {prepared.output_dir} (same game settings, model, reference, "
                 f"partition and rows); judged at these bound settings")
        record = {**encode(reused_record(stored, request, prepared.output_dir)), "reused": True}
    else:
        from pipelines.scoring.beam_scoring import score_day

        record = {**score_day(request, beam_args, progress, worker_progress=live(),
                              prepared=prepared).record, "reused": False}
    if args.json:
        print(json.dumps(json_safe(record) | {"output_dir": str(prepared.output_dir)}))
    else:
        rows = record["diagnostics"].get("rows") or {}
        result = decode(AuditResult, record["result"], "result")
        print(format_audit_result(result, demonstrated_risk(result)))
        if rows:
            print(f"rows: {rows['rows_read']} read, {rows['rows_scored']} audited, {rows['rows_without_row_id']} "
                  f"without row_id, {rows['rows_bad_target_probabilities']} / "
                  f"{rows['rows_bad_reference_probabilities']} with bad target / reference probabilities")
        print(f"{'reused' if record['reused'] else 'written'}: {prepared.output_dir}")
    return 0
