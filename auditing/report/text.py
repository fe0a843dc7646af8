"""Plain-text renderings for the command line: one audit result, the results table of the flows, and the
sentences a nightly / guardrail / backfill run ends with (one per exit code that applied).

Renderers only: every figure comes from an audit result or a `Verdict` computed elsewhere (`auditing.judging`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from auditing import hints
from auditing.verdict import (
    ACCEPTED_UNCHECKED,
    INCONCLUSIVE,
    PASS,
    TRUSTED,
    UNCHECKED,
    UNTRUSTED,
    VIOLATION,
    WEAK_PASS,
    WEAK_PASS_FRACTION,
)

# What each verdict status means, in the words of --help, README, the report's first screen and the table's legend.
STATUS_MEANINGS = {
    PASS: "no evidence of a violation: the audit could have disproved the claim and did not (not a proof of "
          "privacy)",
    WEAK_PASS: f"a PASS on weak evidence: this audit would have flagged the claim only if more than "
               f"{WEAK_PASS_FRACTION:.0%} of the audited labels were fully exposed (or not even then), so a smaller "
               "leak could have gone unseen",
    VIOLATION: "the valid lower bound exceeds the claimed epsilon: the claim is disproved at the stated confidence",
    INCONCLUSIVE: "even a perfect attacker could not have disproved the claim with this many rows: the audit had "
                  "no power here",
}

# What each trust state means, in the words of --help and README.
TRUST_MEANINGS = {
    TRUSTED: "a VIOLATION the capacity check vouches for (its evidence exceeds what the reference's misfit "
             "explains, judged by the model itself on rows it never saw); any other verdict of a night no control "
             "voided",
    UNTRUSTED: "a VIOLATION the reference's misfit can explain, or any verdict of a night the negative "
                     "control voided (exit 4)",
    UNCHECKED: "no check row could check the reference (pass the model's training rows so that the day's other "
               "rows can; exit 4)",
    ACCEPTED_UNCHECKED: "the same, accepted by the plan (accept_unchecked_reference) or --accept-unchecked-reference: "
                        "exits by its status, never shown as trusted",
}


def format_audit_result(result: Mapping, demonstrated: Mapping | None = None) -> str:
    """A short summary: the valid bound with its labels first, then the paper's statistic, then context.

    Args:
        result: `AuditResult.to_dict()`, with the verdict's ``status``, ``claimed_epsilon`` and
            ``breaking_kappa`` merged in when a claim was judged.
        demonstrated: `auditing.judging.demonstrated_risk` of the result (None: no line about it).
    """
    kind = "OPTIMISTIC (not a valid bound)" if result["optimistic"] else f"valid at {result['confidence']:.0%} confidence"
    lines = [
        f"epsilon lower bound: {result['epsilon_lower_bound']:.4f}   [{kind}]",
        f"  method={result['method']}  strategy={result['strategy']}  delta={result['delta']:g}  kappa={result['kappa']:g}"
        f"  per-point confidence={result['point_confidence']:.6g}",
        f"  selected: {result['selected_correct']} correct of {result['selected_guesses']} guesses"
        f" (m={result['selected_m']}, grid of {result['grid_size']} points, {result['grid']})",
        f"  largest bound this audit could certify (perfect attacker): {result['max_certifiable_epsilon']:.4f}",
        *_verdict_lines(result),
        f"paper's statistic over {result['repetitions']} repetitions (optimistic: max over the sweep, uncorrected):",
        f"  mean {result['epsilon_mean']:.4f}  std {result['epsilon_std']:.4f}  median {result['epsilon_median']:.4f}",
        f"  m={result['m']}  seed={result['seed']}  score={result['score']} (t={result['score_power']:g})"
        f"  config={result['config_hash']}",
    ]
    if demonstrated:
        lines.append(_demonstrated_line(demonstrated))
    return "\n".join(lines)


def _verdict_lines(result: dict) -> list[str]:
    """The verdict against a claim (audit-scores --claimed-epsilon) and the f-DP method's Gaussian reading."""
    lines = []
    if result.get("status") is not None:
        kappa = result["breaking_kappa"]
        meaning = (f"the counts disprove the claim unless the reference misjudges some row's click odds by more "
                   f"than a factor {math.exp(kappa):.3g}" if kappa > 0 else "the counts do not disprove the claim")
        lines.append(f"  status against the claimed eps {result['claimed_epsilon']:g} at kappa {result['kappa']:g}: "
                     f"{result['status']}; breaking kappa {kappa:.4g} ({meaning})")
    if result.get("gdp_mu_lower_bound") is not None:
        lines.append(f"  Gaussian reading: not mu-GDP for any mu below {result['gdp_mu_lower_bound']:.4f} "
                     "(a statement about mu only; not an epsilon bound)")
    return lines


