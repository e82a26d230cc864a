"""Where a float64 run of the linear model underflows, and `bias` judged on the horizon before it (issue 36 item 1).

An optimizer on the reference engine (a torch or optax optimizer, a user's file, a row without a compiled kernel)
runs on the raw iterate w in float64, outside ibverify's log frame. Its batch gradient is −(1/b) Σ e^{l_i} z_i with
l_i = log|ℓ'(z_i·w)| (engine.vector.iterate_chain): once every margin z_i·w passes ≈ 745.13, every e^{l_i} is 0 in
float64, so the loss and its gradient are exactly 0 and whatever the optimizer does next is driven by its state
alone, not by the data. `judge_capped` finds the first checkpoint where that holds (`zero_gradient`, the engine's own
formula, backend.Float64.log_weights) and judges the dataset at the checkpoint before it instead (its last horizon,
final: no further horizon is reachable in float64), recording {"dataset", "step", "judged_at", "min_margin"}; with
fewer than MIN_HORIZON steps before it, the dataset is set aside. A run that fails with a non-finite iterate after
its underflow (torch's Adam at ε = 0 divides 0 by 0 once its moments underflow too) is searched up to the step before
the failure; a failure with no underflow before it is the run's own error, raised as it was.
Compiled (log-frame) runs never underflow and are left as they are; so are the block models (their chains keep the
log scale of the gradient: optim.logframe.Unscale).

A float64 run can also **freeze** before any underflow: every update below the resolution of w (w + u == w) while the
gradient is not 0 (engine.vector counts those steps: `stalled_streak`, the run's last steps that left w unchanged).
Past that step the run shows a constant iterate that is float64's, not the optimizer's, so `judge_capped` judges the
dataset at the first checkpoint holding the frozen iterate (`frozen`), recorded with "kind": "frozen" (an underflow:
"kind": "underflow").
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..errors import IbverifyError
from ..checks import bias, rules
from ..optim.backend import Float64
from ..recipes import RunStore
from ..recipes import bias as recipes

MARGIN = 745.13   # ≈ −log(smallest subnormal): a margin beyond it gives e^{−margin} = 0 in float64 (wording only)
MIN_HORIZON = 10  # a run underflowing before it leaves less than a decade of steps to judge: set aside
FAILED_AT = re.compile(r"non-finite iterate by step (\d+)")   # engine.vector's one line for a NaN / inf iterate


def failed_step(e: IbverifyError) -> int | None:
    """The step at which a float64 run's iterate became non-finite (engine.vector's error), or None."""
    found = FAILED_AT.search(str(e))
    return int(found.group(1)) if found else None


def zero_gradient(Z: np.ndarray, w: np.ndarray, loss: str) -> bool:
    """Every sample's loss derivative is exactly 0 in float64 at w (so is every batch gradient)."""
    return bool(np.all(np.exp(Float64.log_weights(np.asarray(Z, float) @ np.asarray(w, float), loss)) == 0.0))


def first_zero(Z: np.ndarray, ws, loss: str) -> int | None:
    """The index of the first checkpoint whose iterate has a zero float64 gradient, or None."""
    return next((k for k, w in enumerate(ws) if zero_gradient(Z, w, loss)), None)


def find(pr, spec, T: int, store: RunStore, progress=None) -> tuple[int | None, int, float] | None:
    """(last checkpoint with a nonzero gradient (None: none, the gradient is 0 by the first step recorded), first
    one with a zero gradient, its smallest margin) on the run of `spec` (resolved) to horizon T; None when the
    gradient is nonzero at every checkpoint, or the run is not a float64 reference run. When the first checkpoint
    already has a zero gradient, the run to that checkpoint (a horizon 1000× shorter, the same steps) is searched."""
    Z = store.data(pr.data).Z
    seen, failed = None, None
    while True:
        try:
            r = store.run(recipes.run_recipe(pr.data, None, None, spec, T), progress=progress)
        except IbverifyError as e:   # e.g. torch's Adam at ε = 0 divides 0 by 0 some steps after the underflow
            t = failed_step(e)
            if t is None or t - 1 < 1 or t - 1 >= T:
                raise
            T, failed = t - 1, e
            continue
        if r.engine != "reference":
            return None
        k = first_zero(Z, r.ws, spec.loss)
        if k is None:   # the shorter run's last checkpoint had a zero gradient, its earlier ones not: T is the last
            if seen is None and failed is not None:
                raise failed   # a non-finite iterate with no underflow before it: the run's own failure
            return None if seen is None else (int(T), *seen)
        seen = (int(r.checkpoints[k]), float(np.min(Z @ r.ws[k])))
        if k > 0:
            return int(r.checkpoints[k - 1]), *seen
        if int(r.checkpoints[0]) <= 1 or int(r.checkpoints[0]) >= T:
            return None, *seen
        T = int(r.checkpoints[0])


