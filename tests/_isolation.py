"""What a test never inherits from the shell that runs pytest: the process-wide settings ibverify reads.

ibverify reads $IBVERIFY_CLAIMS, $IBVERIFY_CACHE, $IBVERIFY_RUNS, $IBVERIFY_REPORT (the pytest plugin),
$IBVERIFY_INTERRUPT_AT_STEP / $IBVERIFY_KILL_AT_STEP (test hooks of the run loop), $HYPOTHESIS_PROFILE and
the working directory (./claims, .ibverify-cache, reports/). tests/conftest.py gives every test
`clean_environ()` and an empty working directory of its own; a child process gets `subprocess_env()`
explicitly, also from a module- or session-scoped fixture, which runs before that per-test fixture.
$IBVERIFY_CHROMIUM (which browser the report's browser test uses), $CI and numba's own variables are kept:
they choose tools or output, not results (a test that asserts on numba's cache folder or on $CI sets it itself).
The hypothesis profile pytest loaded ($HYPOTHESIS_PROFILE=dev: random draws) stays the caller's choice."""

from __future__ import annotations

import os
from pathlib import Path

import ibverify

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = ROOT / "claims"
# Where the ibverify under test was imported from: the checkout itself (PYTHONPATH, an editable install or
# `python -m pytest` from the root, which finds it through the working directory) or an installed copy.
CODE = Path(ibverify.__file__).resolve().parent.parent
KEEP = frozenset({"IBVERIFY_CHROMIUM"})
UNSET = frozenset({"HYPOTHESIS_PROFILE"})


def drops(name: str) -> bool:
    """True for a variable no test inherits (every IBVERIFY_* setting but the browser's path, and the profile)."""
    return name in UNSET or (name.startswith("IBVERIFY_") and name not in KEEP)


def clean_environ(environ=None) -> dict[str, str]:
    """A copy of `environ` (default os.environ) as every test starts with it: the settings above removed, the
    registry pinned to this checkout's claims/ (not ./claims, nor an installed copy), and, when the code
    under test is this checkout, that checkout first on PYTHONPATH, so that a child process started from
    another directory imports the same ibverify as the test."""
    env = {k: v for k, v in (os.environ if environ is None else environ).items() if not drops(k)}
    env["IBVERIFY_CLAIMS"] = str(CLAIMS)
    if CODE == ROOT:
        rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != ROOT]
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *rest])
    return env


def subprocess_env(*, without: tuple[str, ...] = (), **extra: str) -> dict[str, str]:
    """The env= of a child process a test starts: clean_environ(), less `without`, plus `extra`."""
    env = clean_environ()
    for name in without:
        env.pop(name, None)
    env.update(extra)
    return env
