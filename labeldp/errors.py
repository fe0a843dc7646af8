"""The one exception type for bad input anywhere in labeldp-audit.

Every message names the argument, column, file or line at fault, what was expected and what was received
(and, for columns, how many rows are bad). The command line prints the message and exits with status 2,
without a traceback.

Fields, not flags. Library code (labeldp/, auditing/, pipelines/) does not know which command line flag,
plan field or keyword argument a value came from, so its messages name a value by its field's plain name
(``model``, ``claimed_epsilon``, ``data_root``) and the raise says which field it is about::

    raise LabelDPInputError(f"model must be a safe name; got {value!r}", field="model")

The mechanism: a field's name in a message is *marked* (`mention` wraps it in ASCII unit separators,
``\\x1f``, a character no user types and no message otherwise holds). ``field=`` marks the message's leading
word when it is exactly the field's name (the usual "<field> must be ..." and "<field>: ..." messages), so
those need nothing more; a message naming its field (or another field, e.g. a flag to pass instead)
elsewhere writes ``mention("data_root")`` there. The exception keeps the marked text as ``template`` and
renders it twice:

* ``str(exc)`` (and ``exc.args[0]``): every marked name as its plain name, e.g. "model must be ...";
* ``exc.for_flags({"model": "--model"})``: every marked name that has a flag as the flag, e.g.
  "--model must be ..."; a name without one stays plain. The command line (`flows.cli.error_text`) holds
  each command's ``FLAGS``, the only place a field meets its flag.

A wrapper adding context keeps the marks with ``exc.template`` (``str(exc)`` drops them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_MARK = "\x1f"
_MARKED = re.compile(f"{_MARK}([^{_MARK}]+){_MARK}")


def mention(field: str) -> str:
    """A field's name as a message writes it where it is not the message's leading word: its plain name,
    marked so that `LabelDPInputError.for_flags` can put the command's flag there."""
    return f"{_MARK}{field}{_MARK}"


def _render(template: str, flags: Mapping[str, str]) -> str:
    return _MARKED.sub(lambda m: flags.get(m.group(1), m.group(1)), template)


class LabelDPInputError(ValueError):
    """Bad input from a user: an argument out of range, a malformed file, a column with bad rows.

    ``field``: the argument the message is about (its plain name, e.g. ``"model"``), or None.
    """

    def __init__(self, message: str = "", *, field: str | None = None):
        message = str(message)
        if field and message.startswith(field) and not message.startswith(_MARK) \
                and not message[len(field):len(field) + 1].isidentifier():
            message = mention(field) + message[len(field):]
        self.field = field
        self.template = message
        super().__init__(_render(message, {}))

    def for_flags(self, flags: Mapping[str, str]) -> str:
        """The message with each field it names replaced by that field's flag in ``flags`` (field -> flag);
        a field without a flag keeps its plain name, and a message naming no field is returned unchanged."""
        return _render(self.template, flags)

    def __reduce__(self):  # across processes (Beam, Dask workers): keep the marks and the field
        return _rebuild, (type(self), self.template, self.field, self.__dict__)


def _rebuild(cls, template: str, field: str | None, state: dict) -> LabelDPInputError:
    exc = cls.__new__(cls)
    Exception.__init__(exc, _render(template, {}))
    exc.__dict__.update(state)
    exc.field, exc.template = field, template
    return exc