def _demonstrated_line(block: Mapping) -> str:
    """What the valid bound demonstrates (`auditing.judging.demonstrated_risk`)."""
    return (f"what eps_lb demonstrates (no guarantee beats these ceilings; priors: the reference's probabilities): "
            f"a guess right {block['prior_p90']:.1%} of the time beforehand can be right up to "
            f"{block['posterior_ceiling_p90']:.1%}; membership advantage up to {block['mia_advantage_bound']:.3f} "
            f"({hints.EXPLAIN_RISK.line().strip('`')} explains each figure)")


# The results table's columns: header, alignment ("<" left, ">" right); the report path comes last, unpadded.
_COLUMNS = (("model", "<"), ("date", "<"), ("status", "<"), ("run", "<"), ("claimed", ">"), ("eps_lb", ">"),
            ("paper mean+-std", ">"), ("max cert.", ">"), ("brk.kap", ">"), ("floor", ">"), ("exp.fl", ">"),
            ("m", ">"), ("rows", "<"), ("report", "<"))


def _cells(r: Mapping) -> tuple[str, ...]:
    """One row of the results table as text, column by column (`_COLUMNS`)."""
    claimed = "inf" if math.isinf(r["claimed_epsilon"]) else f"{r['claimed_epsilon']:g}"
    paper = f"{r['epsilon_mean']:.3f}+-{r['epsilon_std']:.3f}" if r.get("epsilon_mean") is not None else "-"
    # A control shows whether it came out as constructed; '!' marks a verdict of an untrusted night.
    status = r["status"] if r.get("kind") != "control" else ("ok" if r.get("control_passed") else "FAILED")
    status = ("control " if r.get("kind") == "control" else "") + status + ("!" if r.get("untrusted_reason") else "")
    breaking = "-" if r.get("breaking_kappa") is None else f"{r['breaking_kappa']:.3g}"
    floor = "-" if r.get("detection_floor_rows") is None else str(r["detection_floor_rows"])
    exposed = "-" if r.get("exposed_rows_floor") is None else str(r["exposed_rows_floor"])
    exposed += "w" if r.get("weak_pass") and r["status"] == PASS else ""  # a PASS stored before WEAK_PASS existed
    return (str(r["model_id"]), str(r["partition_date"]), status, r.get("run_kind") or "-", claimed,
            f"{r['epsilon_lower_bound']:.3f}", paper, f"{r['max_certifiable_epsilon']:.2f}", breaking, floor, exposed,
            str(r["m"]), r.get("audit_rows") or "-", str(r["report"]))


def format_rows(rows: list[dict]) -> str:
    """The results table printed by the nightly / guardrail / backfill commands and by `results` (skipped
    targets, which have no verdict, are listed under it with their reason). Each column is as wide as its
    longest value."""
    skipped = [r for r in rows if r.get("kind") == "skipped"]
    rows = [r for r in rows if r.get("kind") != "skipped"]
    table = [tuple(name for name, _ in _COLUMNS), *(_cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(_COLUMNS) - 1)]

    def line(cells: Sequence[str]) -> str:
        padded = [f"{cell:{align}{width}}" for cell, (_, align), width in zip(cells, _COLUMNS, widths, strict=False)]
        return " ".join(padded) + "  " + cells[-1]

    header = line(table[0])
    lines = [header, "-" * len(header), *(line(cells) for cells in table[1:])]
    if rows:
        r = rows[0]
        lines.append(f"eps_lb: valid lower bound at {r['confidence']:.0%} confidence ({r['strategy']} selection, "
                     f"{r['method']}, delta={r['delta']:g}, kappa={_kappa(r)}); paper mean+-std: the paper's "
                     "optimistic statistic, for comparison only.")
        lines.append("brk.kap: largest kappa at which the same counts still exceed the claim, i.e. the verdict "
                     "holds unless the reference misjudges some row's click odds by more than a factor e^brk.kap "
                     "(0: they do not exceed it at kappa = 0); floor: fewest correct guesses (a perfect attacker's fully exposed "
                     "labels) that could flag the claim, a necessary condition (-: none, INCONCLUSIVE); exp.fl: "
                     "fewest fully exposed labels this audit flags with 95% probability in the game (-: not "
                     "computed or none reaches 95%, see --json exposed_rows_floor_note); rows: the audited rows "
                     "(training: rows whose labels entered training); run: the kind of run that wrote the verdict.")
        for status in dict.fromkeys(r["status"] for r in rows if r.get("kind") != "control"):
            if status in STATUS_MEANINGS:
                lines.append(f"{status}: {STATUS_MEANINGS[status]}.")
        if any(r.get("weak_pass") and r["status"] == PASS for r in rows):
            lines.append(f"w (exp.fl): a PASS stored before {WEAK_PASS} was a status whose floors make it one.")
    if any(r.get("kind") == "control" for r in rows):
        lines.append("control: the night's positive control (randomized response at a known eps_c: its bound must "
                     "exceed a pre-registered floor and stay <= eps_c), negative control (a copy of the reference: "
                     "its bound must be 0) and label-blind control (trained only on held-out rows: its bound must be "
                     "0, else the reference does not fit the day).")
    for r in rows:  # what the claimed eps allows and the bound demonstrates
        if r.get("risk_headline") and r.get("kind") != "control":
            lines.append(f"what this means for {r['model_id']} {r['partition_date']}: {r['risk_headline']}")
    untrusted = sorted({r["untrusted_reason"] for r in rows if r.get("untrusted_reason")})
    for reason in untrusted:
        lines.append(f"! UNTRUSTED: {reason}")
    for r in skipped:
        lines.append(f"skipped: {r['model_id']} {r['partition_date']}: {r.get('reason')}")
    return "\n".join(lines)


