"""Run selected claims and build the results dict (schema `ibverify.results/1`, docs/ARCHITECTURE.md)."""

from __future__ import annotations

import os
from contextlib import nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from ..claims import Claim
from ..report.schema import SCHEMA, summarize
from .claim import claim_cache, run_claim, versions
from .distributed import run_on_dask, shared_runs


def verify(claims: list[Claim], tier: str, seed: int = 0,
           on_start: Callable[[Claim], None] = lambda c: None,
           on_done: Callable[[dict], None] = lambda r: None,
           progress: Callable[[str], None] = lambda m: None, *,
           workers: int = 1, scheduler: str | None = None, cache: str | Path | None = None,
           profile: str | None = None, on_example: Callable[[], None] = lambda: None,
           on_cluster: Callable[[str], None] = lambda info: None,
           on_reused: Callable[[dict], None] | None = None, runtimes: dict[str, float] | None = None) -> dict:
    """Run `claims` and return the results dict; rows in the order of `claims` (registry order).

    workers = 1 and no scheduler: in this process, one claim after the other. Otherwise each claim is
    a task on Dask: a LocalCluster of `workers` single-threaded processes, or the cluster at
    `scheduler` (ibverify.runner.distributed); on_cluster gets a one-line description (dashboard address).
    Each claim is seeded from (claim id, seed) only, so both ways give the same verdicts and figures.
    cache: resume-cache root (None: off): finished rows, evaluated examples and shared training runs
    (<cache>/runs, $IBVERIFY_RUNS, in this process as on Dask) are stored there and reused by a re-run;
    a reused row goes to on_reused (default: on_done). on_start is called when a claim starts (on Dask:
    when its task starts, from Dask's event thread). runtimes: claim id → seconds of an earlier run; on
    Dask the longest claims start first (no effect on results)."""
    rows: list[dict | None] = [None] * len(claims)
    pending = []
    for i, c in enumerate(claims):
        rc = claim_cache(cache, c, tier, seed)
        row = rc.load_row() if rc is not None else None
        if row is not None:
            rows[i] = row
            (on_reused or on_done)(row)
        else:
            pending.append(i)

    def finish(i: int, row: dict) -> None:
        rc = claim_cache(cache, claims[i], tier, seed)
        if rc is not None:
            rc.store_row(row)
        rows[i] = row
        on_done(row)

    root = str(Path(cache).resolve()) if cache is not None else None
    if pending and (scheduler is not None or min(workers, len(pending)) > 1):
        for i, row in run_on_dask([claims[i] for i in pending], pending, tier, seed, workers=workers,
                                  scheduler=scheduler, cache=root, profile=profile or _profile_name(),
                                  on_example=on_example, progress=progress, on_cluster=on_cluster,
                                  runtimes=runtimes, on_start=on_start):
            finish(i, row)
    elif pending:  # in this process: with a cache, the runs a claim shares with its controls are kept there too
        with shared_runs(root) if root is not None else nullcontext():
            for i in pending:
                on_start(claims[i])
                finish(i, run_claim(claims[i], tier, seed, progress, cache, on_example))
    return {
        "schema": SCHEMA,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tier": tier, "seed": seed, "versions": versions(),
        "summary": summarize(rows),
        "claims": rows,
    }


def _profile_name() -> str:
    return os.environ.get("HYPOTHESIS_PROFILE", "ci")
