"""Sweeps in lanes: one compiled kernel call advances many independent Adam-family runs of the
same shape (seeds, β values, learning rates, datasets with the same N × d), each lane bit-identical
to its single `run()`.

Each lane's step is the single run's code on the lane's rows of (lanes, d) arrays (`kernels.
_lazy_step` / `_lazy_step_plain` when the lazy frame test holds, else `_moment_step`; batch size b > 1
through `_batch_gradient`), so the arithmetic is the same expression for expression. What lanes buy:
one kernel call per chunk for all runs (no per-run Python, sampler or checkpoint overhead), no
per-step array views (the hot loops index row r of the (lanes, d) arrays), and (b = 1) the dot
products z_i·w of four lanes at a time (four independent chains of additions instead of one).

    runs = run_lanes(Z, [OptimizerSpec("inc-adam", beta2=b2) for b2 in (0.9, 0.99, 0.999)], 10**6)

Specs outside the Adam family (signum, gd, ngd, adam-proxy) or with different batch sizes are run
one after another with `run()` (same results, no lane speed-up).
"""

from __future__ import annotations

import math
import time
from typing import Callable, Sequence

import numba as nb
import numpy as np

from ..errors import IbverifyError
from ..optim import OptimizerSpec, Sampler
from . import kernels as K
from .trajectory import Run, frozen, log_checkpoints
from .vector import CHUNK_WORK, check_data, loss_code, run


@nb.njit(inline="always", **K.JIT)
def _dots(Zf, n, rows, W, zw):
    """zw[l] = z_{i_l}·w_l for every lane (batch size 1), four lanes at a time: four independent chains
    of additions instead of one (each lane still sums over k in order: the single run's bits)."""
    nl, d = W.shape
    full = nl - nl % 4
    for l0 in range(0, full, 4):
        r0, r1, r2, r3 = l0 * n + rows[l0, 0], (l0 + 1) * n + rows[l0 + 1, 0], (l0 + 2) * n + rows[l0 + 2, 0], \
            (l0 + 3) * n + rows[l0 + 3, 0]
        z0 = z1 = z2 = z3 = 0.0
        for k in range(d):
            z0 += Zf[r0, k] * W[l0, k]
            z1 += Zf[r1, k] * W[l0 + 1, k]
            z2 += Zf[r2, k] * W[l0 + 2, k]
            z3 += Zf[r3, k] * W[l0 + 3, k]
        zw[l0], zw[l0 + 1], zw[l0 + 2], zw[l0 + 3] = z0, z1, z2, z3
    for ln in range(full, nl):
        r = ln * n + rows[ln, 0]
        z = 0.0
        for k in range(d):
            z += Zf[r, k] * W[ln, k]
        zw[ln] = z