def _kappa(row: Mapping) -> str:
    # A warehouse row written before kappa has none (its legacy figure is in reference_check_note).
    return "- (a row written before kappa)" if row.get("kappa") is None else f"{row['kappa']:g}"


def stored_rows_for_table(rows: Sequence[Mapping], report: Callable[[Mapping], str | None] | None = None) -> list[dict]:
    """Warehouse rows (``Warehouse.fetch_verdicts``) as the rows ``format_rows`` prints: the partition date as
    YYYY-MM-DD text and ``report`` the path of the row's run report (``report(row)``; '-' when None). A row
    stored before WEAK_PASS was a status says PASS: the caller adds ``weak_pass`` when its floors make it weak,
    and the table marks it 'w'."""
    out = []
    for row in rows:
        date = row["partition_date"]
        out.append({**row, "partition_date": date.isoformat() if isinstance(date, dt.date) else str(date),
                    "report": (report(row) if report is not None else None) or "-"})
    return out


# `results show`: JSON-text columns are printed as an outline; a list longer than this is summarised in one line.
SHOW_LIST_ITEMS = 8


def _summary(value) -> str:
    """One line for a JSON value too long to print whole: a list's length and range, an object's keys."""
    if isinstance(value, list):
        numbers = [v for v in value if isinstance(v, int | float) and not isinstance(v, bool)]
        if value and len(numbers) == len(value):
            return f"{len(value)} values, from {min(numbers):.6g} to {max(numbers):.6g}"
        if value and all(isinstance(v, Mapping) for v in value):
            keys = list(dict.fromkeys(k for v in value for k in v))
            first, last = (", ".join(f"{k} {v[k]:.6g}" if isinstance(v[k], float) else f"{k} {v[k]}" for k in v)
                           for v in (value[0], value[-1]))
            return f"{len(value)} points ({', '.join(keys)}): first {first}; last {last}"
        return f"{len(value)} items"
    return f"{len(value)} keys: {', '.join(map(str, value))}"


def json_outline(value, indent: str = "  ", depth: int = 2) -> list[str]:
    """The lines `results show` prints for a JSON-text column: an object's keys one per line (nested objects
    indented, ``depth`` levels), scalars and short lists as they are, long lists and deeper objects summarised
    (how many values, their range, the first and last point); `results show --json` prints them whole."""
    import json

    if not isinstance(value, Mapping):
        return [f"{indent}{json.dumps(value)}"]
    lines = []
    for key, item in value.items():
        if isinstance(item, Mapping) and item and depth > 1:
            lines.append(f"{indent}{key}:")
            lines += json_outline(item, indent + "  ", depth - 1)
        elif (isinstance(item, list) and len(item) > SHOW_LIST_ITEMS) or (isinstance(item, Mapping) and item):
            lines.append(f"{indent}{key}: {_summary(item)}")
        else:
            lines.append(f"{indent}{key}: {json.dumps(item, default=str)}")
    return lines


def violation_line(row: Mapping) -> str:
    """One line for a guardrail VIOLATION (the release is blocked), from the flows' summary of a verdict."""
    return (f"VIOLATION: {row['model_id']}@{row['partition_date']} valid eps_lb {row['epsilon_lower_bound']:.4f} > "
            f"claimed {row['claimed_epsilon']:g} (confidence {row['confidence']:.0%}, {row['strategy']}, "
            f"{row['method']}, delta={row['delta']:g}, kappa={row['kappa']:g}); report: {row['report']}")


# ------------------------------------------------------------------------------------------ a run's exit summary
# The sentences the nightly / guardrail / backfill commands (and their flows' final states) end with: one per exit
# code that applied. The command line picks which apply and in what order (flows.exit_codes); the words are here.


