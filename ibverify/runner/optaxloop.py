"""An optax optimizer's linear-model run, many steps per jitted call (issue 52 item 4: `bias --optimizer optax:NAME`).

The engine's reference loop (engine.vector.iterate_chain over optaxadapt.optax_step) makes one jitted optax update a
step plus ibverify's numpy around it (the log-domain batch gradient, the guard, `userguard.set_aside`, the finite and
stall checks): ≈ 100 µs a step. `run` makes the same run with a `jax.lax.while_loop` over up to CHUNK steps per call:
the same sample order (optim.Sampler, drawn a chunk at a time), the engine's batch gradient −(1/b) Σ e^{l_i} z_i with
l_i = log|ℓ'(z_i·w)| in float64, η_t = lr · t^(−lr_decay) computed by numpy as the per-step path does and passed in,
the same optax step function (optaxadapt's, jitted there), set_aside's bookkeeping (the columns seen, a coordinate
moved while unseen set back to 0) and the stall count.

Any step that the loop cannot make exactly as the per-step path does ends the call before it, and that one step is
made by the per-step path itself (`build`'s chain on numpy, the code `engine.vector` runs), which raises its own
error lines: a step after which w is not finite; set_aside's errors (a NaN step where the gradient is 0, a coordinate
moved while set aside and then seen); and a **subnormal** step, where some product e^{l_i}·z_ij of the batch is not 0
and below e^{−700} (XLA on the CPU flushes subnormal numbers to 0, numpy keeps them) unless the other samples'
contributions to that coordinate are ≥ 2^−960 (then the subnormal part cannot change the sum). So the loop's iterates
equal the per-step path's to rounding (tests/test_optaxloop.py: ≤ 1e-12 relative), the float64 underflow that
runner.underflow judges included. The run's final state (w, the optax state's leaves, the sampler, set_aside's and
the stall count's) lets a ×10 extension continue it (`extend`), bit-identical to one long run.
"""

from __future__ import annotations

import copy
import time

import numpy as np

from ..cache import fingerprint
from ..engine.trajectory import Run, frozen, log_checkpoints
from ..errors import IbverifyError
from ..optim import Sampler, build
from ..optim.backend import Float64
from ..optim.optaxadapt import OptaxChains

CHUNK = 4096          # steps per jitted call at most (fewer where b·CHUNK would pass INDEX_WORK)
INDEX_WORK = 1 << 20  # sample indices held per call
SUBNORMAL_LOG = -700.0       # e^{l}·|z| below e^{−700}: possibly subnormal in numpy (its smallest normal ≈ e^{−708.4})
ZERO_LOG = -745.2            # e^{l} = 0 in float64 (numpy and XLA alike) below it
KEEPS = 2.0 ** -960          # a sum at least this large is not changed by adding a subnormal number
SOLO = 64                    # steps made by the per-step path after a call of the loop that made none


def eligible(spec) -> bool:
    """An optax optimizer's spec (its chains from optaxadapt, with their factory) on the logistic or exponential
    loss."""
    chains = getattr(spec.user, "user", None) if spec.user is not None else None
    return isinstance(chains, OptaxChains) and spec.loss in ("logistic", "exponential")


_LOOPS: dict = {}


class Unfit(Exception):
    """The optimizer's update cannot run inside the jitted loop (it fails to trace there, or its update is not
    float64): its run is the engine's per-step one, which gives its own answer or error line."""


