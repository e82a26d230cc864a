"""Compiled (numba) vector-model kernels for the rows of issue 22: steepest-l1, lion, adagrad, adamw.

Kept apart from `kernels` (which holds the paper optimizers' tuned kernels) and built from its shared pieces
(`_batch_gradient`, `_fill_rows`, `_refresh`, `_mul_exp`, `_count_stall`): same batch gradient, same sampler
layout, same state arrays (w, m, v, s), same diagnostics. One straightforward per-coordinate loop per step (no
lazy fast path): the arithmetic of each update is that of the reference chain (`ibverify.optim.transforms`).

Log frame (as in `kernels`): coordinate k keeps its moments relative to a log-scale s_k (true m_k = e^{−s_k} m̂_k,
true v_k = e^{−2 s_k} v̂_k); the incoming gradient enters as ĝ_k = g̃_k e^{L + s_k} (g = e^{L} g̃ the true batch
gradient). Every update here is invariant to a common positive rescaling of a coordinate's gradient history,
except for ε (the denominator becomes √v̂ + ε e^{s_k}, exact) and AdamW's decay term λθ (on θ: no frame).
  * steepest-l1: stateless and scale free: the argmax (and the exact-tie rule of the reference: the unit split
    equally over the k tied coordinates, sign(g̃_i)/k) is taken on g̃. Ties are decided on g̃, the reference
    decides them on g = e^{L} g̃: the same set whenever the tied coordinates' batch sums are computed from equal
    values (e.g. equal data columns), which is what exactly tied data means here.
  * lion: c = β1 m + (1−β1) g and m ← β2 m + (1−β2) g in the frame of m. Where β1 m = 0 exactly (m = 0, or
    β1 = 0) the step is sign(g) whatever the size of ĝ (ĝ may underflow); where β2 m = 0 and |m̂_new| < TINY the
    moment is re-framed at g (s_k = −L, m̂ = (1−β2) g̃: exact). Tiny m̂ are shifted back to O(1) after a step.
  * adagrad: v ← v + g², u = g/(√v + ε) in the frame of v. A coordinate whose v̂ is 0 (first gradient) is
    re-framed at g (s_k = −L, v̂ = g̃²). v̂ never decreases otherwise, so no post-step shift is needed.
  * adamw: Adam's moments as `kernels._moment_step` (pre-step shift, re-frame when v̂_new < LOST: the old m̂, v̂
    combined with g in the log domain, `kernels._reframe_moments`; post-step shift when v̂ < TINY), then
    θ_k ← θ_k − η_t (d_k + λ θ_k).
Pre-step shift (all moment rows): if L + s_k > 0 at a coordinate with g̃_k ≠ 0, the moments move down by e^{−e};
where the new term is below LOST in that frame ((1−β2)g̃² for adamw, min(1−β1, 1−β2)|g̃| for lion, g̃² for adagrad)
while the coordinate keeps memory, they move instead to the frame of the larger of the memory and the new term
(`kernels._frame_above`), so the memory is not dropped below the float64 range (counted in diag[KEPT]).
Batch size > 1 with a sample whose weight is below CUT (CUT_SQ for the squaring rows) relative to the batch's
largest: coordinates with no contribution above it are recomputed in their own frame L_k (`kernels._own_frames`)
and enter with ĝ_k = g̃_k^{own} e^{L_k + s_k}. With log_frame=False: s ≡ 0 and no frame moves (naive float64;
steepest-l1 then takes its argmax on e^{L} g̃, which underflows to 0 like the reference).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .kernels import (CUT, CUT_SQ, JIT, LOST, SAFE, TINY, _adam_keeps, _batch_gradient, _count_kept, _count_stall,
                      _fill_rows, _frame_above, _log_mem, _mul_exp, _reframe_moments, _refresh, _shift_to)

L1, LION, ADAGRAD, ADAMW = 10, 11, 12, 13
TRUE_MIN = -700.0  # steepest-l1 takes the true gradient e^{L} g̃ while L > this (e^{L} normal, with room)


@nb.njit(**JIT)
def _l1_chunk(Z, idx, pos, nsteps, w, t0, lr, decay, loss, log_frame, diag):
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
        if L > TRUE_MIN or not log_frame:  # the true gradient, in the reference's order of operations
            nonzero = False
            for k in range(d):
                gt[k] = 0.0
            for j in range(b):
                c = math.exp(lw[j])
                i = rows[j]
                for k in range(d):
                    gt[k] += -(c * Z[i, k])
            for k in range(d):
                gt[k] /= b
                nonzero |= gt[k] != 0.0
        top = 0.0
        for k in range(d):
            top = max(top, abs(gt[k]))
        moved = False
        if top > 0.0:
            cnt = 0
            for k in range(d):
                if abs(gt[k]) == top:
                    cnt += 1
            for k in range(d):
                if abs(gt[k]) == top:
                    u = (1.0 if gt[k] > 0.0 else -1.0) / cnt
                    wn = w[k] - eta * u
                    moved |= wn != w[k]
                    w[k] = wn
        _count_stall(diag, nonzero, moved)


@nb.njit(**JIT)
def _frame_chunk(kind, Z, idx, pos, nsteps, w, m, v, s, t0, lr, decay, b1, b2, eps, bias_corr, lam, loss,
                 log_frame, diag):
    """lion (m), adagrad (v) and adamw (m, v) in the log frame; w, m, v, s in place."""
    n, d = Z.shape
    b = idx.shape[1]
    rows = np.empty(b, dtype=np.int64)
    lw = np.empty(b)
    gt = np.empty(d)
    nogsq = np.empty(0)
    gown = np.empty(d)
    Lk = np.empty(d)
    own = np.zeros(d, dtype=np.bool_)
    q = np.empty(d)
    epss = np.empty(d)
    cut = 0.0
    if log_frame and b > 1:
        cut = CUT if kind == LION else CUT_SQ
    S = _refresh(s, q, epss, eps)
    p = pos
    for step in range(nsteps):
        p = _fill_rows(idx, step, p, n, rows)
        t = t0 + step
        eta = lr * math.pow(t + 1.0, -decay)
        c1 = 1.0 - b1 ** (t + 1.0) if bias_corr else 1.0
        c2 = 1.0 - b2 ** (t + 1.0) if bias_corr else 1.0
        L, nonzero, nown = _batch_gradient(Z, rows, w, loss, lw, gt, nogsq, diag, cut, gown, Lk, own)
        safe = L + S <= SAFE
        a = math.exp(L + S) if safe else 0.0
        moved = False
        tiny = False
        anys = False
        for k in range(d):
            if nown > 0 and own[k]:
                gv = gown[k]
                Lv = Lk[k]
            else:
                gv = gt[k]
                Lv = L
            fresh = False  # s_k changed this step: exp per coordinate
            if log_frame and gv != 0.0 and Lv + s[k] > 0.0:  # pre-step shift: the gradient is above the frame
                e = Lv + s[k]
                lg = Lv + math.log(abs(gv))
                if kind == ADAMW and _adam_keeps(m[k], v[k], gv, b1, b2):  # keep the memory (_frame_above)
                    lold = 0.5 * _log_mem(b2, v[k]) - s[k]
                    _shift_to(k, _frame_above(lold, 0.5 * math.log(1.0 - b2) + lg, Lv), m, v, s)
                    _count_kept(diag)
                elif kind == LION and min(1.0 - b1, 1.0 - b2) * abs(gv) < LOST and m[k] != 0.0:
                    _shift_to(k, _frame_above(math.log(abs(m[k])) - s[k], lg, Lv), m, v, s)
                    _count_kept(diag)
                elif kind == ADAGRAD and gv * gv < LOST and v[k] > 0.0:
                    _shift_to(k, _frame_above(0.5 * math.log(v[k]) - s[k], lg, Lv), m, v, s)
                    _count_kept(diag)
                else:
                    m[k] *= math.exp(-e)
                    v[k] = v[k] * math.exp(-2.0 * e)
                    s[k] -= e
                diag[1] += 1
                fresh = True
            if gv == 0.0:
                gh = 0.0
            elif safe and not fresh and not (nown > 0 and own[k]):
                gh = gv * (a * q[k])
            else:
                gh = _mul_exp(gv, Lv + s[k])
            es = (eps * math.exp(s[k]) if eps > 0.0 else 0.0) if fresh else epss[k]
            if kind == LION:
                mo = m[k]
                if log_frame and gv != 0.0 and b1 * mo == 0.0:  # c = (1−β1) g exactly: its sign is sign(g)
                    u = 1.0 if gv > 0.0 else -1.0
                else:
                    c = b1 * mo + (1.0 - b1) * gh
                    u = 1.0 if c > 0.0 else (-1.0 if c < 0.0 else 0.0)
                mk = b2 * mo + (1.0 - b2) * gh
                if log_frame and gv != 0.0 and b2 * mo == 0.0 and abs(mk) < TINY:  # m = (1−β2) g exactly
                    s[k] = -Lv
                    mk = (1.0 - b2) * gv
                    fresh = True
                    diag[1] += 1
                m[k] = mk
                tiny |= (mk != 0.0) & (abs(mk) < TINY)
                wn = w[k] - eta * u
            elif kind == ADAGRAD:
                if log_frame and gv != 0.0 and not (v[k] > 0.0):  # no memory: v = g² exactly, frame at g
                    s[k] = -Lv
                    gh = gv
                    es = eps * math.exp(s[k]) if eps > 0.0 else 0.0
                    fresh = True
                    diag[1] += 1
                vk = v[k] + gh * gh
                v[k] = vk
                den = math.sqrt(vk) + es
                u = gh / den if den != 0.0 else 0.0
                wn = w[k] - eta * u
            else:  # ADAMW
                mk = b1 * m[k] + (1.0 - b1) * gh
                vk = b2 * v[k] + (1.0 - b2) * gh * gh
                if log_frame and gv != 0.0 and vk < LOST:  # the sum left the normal range: as kernels._reframe
                    if _reframe_moments(True, k, b1, b2, gv, Lv, m, v, s, b1, b2):
                        _count_kept(diag)
                    mk = m[k]
                    vk = v[k]
                    es = eps * math.exp(s[k]) if eps > 0.0 else 0.0
                    fresh = True
                    diag[1] += 1
                m[k] = mk
                v[k] = vk
                tiny |= (vk > 0.0) & (vk < TINY)
                den = math.sqrt(vk / c2) + es
                u = (mk / c1) / den if den != 0.0 else 0.0
                wn = w[k] - eta * (u + lam * w[k])
            moved |= wn != w[k]
            w[k] = wn
            anys |= fresh
        if log_frame and tiny:  # post-step shift (rare): bring tiny moments back to O(1)
            for k in range(d):
                x = abs(m[k]) if kind == LION else v[k]
                if 0.0 < x < TINY:
                    r = -math.log(x) if kind == LION else -0.5 * math.log(x)
                    m[k] = _mul_exp(m[k], r)
                    v[k] = _mul_exp(v[k], 2.0 * r)
                    s[k] += r
                    diag[1] += 1
            anys = True
        if anys:
            S = _refresh(s, q, epss, eps)
        _count_stall(diag, nonzero, moved)


@nb.njit(**JIT)
def run_chunk(kind, Z, idx, pos, nsteps, w, m, v, s, t0, lr, decay, b1, b2, eps, bias_corr, lam, loss, log_frame,
              diag):
    """As `kernels.run_chunk` for the kinds of this module (lam: AdamW's decoupled weight decay λ)."""
    if kind == L1:
        _l1_chunk(Z, idx, pos, nsteps, w, t0, lr, decay, loss, log_frame, diag)
    else:
        _frame_chunk(kind, Z, idx, pos, nsteps, w, m, v, s, t0, lr, decay, b1, b2, eps, bias_corr, lam, loss,
                     log_frame, diag)
