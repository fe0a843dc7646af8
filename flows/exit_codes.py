"""The exit codes of `nightly`, `guardrail` and `backfill`: the contract a scheduler (cron, CI, a release
pipeline) relies on, and the `Outcome` of a run they are derived from.

A flow computes one `Outcome` (its rows, the payloads spooled instead of written, why the night is untrusted,
the audits that failed, the bad input met inside the flow); the flow's final state (Completed or Failed) and
the command line's exit code are both read from it. When several codes apply (a backfill's mixed days, a
VIOLATION whose row was spooled) the first of ``PRECEDENCE`` wins and the summary names every one that applied.

This module imports nothing heavy: the command line reads it before Prefect, Beam or CatBoost are loaded.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from auditing.verdict.types import ACT, DECISIONS, HEADLINES, NO_EVIDENCE, NO_POWER, UNCONFIRMED
from auditing.verdict.types import MEANINGS as MEANINGS_OF_DECISIONS
from auditing.verdict.types import UNTRUSTED as UNTRUSTED_STATE
from labeldp import hints

if TYPE_CHECKING:  # the rows' types are imported where a run's rows are read: the warehouse's modules are heavy,
    # and every command line imports this module for its exit codes
    from auditing.sinks.listing import ListedVerdict, SkippedTarget

OK = 0
VIOLATION = 1
BAD_INPUT = 2
NOT_IN_WAREHOUSE = 3
UNTRUSTED = 4
INTERRUPTED = 130  # 128 + SIGINT
TERMINATED = 143  # 128 + SIGTERM

# What each code means: the ONE text of every command's --help (`help_text`) and of README.md's table, whose exit rows
# hold these words (a test compares them, backquotes aside), so that a decision about a code changes one place.
MEANINGS = {
    OK: "every audit was written to the warehouse, no target's decision is a leak (act or unconfirmed) and no "
        "control failed; nightly and backfill also exit 0 on a leak to act on unless --fail-on-violation",
    VIOLATION: "a target's decision is act (a confirmed leak: a trusted VIOLATION, or its family's nights confirm "
               "one), even beside an unconfirmed one (guardrail always; nightly and backfill only with "
               "--fail-on-violation)",
    BAD_INPUT: "bad input (plan, partition, model, warehouse, arguments); nothing was written",
    NOT_IN_WAREHOUSE: "results computed but not in the warehouse: spooled to disk, written by the next run or "
                      f"by {hints.DRAIN_ONLY.line()}",
    UNTRUSTED: "a target's decision is an unconfirmed leak (a VIOLATION the reference's misfit can explain, one "
               "nothing checked, or one a refused split cannot vouch for), the negative control voided the night "
               "(its targets have no power) or a target's audit failed",
    INTERRUPTED: "interrupted (Ctrl-C); nothing partial is left behind",
    TERMINATED: "terminated (SIGTERM: a scheduler, Kubernetes, systemd or a Prefect worker stopping the run; it "
                "stops within 5 s); nothing partial is left behind and no other run's files are touched; the flow "
                "run ends Crashed, or Cancelled when cancelled through Prefect, never Failed",
}
# Short names: Prefect event names (labeldp.run.<name>) and log lines.
NAMES = {OK: "ok", VIOLATION: "violation", BAD_INPUT: "bad_input", NOT_IN_WAREHOUSE: "not_in_warehouse",
         UNTRUSTED: "untrusted", INTERRUPTED: "interrupted", TERMINATED: "terminated"}
# A trusted VIOLATION outranks an untrusted verdict beside it: the release gate must fail on the violation.
PRECEDENCE = (BAD_INPUT, NOT_IN_WAREHOUSE, VIOLATION, UNTRUSTED)
# The codes that end a flow run Failed (VIOLATION too when the run was asked to fail on it).
FAILING = (BAD_INPUT, NOT_IN_WAREHOUSE, UNTRUSTED)


# The exit code each decision gives (auditing.verdict.decision; ACT: 1 for the guardrail, and for nightly and
# backfill with --fail-on-violation).
DECISION_EXITS = {ACT: VIOLATION, UNCONFIRMED: UNTRUSTED, NO_EVIDENCE: OK, NO_POWER: OK}


def decision_exit_code(decision: str | None) -> int:
    """The exit code a target's decision gives (`DECISION_EXITS`; none for a control)."""
    return DECISION_EXITS.get(decision, OK)


