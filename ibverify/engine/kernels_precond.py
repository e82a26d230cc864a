"""Compiled (numba) vector-model kernel of `precond-gd` (issue 50: no reference loop in a full-tier claim).

The update of the row's chain (`ibverify.optim.transforms.precondition_diagonal`, then the schedule):
w_k ← w_k − η_t D_k g_k, with D = `precond_diagonal(d)` (D_k = 10^(k/(d−1) − 1), d = 1: D = 1) and g the true
batch gradient e^{L} g̃ (`kernels._batch_gradient`; it underflows as the reference's does: no log frame, as GD's
kernel in `kernels._stateless_chunk`). Same sampler layout, state arrays and diagnostics as the other vector
kernels; `run_chunk` has the signature of `kernels_more.run_chunk` (m, v, s, the moment knobs, λ and log_frame are
accepted and unused: the update keeps no state).

The table's row names it (`kernel="precond"`, `engine.vector.KERNELS`), so `engine.run` takes it by default.
Its kernels bind to the engine's source-keyed numba cache (`_kernel_cache`) here, as the modules imported by
`engine/__init__` do there.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ..optim.transforms import precond_diagonal
from ._kernel_cache import source_keyed_cache
from .kernels import JIT, _batch_gradient, _count_stall, _fill_rows

PRECOND = 14


def _precond_chunk(Z, D, idx, pos, nsteps, w, t0, lr, decay, loss, diag):
    """w ← w − η_t D ⊙ (e^{L} g̃) for nsteps steps from global step t0, in place."""
    n, d = Z.shape
    b = idx.shape[1]
    rows = np.empty(b, dtype=np.int64)
    lw = np.empty(b)
    gt = np.empty(d)
    nogsq = np.empty(0)
    noown = np.zeros(0, dtype=np.bool_)
    p = pos
    for step in range(nsteps):
        p = _fill_rows(idx, step, p, n, rows)
        t = t0 + step
        eta = lr * math.pow(t + 1.0, -decay)
        L, nonzero, _ = _batch_gradient(Z, rows, w, loss, lw, gt, nogsq, diag, 0.0, gt, gt, noown)
        scale = math.exp(L)
        moved = False
        for k in range(d):
            u = (gt[k] * scale) * D[k]
            wn = w[k] - eta * u
            moved |= wn != w[k]
            w[k] = wn
        _count_stall(diag, nonzero, moved)


with source_keyed_cache():
    precond_chunk = nb.njit(**JIT)(_precond_chunk)


def run_chunk(kind, Z, idx, pos, nsteps, w, m, v, s, t0, lr, decay, b1, b2, eps, bias_corr, lam, loss, log_frame,
              diag):
    """As `kernels_more.run_chunk`, for kind PRECOND (module docstring)."""
    if kind != PRECOND:
        raise ValueError(f"kernels_precond has no kernel of kind {kind}")
    precond_chunk(Z, precond_diagonal(Z.shape[1]), idx, pos, nsteps, w, t0, lr, decay, loss, diag)
