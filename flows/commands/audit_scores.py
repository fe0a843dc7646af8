"""`labeldp-audit audit-scores`: game + bounds on a Parquet table of labels and model probabilities."""

from __future__ import annotations

import argparse
import json

from flows.commands.audit_options import add_audit_arguments, bound_config_from, game_config_from

HELP = "audit a Parquet table of training labels, target and reference probabilities"
DESCRIPTION = """\
Plays the observational label-inference game (paper Alg. 2) on a table with one row per training example:
the training label, the target model's probabilities M(x) and the reference model's M'(x). Binary models:
one float column each with the probability of class 1. Multi-class: list<float> columns, one entry per class.

Counterfactual labels are resampled --repetitions times (keyed by --seed, the row id and --night if given: rows
of one day audited night after night with the same ids need --night for fresh coins). Repetition 0 is
pre-registered: its bound, with the number of guesses chosen by --strategy, is THE valid epsilon lower bound.
The mean/std/median over repetitions are the paper's statistic (optimistic, for comparison only).

With --claimed-epsilon E the verdict is added (VIOLATION when the valid bound exceeds E, INCONCLUSIVE when
no attacker could have shown E at this size, else PASS: "no evidence of a violation") with its robustness
figures: breaking_kappa (the largest kappa at which the same counts still exceed E) and the detection floors.

--kappa K states how far the reference may be off: the bound holds if no row's reference probability of its
label is off from the truth by more than a factor e^K. A reference with probabilities of exactly 0 or 1 is
refused (no kappa covers a reference that is certain).

--check-column C (boolean) marks check rows: rows whose labels trained neither the model nor the reference.
They are not audited; the capacity check plays the game on them and says whether a VIOLATION exceeds what the
reference's misfit can explain (epsilon_check, docs/soundness.md section 8). Without check rows the output says
the reference is unchecked.

--group-column G names rows whose labels move together (a user, a duplicated event): rows sharing a value of G
with another row are left out of the game and of the check (docs/soundness.md section 9); the output records
how many, and how often their labels agree against independent labels at the reference's probabilities. If
nothing is left, the verdict is INCONCLUSIVE with that reason.

--slice SPEC (repeatable) also bounds each slice of the audited rows on its own, so that a leak confined to a
few rows is not diluted in the global bound (docs/slices.md). SPEC is column:NAME (its 10 most frequent
values), column:NAME:top=K, column:NAME=A,B (the values listed), group:NAME (every value), prior-deciles (of
the reference's probability) or shown-label (the label the game shows). Never the training label: slicing by it
manufactures evidence. Slices have their own status and budget (--slice-budget, default 1 - confidence, split
over all declared slices); the global verdict is unchanged.

Examples:
  labeldp-audit audit-scores scored.parquet --repetitions 100 --json
  labeldp-audit audit-scores scored.parquet --claimed-epsilon 1 --kappa 0.7
  labeldp-audit audit-scores scored.parquet --claimed-epsilon 1 --check-column is_check --group-column user_id
  labeldp-audit audit-scores scored.parquet --claimed-epsilon 1 --slice column:C9:top=5 --slice shown-label
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("audit-scores", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="Parquet file with labels and probabilities")
    p.add_argument("--label-col", default="label", help="training label column (default: label)")
    p.add_argument("--target-col", default="p_target", help="target model probability column (default: p_target)")
    p.add_argument("--reference-col", default="p_reference", help="reference model probability column (default: p_reference)")
    p.add_argument("--row-id-col", default="row_id",
                   help="unique row identity keying the randomness (default: row_id; row position if the column is absent)")
    p.add_argument("--check-column", default=None,
                   help="boolean column: true for check rows (labels that trained nothing), used by the capacity "
                        "check instead of the game")
    p.add_argument("--group-column", default=None,
                   help="column whose equal values tie rows' labels together; rows sharing a value are left out")
    p.add_argument("--slice", action="append", default=[], metavar="SPEC", dest="slices",
                   help="bound each slice of the audited rows too (repeatable): column:NAME[:top=K], column:NAME=A,B, "
                        "group:NAME, prior-deciles or shown-label (docs/slices.md)")
    p.add_argument("--slice-budget", type=float, default=None,
                   help="the slices' own false-alarm rate, split over all declared slices (default: 1 - confidence)")
    add_audit_arguments(p)
    p.add_argument("--night", default=None, metavar="YYYY-MM-DD",
                   help="the day the rows are of, keying the coins with --seed: each night then draws fresh coins for "
                        "the same row ids, which the evidence across a model family's nights needs "
                        "(docs/soundness.md section 10); default: no night, coins keyed by --seed and the row id")
    p.add_argument("--claimed-epsilon", type=float, default=None,
                   help="the claimed epsilon to judge: adds status, breaking_kappa and the detection floors")
    p.add_argument("--json", action="store_true", help="print a JSON object instead of text")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)


def read_table(path: str, label_col: str, target_col: str, reference_col: str, row_id_col: str,
               extra: tuple[str, ...] = ()):
    """Reads the needed columns (and ``extra`` ones, returned as Arrow columns); errors name the file and the
    column."""
    import os

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from labeldp.errors import LabelDPInputError
    from pipelines.data.layout import refuse_empty_file

    if not os.path.isfile(path):
        raise LabelDPInputError(f"{path}: no such file")
    refuse_empty_file(path)
    # One open of the file: its footer gives the schema, then only the needed columns are read (ParquetFile, not
    # read_table, which goes through pyarrow.dataset and imports pandas).
    try:
        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
    except (pa.ArrowInvalid, OSError) as exc:
        raise LabelDPInputError(f"{path}: not a readable Parquet file ({exc})") from None
    missing = [c for c in (label_col, target_col, reference_col, *extra) if c not in names]
    if missing:
        raise LabelDPInputError(f"{path}: missing column(s) {missing}; present: {names}")
    columns = [label_col, target_col, reference_col] + ([row_id_col] if row_id_col in names else [])
    columns += [c for c in extra if c not in columns]
    try:
        with parquet:
            table = parquet.read(columns=columns)
    except (pa.ArrowInvalid, OSError) as exc:
        raise LabelDPInputError(f"{path}: cannot read ({exc})") from None

    def probabilities(name):
        col = table.column(name)
        if pa.types.is_list(col.type) or pa.types.is_large_list(col.type) or pa.types.is_fixed_size_list(col.type):
            lengths = col.combine_chunks().value_lengths().to_numpy(zero_copy_only=False)
            if lengths.size and (lengths != lengths[0]).any():
                bad = int((lengths != lengths[0]).sum())
                raise LabelDPInputError(f"{path}: column {name}: {bad} row(s) have a different number of classes")
            nulls = col.null_count
            if nulls:
                raise LabelDPInputError(f"{path}: column {name}: {nulls} null row(s)")
            flat = col.combine_chunks().flatten().to_numpy(zero_copy_only=False).astype(np.float64)
            return flat.reshape(len(col), -1)
        if not (pa.types.is_floating(col.type) or pa.types.is_integer(col.type)):
            raise LabelDPInputError(f"{path}: column {name} must be numeric or list<float>; got {col.type}")
        if col.null_count:
            raise LabelDPInputError(f"{path}: column {name}: {col.null_count} null row(s)")
        return col.to_numpy().astype(np.float64, copy=False)

    labels_col = table.column(label_col)
    if labels_col.null_count:
        raise LabelDPInputError(f"{path}: column {label_col}: {labels_col.null_count} null label(s)")
    labels = labels_col.to_numpy()
    row_ids = table.column(row_id_col).to_numpy() if row_id_col in table.column_names else None
    return (probabilities(target_col), probabilities(reference_col), labels, row_ids,
            {name: table.column(name) for name in extra})


def run(args) -> int:
    from labeldp.codec import encode
    from labeldp.errors import LabelDPInputError
    from labeldp.names import parse_date

    args.night = None if args.night is None else parse_date(args.night, "--night")  # parsed before any work
    game, bound = game_config_from(args).with_night(args.night), bound_config_from(args)
    slicings = _slicings(args)
    extra = tuple(dict.fromkeys(c for c in (args.check_column, args.group_column,
                                            *(name for s in slicings for name in s.column_names)) if c))
    p_target, p_reference, labels, row_ids, columns = read_table(
        args.file, args.label_col, args.target_col, args.reference_col, args.row_id_col, extra
    )
    from auditing.game.play import as_reference_probabilities

    # Checked here too so that an error names the column the user gave (run_audit says p_reference).
    as_reference_probabilities(p_reference, f"{args.file}: column {args.reference_col}")
    try:
        result, split = _audit(args, game, bound, p_target, p_reference, labels, row_ids, columns, slicings)
    except LabelDPInputError as exc:
        raise LabelDPInputError(f"{args.file}: {exc.template}", field=exc.field) from None
    out, verdict = encode(result), None
    if args.claimed_epsilon is not None:
        if result.optimistic:
            raise LabelDPInputError("--claimed-epsilon needs a valid bound: --strategy max is the paper's "
                                    "optimistic statistic; use bonferroni or split")
        from auditing.verdict.judge import judge

        verdict = judge(result, args.claimed_epsilon, split=split)
        robustness = encode(verdict.robustness)
        robustness.pop("note")
        out.update(claimed_epsilon=verdict.claimed_epsilon, status=verdict.status, **robustness,
                   decision=encode(verdict.decision), trust=encode(verdict.trust), split_test=encode(split))
        if verdict.slices:  # judged: the slices' verdicts, as every other command's --json carries them
            from auditing.sinks.listing import ListedSlices

            out["slices"] = encode(ListedSlices.of_verdict(verdict))
    if args.json:
        print(json.dumps(out))
    else:
        from auditing.sinks.report.text import format_audit_result
        from auditing.verdict.judge import demonstrated_risk

        print(format_audit_result(result, demonstrated_risk(result), verdict=verdict))
    return 0


def _slicings(args) -> tuple:
    """The declared slicings, parsed once (the training label's column refused by name)."""
    if args.slice_budget is not None and not args.slices:
        from labeldp.errors import LabelDPInputError

        raise LabelDPInputError("--slice-budget needs at least one --slice", field="slice_budget")
    if not args.slices:
        return ()
    from auditing.slices import parse_slicing

    return tuple(parse_slicing(text, label_column=args.label_col) for text in args.slices)


def _slice_columns(columns, names, mask):
    """The slicings' Arrow columns as numpy arrays over ``mask``'s rows (a dictionary column decoded)."""
    import numpy as np
    import pyarrow as pa

    out = {}
    for name in names:
        column = columns[name]
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        out[name] = np.asarray(column.to_numpy(zero_copy_only=False))[mask]
    return out


def _audit(args, game, bound, p_target, p_reference, labels, row_ids, columns, slicings=()):
    """(the audit of the table's rows, the split test of --check-column's rows or None): check rows apart
    (--check-column: their split against the audited rows tested on the reference's probability and the rows'
    order in the table, `auditing.verdict.split_test`), grouped rows left out (--group-column)."""
    import numpy as np
    import pyarrow as pa

    from auditing.audit import CheckRows, no_rows_result, run_audit
    from labeldp.errors import LabelDPInputError
    from labeldp.progress import Countdown, stderr_progress

    n = len(labels)
    ids = np.arange(n, dtype=np.int64) if row_ids is None else np.asarray(row_ids)
    check = np.zeros(n, dtype=bool)
    if args.check_column:
        column = columns[args.check_column]
        if not pa.types.is_boolean(column.type) or column.null_count:
            raise LabelDPInputError(f"column {args.check_column}: --check-column needs a boolean column without "
                                    f"nulls; got {column.type} with {column.null_count} null(s)")
        check = column.to_numpy(zero_copy_only=False).astype(bool)
    keep = np.ones(n, dtype=bool)
    groups = None
    if args.group_column:
        from auditing.game.row_groups import RowGroups, label_agreement, singleton_mask
        from pipelines.scoring.row_grouping import group_keys

        table = pa.table({args.group_column: columns[args.group_column]})
        keys = group_keys(table, [(args.group_column,)])
        keep = singleton_mask(keys)
        grouped = ~keep
        agreement = label_agreement([keys[0][grouped]], np.asarray(labels)[grouped],
                                    np.asarray(p_reference)[grouped])
        groups = RowGroups(rule=f"rows with the same {args.group_column} form a group",
                           columns=(args.group_column,), rows_excluded=int((grouped & ~check).sum()),
                           excluded_with_day=int((grouped & ~check).sum()), excluded_with_inputs=0,
                           check_rows_excluded=int((grouped & check).sum()), agreement_pairs=agreement.pairs,
                           agreement_observed=agreement.observed, agreement_expected=agreement.expected)
    audited, checked = keep & ~check, keep & check

    def part(mask):
        if mask.all():  # every row: no copies
            return p_target, p_reference, labels, ids
        return (np.asarray(p_target)[mask], np.asarray(p_reference)[mask], np.asarray(labels)[mask], ids[mask])

    if not audited.any():
        if groups is not None and groups.rows_excluded:
            from auditing.game.row_groups import NO_ROWS_LEFT

            return no_rows_result(game.with_night(None), bound, NO_ROWS_LEFT, groups), None
        raise LabelDPInputError("no audited row: every row is a check row (--check-column)")
    check_rows = CheckRows(*part(checked)) if args.check_column else None
    split = _split_test(p_reference, audited, checked) if args.check_column else None
    countdown = Countdown(stderr_progress("audit-scores"), "game", game.repetitions, "repetitions",
                          interval=2.0)  # live: on a terminal, without --quiet
    result = run_audit(*part(audited), game=game, bound=bound, row_groups=groups, check=check_rows,
                       progress=lambda done, _total: countdown(done))
    if not slicings:
        return result, split
    import dataclasses

    from auditing.slices import audit_slices

    names = tuple(dict.fromkeys(name for s in slicings for name in s.column_names))
    slices = audit_slices(*part(audited), game, bound, slicings, columns=_slice_columns(columns, names, audited),
                          check=check_rows, check_columns=_slice_columns(columns, names, checked),
                          budget=args.slice_budget)
    return dataclasses.replace(result, slices=slices), split


def _split_test(p_reference, audited, checked):
    """The check column's split against the audited rows on their label-free inputs: the reference's log-odds (of
    the last class) and each row's place in the table."""
    import numpy as np

    from auditing.verdict.split_test import split_test

    p = np.asarray(p_reference, dtype=np.float64)
    p = np.clip(p if p.ndim == 1 else p[:, -1], 1e-12, 1 - 1e-12)
    inputs = {"reference_log_odds": np.log(p) - np.log1p(-p), "row_position": np.arange(p.size, dtype=np.float64)}
    return split_test({k: v[audited] for k, v in inputs.items()}, {k: v[checked] for k, v in inputs.items()})
