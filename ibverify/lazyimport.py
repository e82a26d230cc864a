"""A module imported on first use (the standard library's `importlib.util.LazyLoader`).

cvxpy costs about 2 CPU-s to import (it probes every solver it knows, jax among them when jax is installed); the
modules that build convex programs bind it with `cp = lazy("cvxpy")`, so a process that never solves one (a run, a
report, `--help`, most test workers' CLI subprocesses) never pays for it. The first attribute access imports it
for real; a module already imported is returned as it is.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy(name: str) -> ModuleType:
    """The module `name`, executed on its first attribute access (at once if it is already imported)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
