"""The scripts of benchmarks/ as modules, for tests that check a figure or a rule a benchmark computes
(benchmarks/ is not a package: each script is loaded from its file, once per name)."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@functools.cache
def benchmark(name: str) -> ModuleType:
    """benchmarks/<name>.py, loaded as the module ``name``."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
