"""The command lines that messages tell a user to run ("what to do" in an error or a run's summary), in one
registry, so that each names a command and flags that exist.

A `Hint` is ``labeldp-audit`` + its command's words + an argument template: flags with ``{placeholders}`` filled
in by the message (a model name, a date, a path), and CAPITALS or ``...`` for what the user supplies (FILE,
SPEC, E). Every hint is registered in `HINTS` when it is defined; tests/labeldp/test_hints.py runs each command's
``--help`` and checks that it has every flag its hint names and that the hint names every option the command
requires. A message builds its line with `Hint.line`; no other module writes a ``labeldp-audit ...`` command
line of its own (the same test looks for one).

Which hint fits is the message's choice: a model another team trained is registered (``models register``),
never trained; a missing day of a log is ingested with the dataset's spec (``data ingest``), never synthesized;
a flag is only named for a command that has it (the nightly reads the dataset from its plan, not from a flag).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

HINTS: list[Hint] = []
_FLAG = re.compile(r"(?<!\S)(--[a-z][a-z0-9-]*)")


@dataclass(frozen=True)
class Hint:
    """``labeldp-audit <command> <args>``; see the module docstring."""

    command: str  # the subcommand's words, e.g. "models register"
    args: str = ""  # the template: flags, {placeholders}, CAPITALS / ... for what the user supplies

    def __post_init__(self) -> None:
        HINTS.append(self)

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.command.split())

    @property
    def flags(self) -> tuple[str, ...]:
        """The flags the hint names."""
        return tuple(_FLAG.findall(self.args))

    def line(self, **values) -> str:
        """The command line in backquotes, ``values`` quoted for a shell where they need it."""
        args = self.args.format(**{key: shlex.quote(str(value)) for key, value in values.items()})
        return "`" + " ".join(part for part in ("labeldp-audit", self.command, args) if part) + "`"


# Models: train one here, register one trained elsewhere, list the registry.
TRAIN_REFERENCE = Hint("train", "--date {date} --mechanism none --epsilon inf --model-name {name}")
TRAIN_MODEL = Hint("train", "--date {date} --model-name {name} --mechanism MECHANISM --epsilon E")
REGISTER_MODEL = Hint("models register", "--name {name} --date {date} --file FILE --claimed-epsilon E")
REREGISTER_MODEL = Hint("models register", "--name {name} --date {date} --file FILE --claimed-epsilon E --replace")
REGISTER_REFERENCE = Hint("models register", "--name {name} --date {date} --file FILE --claimed-epsilon inf")
REGISTER_FOR_DATASET = Hint("models register", "--name {name} --date {date} --file FILE --claimed-epsilon E "
                                               "--dataset SPEC --replace")
REGISTER_WITH_DATASET = Hint("models register", "--name {name} --date {date} --file {file} --claimed-epsilon {epsilon} "
                                                "--dataset SPEC")
LIST_MODELS = Hint("models list", "--data-root {root}")

# Days: ingest a log (with its dataset's spec, or the Criteo TSV), or synthesize one.
INGEST_DAY = Hint("data ingest", "FILE... --dataset SPEC --date {date}")
INGEST_CRITEO_DAY = Hint("data ingest-criteo", "FILE --date {date}")
SYNTHESIZE_DAY = Hint("data synth", "--start {date} --end {date}")

# Plans, the warehouse's spool, the figures.
CHECK_PLAN = Hint("plan check", "{plan}")
WRITE_SCHEMAS = Hint("plan schema", "--write")
DRAIN_ONLY = Hint("nightly", "--drain-only")
DRAIN_SPOOL = Hint("nightly", "--drain-only --data-root {root}")
DRAIN_SPOOL_TO = Hint("nightly", "--drain-only --data-root {root} --warehouse {warehouse}")
DRAIN_UNADDRESSED = Hint("nightly", "--drain-only --data-root {root} --warehouse W --include-unaddressed")
EXPLAIN_RISK = Hint("risk", "--help")
FAMILY_NIGHTS = Hint("results family", "{model}")
PLAN_POWER = Hint("plan power", "--rows {rows} --claimed-epsilon {claim}")
RESULTS_OF_DAY = Hint("results", "--all --since {date} --until {date}")