def _loop(key: tuple, step, logistic: bool, b: int):
    """The jitted call (leaves, w, seen, held, stalled, streak, t0, n, Z, logZ, idx, etas) → (steps made, leaves, w,
    seen, held, stalled, streak): up to n steps of the module docstring from step t0 + 1, stopping before the first
    step the per-step path must make. Kept by `key` (the optimizer's content, the shapes, the loss): one compilation
    for every run of one optimizer on data of one shape."""
    import jax
    import jax.numpy as jnp

    if key in _LOOPS:
        return _LOOPS[key]
    if len(_LOOPS) >= 16:
        _LOOPS.clear()

    def call(leaves, w, seen, held, stalled, streak, t0, n, Z, logZ, idx, etas):
        def cond(c):
            return (c[0] < n) & ~c[-1]

        def body(c):
            s, leaves, w, seen, held, stalled, streak, _ = c
            rows = idx[s]
            zb, lz = Z[rows], logZ[rows]
            q = zb @ w
            lw = -jnp.logaddexp(0.0, q) if logistic else -q
            G = -(jnp.exp(lw)[:, None] * zb)
            g = G.sum(axis=0) / b
            # a product that numpy may keep subnormal (XLA flushes it): the per-step path makes this step
            tiny = (zb != 0) & (lw[:, None] >= ZERO_LOG) & ((lw[:, None] < SUBNORMAL_LOG)
                                                           | (lw[:, None] + lz < SUBNORMAL_LOG))
            rest = jnp.abs(jnp.where(tiny, 0.0, G).sum(axis=0))
            subnormal = jnp.any(jnp.any(tiny, axis=0) & (rest < KEEPS))
            new_leaves, x = step(leaves, g, w, etas[s])
            if x.dtype != jnp.float64 or x.shape != w.shape:   # at trace time: the per-step path's error line
                raise TypeError(f"its update is {x.dtype} {x.shape}, not float64 {w.shape}")
            # userguard.set_aside: columns seen, a step in an unseen coordinate set back to 0 (its step held)
            t = t0 + s + 1
            now = jnp.any(G != 0, axis=0)
            seen2 = seen | now
            late = jnp.any(now & (held != 0))
            moved = ~seen2 & (x != 0)
            held2 = jnp.where(moved & (held == 0), jnp.where(jnp.isfinite(x), -t, t), held)
            x = jnp.where(moved, 0.0, x)
            w2 = w + x
            stop = subnormal | late | ~jnp.all(jnp.isfinite(w2))   # a NaN step (set_aside's 0/0 line) among them
            still = (t > 1) & jnp.all(w2 == w) & jnp.any(g != 0)
            stalled2 = stalled + still.astype(stalled.dtype)
            streak2 = jnp.where(still, streak + 1, 0)

            def keep(new, old):
                return jax.tree_util.tree_map(lambda a, o: jnp.where(stop, o, a), new, old)

            made = keep((new_leaves, w2, seen2, held2, stalled2, streak2), (leaves, w, seen, held, stalled, streak))
            return (s + jnp.where(stop, 0, 1), *made, stop)

        out = jax.lax.while_loop(cond, body, (jnp.int64(0), leaves, w, seen, held, stalled, streak, jnp.bool_(False)))
        return out[:-1]

    _LOOPS[key] = jax.jit(call)
    return _LOOPS[key]


class _Chain:
    """The per-step path's chain (optim.build on numpy float64: the guarded optax transform, then set_aside) and its
    state, whose optax leaves, step counts and set_aside arrays the loop reads and writes."""

    def __init__(self, spec, w):
        self.opt = build(spec, Float64())
        self.state = self.opt.init(w)
        try:
            (_, inner), (_, _, _) = self.state
            inner.leaves, inner.step, inner.t   # noqa: B018  (the optax transform's _State)
        except (TypeError, ValueError, AttributeError):
            raise IbverifyError(f"{spec.name}: not an optax chain of optaxadapt") from None

    @property
    def inner(self):
        return self.state[0][1]

    def arrays(self, d: int) -> tuple:
        _, seen, held = self.state[1]
        return (np.zeros(d, bool) if seen is None else seen, np.zeros(d, np.int64) if held is None else held)

    def advance(self, n: int, leaves, seen, held) -> None:
        (tg, inner), (ts, _, _) = self.state
        inner.leaves, inner.t = leaves, inner.t + n
        self.state = ((tg + n, inner), (ts + n, seen, held))

    def snapshot(self) -> dict:
        (tg, inner), (ts, seen, held) = self.state
        return {"leaves": list(inner.leaves), "t_opt": inner.t, "tg": tg, "ts": ts,
                "seen": None if seen is None else seen.copy(), "held": None if held is None else held.copy()}

    def restore(self, snap: dict) -> None:
        (_, inner), _ = self.state
        inner.leaves, inner.t = list(snap["leaves"]), snap["t_opt"]
        seen, held = snap["seen"], snap["held"]
        self.state = ((snap["tg"], inner), (snap["ts"], None if seen is None else seen.copy(),
                                            None if held is None else held.copy()))


