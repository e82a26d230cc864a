"""One claim run: the check called with its context, the verdict, the results row (schema in docs/ARCHITECTURE.md)."""

from __future__ import annotations

import functools
import platform
import shlex
import subprocess
import threading
import time
import traceback
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Callable

from ..errors import IbverifyError
from ..version import __version__
from ..cache import for_claim
from ..claims import CheckContext, Claim, as_expected, file_sha256, verdict
from ..evidence import Outcome
from ..recipes import RunStore
from ..report.schema import NOT_APPLICABLE

try:  # private hypothesis API, see hypothesis_without_local_constants
    from hypothesis.internal.conjecture import providers as _P

    _P._get_local_constants, _P.CONSTANTS_CACHE.cache  # noqa: B018  (both must exist)
except (ImportError, AttributeError):
    _P = None


def versions() -> dict[str, str]:
    out = {"ibverify": __version__, "python": platform.python_version()}
    for pkg in ("numpy", "scipy", "cvxpy", "clarabel", "highspy", "numba", "mpmath", "sympy", "hypothesis"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


# The committed records that `verify --stale` writes into, a row at a time, while later rows are still being made:
# results, not code, so a change to them does not make a row "dirty".
RECORDS = ("ci/baseline-*.json",)


@functools.lru_cache(maxsize=1)
def provenance() -> dict:
    """The code a row comes from: ibverify's version, `source_hash` (codehash.package_code_hash: every module's code,
    docstrings and layout aside, so it names an installed copy too), the git commit of the ibverify checkout and
    whether its tree had changes ("dirty": tracked files changed, but the records of RECORDS); commit "" and dirty None
    when ibverify is not run from a git checkout (`pip install .`), where version and source_hash are what identify
    the code. Cached per process (`provenance.__wrapped__()` looks again)."""
    from ..codehash import package_code_hash   # cached per process

    code = {"version": __version__, "source_hash": package_code_hash()}
    sha, dirty = checkout_state(Path(__file__).resolve().parents[2])
    return {"commit": sha, "dirty": dirty, **code}


def checkout_state(root: Path) -> tuple[str, bool | None]:
    """(commit, dirty) of the git checkout at `root`: dirty when a tracked file other than the RECORDS changed;
    ("", None) where `root` is no git checkout or git is missing."""
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--",
                                     ".", *(f":(exclude){p}" for p in RECORDS)],
                                    capture_output=True, text=True, timeout=10, check=True).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return "", None
    return sha, dirty


def reproduce_command(claim: Claim, tier: str, seed: int = 0) -> str:
    """The command that re-runs this row: with `--data FILE` (and `--intercept`) for a claim judged on a user's file
    (`verify --data`: the claim's params name it), which would otherwise judge the claim's default data."""
    data = claim.params.get("data_file")
    with_data = (f" --data {shlex.quote(str(data))}" + (" --intercept" if claim.params.get("intercept") else "")
                 if data else "")
    return f"ibverify verify {claim.id}{with_data} --tier {tier}" + (f" --seed {seed}" if seed else "")


def run_claim(claim: Claim, tier: str, seed: int = 0,
              progress: Callable[[str], None] = lambda m: None, cache: str | Path | None = None,
              on_example: Callable[[], None] = lambda: None, map_examples=None,
              clock: Callable[[], float] = time.process_time, extra_cpu: Callable[[], float] = lambda: 0.0) -> dict:
    """Run one claim's check; errors become verdict 'error' with a one-line message (never a pass).

    cache: the resume-cache root (None: off); the check's examples are stored and reused there
    (ibverify.cache). The row itself is cached by `verify`, not here. map_examples: see CheckContext.
    The row's `cpu_s` is clock()'s advance over the check plus extra_cpu() (see CPU_SECONDS).
    A claim whose params carry `not_applicable` (a control that `verify --data` found cannot be refuted on the user's
    data, runner.discern) is not run: its row has the verdict "not applicable", the reason and the measures."""
    params = claim.params_for(tier)
    if params.get("not_applicable"):
        why = dict(params["not_applicable"])
        figures = {k: float("nan") if v is None else v for k, v in why["figures"].items()}
        return claim_row(claim, tier, seed, Outcome(holds=None, figure=why["reason"], figures=figures,
                                                    details=why["reason"]), None, 0.0, cpu_s=0.0)
    ctx_params = {**claim.convention, **params}
    ctx = CheckContext(claim, tier, ctx_params, seed, progress,
                       cache=claim_cache(cache, claim, tier, seed), on_example=on_example,
                       map_examples=map_examples, store=RunStore.process())
    t0, c0 = time.perf_counter(), clock()
    outcome, error = None, None
    files = claim.data_files()
    try:
        with hypothesis_without_local_constants():
            outcome = claim.function()(ctx)
    except IbverifyError as e:
        error = str(e)
    except Exception as e:  # a crashing check is an error verdict, with the traceback's last line
        error = f"{type(e).__name__}: {e}".splitlines()[0]
        progress(traceback.format_exc())
    changed = [f for f, h in claim.data_files().items() if files.get(f) != h]
    if changed:   # the row would name (and be cached under) content it was not computed from: an error, never stored
        outcome, error = None, f"data file {changed[0]} changed while the claim ran; run it again"
    return claim_row(claim, tier, seed, outcome, error, time.perf_counter() - t0,
                     cpu_s=clock() - c0 + extra_cpu(), horizons=ctx.horizons)