def help_text() -> str:
    """The "Decision", "Verdict status" and "Exit status" blocks of the three commands' --help."""
    import textwrap

    from auditing.sinks.report.wording import STATUS_MEANINGS, TRUST_MEANINGS

    lines = textwrap.wrap("Decision (one per target, the first thing the table, the report, the alert, the warehouse "
                          "and --json say), with the exit code it gives:", 100)
    for decision in DECISIONS:
        code = decision_exit_code(decision)
        when = ": guardrail always, nightly and backfill with --fail-on-violation" if code == VIOLATION else ""
        lines += textwrap.wrap(f"{HEADLINES[decision]}: {MEANINGS_OF_DECISIONS[decision]} (exit {code}{when})", 100,
                               initial_indent=f"  {decision:<13}", subsequent_indent=" " * 15,
                               break_on_hyphens=False)
    lines += ["", *textwrap.wrap("Verdict status (the table's status column, the warehouse, --json, the report's "
                                 "badge and the results command's --status filter):", 100)]
    for status, meaning in STATUS_MEANINGS.items():
        lines += textwrap.wrap(meaning, 100, initial_indent=f"  {status:<13}", subsequent_indent=" " * 15)
    lines += ["", *textwrap.wrap("Trust (the table's trust column, the warehouse, --json, the report's banner), decided "
                                 "per verdict:", 100)]
    for state, meaning in TRUST_MEANINGS.items():
        lines += textwrap.wrap(meaning, 100, initial_indent=f"  {state:<31}", subsequent_indent=" " * 33)
    lines += ["", *textwrap.wrap("Exit status (the same for nightly, guardrail and backfill; when several apply the "
                                 "first of 2, 3, 1, 4 wins and the summary names each):", 100)]
    for code in (OK, VIOLATION, BAD_INPUT, NOT_IN_WAREHOUSE, UNTRUSTED, INTERRUPTED, TERMINATED):
        lines += textwrap.wrap(MEANINGS[code], 100, initial_indent=f"  {code:<4}", subsequent_indent=" " * 6,
                               break_on_hyphens=False)
    return "\n".join(lines)


@dataclass(frozen=True)
class DayOutcome:
    """One day of a backfill: its date, a line for people, and the day's `Outcome`."""

    date: dt.date
    summary: str
    outcome: Outcome

    def _encoded(self) -> dict:
        """The day as a run's record lists it (`labeldp.codec.encode`): its date and its line, not its rows again
        (they are the run's)."""
        return {"date": self.date, "outcome": self.summary}


