"""Run selected claims and build the results dict (schema `ibverify.results/1`, docs/ARCHITECTURE.md)."""

from __future__ import annotations

import platform
import time
import traceback
from datetime import datetime, timezone
from importlib import metadata
from typing import Callable

from . import IbverifyError, __version__
from .claims import Claim, CheckContext, as_expected, verdict

SCHEMA = "ibverify.results/1"


def versions() -> dict[str, str]:
    out = {"ibverify": __version__, "python": platform.python_version()}
    for pkg in ("numpy", "scipy", "cvxpy", "clarabel", "highspy", "numba", "mpmath", "sympy", "hypothesis"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def reproduce_command(claim: Claim, tier: str) -> str:
    return f"ibverify verify {claim.id} --tier {tier}"


def run_claim(claim: Claim, tier: str, seed: int = 0,
              progress: Callable[[str], None] = lambda m: None) -> dict:
    """Run one claim's check; errors become verdict 'error' with a one-line message (never a pass)."""
    params = claim.params_for(tier)
    ctx = CheckContext(claim, tier, {**claim.convention, **params}, seed, progress)
    t0 = time.perf_counter()
    outcome, error = None, None
    try:
        outcome = claim.function()(ctx)
    except IbverifyError as e:
        error = str(e)
    except Exception as e:  # a crashing check is an error verdict, with the traceback's last line
        error = f"{type(e).__name__}: {e}".splitlines()[0]
        progress(traceback.format_exc())
    word = verdict(claim, outcome)
    try:
        chash = claim.check_hash()
    except IbverifyError:
        chash = ""
    return {
        "id": claim.id, "paper": claim.paper, "result": claim.result, "status": claim.status,
        "statement": claim.statement, "assumptions": claim.assumptions, "convention": claim.convention,
        "controls": claim.controls,
        "expect": claim.expect, "verdict": word, "as_expected": as_expected(claim, word),
        "tier": tier, "params": params, "tolerances": claim.tolerances,
        "check": claim.check, "check_hash": chash,
        "runtime_s": round(time.perf_counter() - t0, 3), "seed": seed,
        "reproduce": reproduce_command(claim, tier),
        "outcome": outcome.to_json() if outcome else None,
        "error": error,
    }


def verify(claims: list[Claim], tier: str, seed: int = 0,
           on_start: Callable[[Claim], None] = lambda c: None,
           on_done: Callable[[dict], None] = lambda r: None,
           progress: Callable[[str], None] = lambda m: None) -> dict:
    rows = []
    for c in claims:
        on_start(c)
        r = run_claim(c, tier, seed, progress)
        on_done(r)
        rows.append(r)
    return {
        "schema": SCHEMA,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tier": tier, "seed": seed, "versions": versions(),
        "summary": summarize(rows),
        "claims": rows,
    }


def summarize(rows: list[dict]) -> dict:
    return {"total": len(rows), "as_expected": sum(r["as_expected"] for r in rows),
            "unexpected": sum(not r["as_expected"] for r in rows),
            "errors": sum(r["verdict"] == "error" for r in rows)}