CPU_SECONDS = """cpu_s: the CPU seconds the claim's check took. In this process (`--sequential`, `--workers 1`, the
pytest plugin): time.process_time's advance over the check, every thread of the process (numba's and BLAS's
threads included; cached examples cost nothing). On Dask: time.thread_time's advance of the worker thread that ran
the claim's task (workers are single-threaded; another task that the same worker process runs meanwhile is not
counted) plus, for examples evaluated as tasks, each example task's own thread_time, wherever it ran. Never wall
time (runtime_s) and never the scheduler's or the client's time; a row reused from the resume cache keeps the
CPU seconds of the run that computed it."""


_PIN_LOCK = threading.Lock()
_pins = [0, None]  # [number of checks running with the pool pinned, hypothesis' own function]


@contextmanager
def hypothesis_without_local_constants():
    """Hypothesis draws without its pool of "local constants".

    Hypothesis (≥ 6.131) occasionally draws a literal taken from the source of every non-installed
    module present in sys.modules, so what it draws for a claim depended on which modules happened to
    be imported before (other claims' checks, test files): the same claim with the same seed drew
    different examples run alone, after other claims, under pytest or in a Dask worker. With the pool
    pinned to empty while a check runs, the draws depend on (claim id, seed) only. Re-entrant and
    thread-safe (a Dask worker may run a second claim while the first waits for its example tasks).
    (Private hypothesis API; if it moves, nothing is pinned and tests/distributed/test_determinism.py fails.)"""
    if _P is None:
        yield
        return
    empty = _P.Constants()
    with _PIN_LOCK:
        if _pins[0] == 0:
            _pins[1] = _P._get_local_constants
            _P._get_local_constants = lambda: empty
            _P.CONSTANTS_CACHE.cache.clear()
        _pins[0] += 1
    try:
        yield
    finally:
        with _PIN_LOCK:
            _pins[0] -= 1
            if _pins[0] == 0:
                _P._get_local_constants = _pins[1]
                _P.CONSTANTS_CACHE.cache.clear()


def claim_cache(root: str | Path | None, claim: Claim, tier: str, seed: int):
    """The claim run's RunCache (ibverify.cache), None when root is None."""
    if root is None:
        return None
    return for_claim(root, claim, tier, seed, {**claim.convention, **claim.params_for(tier)})


def claim_row(claim: Claim, tier: str, seed: int, outcome, error: str | None, runtime_s: float,
              cpu_s: float | None = None, horizons: list | None = None) -> dict:
    """The results row of one claim (schema in docs/ARCHITECTURE.md): with its provenance, the commit and dirty
    flag of the checkout (`provenance`), `created` (UTC time the row was made), tier, seed, `cpu_s` (CPU_SECONDS;
    None when unknown) and, for examples judged at horizons, outcome.horizons (prop.record_horizons)."""
    word = NOT_APPLICABLE if claim.params_for(tier).get("not_applicable") else verdict(claim, outcome)
    try:
        chash = claim.check_hash()
    except IbverifyError:
        chash = ""
    params = claim.params_for(tier)
    data = ({"data": {"file": str(params["data_file"]), "sha256": file_sha256(params["data_file"]),
                      "intercept": bool(params.get("intercept", False))}}
            if params.get("data_file") else {})   # a user's data file (`verify --data`): path and content judged
    return {
        "id": claim.id, "paper": claim.paper, "result": claim.result, "status": claim.status,
        "statement": claim.statement, "assumptions": claim.assumptions, "convention": claim.convention,
        "controls": claim.controls,
        "expect": claim.expect, "verdict": word, "as_expected": as_expected(claim, word),
        "tier": tier, "params": params, "tolerances": claim.tolerances,
        "check": claim.check, "check_hash": chash, **data,
        "runtime_s": round(runtime_s, 3), "cpu_s": None if cpu_s is None else round(cpu_s, 3), "seed": seed,
        **provenance(), "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "reproduce": reproduce_command(claim, tier, seed),
        "outcome": _outcome_json(outcome, horizons),
        "error": error,
    }


def _outcome_json(outcome, horizons: list | None) -> dict | None:
    """The outcome as JSON, with `horizons` (one record per example judged at a horizon) when there are any."""
    if not outcome:
        return None
    out = outcome.to_json()
    if horizons:
        out["horizons"] = [dict(h) for h in horizons]
    return out