def run(Z: np.ndarray, spec, steps: int, checkpoints=30, progress=None, extend: Run | None = None) -> Run:
    """The run of optax optimizer `spec` (eligible) for `steps` steps on label-folded data Z (module docstring), equal
    to engine.vector.run(..., engine="reference") to rounding; `extend`: a shorter run of this function on the same
    data and spec, continued from its final state when its records cover every checkpoint it passed."""
    import jax.numpy as jnp

    Z = np.ascontiguousarray(Z, dtype=np.float64)
    n, d = Z.shape
    spec = spec.resolved(n)
    b = int(spec.batch_size)
    cps = log_checkpoints(steps, checkpoints) if np.isscalar(checkpoints) else np.asarray(checkpoints, np.int64)
    last = int(cps[-1])
    t0 = time.perf_counter()
    identity = fingerprint((Z, repr(spec)))
    ws = np.zeros((len(cps), d))
    chain = _Chain(spec, np.zeros(d))
    prev = _continue(extend, identity, cps, ws)
    if prev is None:
        w, t, j = np.zeros(d), 0, 0
        sampler, pending = Sampler(n, b, spec.order, spec.seed), np.empty((0, b), np.int64)
        stalled, streak, per_step = 0, 0, 0
    else:
        chain.restore(prev["chain"])
        w, t, j = prev["w"].copy(), int(prev["t"]), int(prev["j"])
        sampler, pending = copy.deepcopy(prev["sampler"]), prev["pending"].copy()
        stalled, streak, per_step = int(prev["stalled"]), int(prev["streak"]), int(prev["per_step"])
    start = t
    eta0, a = float(spec.lr), float(spec.lr_decay)
    chains = spec.user.user
    loop = _loop((chains.source, chains.sha256, Z.shape, b, spec.loss), chain.inner.step, spec.loss == "logistic", b)
    Zj = jnp.asarray(Z)
    with np.errstate(divide="ignore"):
        logZ = jnp.asarray(np.log(np.abs(Z)))
    size = max(1, min(CHUNK, INDEX_WORK // b))
    idx = np.zeros((size, b), np.int64)
    etas = np.zeros(size)
    while t < last:
        c = int(cps[j])
        m = min(size, c - t)
        if len(pending) < m:
            pending = np.concatenate([pending, sampler.next(max(m - len(pending), size))])
        idx[:m] = pending[:m]
        etas[:m] = eta0 * np.arange(t + 1, t + m + 1, dtype=np.float64) ** (-a)
        seen, held = chain.arrays(d)
        try:
            done, leaves, w2, seen, held, st2, sk2 = loop(list(chain.inner.leaves), w, seen, held, np.int64(stalled),
                                                          np.int64(streak), np.int64(t), np.int64(m), Zj, logZ, idx,
                                                          etas)
        except IbverifyError:
            raise
        except Exception as e:   # noqa: BLE001  (not traceable in the loop: the per-step path runs it)
            raise Unfit(f"{spec.name}: {type(e).__name__}: {e}") from None
        done = int(done)
        if done:
            chain.advance(done, list(leaves), np.asarray(seen).copy(), np.asarray(held).copy())
            w, stalled, streak = np.array(w2), int(st2), int(sk2)
            t, pending = t + done, pending[done:]
        # the per-step path makes the next step (and raises its own error line); where the loop made none, the next
        # SOLO steps (a run inside the subnormal band stays there a while), then the loop is tried again
        for _ in range(0 if done == m else 1 if done else min(SOLO, m)):
            w_new, g = _one_step(chain, Z, spec, pending[0], w, t + 1)
            t, pending, per_step = t + 1, pending[1:], per_step + 1
            still = t > 1 and bool(np.all(w_new == w) and np.any(g != 0))
            stalled, streak, w = stalled + still, streak + 1 if still else 0, w_new
        while j < len(cps) and cps[j] == t:
            ws[j] = w
            j += 1
        if progress:
            progress(t, last)
    final = {"identity": identity, "w": w.copy(), "t": t, "j": j, "chain": chain.snapshot(),
             "sampler": copy.deepcopy(sampler), "pending": pending.copy(), "stalled": stalled, "streak": streak,
             "continued_from": start, "per_step": per_step}
    return Run(spec, "reference", cps, last, ws=ws, seconds=time.perf_counter() - t0, final_state=final,
               diagnostics={"stalled_steps": stalled, "stalled_streak": streak, "frozen": frozen(streak, n, b)})


def _one_step(chain: _Chain, Z: np.ndarray, spec, rows: np.ndarray, w: np.ndarray, t: int):
    """Step t as engine.vector.iterate_chain and _run_chain make it (numpy float64, the chain's own update):
    (the new w, the batch gradient); a non-finite w is the engine's error line."""
    zb = Z[rows]
    lw = Float64.log_weights(zb @ w, spec.loss)
    G = -(np.exp(lw)[:, None] * zb)
    g = G.sum(axis=0) / np.float64(len(rows))
    u, chain.state = chain.opt.update(g, chain.state, w, per_sample=G)
    w = w + u
    if not np.all(np.isfinite(w)):
        raise IbverifyError(f"{spec.name}: non-finite iterate by step {t} (overflow: reduce --lr or check the knobs "
                            f"and the data scale)")
    return w, g


def _continue(prev: Run | None, identity: str, cps: np.ndarray, ws: np.ndarray) -> dict | None:
    """The final state of `prev` (a run of `run`), with its records copied into ws at the checkpoints of cps it
    passed; None when it is another problem's or spec's run, is longer, or lacks a record at one of them."""
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
