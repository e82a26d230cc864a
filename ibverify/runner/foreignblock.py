"""A torch or optax optimizer's block-model run (matrix, two-layer) that a ×10 extension continues (issue 52 item 3).

Such a chain (optaxadapt.optax_block, torchblock.torch_block, torch's Muon) has no compiled kernel, so the engine
makes it with its numpy reference loop (engine.block's `_run_reference`), which starts every run at step 0: a
sequential `bias` that extends an undecided dataset ×10 paid for the shorter horizon twice. `run` is that loop, step
for step (the same θ0 and optimizer as engine.run, the same evaluation, records at the checkpoints and underflow
count), whose run keeps its live state (θ, the optimizer with its torch or optax state, the step): a longer run of
the same problem continues it instead of repeating its steps, bit-identical to one long run. The live state is handed
over once (the optimizer is not copied: a second extension of the same run starts at step 0) and is not pickled
(a run stored under $IBVERIFY_RUNS loses it: its extension starts at step 0).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from ..blocks import copy
from ..cache import fingerprint
from ..engine import block as B
from ..engine.trajectory import Run, log_checkpoints
from ..losses import evaluate
from ..models import initial_point
from ..optim.logframe import ScheduleWarning, Scaled
from ..optim.optimizers import make_optimizer


def eligible(spec) -> bool:
    """A torch or optax optimizer's spec (its chains name the library) with a block chain."""
    chains = getattr(spec.user, "user", None) if spec.user is not None else None
    return getattr(chains, "library", None) in ("torch", "optax") and callable(getattr(chains, "block", None))


class Live:
    """A run's state after its last step, for the run that continues it (taken once); pickled as empty."""

    def __init__(self, identity: str, t: int, theta, opt, underflow: dict):
        self.identity, self.t, self.theta, self.opt, self.underflow = identity, t, theta, opt, underflow
        self.taken = False

    def __reduce__(self):
        return (_spent, ())


def _spent() -> Live:
    out = Live("", 0, None, None, {})
    out.taken = True
    return out


def compiles(model, X, y, spec, theta0, L) -> bool:
    """Whether engine.block.run would make this run compiled (then the engine makes it, and continues it itself)."""
    from ..engine import network_run as NR

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScheduleWarning)
        opt = make_optimizer(spec, params=theta0, L=L, warn=False)
    try:
        NR.compile_problem(model, opt, theta0, X, y, opt.spec.loss)
    except NR.Unsupported:
        return False
    return True


def run(X, y, spec, steps: int, model, *, theta0=None, init_seed=None, init_scale: float = 0.5, checkpoints=None,
        batch: int | None = None, sig: float = 1e-3, progress=None, warn: bool = True, lineage: str = "",
        extend: Run | None = None) -> Run:
    """engine.run(data, spec, steps, model=model, engine="reference", ...) made here (module docstring); `lineage`:
    the problem's identity but for the horizon (Recipe.lineage), which a run it continues must share."""
    if theta0 is None:
        theta0 = initial_point(model, init_seed, init_scale)
    if np.isscalar(checkpoints):
        checkpoints = log_checkpoints(steps, int(checkpoints))
    t0 = time.perf_counter()
    cps = set(int(c) for c in (log_checkpoints(steps, 16) if checkpoints is None else checkpoints))
    identity = fingerprint((lineage, X, y, sorted(theta0.items()), repr(spec), batch, sig))
    out, live = B._Trace(), _continue(extend, identity, cps, steps)
    if live is None:
        with warnings.catch_warnings():
            if not warn:
                warnings.simplefilter("ignore", ScheduleWarning)
            opt = make_optimizer(spec, params=theta0, L=model.L, warn=warn)
        theta, start, underflow = copy(theta0), 0, {}
        opt.init(theta)
    else:
        opt, theta, start, underflow = live.opt, live.theta, live.t, dict(live.underflow)
        for k, c in enumerate(extend.checkpoints):
            if c in cps:
                out.steps.append(c)
                out.thetas.append(extend.block_thetas[k])
                for key in B.RECORDS:
                    out.records[key].append(extend.records[key][k])
    loss, G, n, diverged = opt.spec.loss, opt.geometry, len(y), False
    t = start
    for t in range(start + 1, steps + 1):   # engine.block._run_reference's loop
        ev = evaluate(model, theta, X, y, loss, with_loss=t in cps) if batch is None or t in cps else None
        eb = ev
        if batch is not None:   # cyclic mini-batch of step t: positions (t−1)·b … t·b − 1 of 0, 1, …, n−1, 0, 1, …
            idx = ((t - 1) * int(batch) + np.arange(int(batch))) % n
            eb = evaluate(model, theta, X[idx], y[idx], loss, with_loss=False)
        g = Scaled(eb.ghat, eb.log_scale)
        if eb.underflow_samples == len(eb.q):
            underflow["all_weights"] = underflow.get("all_weights", 0) + 1
        new = opt.step(theta, g)
        if t in cps:
            B._record(out, G, t, theta, new, ev, opt.nu(t), opt.momentum(), opt.adam_ratio(), sig)
        theta = new
        if progress and t % 1000 == 0:
            progress(t, steps)
        if not all(np.all(np.isfinite(v)) for v in theta.values()):
            diverged = True
            break
    final = None if diverged else Live(identity, t, theta, opt, underflow)
    underflow = {**underflow, **opt.underflow}
    r = out.run(opt, "reference", steps, theta0, underflow, diverged)
    r.seconds, r.init_seed, r.final_state = time.perf_counter() - t0, init_seed, final
    r.continued_from = start
    return r


def _continue(prev: Run | None, identity: str, cps: set, steps: int) -> Live | None:
    """prev's live state, taken, when prev is a run of `run` on the same problem, not longer, not taken yet, and
    holding a record at every checkpoint of cps it passed; else None (the run starts at step 0)."""
    live = getattr(prev, "final_state", None)
    if not isinstance(live, Live) or live.taken or live.identity != identity or live.t > steps:
        return None
    have = {int(c) for c in prev.checkpoints}
    if any(c not in have for c in cps if c <= live.t):
        return None
    live.taken = True
    return live