@nb.njit(**K.JIT)
def adam_lanes_chunk(Z3, idx3, pos, nsteps, W, M, V, Sf, t0, lr, decay, b1, b2, eps, bias_corr, loss, diag):
    """Advance every lane by nsteps Adam steps (log-frame) from global step t0, in place.
    Z3 (lanes, n, d); idx3 (lanes, nsteps, b), or (lanes, 0, b) for cyclic order from position pos
    (the same for every lane); W, M, V, Sf (lanes, d); per-lane parameters lr, decay, b1, b2, eps,
    bias_corr, loss; diag (lanes, N_DIAG)."""
    nl, n, d = Z3.shape
    b = idx3.shape[2]
    cyclic = idx3.shape[1] == 0
    rows = np.empty((nl, b), dtype=np.int64)
    crow = np.empty(b, dtype=np.int64)
    p = pos
    q = np.empty((nl, d))
    epss = np.empty((nl, d))
    S = np.empty(nl)
    thr = np.empty(nl)
    lazy = np.zeros(nl, dtype=np.bool_)
    plain = np.zeros(nl, dtype=np.bool_)
    unit = np.zeros(nl, dtype=np.bool_)
    cut = np.zeros(nl)
    for ln in range(nl):
        S[ln] = K._refresh(Sf[ln], q[ln], epss[ln], eps[ln])
        thr[ln] = 2.0 * K.TINY / b2[ln] if b2[ln] > 0.0 else np.inf
        lazy[ln] = K._all_at_least(V[ln], thr[ln])
        unit[ln] = d >= K.PLAIN_MIN_D and eps[ln] == 0.0 and not bias_corr[ln]
        plain[ln] = unit[ln] and K._all_at_least(-q[ln], -1.0)
        if b > 1:
            cut[ln] = K.CUT_SQ
    rownz = np.zeros((nl, n), dtype=np.bool_)
    for ln in range(nl):
        for i in range(n):
            for k in range(d):
                rownz[ln, i] |= Z3[ln, i, k] != 0.0
    Zf = Z3.reshape(nl * n, d)  # lane l's sample i is row l·n + i
    zw = np.empty(nl)
    gt = np.empty((nl, d))
    lw = np.empty(b)
    nogsq = np.empty(0)
    gown = np.empty(d)
    Lk = np.empty(d)
    own = np.zeros(d, dtype=np.bool_)
    wown = np.empty(d)
    for step in range(nsteps):
        t = t0 + step
        if cyclic:
            p = K._fill_rows(idx3[0], step, p, n, crow)
            for ln in range(nl):
                rows[ln, :] = crow
        else:
            for ln in range(nl):
                rows[ln, :] = idx3[ln, step]
        if b == 1:
            _dots(Zf, n, rows, W, zw)
        tp = -1.0
        for ln in range(nl):
            if ln == 0 or decay[ln] != decay[ln - 1]:  # one pow per step for a sweep with one schedule
                tp = math.pow(t + 1.0, -decay[ln])
            eta = lr[ln] * tp
            c1 = 1.0 - b1[ln] ** (t + 1.0) if bias_corr[ln] else 1.0
            c2 = 1.0 - b2[ln] ** (t + 1.0) if bias_corr[ln] else 1.0
            nown = 0
            if b == 1:
                i = rows[ln, 0]
                L = K._log_weight(zw[ln], loss[ln])
                nonzero = rownz[ln, i]
                g2, rg, sg = Zf, ln * n + i, -1.0  # g̃ = −z_i, read from the data on the lazy path
            else:
                L, nonzero, nown = K._batch_gradient(Z3[ln], rows[ln], W[ln], loss[ln], lw, gt[ln], nogsq, diag[ln],
                                                     cut[ln], gown, Lk, own)
                g2, rg, sg = gt, ln, 1.0
            if lazy[ln] and L + S[ln] <= 0.0 and nown == 0:  # the single run's lazy step, on this lane's row
                if plain[ln]:
                    low, moved = K._lazy_step_plain(g2, rg, sg, math.exp(L + S[ln]), W, M, V, ln, eta, b1[ln], b2[ln],
                                                    thr[ln])
                else:
                    low, moved = K._lazy_step(g2, rg, sg, math.exp(L + S[ln]), q, epss, W, M, V, ln, eta, b1[ln],
                                              b2[ln], c1, c2, thr[ln])
                lazy[ln] = not low
                K._count_stall(diag[ln], nonzero, moved)
            else:
                if b == 1:
                    for k in range(d):
                        gt[ln, k] = -Zf[rg, k]
                S[ln] = K._moment_step_adam(W[ln], M[ln], V[ln], Sf[ln], q[ln], epss[ln], S[ln], L, gt[ln], nonzero,
                                            nown, gown, Lk, own, wown, eta, c1, c2, b1[ln], b2[ln], eps[ln], True,
                                            diag[ln])
                lazy[ln] = K._all_at_least(V[ln], thr[ln])
                plain[ln] = unit[ln] and K._all_at_least(-q[ln], -1.0)


def _lane_data(Z, count: int) -> np.ndarray:
    if isinstance(Z, np.ndarray) and Z.ndim == 2:
        Z = [Z] * count
    Zs = [check_data(z) for z in Z]
    if len(Zs) != count:
        raise IbverifyError(f"run_lanes: {len(Zs)} datasets for {count} specs")
    if len({z.shape for z in Zs}) != 1:
        raise IbverifyError(f"run_lanes: datasets must share one shape, got {sorted({z.shape for z in Zs})}")
    return np.ascontiguousarray(np.stack(Zs))


