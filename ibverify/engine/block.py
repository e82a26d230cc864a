"""The block loop: any model over named parameter blocks, full batch, per-group log frame → `Run`.

Besides θ at each checkpoint t it records, from step t itself, the evidence of paper 2's dynamics:
log ℒ(θ_t), min_i q_i, the alignment r_t = ⟨Δθ_t/ν_t, −g_t/‖g_t‖_*⟩, the momentum tracking
‖m/‖m‖_* − g/‖g‖_*‖_* (nan without momentum) and Adam's max |m̂/√v̂ − sign g| on significant coordinates.
"""

from __future__ import annotations

import contextlib
import time
from typing import Callable

import numpy as np

from ..errors import IbverifyError
from ..blocks import Params, copy, inner
from ..cache import fingerprint
from ..losses import check_loss, evaluate
from ..optim.logframe import Optimizer, Scaled
from . import network_run as NR
from .checkpoint import Saver
from .trajectory import Hooks, Run, log_checkpoints

ENGINES = ("compiled", "reference")
RECORDS = ("log_loss", "q_min", "align", "track", "adam_dev")


class _Trace:
    """The checkpoints' θ and evidence as a run collects them."""

    def __init__(self):
        self.steps: list[int] = []
        self.thetas: list[Params] = []
        self.records: dict[str, list[float]] = {k: [] for k in RECORDS}

    def run(self, opt, engine: str, steps: int, theta0: Params, underflow: dict, diverged: bool) -> Run:
        return Run(getattr(opt, "spec", None), engine, self.steps, steps, block_thetas=self.thetas, theta0=theta0,
                   diagnostics={"underflow": underflow, "diverged": diverged}, records=self.records,
                   optimizer=opt)


def _dual_unit(geometry, p: Params) -> Params:
    n = geometry.dual_norm(p)
    return {k: v / n for k, v in p.items()} if n > 0 else p


def _record(out: _Trace, G, t: int, theta: Params, new: Params, ev, nu: float, momentum, ratio, sig: float) -> None:
    """Diagnostics of step t: θ_t, log ℒ(θ_t), min q_i, alignment of Δθ_t with −g_t, tracking, Adam deviation."""
    gn = G.dual_norm(ev.ghat)
    delta = {k: (new[k] - theta[k]) / nu for k in theta}
    out.steps.append(t)
    out.thetas.append(copy(theta))
    rec = out.records
    rec["log_loss"].append(ev.log_loss)
    rec["q_min"].append(float(np.min(ev.q)))
    rec["align"].append(-inner(delta, ev.ghat) / gn if gn > 0 else float("nan"))
    if momentum is not None and gn > 0:
        diff = {k: v - w for (k, v), w in zip(_dual_unit(G, momentum.blocks).items(),
                                              _dual_unit(G, ev.ghat).values(), strict=False)}
        rec["track"].append(G.dual_norm(diff))
    else:
        rec["track"].append(float("nan"))
    if ratio is not None:
        l1 = sum(float(np.sum(np.abs(v))) for v in ev.ghat.values())
        dev = 0.0
        for k, r in ratio.items():
            s = np.abs(ev.ghat[k]) > sig * l1
            if s.any():
                dev = max(dev, float(np.max(np.abs(r[s] - np.sign(ev.ghat[k][s])))))
        rec["adam_dev"].append(dev)
    else:
        rec["adam_dev"].append(float("nan"))


