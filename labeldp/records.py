"""Reading a record's JSON object at its edge: the keys it may and must have, each named when wrong."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labeldp.errors import LabelDPInputError


def record_keys(value: Any, name: str, allowed: Sequence[str], required: Sequence[str], *,
                null_is_missing: bool = False) -> Mapping:
    """``value`` when it is a mapping whose keys are among ``allowed`` and include ``required`` (a null value
    counts as missing when ``null_is_missing``); LabelDPInputError naming ``name`` and the keys otherwise."""
    if not isinstance(value, Mapping):
        raise LabelDPInputError(f"{name} must be a dict; got {type(value).__name__}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise LabelDPInputError(f"{name}: unknown key(s) {unknown}; allowed: {list(allowed)}")
    missing = [k for k in required if (value.get(k) is None if null_is_missing else k not in value)]
    if missing:
        raise LabelDPInputError(f"{name}: missing {missing}")
    return value


__all__ = ["record_keys"]
