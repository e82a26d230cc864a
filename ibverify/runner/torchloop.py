"""A torch optimizer's linear-model run without ibverify's transform round trip (issue 36: `bias` on `torch:NAME`).

The engine's reference loop (engine.vector.iterate_chain) calls a torch optimizer through ibverify's transform
protocol (a numpy step out of a torch step, added to the engine's own w, copied back in): ≈ 60 µs a step. `run` makes
the same run in ≈ 25 µs (measured on 14 × 9 data, torch imported): the same sample order (optim.Sampler, drawn a
chunk of steps at a time), the engine's log-domain batch gradient −(1/b) Σ e^{l_i} z_i computed in numpy on a view
of the torch parameter into a buffer torch reads as its .grad, the group lr set to η_t = lr·t^(−lr_decay) before each
step, torch's own step (without its profiler wrapper when no step hook is registered), the same checkpoints, the same
diagnostics (stalled steps: w unchanged while the gradient is not 0) and the same one-line error for a non-finite
iterate (found per chunk, its step by replaying the chunk). Its iterates equal the engine's to rounding
(tests/test_torchloop.py: ≤ 1e-12 relative over 2000 steps for Adam at ε = 0, SGD with momentum, Adagrad, mini-batch
SGD): the engine adds the torch step to its own float64 w, this loop keeps torch's. A ×10 extension continues the
shorter run from its final state (the optimizer's state_dict), bit-identical to a run from step 0. `ForeignStore` is a
run store that makes a torch optimizer's vector runs here and every other run as RunStore does; `bias` uses it
(runner.bias).
"""

from __future__ import annotations

import copy
import time

import numpy as np

from .. import IbverifyError
from ..cache import fingerprint
from ..engine.trajectory import Run, frozen, log_checkpoints
from ..optim import Sampler
from ..recipes import RunStore


def eligible(spec) -> bool:
    """A torch optimizer (torch:NAME, a torch.optim class) on the logistic or exponential loss."""
    made = getattr(getattr(spec.user, "user", None), "_made", None) if spec.user is not None else None
    return (str(spec.name).startswith("torch:") and isinstance(made, tuple) and len(made) == 3
            and isinstance(made[0], type) and spec.loss in ("logistic", "exponential"))


CHUNK = 1024   # steps whose sample indices are drawn at once (optim.Sampler gives the same stream as step by step)


def _step_of(opt):
    """The optimizer's own step. torch wraps every `step` in a profiler record and the step hooks; with no hook
    registered (globally or on `opt`) that wrapper adds nothing to the update, so its wrapped function is called
    (≈ 7 µs a step less; tests/test_torchloop.py holds both to the same bits)."""
    from torch.optim import optimizer as topt

    hooks = (topt._global_optimizer_pre_hooks, topt._global_optimizer_post_hooks,
             getattr(opt, "_optimizer_step_pre_hooks", None), getattr(opt, "_optimizer_step_post_hooks", None))
    inner = getattr(type(opt).step, "__wrapped__", None)
    if inner is None or any(h is None or len(h) for h in hooks):
        return opt.step
    return lambda: inner(opt)