def run(model, X, y, opt: Optimizer, steps: int, theta0: Params, *, loss: str = "logistic",
        checkpoints: list[int] | None = None, sig: float = 1e-3, engine: str | None = None,
        progress: Callable[[int, int], None] | None = None, save_to: str | None = None,
        save_every: float = 5.0, resume: bool = False, chunk: int | None = None, batch: int | None = None,
        extend: Run | None = None) -> Run:
    """Train for `steps` full-batch steps from theta0; record at `checkpoints` (default: log-spaced).

    batch: the gradient of step t is that of the loss over `batch` samples in cyclic order, positions
    (t−1)·batch, …, t·batch − 1 of 0, 1, …, n−1, 0, 1, … (paper 1's per-sample / mini-batch convention; batch 1
    = per-sample, batch n = full batch, bit-identical to batch None). η_t counts steps, not epochs. The
    checkpoints' records (log ℒ, min q_i, alignment) are taken over the full batch. Compiled: one kernel call
    per step on its window (no checkpoint files); reference: the numpy loop on X[window].

    engine: "compiled" (numba kernels of ibverify.engine.network, same log frame; resumable with
    save_to/resume), "reference" (this module's numpy loop over the transform chains of optim.py), or None:
    compiled when the model and the optimizer chain have a kernel, else reference.
    progress(done, total) is called between kernel chunks (compiled) or every 1000 steps (reference).
    save_to (compiled): the run state is saved there atomically every save_every seconds, after a Ctrl-C (then
    IbverifyError "interrupted ...") and at the end; resume=True continues from it, bit-identically.
    chunk: steps per kernel call (default: about 4·10⁶ multiply-adds); saves and Ctrl-C act between chunks.
    extend (compiled, full batch): a shorter compiled run of the same problem (model, data, chain, θ0); this run
    continues from its final state and takes its records at the checkpoints it already passed, instead of
    repeating its steps (the ×10 extension of an undecided example), bit-identically. A run of another problem,
    or one that lacks a record at a checkpoint it passed, is not continued: the run starts from step 0.
    """
    check_loss(loss)
    if engine not in (None, *ENGINES):
        raise IbverifyError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}")
    if steps < 1:
        raise IbverifyError(f"number of steps must be >= 1, got {steps}")
    n = len(y)
    if batch is not None:
        if not 1 <= int(batch) <= n:
            raise IbverifyError(f"batch must be in 1..{n}, got {batch}")
        if save_to or resume:
            raise IbverifyError("mini-batch block runs (batch) keep no checkpoint files")
    t0 = time.perf_counter()
    if engine != "reference":
        try:
            prob = NR.compile_problem(model, opt, theta0, X, y, loss)
        except NR.Unsupported as e:
            if engine == "compiled":
                raise IbverifyError(f"no compiled kernel for this run ({e}); use engine='reference'") from None
            prob = None
        if prob is not None:
            out = _run_compiled(prob, model, X, y, opt, steps, theta0, loss, checkpoints, sig, progress,
                                save_to, save_every, resume, chunk, batch, None if batch or resume else extend)
            out.seconds = time.perf_counter() - t0
            return out
    if save_to or resume:
        raise IbverifyError("checkpoint files (save_to/resume) need the compiled engine")
    out = _run_reference(model, X, y, opt, steps, theta0, loss, checkpoints, sig, progress, batch)
    out.seconds = time.perf_counter() - t0
    return out


def _run_reference(model, X, y, opt, steps, theta0, loss, checkpoints, sig, progress, batch=None) -> Run:
    cps = set(int(c) for c in (log_checkpoints(steps, 16) if checkpoints is None else checkpoints))
    theta = copy(theta0)
    opt.init(theta)
    out, underflow, diverged = _Trace(), {}, False
    G = opt.geometry
    n = len(y)
    for t in range(1, steps + 1):
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
            _record(out, G, t, theta, new, ev, opt.nu(t), opt.momentum(), opt.adam_ratio(), sig)
        theta = new
        if progress and t % 1000 == 0:
            progress(t, steps)
        if not all(np.all(np.isfinite(v)) for v in theta.values()):
            diverged = True
            break
    underflow.update(opt.underflow)
    return out.run(opt, "reference", steps, theta0, underflow, diverged)


CHUNK_WORK = 1 << 22  # multiply-adds per kernel call, about: paces progress, saves and Ctrl-C


def _identity(prob, theta0) -> str:
    """What a continued run must share with the run it continues: the problem, its data and θ0 (not the horizon)."""
    return fingerprint((prob.fingerprint(), prob.X, prob.y, prob.flat(theta0)))


