"""Claims as tasks on Dask distributed: a LocalCluster on this machine, or an existing cluster.

`run_on_dask` submits one task per claim (`claim_task`: `ibverify.runner.claim.run_claim` in a worker) and
yields `(index, row)` as tasks finish; `ibverify.runner.verify.verify` puts the rows back in registry order.
Scheduling, retries and worker restarts are Dask's:
- a task whose worker dies (killed, out of memory) is rescheduled on another worker by the scheduler,
  up to `distributed.scheduler.allowed-failures` times (3); a task that raises is retried `RETRIES`
  times (`retries=`); after that the claim gets verdict `error` with the reason, never a pass;
- LocalCluster: `workers` processes with one thread each (a check is single-threaded numpy/numba code;
  hypothesis is not thread-safe), no memory limit, and no heartbeat timeout (a long numba kernel may
  hold the GIL for minutes).
Workers load the same hypothesis profile as the client and seed every claim from (claim id, seed),
so a claim's verdict and figures do not depend on which worker ran it. Examples as tasks: a check
calling `run_property` first records the examples hypothesis will draw, evaluates them as tasks
(`example_task`, via `worker_client`), then runs the property on the precomputed values
(ibverify.checks.prop._prefetch); the property, its order and its counterexample stay sequential.
Training runs that a claim and its controls share are computed once across workers (`shared_runs`,
ibverify.cache.shared_value).
Progress (one event per example, throttled messages) reaches the client through Dask's event log (topic `TOPIC`).
Dask is imported here only, when a cluster is used: `ibverify --help` stays fast.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import tempfile
import time
import uuid
import warnings
from contextlib import contextmanager
from typing import Callable, Iterator

from hypothesis.errors import HypothesisDeprecationWarning

from .. import profiles
from ..errors import IbverifyError
from ..cache import RUNS_ENV, state_fingerprint
from .claim import claim_row, run_claim

TOPIC = "ibverify-progress"
RETRIES = 2


class _Events:
    """Progress of a claim in a worker, sent to the client as events on TOPIC (messages at most 1/s).
    Picklable (it finds its worker when called), so a check's closures can travel to example tasks."""

    def __init__(self, claim_id: str):
        self.claim_id, self.last = claim_id, 0.0

    def _send(self, msg: dict) -> None:
        from distributed import get_worker  # start-up time: dask

        try:
            get_worker().log_event(TOPIC, {"claim": self.claim_id, **msg})
        except ValueError:  # not in a worker
            pass

    def __call__(self, msg: str) -> None:
        now = time.monotonic()
        if now - self.last >= 1.0:
            self.last = now
            self._send({"message": msg.splitlines()[-1][:200]})

    def example(self) -> None:
        self._send({"example": 1})


def claim_task(claim, tier: str, seed: int, cache: str | None, profile: str, examples_as_tasks: bool = True,
               runs: str | None = None) -> dict:
    """Run one claim in a Dask worker; progress goes to the client as events on TOPIC. With
    examples_as_tasks, a hypothesis-property check evaluates its examples as further tasks."""
    profiles.load(profile)
    # hypothesis sees the worker's own threads draw from `random` during a draw and blames the strategy
    warnings.filterwarnings("ignore", "Do not use the `random` module inside strategies", HypothesisDeprecationWarning)
    if cache is not None:  # in-run checkpoints of resumable checks (per_sample.resumable) go there too
        os.environ["IBVERIFY_CACHE"] = cache
    if runs is not None:  # a worker of an existing cluster did not inherit it (cache.shared_value)
        os.environ.setdefault(RUNS_ENV, runs)
    events = _Events(claim.id)
    events._send({"started": 1})
    quiet_warnings()   # process-wide in the worker, like the filters above (catch_warnings is not thread-safe)
    cpu = [0.0]   # CPU seconds of the claim's examples evaluated as tasks (runner.claim.CPU_SECONDS)
    return run_claim(claim, tier, seed, events, cache, events.example,
                     map_examples=_map_examples(claim.id, events, cpu) if examples_as_tasks else None,
                     clock=time.thread_time, extra_cpu=lambda: cpu[0])


