"""Compiled (numba) per-step kernels for every linear-model optimizer, in a log-frame.

Log-frame: each coordinate k keeps its moments relative to a log-scale s_k, true m_k = e^{−s_k} m̂_k,
true v_k = e^{−2 s_k} v̂_k. Adam without ε, Signum, NGD and AdamProxy are invariant to a common
positive rescaling of the gradient history of a coordinate, so the update m̂/√v̂ is the true one
while m̂, v̂ stay O(1) long after e^{−z} has underflowed. The frame moves only when needed:
  * before a step, if the incoming gradient would exceed the frame (l + s_k > 0), shift s_k down;
  * after a step, if 0 < v̂_k < TINY (Adam) or 0 < |m̂_k| < TINY (Signum), shift s_k up to O(1).
With ε > 0 the denominator is √v̂ + ε e^{s_k}, which is exact too. With log_frame=False the same
kernel runs naive float64 (s ≡ 0): it freezes once g² underflows (NUMERICS.md), which tests show.

Batch gradient: log-weights l_i = log|ℓ'(z_i·w)|; with L = max over the batch, the relative
gradient is g̃_k = −(1/b) Σ_i e^{l_i − L} z_ik and the true one g_k = e^{L} g̃_k.
Diagnostics (counters): flushed (a batch sample's relative weight underflowed to 0), shifts
(frame moves), stalled (steps where the true gradient is nonzero but w did not change at all; single
such steps are normal for samples with negligible weight), streak (current run of consecutive stalled
steps: a long streak at the end of a run is the signature of a float64 freeze).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

ADAM, SIGNUM, GD, NGD, PROXY = 0, 1, 2, 3, 4
LOGISTIC, EXPONENTIAL = 0, 1
TINY = 1e-150
N_DIAG = 4


@nb.njit(cache=True, inline="always")
def _log_weight(z, loss):
    if loss == EXPONENTIAL:
        return -z
    if z > 0:
        return -z - math.log1p(math.exp(-z))
    return -math.log1p(math.exp(z))


@nb.njit(cache=True)
def _rebase(s, o, E, B, k, r, L):
    """Coordinate k's scale moved up by r: keep B = max s and E = e^{s − B}; return (B, e^{L + B})."""
    if s[k] > B:
        B = s[k]
        for j in range(s.shape[0]):
            o[j] = s[j] - B
            E[j] = math.exp(o[j])
    else:
        o[k] += r
        E[k] = math.exp(o[k])
    return B, math.exp(L + B)


@nb.njit(cache=True)
def run_chunk(kind, Z, idx, w, m, v, s, t0, lr, decay, b1, b2, eps, bias_corr, loss, log_frame, diag):
    """Advance w (and state m, v, s) by idx.shape[0] steps starting at global step t0, in place."""
    nsteps, b = idx.shape
    d = Z.shape[1]
    lw = np.empty(b)
    gt = np.empty(d)
    gsq = np.empty(d)
    # two-level frame: s_k = B + o_k with B = max_k s_k, E_k = e^{o_k} ≤ 1, so e^{L + s_k} = e^{L + B} E_k
    # costs one exp per step instead of one per coordinate
    B = s.max()
    o = s - B
    E = np.exp(o)
    for step in range(nsteps):
        t = t0 + step
        eta = lr * math.pow(t + 1.0, -decay)
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
            gsq[k] = 0.0
        for j in range(b):
            c = math.exp(lw[j] - L)
            if c == 0.0:
                diag[0] += 1
            i = idx[step, j]
            for k in range(d):
                gk = c * Z[i, k]
                gt[k] -= gk
                gsq[k] += gk * gk
        nonzero = False
        for k in range(d):
            gt[k] /= b
            nonzero |= gt[k] != 0.0
        moved = False
        if kind == NGD:
            nrm = 0.0
            for k in range(d):
                nrm += gt[k] * gt[k]
            nrm = math.sqrt(nrm)
            for k in range(d):
                u = gt[k] / nrm if nrm > 0 else 0.0
                old = w[k]
                w[k] -= eta * u
                moved |= w[k] != old
        elif kind == GD:
            scale = math.exp(L)
            for k in range(d):
                old = w[k]
                w[k] -= eta * gt[k] * scale
                moved |= w[k] != old
        elif kind == PROXY:
            for k in range(d):
                u = gt[k] / math.sqrt(gsq[k]) if gsq[k] > 0 else 0.0
                old = w[k]
                w[k] -= eta * u
                moved |= w[k] != old
        else:
            c1 = 1.0 - b1 ** (t + 1.0) if bias_corr else 1.0
            c2 = 1.0 - b2 ** (t + 1.0) if bias_corr else 1.0
            A = math.exp(L + B)  # e^{L + s_k} = A · E_k with s_k = B + o_k, o_k ≤ 0
            for k in range(d):
                if log_frame and gt[k] != 0.0 and L + B + o[k] > 0.0:  # gradient above the frame
                    e = L + B + o[k]
                    m[k] *= math.exp(-e)
                    v[k] *= math.exp(-2.0 * e)
                    s[k] -= e
                    o[k] -= e
                    E[k] = math.exp(o[k])
                    diag[1] += 1
                gh = gt[k] * A * E[k]
                m[k] = b1 * m[k] + (1.0 - b1) * gh
                if kind == ADAM:
                    v[k] = b2 * v[k] + (1.0 - b2) * gh * gh
                    if log_frame and 0.0 < v[k] < TINY:
                        r = -0.5 * math.log(v[k])
                        m[k] *= math.exp(r)
                        v[k] *= math.exp(2.0 * r)
                        s[k] += r
                        diag[1] += 1
                        B, A = _rebase(s, o, E, B, k, r, L)
                    den = math.sqrt(v[k] / c2)
                    if eps > 0.0:
                        den += eps * math.exp(s[k])
                    u = (m[k] / c1) / den if den > 0.0 else 0.0
                else:
                    if log_frame and 0.0 < abs(m[k]) < TINY:
                        r = -math.log(abs(m[k]))
                        m[k] *= math.exp(r)
                        s[k] += r
                        diag[1] += 1
                        B, A = _rebase(s, o, E, B, k, r, L)
                    u = 1.0 if m[k] > 0 else (-1.0 if m[k] < 0 else 0.0)
                old = w[k]
                w[k] -= eta * u
                moved |= w[k] != old
        if nonzero and not moved:
            diag[2] += 1
            diag[3] += 1
        else:
            diag[3] = 0