def _continue(prev: Run | None, identity: str, st, rows, cps: list[int], P: int, steps: int) -> int:
    """Load `prev`'s final state into st and its records into rows; returns the first checkpoint index still to
    run (0: not continued, see `run`'s `extend`)."""
    fs = getattr(prev, "final_state", None)
    if fs is None or fs["identity"] != identity or fs["t"] > steps:
        return 0
    rec = {int(c): j for j, c in enumerate(prev.checkpoints)}
    done = [c for c in cps if c <= fs["t"]]
    if any(c not in rec for c in done):
        return 0
    for k in ("w", "m", "v", "s", "diag"):
        getattr(st, k)[:] = fs[k]
    st.t = int(fs["t"])
    for j, c in enumerate(done):
        i = rec[c]
        rows[j, :P] = st.prob.flat(prev.block_thetas[i])
        rows[j, P:] = [prev.records[k][i] for k in RECORDS]
    return len(done)


def _run_compiled(prob, model, X, y, opt, steps, theta0, loss, checkpoints, sig, progress, save_to,
                  save_every, resume, chunk=None, batch=None, extend=None) -> Run:
    """The compiled loop: chunks up to step t−1 of each checkpoint t, then step t alone with its diagnostics.

    Each checkpoint's record is one row [θ_t, log ℒ, q_min, align, track, adam_dev], so a saved run resumes
    with its evidence. Saves (and Ctrl-C) act after any chunk; the kernel is deterministic per step, so a
    resumed run is bit-identical to an uninterrupted one."""
    cps = sorted({int(c) for c in (log_checkpoints(steps, 16) if checkpoints is None else checkpoints)
                  if 1 <= int(c) <= steps})
    opt.init(copy(theta0))
    st = NR.NetState(prob, theta0)
    if batch is not None:
        st.set_batch(int(batch))
    P = prob.size
    rows = np.full((len(cps), P + 5), np.nan)
    key = NR.RunKey(prob, theta0, steps)
    saver = Saver(save_to, save_every, key.data(), key, np.asarray(cps), True) if save_to else None
    j0 = 0
    if resume:
        if saver is None:
            raise IbverifyError("resume needs a checkpoint file (save_to)")
        j0 = saver.load(st, rows)
    identity = _identity(prob, theta0)
    if extend is not None:
        j0 = _continue(extend, identity, st, rows, cps, P, steps)
    per = int(chunk) if chunk else max(1, CHUNK_WORK // max(1, prob.X.shape[0] * P))
    G = opt.geometry
    hooks = Hooks()
    with (saver.interruptible() if saver else contextlib.nullcontext()):
        for j in range(j0, len(cps)):
            c = cps[j]
            while st.t < c - 1 and not st.diverged:
                st.advance(min(c - 1 - st.t, per))
                if progress:
                    progress(st.t, steps)
                hooks.after_chunk(st.t)
                if saver:
                    saver.maybe_save(st, rows, j)
            if st.diverged:
                break
            theta = st.theta()
            st.advance(1)
            ev = evaluate(model, theta, X, y, loss, with_loss=True)
            one = _Trace()
            _record(one, G, c, theta, st.theta(), ev, opt.nu(c), st.momentum(), st.adam_ratio(), sig)
            rows[j, :P] = prob.flat(theta)
            rows[j, P:] = [one.records[k][0] for k in RECORDS]
            if st.diverged:
                break
        while st.t < steps and not st.diverged:  # past the last checkpoint (checkpoints need not reach steps)
            st.advance(min(steps - st.t, per))
            hooks.after_chunk(st.t)
            if saver:
                saver.maybe_save(st, rows, len(cps))
        if progress:
            progress(st.t, steps)
        if saver:
            saver.save(st, rows, len(cps))
    out = _Trace()
    for j, c in enumerate(cps):
        if np.isnan(rows[j, P + 1]):
            break
        out.steps.append(c)
        out.thetas.append(prob.params(rows[j, :P]))
        for k, x in zip(RECORDS, rows[j, P:], strict=True):
            out.records[k].append(float(x))
    opt.t, opt.ctr.underflow = st.t, {k: v for k, v in st.underflow().items() if k != "all_weights"}
    r = out.run(opt, "compiled", steps, theta0, dict(st.underflow()), st.diverged)
    if not st.diverged and st.windows is None:
        r.final_state = {"identity": identity, "t": int(st.t),
                         **{k: getattr(st, k).copy() for k in ("w", "m", "v", "s", "diag")}}
    return r
