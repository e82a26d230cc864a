"""A torch optimizer's linear-model run without ibverify's transform round trip (issue 36: `bias` on `torch:NAME`).

The engine's reference loop (engine.vector.iterate_chain) calls a torch optimizer through ibverify's transform
protocol (a numpy step out of a torch step, added to the engine's own w, copied back in): ≈ 60 µs a step. `run` makes
the same run with torch's own step and little around it (≈ 13 µs a step for SGD with momentum, ≈ 20 for Adagrad,
measured on 14 × 9 data): the same sample order (optim.Sampler, drawn a chunk of steps at a time), the engine's
log-domain batch gradient −(1/b) Σ e^{l_i} z_i computed by a numba kernel on a view of the torch parameter into a
buffer torch reads as its .grad, the group lr set to η_t = lr·t^(−lr_decay) before each step, torch's step (without
its profiler wrapper when no step hook is registered), the same checkpoints, the same diagnostics (stalled steps: w
unchanged while the gradient is not 0) and the same one-line error for a non-finite iterate (found per chunk, its step
by replaying the chunk). Its iterates equal the engine's to rounding (tests/test_torchloop.py: ≤ 1e-12 relative over
2000 steps for Adam at ε = 0, SGD with momentum, Adagrad, mini-batch SGD): the engine adds the torch step to its own
float64 w, this loop keeps torch's. A ×10 extension continues the shorter run from its final state (the optimizer's
state_dict), bit-identical to a run from step 0. `run_many` makes several datasets' runs of an elementwise torch
optimizer in one (k, d) parameter, each row bit-identical to its own run (each row's gradient, checks and
records over its own columns only, so datasets of any feature counts and zero columns stack). `ForeignStore` is a
run store that makes a torch optimizer's vector runs here (stacked where `bias` names the runs to stack) and every
other run as RunStore does; `bias` uses it (runner.bias).
"""

from __future__ import annotations

import copy
import time

import numba as nb
import numpy as np

from ..errors import IbverifyError
from ..cache import fingerprint
from ..engine.trajectory import Run, frozen, log_checkpoints
from ..optim import Sampler
from ..optim.userguard import zero_by_zero_fix
from ..recipes import RunStore


def eligible(spec) -> bool:
    """A torch optimizer (torch:NAME, a torch.optim class) on the logistic or exponential loss."""
    made = getattr(getattr(spec.user, "user", None), "_made", None) if spec.user is not None else None
    return (str(spec.name).startswith("torch:") and isinstance(made, tuple) and len(made) == 3
            and isinstance(made[0], type) and spec.loss in ("logistic", "exponential"))


@nb.njit(cache=True, error_model="numpy", fastmath=False)
def _gradient(Zp, idx, w2, scale, logistic, g2, cols, nlive):   # pragma: no cover (compiled)
    """g2[i] = scale[i] · Σ_j e^{l_ij} z_ij over dataset i's batch idx[i] (engine.vector's log-domain gradient, scale
    = −1/b): l = −log(1 + e^{⟨z, w⟩}) (logistic) or −⟨z, w⟩ (exponential); only dataset i's live columns
    cols[i, :nlive[i]] enter ⟨z, w⟩ (in order, as its own run's) and get a gradient, the others' is 0."""
    k, b = idx.shape
    d = Zp.shape[2]
    for i in range(k):
        for c in range(d):
            g2[i, c] = 0.0
        for j in range(b):
            r = idx[i, j]
            q = 0.0
            for cc in range(nlive[i]):
                c = cols[i, cc]
                q += Zp[i, r, c] * w2[i, c]
            if logistic:
                q = max(q, 0.0) + np.log1p(np.exp(-abs(q)))   # log(1 + e^q) without overflow
            e = np.exp(-q)
            for cc in range(nlive[i]):
                c = cols[i, cc]
                g2[i, c] += e * Zp[i, r, c]
        for cc in range(nlive[i]):
            c = cols[i, cc]
            g2[i, c] *= scale[i]


