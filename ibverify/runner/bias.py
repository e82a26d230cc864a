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

from ..errors import IbverifyError
from ..version import __version__
from ..checks import bias
from ..claims import file_sha256
from .claim import provenance as code_provenance, versions
from .decades import by_decade
from .distributed import RETRIES, client_for, describe, quiet_warnings
from . import torchloop
from .torchloop import ForeignStore
from .underflow import judge_capped


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
    """One (optimizer, model, dataset) in a Dask worker: checks.bias.judge_problem (as judged in this process:
    underflow.judge_capped), with its CPU seconds. The problem travels as recipes (its data rebuilt from them); its
    runs are made in a run store of the task's own."""
    quiet_warnings()
    c0 = time.process_time()
    done = judge_capped(model, pr, spec, tier, store=ForeignStore())
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

    def judge_for(self, i: int, adjust=lambda m, pr, sp: sp):
        def judge(model, pr, spec):
            spec = adjust(model, pr, spec)
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
                 on_cluster: Callable[[str], None] = lambda info: None, adjust: list | None = None,
                 width: int = 8, advise: Callable[[dict], str | None] = lambda entry: None) -> list[dict]:
    """checks.bias.identify's answer for each spec, in order. Every spec is checked (checks.bias.plan) before any
    run. workers = 1, no scheduler and no client: in this process (`progress` gets the steps); else on Dask: the
    Dask `client` given (left open), or client_for(workers, scheduler). `data`: a user's dataset as a data recipe
    (None: the generated ones); the data and this process's runs live in one run store of this call. `adjust[i]`:
    spec i as run on one (model, problem, store) (`conventions`; default: as given). A torch optimizer's linear-model
    runs are made by runner.torchloop (ForeignStore), equal to the engine's to rounding and ≈ 3–5× faster; in this
    process the first datasets' runs of an elementwise torch optimizer are made together (stack_linear). `width`:
    the two-layer net's on a user's dataset; `advise(entry)`: what to try for a model not judged (appended to its
    reason, and kept as its "advice")."""
    store = ForeignStore()
    adjust = adjust or [None] * len(specs)
    adj = [a or (lambda m, pr, sp, st: sp) for a in adjust]
    kw = dict(tier=tier, datasets=datasets, data=data, data_name=data_name, models=models, store=store)
    plans = [bias.plan(spec, **kw) for spec in specs]
    shared: dict[str, SharedDraws] = {}

    def problems(model: str) -> SharedDraws:
        if model not in shared:
            shared[model] = SharedDraws(bias.problem_source(model, seed, data, data_name, say, store, width))
        return shared[model]

    underflows: list[dict] = [{} for _ in specs]   # per spec: (model, dataset) → where its float64 run underflowed

    def answer(i, spec, judge=None) -> dict:
        named = say if len(specs) == 1 else (lambda msg: say(f"{spec.name}: {msg}"))
        if judge is None:
            def judge(m, pr, sp):
                return judge_capped(m, pr, adj[i](m, pr, sp, store), tier, progress, store=store)

        def recorded(m, pr, sp):
            done = judge(m, pr, sp)
            if getattr(done, "underflow", None):
                underflows[i][m, pr.tag] = done.underflow
            return done
        out = with_decades(bias.identify(spec, seed=seed, say=named, progress=None, problems=problems,
                                         judge=recorded, **kw), underflows[i])
        return with_hybrid_c(out, lambda m, pr: adj[i](m, pr, spec, store), problems, store)

    if client is None and scheduler is None and workers <= 1:
        out = []
        for i, (spec, (names, _)) in enumerate(zip(specs, plans, strict=True)):
            if "linear" in names and data is None:
                stack_linear(store, problems("linear"), spec, adj[i], tier, datasets)
            out.append(answer(i, spec))
        return answered(out, advise)
    k = 1 if data is not None else datasets
    with nullcontext(client) if client is not None else client_for(workers, scheduler) as client:
        on_cluster(describe(client))
        tasks = _Tasks(client, tier, say)
        try:
            for i, (spec, (names, _)) in enumerate(zip(specs, plans, strict=True)):
                for m in names:
                    for pr in problems(m).first(k):
                        tasks.submit(i, spec.name, m, pr, adj[i](m, pr, spec, store))
            return answered([answer(i, spec, tasks.judge_for(i, lambda m, pr, sp, a=adj[i]: a(m, pr, sp, store)))
                             for i, spec in enumerate(specs)], advise)
        finally:
            tasks.cancel()


def stack_linear(store: ForeignStore, draws: SharedDraws, spec, adjust, tier: str, k: int) -> None:
    """Name to the store the first-horizon runs of `spec` on the linear model's first k datasets, so that a torch
    optimizer with an elementwise update makes them (and their ×10 extensions) in one torch parameter
    (runner.torchloop.run_many: one torch step for k datasets); any other optimizer's runs are made as before."""
    from ..recipes import bias as recipes

    if not torchloop.stackable(spec):
        return
    first = bias.HORIZONS[tier]["linear"][0]
    made = []
    for pr in draws.first(k):
        sp = bias.resolved_spec(adjust("linear", pr, spec, store), "linear", pr.n)
        made.append(recipes.run_recipe(pr.data, None, None, sp, first))
    store.stack(made)


