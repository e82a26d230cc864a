"""The vector loop: the linear model trained sample by sample on label-folded data Z → `Run`.

Engines:
  compiled   numba kernels in a log-frame (fast, long horizons; the default)
  reference  the transform chains of `ibverify.optim` in float64 numpy (small, obviously correct)
  mpmath     the same chains in arbitrary precision (oracle for the compiled engine)
Start at w = 0. Every random choice comes from `spec.seed`.
"""

from __future__ import annotations

import contextlib
import time
from typing import Callable

import numpy as np

from ..errors import IbverifyError
from ..optim import NAMES, OptimizerSpec, Sampler, build
from ..optim.backend import Float64, MPMath
from . import kernels as K
from . import kernels_more as KM
from . import kernels_precond as KP
from .checkpoint import Saver
from .trajectory import Hooks, Run, frozen, log_checkpoints

ENGINES = ("compiled", "reference", "mpmath")
# the compiled kernels by kind (a row of the optimizer table names its own: `OptimizerInfo.kernel`): module, code
KERNELS = {"adam": (K, K.ADAM), "signum": (K, K.SIGNUM), "gd": (K, K.GD), "ngd": (K, K.NGD), "proxy": (K, K.PROXY),
           "l1": (KM, KM.L1), "lion": (KM, KM.LION), "adagrad": (KM, KM.ADAGRAD), "adamw": (KM, KM.ADAMW),
           "precond": (KP, KP.PRECOND)}
CHUNK_WORK = 1 << 21  # sample-steps per kernel call (bounds index memory, paces progress)


def check_data(Z: np.ndarray) -> np.ndarray:
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    if Z.ndim != 2 or not np.all(np.isfinite(Z)):
        raise IbverifyError("Z must be a finite 2-d array (rows z_i = y_i x_i)")
    return Z


def run(Z: np.ndarray, spec: OptimizerSpec, steps: int, checkpoints: int | np.ndarray = 30,
        engine: str | None = None, log_frame: bool = True, dps: int = 50,
        progress: Callable[[int, int], None] | None = None,
        save_to: str | None = None, save_every: float = 5.0, resume: bool = False) -> Run:
    """Run `spec` for `steps` steps on label-folded data Z and record w at the checkpoints.

    engine None: compiled where the optimizer's row has a compiled vector kernel, else reference (the rows
    of `ibverify.optim.table` list their implementations); asking for one the row lacks is refused.

    save_to (compiled engine): save the whole run state there atomically every `save_every` seconds
    and at the end; with resume=True continue from that file (bit-identical to an uninterrupted run).
    Ctrl-C stops at the next chunk boundary (checked after every chunk, whatever the save schedule),
    saves, and raises IbverifyError("interrupted ..."); without save_to it raises KeyboardInterrupt.
    Test hooks: environment variables IBVERIFY_INTERRUPT_AT_STEP / IBVERIFY_KILL_AT_STEP = T make
    the compiled run send itself SIGINT / SIGKILL at the first chunk boundary ≥ T.
    """
    if engine not in (None, *ENGINES):
        raise IbverifyError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}")
    if spec.user is not None or spec.name in NAMES:
        have = spec.row.implementations.get("vector", ())
        if engine is None:
            engine = "compiled" if "compiled" in have else "reference"
        elif have and engine not in have:
            raise IbverifyError(f"{spec.name} has no {engine} engine on the linear model (it has: {', '.join(have)})")
    Z = check_data(Z)
    spec = spec.resolved(Z.shape[0])
    cps = log_checkpoints(steps, checkpoints) if np.isscalar(checkpoints) else np.asarray(checkpoints, np.int64)
    t0 = time.perf_counter()
    if engine == "compiled":
        saver = Saver(save_to, save_every, Z, spec, cps, log_frame) if save_to else None
        ws, diag = _run_compiled(Z, spec, cps, log_frame, progress, saver, resume)
    else:
        if save_to or resume:
            raise IbverifyError("checkpoint files (--checkpoint/--resume) need the compiled engine")
        if not log_frame:
            raise IbverifyError("log_frame=False applies to the compiled engine only")
        xp = Float64() if engine == "reference" else MPMath(dps)
        ws, diag = _run_chain(Z, spec, cps, xp, progress)
    return Run(spec, engine, cps, int(cps[-1]), ws=ws, diagnostics=diag, seconds=time.perf_counter() - t0)


