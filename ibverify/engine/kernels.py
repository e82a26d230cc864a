"""Compiled (numba) per-step kernels for every linear-model optimizer, in a log-frame.

Log-frame (Adam, Signum): each coordinate k keeps its moments relative to a log-scale s_k, true
m_k = e^{−s_k} m̂_k, true v_k = e^{−2 s_k} v̂_k. Adam without ε and Signum are invariant to a common
positive rescaling of a coordinate's gradient history, so m̂/√v̂ (or sign m̂) is the true update while
m̂, v̂ stay O(1) long after e^{−z} has underflowed. NGD and AdamProxy need no state: their updates
are ratios of the relative gradient g̃. The frame moves only when needed (rare passes):
  * before a step, if the incoming gradient would exceed the frame (L + s_k > 0), shift s_k down;
  * after a step, if 0 < v̂_k < TINY (Adam) or 0 < |m̂_k| < TINY (Signum), shift s_k up to O(1);
  * if a nonzero gradient fell out of the normal float64 range in the frame while the state had no
    memory left (v̂ < LOST, or m̂ = 0 for Signum: β = 0, or a coordinate's first gradient), the exact
    moments are (1−β1)g, (1−β2)g²: re-frame at g and take the step there.
e^{L + s_k} = e^{L + S} q_k with S = max_k s_k and cached q_k = e^{s_k − S}: one exp per step.
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
TINY = 1e-150  # moments below this are brought back to O(1)
LOST = 1e-280  # a v below this has (nearly) left the normal range: recompute in a frame at g
SAFE = 700.0   # e^{L + S} is used only while L + S ≤ SAFE (else one exp per coordinate)
N_DIAG = 4


@nb.njit(cache=True, inline="always")
def _log_weight(z, loss):
    if loss == EXPONENTIAL:
        return -z
    if z > 0:
        return -z - math.log1p(math.exp(-z))
    return -math.log1p(math.exp(z))


@nb.njit(cache=True)
def _batch_gradient(Z, idx, step, w, loss, lw, gt, gsq, diag):
    """Relative batch gradient g̃ = −(1/b) Σ_i e^{l_i − L} z_i (and Σ_i (e^{l_i − L} z_i)², if gsq is
    not empty); returns (L, any g̃_k ≠ 0). Batch size 1: g̃ = −z_i exactly."""
    b = idx.shape[1]
    d = Z.shape[1]
    L = -np.inf
    for j in range(b):
        i = idx[step, j]
        zw = 0.0
        for k in range(d):
            zw += Z[i, k] * w[k]
        lw[j] = _log_weight(zw, loss)
        L = max(L, lw[j])
    nonzero = False
    if b == 1 and gsq.shape[0] == 0:
        i = idx[step, 0]
        for k in range(d):
            gt[k] = -Z[i, k]
            nonzero |= gt[k] != 0.0
        return L, nonzero
    for k in range(d):
        gt[k] = 0.0
    for k in range(gsq.shape[0]):
        gsq[k] = 0.0
    for j in range(b):
        c = math.exp(lw[j] - L)
        if c == 0.0:
            diag[0] += 1
        i = idx[step, j]
        for k in range(d):
            gk = c * Z[i, k]
            gt[k] -= gk
        for k in range(gsq.shape[0]):
            gk = c * Z[i, k]
            gsq[k] += gk * gk
    for k in range(d):
        gt[k] /= b
        nonzero |= gt[k] != 0.0
    return L, nonzero


@nb.njit(cache=True, inline="always")
def _mul_exp(x, r):
    """x·e^r without overflowing the factor (r can exceed 709 when x is subnormal)."""
    while r > 700.0:
        x *= math.exp(700.0)
        r -= 700.0
    return x * math.exp(r)


@nb.njit(cache=True)
def _refresh(s, q, epss, eps):
    """S = max_k s_k, q_k = e^{s_k − S} ≤ 1, epss_k = ε e^{s_k}."""
    S = s.max()
    for k in range(s.shape[0]):
        q[k] = math.exp(s[k] - S)
        epss[k] = eps * math.exp(s[k]) if eps > 0.0 else 0.0
    return S


@nb.njit(cache=True)
def _moment_chunk(adam, Z, idx, w, m, v, s, t0, lr, decay, b1, b2, eps, bias_corr, loss, log_frame, diag):
    """Adam (adam=True: u = m̂/(√v̂ + ε)) or Signum (u = sign m) in the log-frame; w, m, v, s in place.
    Kept branch-light so the coordinate loop stays tight: frame moves happen in separate rare passes."""
    nsteps = idx.shape[0]
    d = Z.shape[1]
    lw = np.empty(idx.shape[1])
    gt = np.empty(d)
    nogsq = np.empty(0)
    q = np.empty(d)
    epss = np.empty(d)
    S = _refresh(s, q, epss, eps)
    for step in range(nsteps):
        t = t0 + step
        eta = lr * math.pow(t + 1.0, -decay)
        L, nonzero = _batch_gradient(Z, idx, step, w, loss, lw, gt, nogsq, diag)
        if log_frame and L + S > 0.0:  # pre-step shift (rare): the gradient is above a frame
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
        c1 = 1.0 - b1 ** (t + 1.0) if bias_corr else 1.0
        c2 = 1.0 - b2 ** (t + 1.0) if bias_corr else 1.0
        safe = L + S <= SAFE
        a = math.exp(L + S) if safe else 0.0
        moved = False
        tiny = False
        lost = False
        if safe and adam:  # the hot loop: branch-free so it can vectorize
            for k in range(d):
                gh = gt[k] * (a * q[k])  # (for b = 1, gt = −z_i exactly)
                mk = b1 * m[k] + (1.0 - b1) * gh
                vk = b2 * v[k] + (1.0 - b2) * gh * gh
                m[k] = mk
                v[k] = vk
                tiny |= (vk > 0.0) & (vk < TINY)
                gone = (vk < LOST) & (gt[k] != 0.0) & log_frame  # redone below in a frame at g
                lost |= gone
                den = math.sqrt(vk / c2) + epss[k]
                u = 0.0 if (gone or den == 0.0) else (mk / c1) / den
                wn = w[k] - eta * u
                moved |= wn != w[k]
                w[k] = wn
        else:
            for k in range(d):
                if safe:
                    gh = gt[k] * (a * q[k])
                else:  # a zero-gradient coordinate holds the max frame: exp per coordinate this step
                    gh = gt[k] * math.exp(L + s[k]) if gt[k] != 0.0 else 0.0
                mk = b1 * m[k] + (1.0 - b1) * gh
                m[k] = mk
                if adam:
                    vk = b2 * v[k] + (1.0 - b2) * gh * gh
                    v[k] = vk
                    tiny |= (vk > 0.0) & (vk < TINY)
                    den = math.sqrt(vk / c2) + epss[k]
                    u = (mk / c1) / den if den > 0.0 else 0.0
                    if log_frame and vk < LOST and gt[k] != 0.0:  # redone below in a frame at g
                        lost = True
                        u = 0.0
                else:
                    tiny |= (mk != 0.0) & (abs(mk) < TINY)
                    u = 1.0 if mk > 0.0 else (-1.0 if mk < 0.0 else 0.0)
                    if log_frame and mk == 0.0 and gt[k] != 0.0:
                        lost = True
                wn = w[k] - eta * u
                moved |= wn != w[k]
                w[k] = wn
        if log_frame and lost:  # no memory left: exact moments (1−β1)g, (1−β2)g² in a frame at g
            for k in range(d):
                if gt[k] != 0.0 and ((adam and v[k] < LOST) or (not adam and m[k] == 0.0)):
                    s[k] = -L
                    m[k] = (1.0 - b1) * gt[k]
                    if adam:
                        v[k] = (1.0 - b2) * gt[k] * gt[k]
                        den = math.sqrt(v[k] / c2) + (eps * math.exp(s[k]) if eps > 0.0 else 0.0)
                        u = (m[k] / c1) / den
                    else:
                        u = 1.0 if m[k] > 0.0 else -1.0
                    wn = w[k] - eta * u
                    moved |= wn != w[k]
                    w[k] = wn
                    diag[1] += 1
            S = _refresh(s, q, epss, eps)
        if log_frame and tiny:  # post-step shift (rare): bring tiny moments back to O(1)
            for k in range(d):
                x = v[k] if adam else abs(m[k])
                if 0.0 < x < TINY:
                    r = -0.5 * math.log(x) if adam else -math.log(x)
                    m[k] = _mul_exp(m[k], r)
                    v[k] = _mul_exp(v[k], 2.0 * r)
                    s[k] += r
                    diag[1] += 1
            S = _refresh(s, q, epss, eps)
        _count_stall(diag, nonzero, moved)


@nb.njit(cache=True, inline="always")
def _count_stall(diag, nonzero, moved):
    if nonzero and not moved:
        diag[2] += 1
        diag[3] += 1
    else:
        diag[3] = 0


@nb.njit(cache=True)
def _stateless_chunk(kind, Z, idx, w, t0, lr, decay, loss, diag):
    """GD (u = e^{L} g̃: the true step, which underflows), NGD (u = g̃/‖g̃‖) and AdamProxy
    (u = g̃ ⊘ sqrt(Σ_i (e^{l_i − L} z_i)²)); the last two are scale free."""
    d = Z.shape[1]
    lw = np.empty(idx.shape[1])
    gt = np.empty(d)
    gsq = np.empty(d if kind == PROXY else 0)
    for step in range(idx.shape[0]):
        t = t0 + step
        eta = lr * math.pow(t + 1.0, -decay)
        L, nonzero = _batch_gradient(Z, idx, step, w, loss, lw, gt, gsq, diag)
        if kind == NGD:
            nrm = 0.0
            for k in range(d):
                nrm += gt[k] * gt[k]
            scale = 1.0 / math.sqrt(nrm) if nrm > 0 else 0.0
        else:
            scale = math.exp(L)
        moved = False
        for k in range(d):
            if kind == PROXY:
                u = gt[k] / math.sqrt(gsq[k]) if gsq[k] > 0 else 0.0
            else:
                u = gt[k] * scale
            wn = w[k] - eta * u
            moved |= wn != w[k]
            w[k] = wn
        _count_stall(diag, nonzero, moved)


@nb.njit(cache=True)
def run_chunk(kind, Z, idx, w, m, v, s, t0, lr, decay, b1, b2, eps, bias_corr, loss, log_frame, diag):
    """Advance w (and state m, v, s) by idx.shape[0] steps starting at global step t0, in place."""
    if kind == ADAM or kind == SIGNUM:
        _moment_chunk(kind == ADAM, Z, idx, w, m, v, s, t0, lr, decay, b1, b2, eps, bias_corr, loss,
                      log_frame, diag)
    else:
        _stateless_chunk(kind, Z, idx, w, t0, lr, decay, loss, diag)
