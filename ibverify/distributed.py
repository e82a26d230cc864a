"""Claims as tasks on Dask distributed: a LocalCluster on this machine, or an existing cluster.

`run_on_dask` submits one task per claim (`claim_task`: `ibverify.verify.run_claim` in a worker) and
yields `(index, row)` as tasks finish; `ibverify.verify.verify` puts the rows back in registry order.
Scheduling, retries and worker restarts are Dask's:
- a task whose worker dies (killed, out of memory) is rescheduled on another worker by the scheduler,
  up to `distributed.scheduler.allowed-failures` times (3); a task that raises is retried `RETRIES`
  times (`retries=`); after that the claim gets verdict `error` with the reason, never a pass;
- LocalCluster: `workers` processes with one thread each (a check is single-threaded numpy/numba code;
  hypothesis is not thread-safe), no memory limit, and no heartbeat timeout (a long numba kernel may
  hold the GIL for minutes).
Workers load the same hypothesis profile as the client and seed every claim from (claim id, seed),
so a claim's verdict and figures do not depend on which worker ran it. Progress (one event per
example, throttled messages) reaches the client through Dask's event log (topic `TOPIC`).
Dask is imported here only, when a cluster is used: `ibverify --help` stays fast.
"""

from __future__ import annotations

import os
import time
import uuid
from contextlib import contextmanager
from typing import Callable, Iterator

from . import IbverifyError

TOPIC = "ibverify-progress"
RETRIES = 2


def claim_task(claim, tier: str, seed: int, cache: str | None, profile: str) -> dict:
    """Run one claim in a Dask worker; progress goes to the client as events on TOPIC."""
    from distributed import get_worker

    from . import profiles
    from .verify import run_claim

    profiles.load(profile)
    if cache is not None:  # in-run checkpoints of resumable checks (per_sample.resumable) go there too
        os.environ["IBVERIFY_CACHE"] = cache
    worker = get_worker()
    last = [0.0]

    def progress(msg: str) -> None:
        now = time.monotonic()
        if now - last[0] >= 1.0:
            last[0] = now
            worker.log_event(TOPIC, {"claim": claim.id, "message": msg.splitlines()[-1][:200]})

    def on_example() -> None:
        worker.log_event(TOPIC, {"claim": claim.id, "example": 1})

    return run_claim(claim, tier, seed, progress, cache, on_example)


@contextmanager
def client_for(workers: int, scheduler: str | None):
    """A Dask Client: connected to `scheduler`, or to a new LocalCluster of `workers` processes."""
    import logging

    import dask
    from distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as e:
            raise IbverifyError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from None
        with client:
            yield client
        return
    with dask.config.set({"distributed.scheduler.worker-ttl": None, "distributed.admin.tick.limit": "1h"}):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, memory_limit=0,
                          dashboard_address=":0", silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
            yield client


def describe(client) -> str:
    """One line: the cluster's size and its dashboard address."""
    import importlib.util

    info = client.scheduler_info()
    nw = len(info.get("workers", {}))
    threads = sum(w.get("nthreads", 1) for w in info.get("workers", {}).values())
    link = client.dashboard_link
    served = "" if importlib.util.find_spec("bokeh") else " (pip install bokeh to serve it)"
    return f"Dask cluster {client.scheduler.address}: {nw} workers, {threads} threads; dashboard {link}{served}"


def run_on_dask(claims: list, indices: list[int], tier: str, seed: int, *, workers: int, scheduler: str | None,
                cache: str | None, profile: str, on_example: Callable[[], None] = lambda: None,
                progress: Callable[[str], None] = lambda m: None,
                on_cluster: Callable[[str], None] = lambda info: None) -> Iterator[tuple[int, dict]]:
    """Submit one task per claim; yield (indices[k], row) in completion order."""
    from distributed import as_completed

    from .verify import claim_row

    with client_for(workers, scheduler) as client:
        on_cluster(describe(client))

        def handler(event) -> None:
            _, msg = event
            if msg.get("example"):
                on_example()
            elif msg.get("message"):
                progress(f"{msg['claim']}: {msg['message']}")

        client.subscribe_topic(TOPIC, handler)
        token = uuid.uuid4().hex[:8]
        futures = {}
        for k, c in enumerate(claims):
            f = client.submit(claim_task, c, tier, seed, cache, profile, key=f"ibverify-{c.id}-{tier}-s{seed}-{token}",
                              retries=RETRIES, pure=False)
            futures[f] = k
        try:
            for f in as_completed(futures):
                k = futures[f]
                try:
                    row = f.result()
                except Exception as e:  # KilledWorker after repeated deaths, a task that kept raising
                    row = claim_row(claims[k], tier, seed, None, f"{type(e).__name__}: {e}".splitlines()[0], 0.0)
                yield indices[k], row
        finally:
            client.unsubscribe_topic(TOPIC)
            client.cancel(list(futures))