def quiet_warnings() -> None:
    """In a worker, the filters `ibverify` sets in its own process (cli.commands.main): RuntimeWarning (every result
    is checked finite) and UserWarning (solver chatter, the schedule-range ScheduleWarning; statuses and ranges are
    checked and reported instead). Without them each worker printed multi-line warnings the client never shows."""
    warnings.simplefilter("ignore", RuntimeWarning)
    warnings.simplefilter("ignore", UserWarning)


IMPURE = "impure"  # example_task's answer when the evaluation changed state the check sees


def example_task(evaluate: Callable, drawn, events: _Events):
    """Evaluate one drawn example: (its Example, the task's CPU seconds: thread_time); (None, s) when it raises;
    (IMPURE, s) when it also changed state the check sees (appended evidence to a list, say). In both last cases the
    claim evaluates the example itself, where a rejection, an error or a side effect happens as in a sequential run."""
    c0 = time.thread_time()
    value = _evaluate_example(evaluate, drawn, events)
    return value, time.thread_time() - c0


def _evaluate_example(evaluate: Callable, drawn, events: _Events):
    # `assume` / `reject` in evaluate work outside a hypothesis test too (raise when false), with a warning
    warnings.filterwarnings("ignore", r"Using `(assume|reject)` outside a property-based test",
                            HypothesisDeprecationWarning)
    quiet_warnings()
    try:
        before = state_fingerprint(evaluate, drawn)
        value = evaluate(drawn)
    except Exception:
        return None
    if before is None or state_fingerprint(evaluate, drawn) != before:
        return IMPURE
    events.example()
    return value


def _counterexample(value) -> bool:
    """An evaluated example the property stops at (checks.prop.Example with ok False)."""
    return getattr(value, "ok", True) is False


def _map_examples(claim_id: str, events: _Events, cpu: list | None = None) -> Callable[[Callable, list], list]:
    """ctx.map_examples for a claim running in a worker: the examples as tasks. The first examples go
    alone (probes) until one comes back; if that evaluation had a side effect, the check's examples are
    left to the claim (no work is done twice), else the rest go out at once. The property stops at its first
    counterexample (checks.prop), so no example drawn after one is evaluated: a probe that is one sends nothing
    more, and one among the rest cancels those after it that have not run (a refuted control's one deciding example
    instead of all its draws at the full tier's horizons)."""

    def map_examples(evaluate: Callable, drawn: list) -> list:
        from distributed import worker_client  # start-up time: dask

        token = uuid.uuid4().hex[:8]
        out: list = [None] * len(drawn)  # None: the claim evaluates that example itself

        def result(f):
            try:
                value, seconds = f.result()
            except Exception:  # a worker died too often, `evaluate` could not be pickled
                return None
            if cpu is not None:
                cpu[0] += seconds
            return value

        with worker_client() as client:  # the claim's task leaves its slot to the example tasks meanwhile
            def submit(i):
                return client.submit(example_task, evaluate, drawn[i], events, key=f"ibverify-{claim_id}-ex{i}-{token}",
                                     retries=RETRIES, pure=False)

            try:
                start = 0
                while start < min(3, len(drawn)) and (start == 0 or out[start - 1] is None):
                    out[start] = result(submit(start))
                    start += 1
                if start == 0 or out[start - 1] is None or isinstance(out[start - 1], str):  # raised / IMPURE
                    return [None] * len(drawn)
                if _counterexample(out[start - 1]):
                    return out[:start] + [None] * (len(drawn) - start)
                futures = {i: submit(i) for i in range(start, len(drawn))}
            except Exception:  # e.g. `evaluate` cannot be pickled: no examples as tasks for this check
                return [None] * len(drawn)
            for i, f in futures.items():   # in draw order
                out[i] = result(f)
                if _counterexample(out[i]):
                    client.cancel([g for j, g in futures.items() if j > i])
                    out[i + 1:] = [None] * (len(drawn) - i - 1)
                    break
        return [None if isinstance(v, str) else v for v in out]

    return map_examples