@nb.njit(cache=True, error_model="numpy", fastmath=False)
def _stalls(w2, before, g2, stalled, streak, cols, nlive):   # pragma: no cover (compiled)
    """Per dataset, over its live columns: a step that left w unchanged while its gradient is not 0 counts (stalled,
    and the streak of such steps); any other step ends the streak."""
    k = w2.shape[0]
    for i in range(k):
        same, moving = True, False
        for cc in range(nlive[i]):
            c = cols[i, cc]
            if w2[i, c] != before[i, c]:
                same = False
            if g2[i, c] != 0.0:
                moving = True
        if same and moving:
            stalled[i] += 1
            streak[i] += 1
        else:
            streak[i] = 0


@nb.njit(cache=True, error_model="numpy", fastmath=False)
def _advance(Zp, idx, w2, scale, logistic, g2, before, stalled, streak, cols, nlive, made):   # pragma: no cover
    """One call between two torch steps: when `made`, the stall count of the step just made (w2 against `before`, the
    iterate before it, with g2 its gradient); then w2 kept in `before` and the next step's gradient in g2."""
    if made:
        _stalls(w2, before, g2, stalled, streak, cols, nlive)
    before[:, :] = w2
    _gradient(Zp, idx, w2, scale, logistic, g2, cols, nlive)


def loop_mode(cls):
    """The torch mode run_many's loop runs in: inference mode for torch.optim's own classes (tests/test_torchloop.py
    holds it to torch.no_grad's bits), no_grad for any other torch optimizer class (its step may turn autograd on
    for itself, which inference mode would refuse)."""
    import torch

    return torch.inference_mode() if cls.__module__.startswith("torch.optim") else torch.no_grad()


CHUNK = 1024   # steps whose sample indices are drawn at once (optim.Sampler gives the same stream as step by step)


def _step_of(opt):
    """The optimizer's own step. torch wraps every `step` in a profiler record and the step hooks; with no hook
    registered (globally or on `opt`) that wrapper adds nothing to the update, so its wrapped function is called
    (≈ 7 µs a step less; tests/test_torchloop.py holds both to the same bits). Inside it, torch's `_use_grad` sets
    grad mode to the optimizer's `differentiable` (False: off) around the step's body: for a caller already in
    grad mode off (run_many's loop, in torch.inference_mode) that is nothing either, and the body is called (≈ 2 µs a
    step less)."""
    from torch.optim import optimizer as topt

    hooks = (topt._global_optimizer_pre_hooks, topt._global_optimizer_post_hooks,
             getattr(opt, "_optimizer_step_pre_hooks", None), getattr(opt, "_optimizer_step_post_hooks", None))
    inner = getattr(type(opt).step, "__wrapped__", None)
    if inner is None or any(h is None or len(h) for h in hooks):
        return opt.step
    body = getattr(inner, "__wrapped__", None)
    if body is not None and getattr(getattr(inner, "__code__", None), "co_name", "") == "_use_grad" \
            and opt.defaults.get("differentiable", False) is False:
        return lambda: body(opt)
    return lambda: inner(opt)