def frozen(pr, spec, T: int, store: RunStore) -> tuple[int, int, float] | None:
    """(first checkpoint holding the frozen iterate, first step whose update was lost, smallest margin there) where the
    float64 reference run of `spec` (resolved) to horizon T froze before its last checkpoint; None otherwise (a run
    that moves to its horizon, one frozen only after its last but one checkpoint, a compiled run)."""
    r = store.run(recipes.run_recipe(pr.data, None, None, spec, T))
    streak = int(r.diagnostics.get("stalled_streak", 0) or 0)
    if r.engine != "reference" or streak == 0:
        return None
    still = int(r.checkpoints[-1]) - streak   # w at this step equals every later one
    k = int(np.searchsorted(r.checkpoints, still))
    if k >= len(r.checkpoints) - 1:
        return None
    Z = store.data(pr.data).Z
    return int(r.checkpoints[k]), still + 1, float(np.min(Z @ r.ws[k]))


def _horizon(done: bias.Judgement) -> int:
    return max(j.horizon for j in done.results.values())


def judge_capped(model: str, pr, spec, tier: str, progress=None, store: RunStore | None = None,
                 horizons: tuple[int, int] | None = None) -> bias.Judgement:
    """checks.bias.judge_problem, except where a float64 run of the linear model underflows (module docstring): the
    run at the first horizon is checked before any extension, the final run after; where the gradient is 0, the
    dataset is judged at the checkpoint before (final), or set aside when the gradient is 0 from the first step
    recorded. The Judgement carries `underflow` (a dict, or None)."""
    store = store if store is not None else RunStore.process()
    if model != "linear":
        done = bias.judge_problem(model, pr, spec, tier, progress, horizons=horizons, store=store)
        done.underflow = None
        return done
    sp = bias.resolved_spec(spec, model, pr.n)
    first, _ = horizons or bias.HORIZONS[tier][model]
    kind = "underflow"
    found = find(pr, sp, first, store, progress)
    if found is None:
        try:
            done = bias.judge_problem(model, pr, spec, tier, progress, horizons=horizons, store=store)
        except IbverifyError as e:   # an extension's run failed: underflow before it, or the run's own failure
            t = failed_step(e)
            found = find(pr, sp, t - 1, store, progress) if t is not None and t > 1 else None
            if found is None:
                raise
        else:
            T = _horizon(done)
            found = find(pr, sp, T, store, progress) if T != first else None
            if found is None:
                found = frozen(pr, sp, T, store)
                if found is None:
                    done.underflow = None
                    return done
                kind = "frozen"
    before, at, margin = found
    info = {"dataset": pr.tag, "step": at, "judged_at": before, "min_margin": margin, "kind": kind}
    if before is None or before < MIN_HORIZON:
        info["judged_at"] = None
        why = (f"the float64 loss and its gradient are exactly 0 by step {at} (every margin ≥ {margin:.4g} > "
               f"{MARGIN:g}): less than a decade of steps before it to judge") if kind == "underflow" else (
               f"the float64 iterate stops moving at step {at} (every update below its resolution): less than a "
               f"decade of steps before it to judge")
        done = bias.Judgement(sp, {g: bias.Judged(rules.SET_ASIDE, why, math.nan, math.nan, at, "margin_gap")
                                   for g in pr.optima})
    else:
        done = bias.judge_problem(model, pr, spec, tier, progress, horizons=(before, before), store=store)
    done.underflow = info
    return done


def describe(name: str, model: str, u: dict) -> str:
    """One line for stderr: where the run underflowed (or froze) and where it was judged."""
    if u.get("kind") == "frozen":
        where = (f"judged at T = {u['judged_at']}, the first checkpoint holding the frozen iterate"
                 if u["judged_at"] is not None else "set aside")
        return (f"{name}, {model} model, dataset {u['dataset']}: the float64 iterate stops moving at step {u['step']} "
                f"(every update below the resolution of w, the gradient not 0; smallest margin {u['min_margin']:.4g});"
                f" {where}")
    where = (f"judged at T = {u['judged_at']}, the checkpoint before" if u["judged_at"] is not None
             else "set aside")
    return (f"{name}, {model} model, dataset {u['dataset']}: the float64 loss underflows by step {u['step']} "
            f"(every margin ≥ {u['min_margin']:.4g}, past ≈ {MARGIN:g}: loss and gradient exactly 0); run stopped "
            f"there, {where}")