def run_lanes(Z, specs: Sequence[OptimizerSpec], steps: int, checkpoints: int | np.ndarray = 30,
              progress: Callable[[int, int], None] | None = None) -> list[Run]:
    """Run every spec for `steps` steps (compiled engine, log-frame) and return one `Run` per spec,
    each bit-identical to `run(Z_l, specs[l], steps, checkpoints)`. Z: one (N, d) array shared by
    all lanes, or a sequence of arrays of one shape (one per spec). Adam-family specs with a common
    batch size go through `adam_lanes_chunk`; anything else is run one spec after another."""
    specs = list(specs)
    if not specs:
        return []
    Z3 = _lane_data(Z, len(specs))
    nl, n, d = Z3.shape
    specs = [s.resolved(n) for s in specs]
    cps = log_checkpoints(steps, checkpoints) if np.isscalar(checkpoints) else np.asarray(checkpoints, np.int64)
    if not (all("lanes" in s.row.implementations.get("vector", ()) for s in specs)
            and len({s.batch_size for s in specs}) == 1):
        return [run(Z3[i], s, steps, checkpoints=cps, progress=progress) for i, s in enumerate(specs)]
    t_start = time.perf_counter()
    b = specs[0].batch_size
    W, M, V, Sf = (np.zeros((nl, d)) for _ in range(4))
    diag = np.zeros((nl, K.N_DIAG), dtype=np.int64)
    samplers = [Sampler(n, b, s.order, s.seed) for s in specs]
    par = {"lr": np.array([s.lr for s in specs]), "decay": np.array([s.lr_decay for s in specs]),
           "b1": np.array([s.beta1 for s in specs]), "b2": np.array([s.beta2 for s in specs]),
           "eps": np.array([s.eps for s in specs]), "bias_corr": np.array([s.bias_correction for s in specs]),
           "loss": np.array([loss_code(s) for s in specs], dtype=np.int64)}
    ws = np.empty((nl, len(cps), d))
    cyclic = all(sm.order == "cyclic" for sm in samplers)
    per = max(1, CHUNK_WORK // (b * nl))
    t = 0
    for j, c in enumerate(cps):
        while t < c:
            k = int(min(c - t, per - t % per))
            if cyclic:  # every lane at the same stream position: no index array
                idx3 = np.empty((nl, 0, b), dtype=np.int64)
                pos = [sm.take_cyclic(k) for sm in samplers][0]
            else:
                idx3 = np.stack([sm.next(k) for sm in samplers])
                pos = 0
            adam_lanes_chunk(Z3, idx3, pos, k, W, M, V, Sf, t, par["lr"], par["decay"], par["b1"], par["b2"],
                             par["eps"], par["bias_corr"], par["loss"], diag)
            t += k
            bad = ~(np.isfinite(W).all(axis=1) & np.isfinite(M).all(axis=1) & np.isfinite(V).all(axis=1))
            if bad.any():
                raise IbverifyError(f"lane {int(np.argmax(bad))} ({specs[int(np.argmax(bad))].name}): non-finite "
                                    f"iterate or moment by step {t} (overflow; reduce --lr or check the data scale)")
            if progress:
                progress(t, int(cps[-1]))
        ws[:, j] = W
    seconds = time.perf_counter() - t_start
    out = []
    for ln, s in enumerate(specs):
        f, sh, st, streak = (int(x) for x in diag[ln])
        dg = {"flushed_weights": f, "frame_shifts": sh, "stalled_steps": st, "stalled_streak": streak,
              "frozen": frozen(streak, n, b), "max_log_scale": float(Sf[ln].max(initial=0.0))}
        out.append(Run(s, "compiled", cps, int(cps[-1]), ws=ws[ln], diagnostics=dg, seconds=seconds / nl))
    return out