def violations_summary(rows: Sequence[Mapping]) -> str:
    """'1 VIOLATION: leaky@2026-10-02 (valid eps_lb 0.815 > claimed 0, report ...)'."""
    items = [f"{r['model_id']}@{r['partition_date']} (valid eps_lb {r['epsilon_lower_bound']:.4g} > claimed "
             f"{r['claimed_epsilon']:g} at {r['confidence']:.0%} confidence; report {r['report']})" for r in rows]
    plural = "s" if len(items) != 1 else ""
    return f"{len(items)} VIOLATION{plural}: the claimed epsilon is disproved for " + "; ".join(items)


def spooled_summary(paths: Sequence[str], drain_command: str) -> str:
    """Results computed but not written: where they are and the command that writes them."""
    directory = str(Path(paths[0]).parent) if paths else "?"
    names = ", ".join(Path(p).name for p in paths)
    return (f"{len(paths)} result(s) computed but not in the warehouse (it could not be reached): spooled to "
            f"{directory} ({names}); once it is back, write them with `{drain_command}` (every nightly run also "
            "writes the spool first)")


def spool_elsewhere_lines(elsewhere: Sequence[Mapping], spool: Path) -> list[str]:
    """One line per other warehouse whose spooled results a drain left in place (``drain_spool``'s
    ``elsewhere``): where they are meant to go and the command that writes them there (``spool``: the data
    root's spool directory)."""

    by_address: dict[tuple[str, str], int] = {}
    for item in elsewhere:
        by_address[(item["backend"], item["address"])] = by_address.get((item["backend"], item["address"]), 0) + 1
    return [f"{count} spooled result(s) in {spool} are meant for the {backend} warehouse {address}, not this one: "
            f"left in place; write them with {hints.DRAIN_SPOOL_TO.line(root=Path(spool).parent, warehouse=address)}"
            + (" (add your user name to the URL)" if backend == "postgres" else "")
            for (backend, address), count in by_address.items()]


def spool_unaddressed_line(paths: Sequence[str], spool: Path) -> str:
    """Spooled results of an older version, which recorded no warehouse: left until a person names theirs."""
    return (f"{len(paths)} spooled result(s) in {spool} were written by an older labeldp-audit, which did not record "
            "their warehouse: left in place; once you know which warehouse they belong to, write them with "
            f"{hints.DRAIN_UNADDRESSED.line(root=Path(spool).parent)}")


def untrusted_summary(reasons: Sequence[str]) -> str:
    """The night's verdicts (PASS and VIOLATION alike) cannot be trusted, and why."""
    return "UNTRUSTED: read every verdict of the night as unknown: " + "; ".join(reasons)


def failures_summary(failures: Sequence[str]) -> str:
    """Audits that produced no row: a missing row is not a PASS."""
    return f"{len(failures)} audit(s) failed and wrote no row (a missing row is not a PASS): " + "; ".join(failures)


def bad_input_summary(items: Sequence[str]) -> str:
    return "bad input, nothing written for it: " + "; ".join(items)


def exit_summary(command: str, applied: Sequence[tuple[int, str]]) -> list[str]:
    """One line per exit code that applied, the winning one first: 'labeldp-audit C: exit 3: ...', then
    'labeldp-audit C: also 1: ...'."""
    return [f"labeldp-audit {command}: {'exit' if i == 0 else 'also'} {code}: {sentence}"
            for i, (code, sentence) in enumerate(applied)]


# ------------------------------------------------------------------------------------------ what to do
# The advice of an error met by the nightly (its plan decides, not a flag: the nightly reads its dataset and its
# reference policy from the plan). The command lines are `auditing.hints`'.


def plan_dataset_fix(day: dt.date) -> str:
    """A day's partition was written for another dataset than the plan's."""
    return (f"name its spec file in the plan's \"dataset\" ({hints.CHECK_PLAN.line(plan='PLAN')} prints the one "
            f"in use), or ingest the day again with the plan's spec ({hints.INGEST_DAY.line(date=day.isoformat())})")


def missing_reference(directory: Path, name: str, day: dt.date, registered: bool) -> str:
    """The D-1 reference is missing and the plan says on_missing_reference "fail". A plan of models trained
    elsewhere (``registered``) takes the reference from the same team: it is registered, not trained here."""
    when = day.isoformat()
    if registered:
        how = (f"register the D-1 checkpoint with {hints.REGISTER_REFERENCE.line(name=name, date=when)} (no "
               f"claim: inf)")
    else:
        how = (f"train it with {hints.TRAIN_REFERENCE.line(date=when, name=name)}, or set the plan's "
               f"on_missing_reference to \"train\"")
    return (f"no reference model at {directory} (the D-1 checkpoint the plan's on_missing_reference 'fail' "
            f"requires); {how}")