@dataclass
class Outcome:
    """What one run produced, from which its exit code and its flow's final state follow.

    rows: the published verdicts (targets and controls, `auditing.sinks.listing.ListedVerdict`, each with what
    was done with its row: "written", "recorded" or "spooled" with its ``spool_path``) and the skipped targets
    (``SkippedTarget``); untrusted: why verdicts cannot be trusted (one reason per night); failures: audits that
    did not produce a row ("model: error"); bad_input: bad input met inside the flow ("what: error");
    fail_on_violation: whether a VIOLATION is an exit-1 failure (guardrail: always); days: a backfill's days.
    `labeldp.codec.encode` writes it as the run's record (each row as its ``--json`` record).
    """

    rows: list[ListedVerdict | SkippedTarget] = field(default_factory=list)
    untrusted: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    bad_input: list[str] = field(default_factory=list)
    fail_on_violation: bool = False
    days: list[DayOutcome] | None = None

    @property
    def verdicts(self) -> list[ListedVerdict]:
        """The rows that carry a verdict (a skipped target has none); any other kind of row is a bug."""
        from auditing.sinks.listing import ListedVerdict, SkippedTarget

        unknown = [type(r).__name__ for r in self.rows if not isinstance(r, ListedVerdict | SkippedTarget)]
        if unknown:
            raise TypeError(f"Outcome.rows holds ListedVerdict and SkippedTarget only; got {unknown}")
        return [r for r in self.rows if isinstance(r, ListedVerdict)]

    @property
    def spooled(self) -> list[str]:
        """The spool files holding results that are not in the warehouse."""
        from auditing.sinks.warehouse.spool import SPOOLED

        return [v.spool_path for v in self.verdicts if v.warehouse == SPOOLED and v.spool_path]

    @property
    def violations(self) -> list[ListedVerdict]:
        """The targets whose decision is act: a confirmed leak (a trusted VIOLATION, one on a reference the run
        accepted unchecked, or a family its nights confirmed)."""
        return [v for v in self._targets() if v.row.decision == ACT]

    @property
    def untrusted_violations(self) -> list[ListedVerdict]:
        """The targets whose decision is an unconfirmed leak (they make the run exit 4, not 1)."""
        return [v for v in self._targets() if v.row.decision == UNCONFIRMED]

    @property
    def void_nights(self) -> list[ListedVerdict]:
        """The targets of a night a control voided (the negative control failed or could not run): no power, and
        the run exits 4 for the control."""
        return [v for v in self._targets() if v.row.decision == NO_POWER and v.row.trust == UNTRUSTED_STATE]

    def _targets(self) -> list[ListedVerdict]:
        return [v for v in self.verdicts if v.is_target]

    def collect_untrusted(self) -> None:
        """Adds the reasons of the unconfirmed leaks and of the failed controls (one per reason, sorted) to
        ``untrusted``."""
        self.untrusted += sorted({v.row.untrusted_reason or v.row.decision_reason
                                  for v in (*self.untrusted_violations, *self.void_nights)
                                  if v.row.untrusted_reason or v.row.decision_reason})

    def codes(self) -> list[int]:
        """Every non-zero code that applies, first the one that wins (``PRECEDENCE``)."""
        applies = {BAD_INPUT: bool(self.bad_input), NOT_IN_WAREHOUSE: bool(self.spooled),
                   UNTRUSTED: bool(self.untrusted or self.failures or self.untrusted_violations
                                   or self.void_nights),
                   VIOLATION: bool(self.violations) and self.fail_on_violation}
        return [code for code in PRECEDENCE if applies[code]]

    def exit_code(self) -> int:
        codes = self.codes()
        return codes[0] if codes else OK

    def fails_the_run(self) -> bool:
        """True when the flow run must end Failed."""
        return self.exit_code() != OK

    def merge(self, other: Outcome) -> Outcome:
        """This outcome and another's (a backfill's days), in order."""
        return Outcome(rows=[*self.rows, *other.rows], untrusted=[*self.untrusted, *other.untrusted],
                       failures=[*self.failures, *other.failures], bad_input=[*self.bad_input, *other.bad_input],
                       fail_on_violation=self.fail_on_violation or other.fail_on_violation, days=self.days)

    @classmethod
    def of_days(cls, days: list[DayOutcome], fail_on_violation: bool = False) -> Outcome:
        """A backfill's outcome: its days' outcomes merged, in order, with the days kept in ``days``."""
        total = cls(fail_on_violation=fail_on_violation)
        for day in days:
            total = total.merge(day.outcome)
        total.days = list(days)
        return total


def drain_command(data_root, warehouse: str | None) -> str:
    """The command that writes spooled results to the warehouse (a password in a URL shows as ***), without its
    backquotes."""
    from auditing.sinks.warehouse.address import describe_target

    line = (hints.DRAIN_SPOOL_TO.line(root=data_root, warehouse=describe_target(str(warehouse))) if warehouse
            else hints.DRAIN_SPOOL.line(root=data_root))
    return line.strip("`")


def summary_lines(outcome: Outcome, command: str, drain: str) -> list[str]:
    """One line per exit code that applied to ``outcome``, the winning one first (auditing.sinks.report.text words
    them); empty when it is 0. ``drain``: `drain_command` of the run."""
    from auditing.sinks.report import text

    sentences = {
        BAD_INPUT: lambda: text.bad_input_summary(outcome.bad_input),
        NOT_IN_WAREHOUSE: lambda: text.spooled_summary(outcome.spooled, drain),
        UNTRUSTED: lambda: "; ".join(
            ([text.untrusted_summary(outcome.untrusted, outcome.rows)] if outcome.untrusted else [])
            + ([text.failures_summary(outcome.failures)] if outcome.failures else [])),
        VIOLATION: lambda: text.violations_summary(outcome.violations, outcome.untrusted_violations),
    }
    return text.exit_summary(command, [(code, sentences[code]()) for code in outcome.codes()])


class OutcomeFailed(RuntimeError):
    """Raised by a flow whose outcome fails the run: Prefect records the run as Failed with this message, and
    the command line reads the rows and every code from ``outcome`` (the exception object reaches it)."""

    def __init__(self, message: str, outcome: Outcome):
        super().__init__(message)
        self.outcome = outcome

    @property
    def rows(self) -> list[ListedVerdict | SkippedTarget]:
        return self.outcome.rows

    def __reduce__(self):  # Prefect may pickle a failed state's exception
        return (type(self), (str(self), self.outcome))
