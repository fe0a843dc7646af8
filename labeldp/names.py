"""Names, dates, claims and the data root: validated once, at the edge, by every layer's entry points.

This is the bottom of the dependency graph (flows -> pipelines -> auditing -> this module): the auditing
sinks (warehouse, report, alerts), the pipelines and the command line all take their safe names, calendar
dates and data root from here, so a value is parsed in one place and passed inward as a typed value
(``datetime.date``, ``pathlib.Path``, a checked ``str``).

- ``resolve_data_root`` picks the root the same way for every command: the argument, else the environment
  variable ``LABELDP_DATA_ROOT``, else ``./.labeldp``.
- ``require_date`` is the inner layers' check that a date was parsed at the edge: anything but a
  ``datetime.date`` is a ``TypeError`` naming the argument (a programming error; no string is re-parsed).
- ``check_claim`` is the one check of a claimed epsilon, wherever one enters.
- ``parse_date`` and ``check_name`` reject bad input with a ``LabelDPInputError`` naming the argument, what
  was expected and the value received; a checked name is always a single safe path component.
"""

from __future__ import annotations

import datetime as dt
import math
import numbers
import os
import re
from pathlib import Path

from labeldp.errors import LabelDPInputError, mention

DATA_ROOT_ENV = "LABELDP_DATA_ROOT"
DEFAULT_DATA_ROOT = ".labeldp"

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
MAX_NAME_LENGTH = 128
# The rule `check_name` enforces, in words (plan and spec schemas, docs).
NAME_RULE = ("letters, digits, '-', '_' and '.', starting with a letter or digit (at most "
             f"{MAX_NAME_LENGTH} characters)")


def resolve_data_root(arg: str | os.PathLike | None) -> Path:
    """The data root: ``arg`` if given, else ``$LABELDP_DATA_ROOT`` if set and non-empty, else ``./.labeldp``.

    The directory is not created here; writers create what they need.
    """
    if arg is not None and str(arg) != "":
        return Path(arg).expanduser()
    env = os.environ.get(DATA_ROOT_ENV, "")
    if env:
        return Path(env).expanduser()
    return Path(DEFAULT_DATA_ROOT)


def parse_date(text: str | dt.date, name: str = "date") -> dt.date:
    """Parses ``YYYY-MM-DD`` (a ``datetime.date`` passes through unchanged).

    Raises ``LabelDPInputError`` naming ``name`` for anything else, including impossible dates (2024-02-30).
    """
    if isinstance(text, dt.datetime):
        raise LabelDPInputError(f"{name} must be a date (YYYY-MM-DD), not a datetime; got {text!r}")
    if isinstance(text, dt.date):
        return text
    if not isinstance(text, str) or not _DATE_RE.fullmatch(text.strip()):
        raise LabelDPInputError(f"{name} must be a date written YYYY-MM-DD (e.g. 2024-01-31); got {text!r}")
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError as exc:
        raise LabelDPInputError(f"{name} is not a valid calendar date: {text!r} ({exc})", field=name) from None


def refuse_future(day: dt.date, name: str = "date", allow: bool = False, today: dt.date | None = None) -> dt.date:
    """``day``, unless it is after tomorrow (``today`` default the UTC date) and ``allow`` is false: then a
    ``LabelDPInputError`` naming ``name``. A log of a day that has not come is a mistyped date far more often
    than a plan; tomorrow passes, for a clock ahead of UTC."""
    today = today or dt.datetime.now(dt.UTC).date()
    tomorrow = today + dt.timedelta(days=1)
    if day > tomorrow and not allow:
        raise LabelDPInputError(f"{name} {day.isoformat()} is after tomorrow ({tomorrow.isoformat()}, UTC): a "
                                f"log of a day that has not come is most likely a mistyped date; pass "
                                f"{mention('allow_future')} if it is meant", field=name)
    return day


def require_date(value: dt.date, name: str = "date") -> dt.date:
    """Returns ``value`` if it is a ``datetime.date`` (not a ``datetime``), else raises ``TypeError`` naming ``name``.

    The inner layers' cheap type check: dates are parsed once, at the edge (the command line, a flow's
    parameters, a plan file, JSON read back from disk) with ``parse_date``, and passed inward as
    ``datetime.date``. A string reaching an inner function is a programming error, not bad user input, so
    this is a ``TypeError`` rather than a ``LabelDPInputError``; nothing is parsed here.
    """
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    raise TypeError(f"{name} must be a datetime.date (parse it at the edge with parse_date); "
                    f"got {type(value).__name__} {value!r}")


def check_claim(value: object, name: str = "claimed_epsilon") -> float:
    """A claimed epsilon as a float: a number >= 0, or inf (also the text "inf", as plans write it) for a model
    without a privacy claim. Anything else (a bool, NaN, a negative number, other text) is a `LabelDPInputError`
    naming ``name`` (its field, so that the command line names its flag)."""
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not float(value) >= 0:
        raise LabelDPInputError(f"{name} must be >= 0, or inf for a model without a privacy claim; got {value!r}",
                                field=name)
    return float(value)


def check_name(text: str, name: str = "model name") -> str:
    """Returns ``text`` if it is a safe single path component, else raises ``LabelDPInputError``.

    Allowed: letters, digits, '-', '_', '.', at most 128 characters, starting with a letter or digit (so
    '.', '..' and hidden names are impossible); no '/' or '\\', hence no path traversal.
    """
    if not isinstance(text, str) or not text:
        raise LabelDPInputError(f"{name} must be a non-empty string; got {text!r}", field=name)
    if len(text) > MAX_NAME_LENGTH:
        raise LabelDPInputError(f"{name} must be at most {MAX_NAME_LENGTH} characters; got {len(text)}", field=name)
    if not _NAME_RE.fullmatch(text):
        raise LabelDPInputError(
            f"{name} may contain only letters, digits, '-', '_' and '.', and must start with a letter or "
            f"digit; got {text!r}", field=name
        )
    return text