class CompiledState:
    """Everything a compiled run needs to continue: iterate, moments, frame, step, sampler."""

    def __init__(self, d: int, spec: OptimizerSpec, n: int):
        self.w, self.m, self.v, self.s = (np.zeros(d) for _ in range(4))
        self.t = 0
        self.diag = np.zeros(K.N_DIAG, dtype=np.int64)
        self.sampler = Sampler(n, spec.batch_size, spec.order, spec.seed)

    def advance(self, Z, spec: OptimizerSpec, steps: int, log_frame: bool) -> None:
        per = max(1, CHUNK_WORK // spec.batch_size)
        while steps > 0:
            k = int(min(steps, per))
            idx, pos = sample_block(self.sampler, k)
            mod, kind = KERNELS[spec.row.kernel]
            if mod is not K:   # kernels_more, kernels_precond: one signature with λ
                mod.run_chunk(kind, Z, idx, pos, k, self.w, self.m, self.v, self.s, self.t, spec.lr,
                             spec.lr_decay, spec.beta1, spec.beta2, spec.eps, spec.bias_correction,
                             float(spec.weight_decay or 0.0), loss_code(spec), log_frame, self.diag)
            else:
                K.run_chunk(kind, Z, idx, pos, k, self.w, self.m, self.v, self.s, self.t, spec.lr,
                            spec.lr_decay, spec.beta1, spec.beta2, spec.eps, spec.bias_correction,
                            loss_code(spec), log_frame, self.diag)
            self.t += int(k)
            steps -= k
            if not (np.all(np.isfinite(self.w)) and np.all(np.isfinite(self.m)) and np.all(np.isfinite(self.v))):
                raise IbverifyError(f"{spec.name}: non-finite iterate or moment by step {self.t} (overflow, or batch "
                                    f"margins > 700 apart with momentum memory; reduce --lr or check the data scale)")

    def diagnostics(self) -> dict:
        f, sh, st, streak = (int(x) for x in self.diag)
        n, b = self.sampler.n, self.sampler.b
        return {"flushed_weights": f, "frame_shifts": sh, "stalled_steps": st, "stalled_streak": streak,
                "frozen": frozen(streak, n, b), "max_log_scale": float(self.s.max(initial=0.0))}


def loss_code(spec: OptimizerSpec) -> int:
    return K.LOGISTIC if spec.loss == "logistic" else K.EXPONENTIAL


def sample_block(sampler: Sampler, steps: int) -> tuple[np.ndarray, int]:
    """(idx, pos) for kernels.run_chunk: cyclic order needs no index array (idx has 0 rows)."""
    if sampler.order == "cyclic":
        return np.empty((0, sampler.b), dtype=np.int64), sampler.take_cyclic(steps)
    return sampler.next(steps), 0


def _run_compiled(Z, spec, cps, log_frame, progress, saver=None, resume=False):
    st = CompiledState(Z.shape[1], spec, Z.shape[0])
    ws = np.empty((len(cps), Z.shape[1]))
    j0 = 0
    if resume:
        if saver is None:
            raise IbverifyError("--resume needs a checkpoint file")
        j0 = saver.load(st, ws)
    per = max(1, CHUNK_WORK // spec.batch_size)
    hooks = Hooks()
    with (saver.interruptible() if saver else contextlib.nullcontext()):
        for j in range(j0, len(cps)):
            c = cps[j]
            while st.t < c:
                st.advance(Z, spec, min(c - st.t, per - st.t % per), log_frame)
                if progress:
                    progress(st.t, int(cps[-1]))
                if st.t == c:
                    ws[j] = st.w
                hooks.after_chunk(st.t)
                if saver:  # after every chunk: honours a Ctrl-C whatever the save schedule
                    saver.maybe_save(st, ws, j + 1 if st.t == c else j)
            ws[j] = st.w
        if saver:
            saver.save(st, ws, len(cps))
    return ws, st.diagnostics()


def iterate_chain(Z, spec: OptimizerSpec, xp):
    """Reference iteration, one step at a time: yields (t, w, g, optimizer state) after each step.

    g = −(1/b) Σ_{i∈B} e^{l_i} z_i with l_i = log|ℓ'(z_i·w)| (log domain, no frame).
    `spec` must be resolved (`spec.resolved(n)`).
    """
    n, d = Z.shape
    Zx = xp.array(Z)
    opt = build(spec, xp)
    w = xp.zeros(d)
    state = opt.init(w)
    sampler = Sampler(n, spec.batch_size, spec.order, spec.seed)
    bnum = xp.num(spec.batch_size)
    t = 0
    while True:
        zb = Zx[sampler.next(1)[0]]
        lw = xp.log_weights(zb @ w, spec.loss)
        G = -(xp.exp(lw)[:, None] * zb)
        g = G.sum(axis=0) / bnum
        u, state = opt.update(g, state, w, per_sample=G)
        w = w + u
        t += 1
        yield t, w, g, state


def _run_chain(Z, spec, cps, xp, progress):
    ws = np.empty((len(cps), Z.shape[1]))
    stalled, streak, j, w_prev = 0, 0, 0, None
    for t, w, g, _ in iterate_chain(Z, spec, xp):
        look = xp.name == "float64" or t % 1000 == 0 or t in cps  # mpmath: converting every step is slow
        if look and not np.all(np.isfinite(xp.to_float(w))):
            raise IbverifyError(f"{spec.name}: non-finite iterate by step {t} (overflow: reduce --lr or check the "
                                f"knobs and the data scale)")
        if w_prev is not None:
            still = bool(np.all(w == w_prev) and np.any(g != 0))
            stalled += still
            streak = streak + 1 if still else 0
        w_prev = w
        if progress and t % 1000 == 0:
            progress(t, int(cps[-1]))
        while j < len(cps) and cps[j] == t:
            ws[j] = xp.to_float(w)
            j += 1
        if j == len(cps):
            return ws, {"stalled_steps": stalled, "stalled_streak": streak,
                        "frozen": frozen(streak, Z.shape[0], spec.batch_size)}