# torch.optim classes whose update is elementwise, with per-step scalars shared by every coordinate (lr, step count,
# bias corrections): k datasets stacked as the rows of one (k, d) parameter are k independent runs (`run_many`).
ELEMENTWISE = ("SGD", "Adam", "AdamW", "Adagrad", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop", "ASGD", "Adadelta")


def stackable(spec) -> bool:
    """An eligible spec whose torch class is one of torch.optim's ELEMENTWISE optimizers."""
    if not eligible(spec):
        return False
    cls = spec.user.user._made[0]
    return cls.__module__.startswith("torch.optim") and cls.__name__ in ELEMENTWISE


def signature(spec) -> tuple:
    """What runs stacked in one parameter must share: the optimizer with its knobs, schedule, loss, order and seed
    (not the batch size: each dataset's own, a full batch being its n)."""
    from dataclasses import replace

    cls, kwargs, _ = spec.user.user._made
    return (cls.__module__, cls.__name__, repr(sorted(kwargs.items())), repr(replace(spec, batch_size=None)))


def run(Z: np.ndarray, spec, steps: int, checkpoints=30, progress=None, extend: Run | None = None) -> Run:
    """The run of torch optimizer `spec` (eligible) for `steps` steps on label-folded data Z (module docstring).
    `extend`: a shorter run of this function on the same data and spec whose records cover every checkpoint it
    passed; this run continues from its final state (the torch optimizer's state_dict, w, the sampler) instead of
    repeating its steps (the ×10 extension of an undecided dataset), bit-identically; otherwise it starts at 0."""
    return run_many([Z], [spec], steps, checkpoints, progress, None if extend is None else [extend])[0]


def run_many(Zs: list, specs: list, steps: int, checkpoints=30, progress=None, extend: list | None = None) -> list:
    """The runs of `run` on several datasets at once (one Run each, in order): k > 1 datasets of stackable specs of
    one signature are the rows of one (k, d_max) torch parameter, zero-padded (a zero sample adds nothing to the
    gradient, which is divided by each dataset's own batch size), so one torch step makes k steps. `extend`: the runs
    of one earlier call on the same datasets, continued. The columns zero in every dataset are set aside
    (docs/own-data.md): the torch parameter holds the others only, and the iterate keeps 0 there. Row i's **live**
    columns are those of the parameter not zero in dataset i: only they enter its gradient, its stall count, its
    finiteness check and its records (0 elsewhere), so a coordinate that row i's update moves while its gradient is
    0 (Adam at ε = 0 divides 0 by 0 on a padded feature: NaN) changes nothing of row i's run, which is its own run
    bit for bit (the update is elementwise). A NaN step where the gradient is 0 (a 0/0) in a live column is that
    error line."""
    import torch

    k = len(Zs)
    specs = [sp.resolved(len(Z)) for sp, Z in zip(specs, Zs, strict=True)]
    if k > 1 and not all(stackable(sp) and signature(sp) == signature(specs[0]) for sp in specs):
        raise IbverifyError("runs stacked in one torch parameter need one elementwise torch optimizer (ELEMENTWISE)")
    Zs = [np.ascontiguousarray(Z, dtype=np.float64) for Z in Zs]
    ns, ds, bs = [len(Z) for Z in Zs], [Z.shape[1] for Z in Zs], [sp.batch_size for sp in specs]
    spec, dmax, nmax, bmax = specs[0], max(ds), max(ns), max(bs)
    Zp = np.zeros((k, nmax + 1, dmax))   # row nmax: the zero sample that pads a smaller batch
    for i, Z in enumerate(Zs):
        Zp[i, :ns[i], :ds[i]] = Z
    # the data's zero columns are set aside (docs/own-data.md): torch runs on the others, the iterate keeps 0 there
    keep = np.flatnonzero(np.any(Zp != 0, axis=(0, 1)))
    Zp, dlive = np.ascontiguousarray(Zp[:, :, keep]), len(keep)
    live = np.any(Zp != 0, axis=1)   # (k, dlive): row i's own columns
    nlive = live.sum(axis=1).astype(np.int64)
    cols = np.zeros((k, max(dlive, 1)), np.int64)
    for i in range(k):
        cols[i, :nlive[i]] = np.flatnonzero(live[i])
    cls, kwargs, _ = spec.user.user._made
    cps = log_checkpoints(steps, checkpoints) if np.isscalar(checkpoints) else np.asarray(checkpoints, np.int64)
    t0 = time.perf_counter()
    p = torch.zeros(dlive if k == 1 else (k, dlive), dtype=torch.float64, requires_grad=True)
    w = p.detach().numpy()   # a view of p: the torch step updates it in place
    w2 = w.reshape(k, dlive)
    try:
        opt = cls([p], lr=float(spec.lr), **kwargs)
    except (TypeError, ValueError) as e:
        raise IbverifyError(f"{spec.name}: torch.optim.{cls.__name__} refused its arguments: "
                            f"{' '.join(str(e).split())}") from None
    eta0, a = float(spec.lr), float(spec.lr_decay)
    identity = fingerprint(([Z for Z in Zs], [sp.name for sp in specs], [repr(sp) for sp in specs]))
    ws = np.zeros((len(cps), k, dmax))
    state = _continue(extend, identity, cps, ws)
    if state is None:
        samplers = [Sampler(n, b, sp.order, sp.seed) for n, b, sp in zip(ns, bs, specs, strict=True)]
        t, stalled, streak, j = 0, np.zeros(k, np.int64), np.zeros(k, np.int64), 0
    else:
        w[:] = state["w"]
        opt.load_state_dict(copy.deepcopy(state["opt"]))
        samplers, t = copy.deepcopy(state["samplers"]), int(state["t"])
        stalled, streak, j = state["stalled"].copy(), state["streak"].copy(), int(state["j"])
    start = t
    grad = torch.zeros_like(p, requires_grad=False)
    g = grad.numpy()          # the gradient is written here; torch reads it as p.grad
    p.grad = grad
    g2 = g.reshape(k, dlive)
    step = _step_of(opt)
    before = np.empty((k, dlive))
    scale = -1.0 / np.asarray(bs, np.float64)
    logistic = spec.loss == "logistic"
    last = int(cps[-1])
    decay = a != 0.0
    group = opt.param_groups[0]   # after load_state_dict, which replaces the group dicts
    group["lr"] = eta0 * float(max(t, 1)) ** (-a)
    made = False   # a step made whose stall count is not yet taken (_advance takes it before the next gradient)
    nxt = int(cps[j]) if j < len(cps) else -1
    # the loop in torch's inference mode for torch.optim's classes (loop_mode): grad mode off, as torch's step sets
    # it itself (_step_of), and torch's dispatch without autograd's bookkeeping (the same kernels: ≈ 10 % of an
    # Adagrad step, 18 % of Adam's); a non-finite iterate found per chunk, then its step
    with loop_mode(cls), np.errstate(over="ignore", invalid="ignore"):
        while t < last:
            n_steps = min(CHUNK, last - t)
            idx = np.full((n_steps, k, bmax), nmax)
            for i, smp in enumerate(samplers):
                idx[:, i, :bs[i]] = smp.next(n_steps)
            snap = (t, w.copy(), copy.deepcopy(opt.state_dict()))
            for s_ in range(n_steps):
                t += 1
                _advance(Zp, idx[s_], w2, scale, logistic, g2, before, stalled, streak, cols, nlive, made)
                if decay:
                    group["lr"] = eta0 * float(t) ** (-a)
                step()
                made = True
                while t == nxt:
                    ws[j][:, keep] = np.where(live, w2, 0.0)
                    j += 1
                    nxt = int(cps[j]) if j < len(cps) else -1
            if not np.isfinite(w2[live]).all():
                bad, col = _first_non_finite(Zp, w, w2, g2, scale, opt, step, snap, idx, logistic, eta0, a, cols,
                                             nlive, live)
                if col is not None:
                    raise IbverifyError(f"{spec.name}: non-finite iterate by step {bad}: 0/0 in coordinate "
                                        f"{int(keep[col])} at step {bad} (its step is NaN where its gradient is 0; "
                                        f"the coordinate is not zero in every sample, so it is not set aside)"
                                        + zero_by_zero_fix(int(keep[col])))
                raise IbverifyError(f"{spec.name}: non-finite iterate by step {bad} (overflow: reduce --lr or check "
                                    f"the knobs and the data scale)")
            if progress:
                progress(t, last)
    if made:
        _stalls(w2, before, g2, stalled, streak, cols, nlive)
    final = {"identity": identity, "w": w.copy(), "opt": copy.deepcopy(opt.state_dict()),
             "samplers": copy.deepcopy(samplers), "t": t, "stalled": stalled.copy(), "streak": streak.copy(), "j": j,
             "continued_from": start, "member": 0}
    took = (time.perf_counter() - t0) / k
    return [Run(specs[i], "reference", cps, last, ws=ws[:, i, :ds[i]].copy(), seconds=took,
                diagnostics={"stalled_steps": int(stalled[i]), "stalled_streak": int(streak[i]),
                             "frozen": frozen(int(streak[i]), ns[i], bs[i])},
                final_state={**final, "member": i}) for i in range(k)]


def _first_non_finite(Zp, w, w2, g2, scale, opt, step, snap, idx, logistic, eta0, a, cols, nlive,
                      live) -> tuple[int, int | None]:
    """The first step of the chunk that started at `snap` (its step, w and optimizer state; `idx` its samples)
    after which w is not finite in a live column: the chunk replayed step by step, as the engine checks each step;
    with the first column (of the run's parameter) that became NaN where its gradient was 0 (a 0/0), or None."""
    t, w0, state = snap
    w[:] = w0
    opt.load_state_dict(state)
    group = opt.param_groups[0]
    for block in idx:
        t += 1
        _gradient(Zp, block, w2, scale, logistic, g2, cols, nlive)
        group["lr"] = eta0 * float(t) ** (-a)
        step()
        if not np.isfinite(w2[live]).all():
            cols0 = np.flatnonzero(np.any(np.isnan(w2) & (g2 == 0) & live, axis=0))
            return t, (int(cols0[0]) if len(cols0) else None)
    return t, None


def _continue(prev: list | None, identity: str, cps: np.ndarray, ws: np.ndarray) -> dict | None:
    """The final state of the earlier call whose runs are `prev` (member i of it at place i), with their records
    copied into ws at the checkpoints of cps it passed; None when they are not one call's runs on the same data and
    specs, are longer, or lack a record at one of those checkpoints."""
    states = [getattr(r, "final_state", None) for r in prev or ()]
    if not states or not all(isinstance(fs, dict) and fs.get("identity") == identity and fs.get("member") == i
                             for i, fs in enumerate(states)) or len(states) != ws.shape[1]:
        return None
    fs = states[0]
    if fs["t"] > int(cps[-1]):
        return None
    rec = {int(c): i for i, c in enumerate(prev[0].checkpoints)}
    done = [int(c) for c in cps if c <= fs["t"]]
    if any(c not in rec for c in done):
        return None
    for jj, c in enumerate(done):
        for i, r in enumerate(prev):
            ws[jj, i, :r.ws.shape[1]] = r.ws[rec[c]]
            ws[jj, i, r.ws.shape[1]:] = 0.0
    return {**fs, "j": len(done)}


class ForeignStore(RunStore):
    """A run store whose torch optimizers' linear-model runs are made by `run_many` and optax optimizers' by
    runner.optaxloop.run (under the same content key, so a claim and its judge share them), each continuing the
    longest shorter run of its lineage held here (`extend`); every other run as RunStore makes it. `stack(recipes)`
    names the runs to make together: the first request for one of them (or for a longer run of its lineage) makes all
    of them in one torch parameter. Sent to a Dask worker it becomes that worker's process store
    (RunStore.__reduce__), which makes every run the engine's way."""

    def __init__(self):
        super().__init__()
        self._stacks: dict[str, tuple] = {}   # lineage → the recipes made with it (first horizon)

    def stack(self, recipes) -> None:
        """Make these recipes' runs together, per signature (stackable torch optimizers on the vector loop)."""
        groups: dict = {}
        for r in recipes:
            if self._loop(r) and stackable(r.spec):
                groups.setdefault((signature(r.spec), r.steps, r.checkpoints), []).append(r)
        for members in groups.values():
            if len(members) > 1:
                for r in members:
                    self._stacks[r.lineage()] = tuple(members)

    @staticmethod
    def _loop(recipe) -> bool:
        return recipe.model is None and not recipe.options and recipe.engine in (None, "reference") \
            and eligible(recipe.spec)

    @staticmethod
    def _optax(recipe) -> bool:
        from . import optaxloop

        return recipe.model is None and not recipe.options and recipe.engine in (None, "reference") \
            and optaxloop.eligible(recipe.spec)

    @staticmethod
    def _blocks(recipe, io) -> bool:
        from . import foreignblock

        return recipe.model is not None and set(io) <= {"warn"} and recipe.engine in (None, "reference") \
            and set(dict(recipe.options)) <= {"batch"} and foreignblock.eligible(recipe.spec)

    def _block_run(self, recipe, progress, warn: bool):
        """A torch or optax optimizer's block run (runner.foreignblock), continuing the longest shorter run of its
        lineage held here; the engine's way when its chain compiles."""
        from ..models import initial_point
        from . import foreignblock

        if ("run", recipe.key()) in self._memo:
            return self._memo["run", recipe.key()]
        data, model = self.data(recipe.data), self.model(recipe)
        theta0 = recipe.theta0 if recipe.theta0 is not None else initial_point(model, recipe.init_seed,
                                                                               recipe.init_scale)
        if recipe.engine is None and foreignblock.compiles(model, data.X, data.y, recipe.spec, theta0, model.L):
            return super().run(recipe, progress=progress, warn=warn)
        held = self._lineage.setdefault(recipe.lineage(), [])
        prev = max((r for r in held if r.horizon <= recipe.steps), key=lambda r: r.horizon, default=None)
        cps = recipe.checkpoints
        cps = cps if cps is None or isinstance(cps, int) else np.asarray(cps, dtype=np.int64)
        value = self.get("run", recipe.key(), lambda: foreignblock.run(
            data.X, data.y, recipe.spec, recipe.steps, model, theta0=recipe.theta0, init_seed=recipe.init_seed,
            init_scale=recipe.init_scale, checkpoints=cps, batch=dict(recipe.options).get("batch"),
            progress=progress, warn=warn, lineage=recipe.lineage(), extend=prev))
        if all(r is not value for r in held):
            held.append(value)
        return value

    def run(self, recipe, *, progress=None, **io):
        if self._blocks(recipe, io):
            return self._block_run(recipe, progress, io.get("warn", True))
        if io or not (self._loop(recipe) or self._optax(recipe)):
            return super().run(recipe, progress=progress, **io)
        if ("run", recipe.key()) not in self._memo and recipe.lineage() in self._stacks:
            self._make_stack(recipe, progress)
        held = self._lineage.setdefault(recipe.lineage(), [])
        prev = max((r for r in held if r.horizon <= recipe.steps), key=lambda r: r.horizon, default=None)
        Z = self.data(recipe.data).Z
        cps = recipe.checkpoints if recipe.checkpoints is not None else 30
        if self._optax(recipe):
            from . import optaxloop

            def make(Z, spec, steps, cps, progress, prev):
                try:
                    return optaxloop.run(Z, spec, steps, cps, progress, prev)
                except optaxloop.Unfit:   # the engine's per-step run: its own answer or error line
                    from ..engine import run as engine_run

                    cps = cps if np.isscalar(cps) else np.asarray(cps, dtype=np.int64)
                    return engine_run(Z, spec, steps, checkpoints=cps, engine=recipe.engine, progress=progress)
        else:
            make = run
        value = self.get("run", recipe.key(), lambda: make(Z, recipe.spec, recipe.steps, cps, progress, prev))
        if all(r is not value for r in held):
            held.append(value)
        return value

    def _make_stack(self, recipe, progress) -> None:
        """Every member of recipe's stack at recipe's horizon, in one run_many (continuing the members' runs of one
        earlier stacked call when every member has one); a failure leaves each member to be made alone."""
        from dataclasses import replace

        members = [replace(r, steps=recipe.steps, checkpoints=recipe.checkpoints)
                   for r in self._stacks[recipe.lineage()]]
        prevs = []
        for r in members:
            held = self._lineage.get(r.lineage(), [])
            prevs.append(max((x for x in held if x.horizon <= recipe.steps), key=lambda x: x.horizon, default=None))
        cps = recipe.checkpoints if recipe.checkpoints is not None else 30
        try:
            runs = run_many([self.data(r.data).Z for r in members], [r.spec for r in members], recipe.steps, cps,
                            progress, None if any(x is None for x in prevs) else prevs)
        except IbverifyError:
            return
        for r, made in zip(members, runs, strict=True):
            if ("run", r.key()) not in self._memo:
                self._memo["run", r.key()] = made
                self._lineage.setdefault(r.lineage(), []).append(made)
