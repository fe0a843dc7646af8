"""A package's public names, loaded on first use (PEP 562): the front doors of ``auditing`` and ``pipelines``
list their names once, and importing one submodule does not import every heavy dependency behind the others."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for a package whose public name N lives in module ``exports[N]``; a name is
    imported from its module on first access and then cached in ``namespace`` (the package's globals())."""

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