@contextmanager
def shared_runs(cache: str | None):
    """$IBVERIFY_RUNS for the cluster's workers (cache.shared_value): <cache>/runs, kept for a resumed run, or
    a temporary folder removed at the end. Set before the LocalCluster starts, so its workers inherit it."""
    old = os.environ.get(RUNS_ENV)
    folder = os.path.join(cache, "runs") if cache else tempfile.mkdtemp(prefix="ibverify-runs-")
    os.environ[RUNS_ENV] = folder
    try:
        yield folder
    finally:
        if old is None:
            os.environ.pop(RUNS_ENV, None)
        else:
            os.environ[RUNS_ENV] = old
        if not cache:
            shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def client_for(workers: int, scheduler: str | None):
    """A Dask Client: connected to `scheduler`, or to a new LocalCluster of `workers` processes."""
    import dask  # start-up time: dask (imported only when a cluster is used)
    from distributed import Client, LocalCluster  # start-up time: dask

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as e:
            raise IbverifyError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from None
        except (ValueError, TypeError) as e:   # "missing port number", an unknown protocol: not an address
            raise IbverifyError(f"--scheduler {scheduler!r} is not a Dask scheduler address (e.g. tcp://host:8786): "
                                f"{' '.join(str(e).split())}") from None
        with client:
            yield client
        return
    with dask.config.set({"distributed.scheduler.worker-ttl": None, "distributed.admin.tick.limit": "1h"}):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, memory_limit=0,
                          dashboard_address=":0", silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
            yield client


def describe(client) -> str:
    """One line: the cluster's size and its dashboard address."""
    info = client.scheduler_info()
    nw = len(info.get("workers", {}))
    threads = sum(w.get("nthreads", 1) for w in info.get("workers", {}).values())
    link = client.dashboard_link
    served = "" if importlib.util.find_spec("bokeh") else " (pip install bokeh to serve it)"
    return f"Dask cluster {client.scheduler.address}: {nw} workers, {threads} threads; dashboard {link}{served}"


def run_on_dask(claims: list, indices: list[int], tier: str, seed: int, *, workers: int, scheduler: str | None,
                cache: str | None, profile: str, on_example: Callable[[], None] = lambda: None,
                progress: Callable[[str], None] = lambda m: None,
                on_cluster: Callable[[str], None] = lambda info: None,
                runtimes: dict[str, float] | None = None,
                on_start: Callable = lambda claim: None) -> Iterator[tuple[int, dict]]:
    """Submit one task per claim; yield (indices[k], row) in completion order. `runtimes` (claim id →
    seconds, from an earlier run) start the longest claims first (Dask `priority`), which shortens the run;
    it changes no result."""
    from distributed import as_completed  # start-up time: dask

    with shared_runs(cache) as runs, client_for(workers, scheduler) as client:
        on_cluster(describe(client))

        by_id = {c.id: c for c in claims}

        def handler(event) -> None:
            _, msg = event
            if msg.get("started") and msg.get("claim") in by_id:
                on_start(by_id[msg["claim"]])
            elif msg.get("example"):
                on_example()
            elif msg.get("message"):
                progress(f"{msg['claim']}: {msg['message']}")

        client.subscribe_topic(TOPIC, handler)
        token = uuid.uuid4().hex[:8]
        futures = {}
        for k, c in enumerate(claims):
            f = client.submit(claim_task, c, tier, seed, cache, profile, True, runs,
                              key=f"ibverify-{c.id}-{tier}-s{seed}-{token}", retries=RETRIES, pure=False,
                              priority=int((runtimes or {}).get(c.id, 0.0) * 1000))
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