def run(Z: np.ndarray, spec, steps: int, checkpoints=30, progress=None, extend: Run | None = None) -> Run:
    """The run of torch optimizer `spec` (eligible) for `steps` steps on label-folded data Z (module docstring).
    `extend`: a shorter run of this function on the same data and spec whose records cover every checkpoint it
    passed; this run continues from its final state (the torch optimizer's state_dict, w, the sampler) instead of
    repeating its steps (the ×10 extension of an undecided dataset), bit-identically; otherwise it starts at 0."""
    import torch

    Z = np.ascontiguousarray(Z, dtype=np.float64)
    n, d = Z.shape
    spec = spec.resolved(n)
    cls, kwargs, _ = spec.user.user._made
    cps = log_checkpoints(steps, checkpoints) if np.isscalar(checkpoints) else np.asarray(checkpoints, np.int64)
    t0 = time.perf_counter()
    p = torch.zeros(d, dtype=torch.float64, requires_grad=True)
    w = p.detach().numpy()   # a view of p: the torch step updates it in place
    try:
        opt = cls([p], lr=float(spec.lr), **kwargs)
    except (TypeError, ValueError) as e:
        raise IbverifyError(f"{spec.name}: torch.optim.{cls.__name__} refused its arguments: "
                            f"{' '.join(str(e).split())}") from None
    eta0, a = float(spec.lr), float(spec.lr_decay)
    b = spec.batch_size
    identity = fingerprint((Z, spec.name, repr(spec)))
    ws = np.empty((len(cps), d))
    state = _continue(extend, identity, cps, ws)
    if state is None:
        sampler, t, stalled, streak, j = Sampler(n, b, spec.order, spec.seed), 0, 0, 0, 0
    else:
        w[:] = state["w"]
        opt.load_state_dict(copy.deepcopy(state["opt"]))
        sampler, t = copy.deepcopy(state["sampler"]), int(state["t"])
        stalled, streak, j = int(state["stalled"]), int(state["streak"]), int(state["j"])
    group = opt.param_groups[0]   # after load_state_dict, which replaces the group dicts
    start = t
    grad = torch.zeros(d, dtype=torch.float64)
    g = grad.numpy()          # the gradient is written here; torch reads it as p.grad
    p.grad = grad
    step = _step_of(opt)
    before, m = np.empty(d), np.empty(b)
    logistic = spec.loss == "logistic"
    last = int(cps[-1])
    decay = a != 0.0
    group["lr"] = eta0 * float(max(t, 1)) ** (-a)
    with np.errstate(over="ignore", invalid="ignore"):   # a non-finite iterate is found per chunk, then its step
        while t < last:
            k_steps = min(CHUNK, last - t)
            idx = sampler.next(k_steps)
            snap = (t, w.copy(), copy.deepcopy(opt.state_dict()))
            for k in range(k_steps):
                t += 1
                zb = Z[idx[k]]
                np.matmul(zb, w, out=m)
                if logistic:
                    np.logaddexp(0.0, m, out=m)
                np.exp(np.negative(m, out=m), out=m)   # e^{l_i}, l_i the log-domain weights of engine.vector
                np.matmul(m, zb, out=g)
                g *= -1.0 / b
                np.copyto(before, w)
                if decay:
                    group["lr"] = eta0 * float(t) ** (-a)
                step()
                if (w == before).all() and g.any():
                    stalled += 1
                    streak += 1
                else:
                    streak = 0
                while j < len(cps) and cps[j] == t:
                    ws[j] = w
                    j += 1
            if not np.isfinite(w).all():
                bad = _first_non_finite(Z, w, m, g, opt, step, snap, idx, b, logistic, eta0, a)
                raise IbverifyError(f"{spec.name}: non-finite iterate by step {bad} (overflow: reduce --lr or check "
                                    f"the knobs and the data scale)")
            if progress:
                progress(t, last)
    diag = {"stalled_steps": stalled, "stalled_streak": streak, "frozen": frozen(streak, n, b)}
    final = {"identity": identity, "w": w.copy(), "opt": copy.deepcopy(opt.state_dict()),
             "sampler": copy.deepcopy(sampler), "t": t, "stalled": stalled, "streak": streak, "j": j,
             "continued_from": start}
    return Run(spec, "reference", cps, last, ws=ws, diagnostics=diag, seconds=time.perf_counter() - t0,
               final_state=final)


def _first_non_finite(Z, w, m, g, opt, step, snap, idx, b, logistic, eta0, a) -> int:
    """The first step of the chunk that started at `snap` (its step, w and optimizer state; `idx` its samples)
    after which w is not finite: the chunk replayed step by step, as the engine checks each step."""
    t, w0, state = snap
    w[:] = w0
    opt.load_state_dict(state)
    group = opt.param_groups[0]
    for rows in idx:
        t += 1
        zb = Z[rows]
        np.matmul(zb, w, out=m)
        if logistic:
            np.logaddexp(0.0, m, out=m)
        np.exp(np.negative(m, out=m), out=m)
        np.matmul(m, zb, out=g)
        g *= -1.0 / b
        group["lr"] = eta0 * float(t) ** (-a)
        step()
        if not np.isfinite(w).all():
            return t
    return t


def _continue(prev: Run | None, identity: str, cps: np.ndarray, ws: np.ndarray) -> dict | None:
    """`prev`'s final state, with its records copied into ws at the checkpoints of cps it passed; None when prev is
    not a run of this loop on the same data and spec, is longer, or lacks a record at one of those checkpoints."""
    fs = getattr(prev, "final_state", None)
    if not isinstance(fs, dict) or fs.get("identity") != identity or fs["t"] > int(cps[-1]):
        return None
    rec = {int(c): i for i, c in enumerate(prev.checkpoints)}
    done = [int(c) for c in cps if c <= fs["t"]]
    if any(c not in rec for c in done):
        return None
    for jj, c in enumerate(done):
        ws[jj] = prev.ws[rec[c]]
    return {**fs, "j": len(done)}


class ForeignStore(RunStore):
    """A run store whose torch optimizers' linear-model runs are made by `run` (under the same content key, so a
    claim and its judge share them), each continuing the longest shorter run of its lineage held here (`extend`);
    every other run as RunStore makes it. Sent to a Dask worker it becomes that
    worker's process store (RunStore.__reduce__), which makes every run the engine's way."""

    def run(self, recipe, *, progress=None, **io):
        if recipe.model is None and not io and not recipe.options and recipe.engine in (None, "reference") \
                and eligible(recipe.spec):
            Z = self.data(recipe.data).Z
            cps = recipe.checkpoints if recipe.checkpoints is not None else 30
            held = self._lineage.setdefault(recipe.lineage(), [])
            prev = max((r for r in held if r.horizon <= recipe.steps), key=lambda r: r.horizon, default=None)
            value = self.get("run", recipe.key(), lambda: run(Z, recipe.spec, recipe.steps, cps, progress, prev))
            if all(r is not value for r in held):
                held.append(value)
            return value
        return super().run(recipe, progress=progress, **io)
