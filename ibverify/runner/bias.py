"""`ibverify bias` for one or several optimizers: in this process, or every (optimizer, model, dataset) as a task
on Dask (a LocalCluster of `workers` processes or the cluster at `scheduler`, runner.distributed.client_for).

One implementation of the judging: a task is checks.bias.judge_problem, and each optimizer's answer is assembled by
checks.bias.identify from the tasks' results (its `judge` hook), the same code and order as in this process, so
both ways give the same answers and evidence (only CPU seconds differ). Each model's datasets are drawn once and
shared by every optimizer (`SharedDraws`). On Dask the first `datasets` datasets of every (optimizer, model) are
submitted at once; a replacement for a dataset set aside is submitted when the answer asks for it.
"""

from __future__ import annotations

import shlex
import threading
import time
import uuid
from contextlib import nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from .. import IbverifyError, __version__
from ..checks import bias
from ..claims import file_sha256
from ..recipes import RunStore
from .claim import provenance as code_provenance, versions
from .distributed import RETRIES, client_for, describe, quiet_warnings


class SharedDraws:
    """A model's datasets, drawn once for every optimizer: a lazily extended list over an iterator."""

    def __init__(self, source):
        self._it, self.seen = iter(source), []

    def __iter__(self):
        k = 0
        while True:
            if k == len(self.seen):
                nxt = next(self._it, None)
                if nxt is None:
                    return
                self.seen.append(nxt)
            yield self.seen[k]
            k += 1

    def first(self, k: int) -> list:
        out = []
        for pr in self:
            if len(out) == k:
                break
            out.append(pr)
        return out


def bias_task(model: str, pr, spec, tier: str) -> bias.Judgement:
    """One (optimizer, model, dataset) in a Dask worker: checks.bias.judge_problem, with its CPU seconds. The
    problem travels as recipes (its data rebuilt from them); its runs are made in a run store of the task's own."""
    quiet_warnings()
    c0 = time.process_time()
    done = bias.judge_problem(model, pr, spec, tier, store=RunStore())
    done.cpu_elsewhere = time.process_time() - c0
    return done


class _Tasks:
    """The submitted tasks by (optimizer index, model, dataset tag); `judge_for(i)` is identify's judge hook."""

    def __init__(self, client, tier: str, say: Callable[[str], None]):
        self.client, self.tier, self.say = client, tier, say
        self.futures: dict = {}
        self.token, self.done, self.lock = uuid.uuid4().hex[:8], 0, threading.Lock()

    def submit(self, i: int, name: str, model: str, pr, spec):
        key = (i, model, pr.tag)
        if key not in self.futures:
            f = self.client.submit(bias_task, model, pr, spec, self.tier, pure=False, retries=RETRIES,
                                   key=f"ibverify-bias-{i}-{model}-{pr.tag}-{self.token}")
            f.add_done_callback(lambda _f, n=f"{name} {model} {pr.tag}": self._finished(n))
            self.futures[key] = f
        return self.futures[key]

    def _finished(self, what: str) -> None:
        with self.lock:
            self.done += 1
            self.say(f"{what} judged ({self.done}/{len(self.futures)} tasks)")

    def judge_for(self, i: int):
        def judge(model, pr, spec):
            try:
                return self.submit(i, spec.name, model, pr, spec).result()
            except IbverifyError:
                raise
            except Exception as e:   # a worker that died too often (KilledWorker), a lost connection: one line
                raise IbverifyError(f"{spec.name}, {model} model, dataset {pr.tag}: the Dask task failed: "
                                    f"{type(e).__name__}: {e}") from None
        return judge

    def cancel(self) -> None:
        self.client.cancel(list(self.futures.values()))


def identify_all(specs: list, *, tier: str, seed: int, datasets: int, data=None, data_name: str = "",
                 models: list[str] | None = None, say: Callable[[str], None] = lambda s: None, progress=None,
                 workers: int = 1, scheduler: str | None = None, client=None,
                 on_cluster: Callable[[str], None] = lambda info: None) -> list[dict]:
    """checks.bias.identify's answer for each spec, in order. Every spec is checked (checks.bias.plan) before any
    run. workers = 1, no scheduler and no client: in this process (`progress` gets the steps); else on Dask: the
    Dask `client` given (left open), or client_for(workers, scheduler). `data`: a user's dataset as a data recipe
    (None: the generated ones); the data and this process's runs live in one run store of this call."""
    store = RunStore()
    kw = dict(tier=tier, datasets=datasets, data=data, data_name=data_name, models=models, store=store)
    plans = [bias.plan(spec, **kw) for spec in specs]
    shared: dict[str, SharedDraws] = {}

    def problems(model: str) -> SharedDraws:
        if model not in shared:
            shared[model] = SharedDraws(bias.problem_source(model, seed, data, data_name, say, store))
        return shared[model]

    def answer(spec, judge=None) -> dict:
        named = say if len(specs) == 1 else (lambda msg: say(f"{spec.name}: {msg}"))
        return bias.identify(spec, seed=seed, say=named, progress=progress if judge is None else None,
                             problems=problems, judge=judge, **kw)

    if client is None and scheduler is None and workers <= 1:
        return answered([answer(spec) for spec in specs])
    k = 1 if data is not None else datasets
    with nullcontext(client) if client is not None else client_for(workers, scheduler) as client:
        on_cluster(describe(client))
        tasks = _Tasks(client, tier, say)
        try:
            for i, (spec, (names, _)) in enumerate(zip(specs, plans, strict=True)):
                for m in names:
                    for pr in problems(m).first(k):
                        tasks.submit(i, spec.name, m, pr, spec)
            return answered([answer(spec, tasks.judge_for(i)) for i, spec in enumerate(specs)])
        finally:
            tasks.cancel()


def answered(answers: list[dict]) -> list[dict]:
    """The answers, when at least one model of one optimizer was judged (a model that was not says why in its
    entry, `not_judged`, and the others stand: exit 0); else one IbverifyError line with every reason (exit 2)."""
    entries = [m for a in answers for m in a["models"]]
    if entries and all("not_judged" in m for m in entries):
        raise IbverifyError("; ".join(dict.fromkeys(f"{m['model']}: {m['not_judged']}" for m in entries)))
    return answers


def provenance(argv: list[str], *, tier: str, seed: int, datasets: int, data_file: str | None = None,
               ran_on: str = "this process") -> dict:
    """Where a bias answer comes from: the command line, ibverify's version and commit, the date, tier, seed,
    datasets (a user's file with its sha256), where it ran and the libraries' versions."""
    out = {"command": "ibverify " + shlex.join(argv), "ibverify": __version__, **code_provenance(),
           "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "tier": tier, "seed": seed,
           "datasets": datasets, "data": None, "ran_on": ran_on, "versions": versions()}
    if data_file is not None:
        out["data"] = {"file": str(Path(data_file).resolve()), "sha256": file_sha256(data_file)}
    return out
