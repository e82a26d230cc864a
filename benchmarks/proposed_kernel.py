"""Prototype of a faster Adam path for `ibverify.engine.kernels.run_chunk` (a proposal, not used by
the engine). Same arguments (minus `kind`), same state (w, m, v, s), same diagnostics, same log-frame.

Profile of the engine's Adam path (per step, per coordinate k) shows three costs that a minimal loop
does not pay:
  1. `gh = gt[k] * exp(L + s[k])`: one `exp` per coordinate per step (d exps/step; ≈ half the time).
  2. Frame checks (`e > 0`, `0 < v < TINY`) with `exp`/`log` calls inside the coordinate loop: the
     loop cannot be vectorized and every branch is taken per coordinate.
  3. Generic batch code for b = 1 (gt/gsq passes, `exp(lw − L)` = exp(0), division by b).
This prototype:
  1. factors exp(L + s_k) = exp(L + S) · exp(s_k − S) with S = max_k s_k: one `exp` per step, the
     factors q_k = exp(s_k − S) ≤ 1 are cached and recomputed only when the frame moves (rare). Both
     factors are ≤ 1, so the product is as accurate as exp(L + s_k) (≤ 2 ulp in the normal range;
     when the true factor is subnormal, so is one of ours).
  2. checks the pre-step shift once per step (L + S ≤ 0 implies L + s_k ≤ 0 for all k) and the
     post-step `0 < v < TINY` as an OR over the loop, doing the shift in a separate rare pass; the
     step u is computed before that shift (mathematically the same, may differ by an ulp).
  3. special-cases b = 1 (relative gradient is −z_i exactly).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

TINY = 1e-150
LOGISTIC, EXPONENTIAL = 0, 1


@nb.njit(cache=True, inline="always")
def _log_weight(z, loss):
    if loss == EXPONENTIAL:
        return -z
    if z > 0:
        return -z - math.log1p(math.exp(-z))
    return -math.log1p(math.exp(z))


@nb.njit(cache=True)
def _refresh(s, q, epss, eps):
    S = s.max()
    for k in range(s.shape[0]):
        q[k] = math.exp(s[k] - S)
        epss[k] = eps * math.exp(s[k]) if eps > 0.0 else 0.0
    return S


@nb.njit(cache=True)
def run_chunk_adam(Z, idx, w, m, v, s, t0, lr, decay, b1, b2, eps, bias_corr, loss, log_frame, diag):
    """Adam path of `run_chunk` (kind = ADAM), restructured; advances w, m, v, s in place."""
    nsteps, b = idx.shape
    d = Z.shape[1]
    lw = np.empty(b)
    gt = np.empty(d)
    q = np.empty(d)
    epss = np.empty(d)
    S = _refresh(s, q, epss, eps)
    for step in range(nsteps):
        t = t0 + step
        eta = lr * math.pow(t + 1.0, -decay)
        nonzero = False
        if b == 1:
            i = idx[step, 0]
            zw = 0.0
            for k in range(d):
                zw += Z[i, k] * w[k]
            L = _log_weight(zw, loss)
            for k in range(d):
                gt[k] = -Z[i, k]
                nonzero |= Z[i, k] != 0.0
        else:
            L = -np.inf
            for j in range(b):
                i = idx[step, j]
                zw = 0.0
                for k in range(d):
                    zw += Z[i, k] * w[k]
                lw[j] = _log_weight(zw, loss)
                if lw[j] > L:
                    L = lw[j]
            for k in range(d):
                gt[k] = 0.0
            for j in range(b):
                c = math.exp(lw[j] - L)
                if c == 0.0:
                    diag[0] += 1
                i = idx[step, j]
                for k in range(d):
                    gt[k] -= c * Z[i, k]
            for k in range(d):
                gt[k] /= b
                nonzero |= gt[k] != 0.0
        # pre-step frame shift (rare): only possible if L + max_k s_k > 0
        if log_frame and L + S > 0.0:
            shifted = False
            for k in range(d):
                e = L + s[k]
                if e > 0.0 and gt[k] != 0.0:
                    m[k] *= math.exp(-e)
                    v[k] *= math.exp(-2.0 * e)
                    s[k] -= e
                    diag[1] += 1
                    shifted = True
            if shifted:
                S = _refresh(s, q, epss, eps)
        a = math.exp(L + S)
        c1 = 1.0 - b1 ** (t + 1.0) if bias_corr else 1.0
        c2 = 1.0 - b2 ** (t + 1.0) if bias_corr else 1.0
        moved = False
        tiny = False
        for k in range(d):
            gh = gt[k] * (a * q[k])
            mk = b1 * m[k] + (1.0 - b1) * gh
            vk = b2 * v[k] + (1.0 - b2) * gh * gh
            m[k] = mk
            v[k] = vk
            tiny |= (vk > 0.0) & (vk < TINY)
            den = math.sqrt(vk / c2) + epss[k]
            u = (mk / c1) / den if den > 0.0 else 0.0
            wn = w[k] - eta * u
            moved |= wn != w[k]
            w[k] = wn
        # post-step frame shift (rare): bring tiny second moments back to O(1)
        if log_frame and tiny:
            for k in range(d):
                if 0.0 < v[k] < TINY:
                    r = -0.5 * math.log(v[k])
                    m[k] *= math.exp(r)
                    v[k] *= math.exp(2.0 * r)
                    s[k] += r
                    diag[1] += 1
            S = _refresh(s, q, epss, eps)
        if nonzero and not moved:
            diag[2] += 1
            diag[3] += 1
        else:
            diag[3] = 0