def with_decades(answer: dict, underflows: dict) -> dict:
    """The answer with, in each judged model's entry, its decades and switches (runner.decades.by_decade) and the
    datasets whose float64 run underflowed (`underflow`, runner.underflow; absent when none did)."""
    for m in answer["models"]:
        found = [u for (model, _), u in underflows.items() if model == m["model"]]
        if found:
            m["underflow"] = found
        if "not_judged" not in m:
            m["by_decade"], m["switches"] = by_decade(m)
    return answer


def with_hybrid_c(answer: dict, adjusted: Callable, draws: Callable, store) -> dict:
    """The answer with, in each judged model entry whose model has matrix and vector blocks (the two-layer net),
    `hybrid_c`: per dataset judged, the c its hybrid geometry was judged at and where it comes from, or why it was not
    judged (None) — optim.hybridc.implied on the spec as judged (`adjusted(model, problem)`, resolved as
    checks.bias.judge_problem resolves it) and the dataset's model's block shapes, the call checks.bias.judge_network
    makes. `draws(model)`: the model's shared datasets (their problems, found by tag)."""
    from ..optim.hybridc import implied

    for m in answer["models"]:
        if "not_judged" in m or m.get("outcome") == "bounded-norm" or not m.get("evidence"):
            continue
        tags = [d["dataset"] for d in next(iter(m["evidence"].values()))["datasets"]]
        by_tag = {pr.tag: pr for pr in draws(m["model"]).seen}
        rows = []
        for tag in tags:
            pr = by_tag[tag]
            shapes = pr.model.build(store.data(pr.data)).blocks if pr.model is not None else {}
            if not (any(len(s) == 2 for s in shapes.values()) and any(len(s) == 1 for s in shapes.values())):
                break   # no hybrid geometry on this model
            sp = bias.resolved_spec(adjusted(m["model"], pr), m["model"], pr.n)
            rows.append({"dataset": tag, **implied(sp, shapes).to_json()})
        else:
            if rows:
                m["hybrid_c"] = rows
    return answer


def conventions(spec, knobs: dict) -> tuple[Callable | None, list[str]]:
    """`ibverify bias`'s own choices for two rows of the table where no knob was given for them (each said in a note,
    printed on stderr): (adjust(model, problem, spec, store) -> the spec run on that dataset, or None; notes).
      adam (on the linear model, without --batch-size): full batch, as PyTorch's and optax's Adam (the row's own
          default there is paper 1's per-sample Adam, which is inc-adam, or --batch-size 1);
      gd (logistic loss, without --lr and --lr-decay): the constant step its theorem needs (Soudry et al. 2018: η <
          2/β), η = 1/β with β = λ_max(ZᵀZ)/(4n) the smoothness of the dataset's mean logistic loss, lr_decay 0
          (the default decaying step leaves every geometry inconclusive at 10⁷ steps); a shipped plain SGD
          (torch:SGD, optax:sgd, with or without momentum μ, no weight decay, no lr in its name) the same in effect:
          η = s/β, s = (1 − μ)/(1 − dampening) (`UserChains.gd_step_scale`), as GD with momentum's theorems assume."""
    from dataclasses import replace

    scale = 1.0 if spec.user is None and spec.name == "gd" else _shipped_sgd_scale(spec)
    constant = scale is not None and spec.loss == "logistic" and not {"lr", "lr_decay"} & set(knobs)
    full_batch = spec.user is None and spec.is_adam and spec.row.batch == "any" \
        and (spec.row.default("batch_size") or 0) == 1 and "batch_size" not in knobs
    notes = []
    if full_batch:
        notes.append(f"{spec.name}: full-batch Adam on the linear model (as PyTorch's and optax's Adam); per-sample "
                     f"Adam is inc-adam, or --batch-size 1")
    if constant:
        step = "1/β" if scale == 1.0 else f"{scale:.6g}/β, so that its effective step (1 − dampening)·η/(1 − μ) is 1/β"
        notes.append(f"{spec.name}: constant step η = {step} < 2/β (β = λ_max(ZᵀZ)/(4n), the smoothness of each "
                     f"dataset's logistic loss; lr_decay 0), the schedule of Soudry et al.'s theorem; give --lr or "
                     f"--lr-decay for another")
    if not notes:
        return None, []

    def adjust(model, pr, sp, store):
        if model != "linear":
            return sp
        if full_batch:
            sp = replace(sp, batch_size=pr.n)
        if constant:
            import numpy as np

            Z = store.data(pr.data).Z
            beta = float(np.linalg.eigvalsh(Z.T @ Z)[-1]) / (4 * len(Z))
            sp = replace(sp, lr=scale / beta, lr_decay=0.0)
        return sp

    return adjust, notes


def _shipped_sgd_scale(spec) -> float | None:
    """gd_step_scale of a shipped plain SGD whose name sets no learning rate; None for anything else."""
    chains = getattr(spec.user, "user", None) if spec.user is not None else None
    scale = getattr(chains, "gd_step_scale", None)
    return None if scale is None or "lr" in spec.row.defaults else float(scale)


def answered(answers: list[dict], advise: Callable[[dict], str | None] = lambda entry: None) -> list[dict]:
    """The answers, when at least one model of one optimizer was judged (a model that was not says why in its
    entry, `not_judged`, with `advise`'s advice, and the others stand: exit 0); else one IbverifyError line with every
    reason (exit 2)."""
    entries = [m for a in answers for m in a["models"]]
    for m in entries:
        tip = advise(m) if "not_judged" in m else None
        if tip:
            m["advice"] = tip
            m["not_judged"] += f"; {tip}"
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
