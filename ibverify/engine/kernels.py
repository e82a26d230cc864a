"""Compiled (numba) per-step kernels for every linear-model optimizer, in a log-frame.

Log-frame (Adam, Signum): each coordinate k keeps its moments relative to a log-scale s_k, true
m_k = e^{−s_k} m̂_k, true v_k = e^{−2 s_k} v̂_k. Adam without ε and Signum are invariant to a common
positive rescaling of a coordinate's gradient history, so m̂/√v̂ (or sign m̂) is the true update while
m̂, v̂ stay O(1) long after e^{−z} has underflowed. NGD and AdamProxy need no state: their updates
are ratios of the relative gradient g̃. The frame moves only when needed (rare passes):
  * before a step, if the incoming gradient would exceed the frame (L + s_k > 0), shift s_k down: by
    L + s_k, or, where the new term ((1−β2)g̃², (1−β1)|g̃| for Signum) is below LOST while the coordinate keeps
    memory, to the frame of the larger of the old memory and the new term (nothing leaves the float64 range);
  * after a step, if 0 < v̂_k < TINY (Adam) or 0 < |m̂_k| < TINY (Signum), shift s_k up to O(1);
  * re-frame: if a nonzero gradient's sum with the memory fell out of the normal float64 range in the frame
    (v̂_new < LOST, or m̂_new = 0 for Signum), the coordinate's old m̂, v̂ were kept (not overwritten by the
    loop) and are combined with g in the log domain (`_combine`: log β2 v̂ − 2 s_k and log(1−β2) + 2 log|g|
    added by log-sum-exp, the new frame at the larger term), so no memory is dropped that a float64 log can
    hold; with no memory (β = 0, a first gradient) the exact moments (1−β1)g, (1−β2)g² are re-framed at g.
    A diag array with a KEPT slot (N_DIAG + 1 entries) counts both log-domain combinations there.
e^{L + s_k} = e^{L + S} q_k with S = max_k s_k and cached q_k = e^{s_k − S}: one exp per step.
With ε > 0 the denominator is √v̂ + ε e^{s_k}, which is exact too. With log_frame=False the same
kernel runs naive float64 (s ≡ 0): it freezes once g² underflows, which tests show.

Batch gradient: log-weights l_i = log|ℓ'(z_i·w)|; with L = max over the batch, the relative
gradient is g̃_k = −(1/b) Σ_i e^{l_i − L} z_ik and the true one g_k = e^{L} g̃_k.
Per-coordinate frames (issue 10 item 7; with memory: issue 50): at batch size b > 1 a coordinate whose
every batch contribution is far below the batch's largest weight (max_i e^{l_i − L}|z_ik| < CUT, or
CUT_SQ where squares must stay normal) would be flushed to 0 (or lose precision) in the shared frame L,
although its exact update can be O(1) (a full sign step at β2 = 0; Adam's m/√v of its own history).
Such a coordinate is recomputed in its own frame L_k = max{l_i : z_ik ≠ 0}:
g̃_k = −(1/b) Σ_i e^{l_i − L_k} z_ik (and the squares for AdamProxy); the moment kernels let the shared
loop decay its m̂, v̂ (without a step: w_k is restored) and then combine them with g̃_k e^{L_k} in the log
domain (re-frame above), taking its step there.

Speed (issue 12): every kernel is compiled with error_model='numpy' (no ZeroDivisionError check per
division, so the hot loops vectorize; every division is guarded, results are bit-identical).
Lazy frame test (Adam): v_new = β2 v + (1−β2) g² ≥ β2 v, so if every v̂_k ≥ 2·TINY/β2 before a step
that needs no pre-step shift (L + S ≤ 0) and has no own-frame coordinate, no coordinate can become tiny or lost
in that step: such
steps run a branch-free loop with the identical arithmetic (and only test v̂_k < 2·TINY/β2 for the
next step). Not for Signum (m is signed and can cancel to 0 in one step).
Log-weight shortcut: for z ≥ 37, −z − log1p(e^{−z}) rounds to −z exactly in float64 (e^{−37} <
2^{−53}·37/2), so −z is returned without two libm calls (bit-identical).
Samples: either an index block idx (steps, b), or, for cyclic order, no array at all (idx of shape
(0, b)): step t uses positions pos + t·b, …, pos + t·b + b − 1 (mod N) of 0, 1, …, N−1.
Diagnostics (counters): flushed (a batch sample's relative weight underflowed to 0), shifts
(frame moves), stalled (steps where the true gradient is nonzero but w did not change at all; single
such steps are normal for samples with negligible weight), streak (current run of consecutive stalled
steps: a long streak at the end of a run is the signature of a float64 freeze), kept (memory combined
with a gradient in the log domain: re-frames and pre-step shifts that would otherwise have dropped it).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

ADAM, SIGNUM, GD, NGD, PROXY = 0, 1, 2, 3, 4
LOGISTIC, EXPONENTIAL = 0, 1
TINY = 1e-150  # moments below this are brought back to O(1)
LOST = 1e-280  # a v below this has (nearly) left the normal range: recombine in the log domain (re-frame)
SAFE = 700.0   # e^{L + S} is used only while L + S ≤ SAFE (else one exp per coordinate)
CUT = 1e-290   # memoryless Signum: a coordinate whose largest relative contribution is below this gets
CUT_SQ = 1e-145  # its own frame; AdamProxy and memoryless Adam square the contributions: below this
SHORTCUT = 37.0  # log-weight: −z − log1p(e^{−z}) == −z in float64 for z ≥ 37
PLAIN_MIN_D = 64  # from this d a kernel specialization with the plain lazy loop is used (faster there only)
N_DIAG = 4  # what engine.vector and lanes allocate; a diag of N_DIAG + 1 also counts kept memory (KEPT)
KEPT = 4
JIT = dict(cache=True, error_model="numpy")


def jit_variant(fn, consts: tuple, **jit):
    """numba-compile the closure `fn` under a name of its own for its constants. Without it every variant of one
    closure has the same qualified name, so the same mangled symbol: a process that loads two variants from
    numba's on-disk cache links the first one's machine code for both (seen: Signum running the Adam kernel after
    a full-batch Adam run in the same process; tests/unit/test_engine.py caught it)."""
    tag = "_".join(str(int(c)) for c in consts)
    fn.__name__ = f"{fn.__name__}_v{tag}"
    fn.__qualname__ = f"{fn.__qualname__.split('.')[-1]}_v{tag}"
    return nb.njit(**(jit or JIT))(fn)


@nb.njit(inline="always", **JIT)
def _log_weight(z, loss):
    if loss == EXPONENTIAL or z >= SHORTCUT:
        return -z
    if z > 0:
        return -z - math.log1p(math.exp(-z))
    return -math.log1p(math.exp(z))


@nb.njit(inline="always", **JIT)
def _fill_rows(idx, step, p, n, rows):
    """Sample indices of this step into rows; p is the cyclic position (used when idx is empty)."""
    b = rows.shape[0]
    if idx.shape[0] == 0:
        for j in range(b):
            rows[j] = p
            p += 1
            if p == n:
                p = 0
    else:
        for j in range(b):
            rows[j] = idx[step, j]
    return p


@nb.njit(**JIT)
def _batch_gradient(Z, rows, w, loss, lw, gt, gsq, diag, cut, gown, Lk, own):
    """Relative batch gradient g̃ = −(1/b) Σ_i e^{l_i − L} z_i (and Σ_i (e^{l_i − L} z_i)², if gsq is
    not empty); returns (L, any g̃_k ≠ 0, number of own-frame coordinates). Batch size 1: g̃ = −z_i
    exactly. With cut > 0, a coordinate with max_i e^{l_i − L}|z_ik| < cut is recomputed in its own
    frame L_k (module docstring): in place in gt/gsq if own is empty (AdamProxy: scale free per
    coordinate), else into gown[k], Lk[k] with own[k] = True and gt[k] = 0 (moment kernels)."""
    b = rows.shape[0]
    d = Z.shape[1]
    L = -np.inf
    for j in range(b):
        i = rows[j]
        zw = 0.0
        for k in range(d):
            zw += Z[i, k] * w[k]
        lw[j] = _log_weight(zw, loss)
        L = max(L, lw[j])
    nonzero = False
    if b == 1 and gsq.shape[0] == 0:
        i = rows[0]
        for k in range(d):
            gt[k] = -Z[i, k]
            nonzero |= gt[k] != 0.0
        return L, nonzero, 0
    for k in range(d):
        gt[k] = 0.0
    for k in range(gsq.shape[0]):
        gsq[k] = 0.0
    cmin = 1.0
    for j in range(b):
        c = math.exp(lw[j] - L)
        cmin = min(cmin, c)
        if c == 0.0:
            diag[0] += 1
        i = rows[j]
        for k in range(d):
            gk = c * Z[i, k]
            gt[k] -= gk
        for k in range(gsq.shape[0]):
            gk = c * Z[i, k]
            gsq[k] += gk * gk
    for k in range(d):
        gt[k] /= b
        nonzero |= gt[k] != 0.0
    nown = 0
    if cut > 0.0 and cmin < cut:
        nown = _own_frames(Z, rows, lw, L, gt, gsq, cut, gown, Lk, own)
        nonzero |= nown > 0
    return L, nonzero, nown


@nb.njit(**JIT)
def _own_frames(Z, rows, lw, L, gt, gsq, cut, gown, Lk, own):
    """Recompute far coordinates in their own frame (see _batch_gradient); returns how many."""
    b = rows.shape[0]
    d = Z.shape[1]
    c = np.empty(b)  # each sample's weight in the shared frame, e^{l_j − L}: once a step, not once a coordinate
    alive = np.empty(b, dtype=np.int64)  # the samples whose weight is not flushed to 0 (the others add 0 to dom)
    na = 0
    for j in range(b):
        c[j] = math.exp(lw[j] - L)
        if c[j] > 0.0:
            alive[na] = j
            na += 1
    count = 0
    for k in range(d):
        if own.shape[0] > 0:
            own[k] = False
        fed = False  # dom = max_j e^{l_j − L}|z_jk| ≥ cut: the first such sample decides
        for a in range(na):
            z = Z[rows[alive[a]], k]
            if z != 0.0 and c[alive[a]] * abs(z) >= cut:
                fed = True
                break
        if fed:
            continue
        Lown = -np.inf
        for j in range(b):
            if Z[rows[j], k] != 0.0:
                Lown = max(Lown, lw[j])
        if Lown == -np.inf:
            continue
        g = 0.0
        sq = 0.0
        for j in range(b):
            z = Z[rows[j], k]
            if z != 0.0:  # (a sample with z_ik = 0 may lie above L_k: e^{l_i − L_k} can overflow)
                gk = math.exp(lw[j] - Lown) * z
                g -= gk
                sq += gk * gk
        g /= b
        count += 1
        if own.shape[0] == 0:
            gt[k] = g
            if gsq.shape[0] > 0:
                gsq[k] = sq
        else:
            gt[k] = 0.0
            gown[k] = g
            Lk[k] = Lown
            own[k] = True
    return count


@nb.njit(inline="always", **JIT)
def _mul_exp(x, r):
    """x·e^r without overflowing the factor (r can exceed 709 when x is subnormal)."""
    while r > 700.0:
        x *= math.exp(700.0)
        r -= 700.0
    return x * math.exp(r)


@nb.njit(**JIT)
def _refresh(s, q, epss, eps):
    """S = max_k s_k, q_k = e^{s_k − S} ≤ 1, epss_k = ε e^{s_k}. (The max as a loop, NaN-propagating like
    ndarray.max: numba's generic max costs a cold first run about a second of compiling.)"""
    S = s[0]
    for k in range(1, s.shape[0]):
        x = s[k]
        if x > S or x != x:
            S = x
    for k in range(s.shape[0]):
        q[k] = math.exp(s[k] - S)
        epss[k] = eps * math.exp(s[k]) if eps > 0.0 else 0.0
    return S


@nb.njit(**JIT)
def _all_at_least(v, thr):
    for k in range(v.shape[0]):
        if not v[k] >= thr:
            return False
    return True


@nb.njit(inline="always", **JIT)
def _log_abs(x):
    return math.log(abs(x)) if x != 0.0 else -np.inf


@nb.njit(inline="always", **JIT)
def _frame_above(lold, lnew, L):
    """s_k for a pre-step shift that keeps memory: the larger of the two terms' true log sizes (lold: the old
    memory's, lnew: the new gradient's, in the units of √v̂, or of m̂ for Signum and Lion) is O(1) in it; capped so
    that e^{L + s_k} stays finite (a g̃ below e^{−SAFE} is past float64's precision anyway)."""
    return min(-max(lold, lnew), SAFE - L)


@nb.njit(inline="always", **JIT)
def _shift_to(k, sn, m, v, s):
    """Move coordinate k's frame to sn (m̂ by e^{sn − s_k}, v̂ by its square)."""
    r = sn - s[k]
    m[k] = _mul_exp(m[k], r)
    v[k] = _mul_exp(v[k], 2.0 * r)
    s[k] = sn


@nb.njit(inline="always", **JIT)
def _log_mem(c, x):
    """log(c·|x|) without forming c·x (it can underflow while both logs are finite); −inf where c·x is 0."""
    return math.log(c) + math.log(abs(x)) if (c != 0.0 and x != 0.0) else -np.inf


@nb.njit(inline="always", **JIT)
def _adam_keeps(m, v, gt, b1, b2):
    """Adam: the new term (1−β2)g̃² in the frame at L is below LOST while the old memory β1 m̂, β2 v̂ is not zero:
    shifting by L + s_k would drop part of it below the float64 range."""
    return (1.0 - b2) * gt * gt < LOST and ((b1 != 0.0 and m != 0.0) or (b2 != 0.0 and v != 0.0))


@nb.njit(**JIT)  # (not inlined: rare, and it keeps the step's loop small)
def _combine(adam, k, cm, cv, g, Lg, m, v, s, b1, b2):
    """The exact new moments cm·m + (1−β1) g and (Adam) cv·v + (1−β2) g² of coordinate k, combined in the log
    domain (nothing dropped that float64 logs can hold): the old m̂, v̂ in the frame s_k, weighted by cm, cv (β1, β2;
    or 1, 1 where the shared loop has already decayed them), the true gradient g·e^{Lg}. The new frame puts the
    larger term at O(1): v̂ ∈ [1, 2] (Adam), the larger of |m̂|'s two terms 1 (Signum)."""
    lg = Lg + math.log(abs(g))
    lom = _log_mem(cm, m[k]) - s[k]
    if adam:
        lov = _log_mem(cv, v[k]) - 2.0 * s[k]
        lgv = math.log(1.0 - b2) + 2.0 * lg
        top = max(lov, lgv)
        sn = -0.5 * top
        v[k] = math.exp(lov - top) + math.exp(lgv - top)
    else:
        sn = -max(lom, math.log(1.0 - b1) + lg)
    m[k] = math.copysign(math.exp(lom + sn), m[k]) + (1.0 - b1) * math.copysign(math.exp(lg + sn), g)
    s[k] = sn


@nb.njit(inline="always", **JIT)
def _reframe_moments(adam, k, cm, cv, g, Lg, m, v, s, b1, b2):
    """Coordinate k's new moments where the new gradient (g·e^{Lg}) and the old memory (cm·m̂, cv·v̂ in the frame
    s_k) cannot be added in the shared frame. No memory (cm·m̂ = cv·v̂ = 0): the exact moments (1−β1)g, (1−β2)g² in
    a frame at g (s_k = −Lg); a g so small that those moments would leave the normal range ((1−β2)g² < LOST for
    Adam, (1−β1)|g| < TINY for Signum: a coordinate fed only by samples far past the batch's smallest margin;
    issue 35, digits 2-vs-3 ended in 0/0) is re-framed at g itself: ±1 in the frame Lg + log|g|. With memory:
    `_combine` (log domain). Returns whether memory was kept (combined)."""
    if (cm == 0.0 or m[k] == 0.0) and ((not adam) or cv == 0.0 or v[k] == 0.0):
        if (adam and (1.0 - b2) * g * g < LOST) or ((not adam) and (1.0 - b1) * abs(g) < TINY):
            Lg += math.log(abs(g))
            g = 1.0 if g > 0.0 else -1.0
        s[k] = -Lg
        m[k] = (1.0 - b1) * g
        if adam:
            v[k] = (1.0 - b2) * g * g
        return False
    _combine(adam, k, cm, cv, g, Lg, m, v, s, b1, b2)
    return True


@nb.njit(inline="always", **JIT)
def _reframe(adam, k, cm, cv, g, Lg, w, m, v, s, eta, b1, b2, eps, c1, c2, diag):
    """`_reframe_moments`, then the step taken in the new frame. Returns whether w_k changed. Counts a frame move
    (diag[1]) and, where memory was kept, a log-domain combination (diag[KEPT])."""
    diag[1] += 1
    if _reframe_moments(adam, k, cm, cv, g, Lg, m, v, s, b1, b2):
        _count_kept(diag)
    if adam:
        den = math.sqrt(v[k] / c2) + (eps * math.exp(s[k]) if eps > 0.0 else 0.0)
        u = (m[k] / c1) / den if den > 0.0 else 0.0
    else:
        u = 1.0 if m[k] > 0.0 else (-1.0 if m[k] < 0.0 else 0.0)
    wn = w[k] - eta * u
    moved = wn != w[k]
    w[k] = wn
    return moved


def _make_moment_step(adam: bool):
    """_moment_step for Adam (adam=True) or Signum: `adam` is the closure's constant, so numba prunes the other
    optimizer's branches before typing them (a run compiles only its own; issue 21)."""

    def _moment_step(w, m, v, s, q, epss, S, L, gt, nonzero, nown, gown, Lk, own, wown, eta, c1, c2, b1, b2, eps,
                     log_frame, diag):
        """One Adam/Signum step (general path) given the batch gradient g̃ (gt, L); returns the new S.
        Kept branch-light so the coordinate loop stays tight: frame moves happen in separate rare passes."""
        d = w.shape[0]
        if nown > 0:  # own-frame coordinates: w_k as it was (the shared loop below steps them on their decayed m̂)
            for k in range(d):
                if own[k]:
                    wown[k] = w[k]
        if log_frame and L + S > 0.0:  # pre-step shift (rare): the gradient is above a frame
            shifted = False
            for k in range(d):
                e = L + s[k]
                if e > 0.0 and gt[k] != 0.0:
                    if adam and _adam_keeps(m[k], v[k], gt[k], b1, b2):  # the old v must not be dropped
                        lold = 0.5 * _log_mem(b2, v[k]) - s[k]
                        _shift_to(k, _frame_above(lold, 0.5 * math.log(1.0 - b2) + L + math.log(abs(gt[k])), L),
                                  m, v, s)
                        _count_kept(diag)
                    elif (not adam) and (1.0 - b1) * abs(gt[k]) < LOST and b1 != 0.0 and m[k] != 0.0:  # nor old m
                        lold = _log_mem(b1, m[k]) - s[k]
                        _shift_to(k, _frame_above(lold, math.log(1.0 - b1) + L + math.log(abs(gt[k])), L), m, v, s)
                        _count_kept(diag)
                    else:
                        m[k] *= math.exp(-e)
                        v[k] *= math.exp(-2.0 * e)
                        s[k] -= e
                    diag[1] += 1
                    shifted = True
            if shifted:
                S = _refresh(s, q, epss, eps)
        safe = L + S <= SAFE
        a = math.exp(L + S) if safe else 0.0
        moved = False
        tiny = False
        lost = False
        if safe and adam:  # branch-free so it can vectorize
            for k in range(d):
                gh = gt[k] * (a * q[k])  # (for b = 1, gt = −z_i exactly)
                mk = b1 * m[k] + (1.0 - b1) * gh
                vk = b2 * v[k] + (1.0 - b2) * gh * gh
                tiny |= (vk > 0.0) & (vk < TINY)
                gone = (vk < LOST) & (gt[k] != 0.0) & log_frame  # redone below from the old m̂, v̂ (kept)
                m[k] = m[k] if gone else mk
                v[k] = v[k] if gone else vk
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
                mo = m[k]
                mk = b1 * mo + (1.0 - b1) * gh
                m[k] = mk
                if adam:
                    vo = v[k]
                    vk = b2 * vo + (1.0 - b2) * gh * gh
                    v[k] = vk
                    tiny |= (vk > 0.0) & (vk < TINY)
                    den = math.sqrt(vk / c2) + epss[k]
                    u = (mk / c1) / den if den > 0.0 else 0.0
                    if log_frame and vk < LOST and gt[k] != 0.0:  # redone below from the old m̂, v̂ (restored)
                        lost = True
                        u = 0.0
                        m[k] = mo
                        v[k] = vo
                else:
                    tiny |= (mk != 0.0) & (abs(mk) < TINY)
                    u = 1.0 if mk > 0.0 else (-1.0 if mk < 0.0 else 0.0)
                    if log_frame and mk == 0.0 and gt[k] != 0.0:  # redone below from the old m̂ (restored)
                        lost = True
                        m[k] = mo
                wn = w[k] - eta * u
                moved |= wn != w[k]
                w[k] = wn
        if log_frame and lost:  # the sum left the normal range: the same test again, then the old m̂, v̂ and g
            for k in range(d):  # combined outside the shared frame (_reframe)
                if gt[k] != 0.0:
                    gh = gt[k] * (a * q[k]) if safe else gt[k] * math.exp(L + s[k])
                    if (adam and b2 * v[k] + (1.0 - b2) * gh * gh < LOST) or \
                            ((not adam) and b1 * m[k] + (1.0 - b1) * gh == 0.0):
                        moved |= _reframe(adam, k, b1, b2, gt[k], L, w, m, v, s, eta, b1, b2, eps, c1, c2, diag)
            S = _refresh(s, q, epss, eps)
            tiny = True
        if nown > 0:  # coordinates in their own frame L_k (gt_k = 0 above: m̂, v̂ decayed, no step yet)
            for k in range(d):
                if own[k]:
                    w[k] = wown[k]
                    moved |= _reframe(adam, k, 1.0, 1.0, gown[k], Lk[k], w, m, v, s, eta, b1, b2, eps, c1, c2, diag)
            S = _refresh(s, q, epss, eps)
            tiny = True
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
        return S

    return jit_variant(_moment_step, (adam,))


_moment_step_adam = _make_moment_step(True)
_moment_step_signum = _make_moment_step(False)


@nb.njit(inline="always", **JIT)
def _lazy_step(g, rg, sg, a, q, epss, w, m, v, r, eta, b1, b2, c1, c2, thr):
    """The Adam step when the lazy frame test holds (module docstring): the same arithmetic as the
    general path with gh = g̃_k·(a·q_k), g̃_k = sg·g[rg, k] (sg = ±1: exact; batch size 1 passes the data
    row with sg = −1, so g̃ = −z_i is never stored), no frame tests, on row r of 2-d arrays (a single
    run passes (1, d) views; lanes their own row: no per-step views). Returns (some v̂_k < thr, w changed)."""
    low = False
    moved = False
    for k in range(w.shape[1]):
        gh = (sg * g[rg, k]) * (a * q[r, k])
        mk = b1 * m[r, k] + (1.0 - b1) * gh
        vk = b2 * v[r, k] + (1.0 - b2) * gh * gh
        m[r, k] = mk
        v[r, k] = vk
        low |= vk < thr
        den = math.sqrt(vk / c2) + epss[r, k]
        wn = w[r, k] - eta * ((mk / c1) / den)
        moved |= wn != w[r, k]
        w[r, k] = wn
    return low, moved


@nb.njit(inline="always", **JIT)
def _lazy_step_plain(g, rg, sg, a, w, m, v, r, eta, b1, b2, thr):
    """_lazy_step when ε = 0, there is no bias correction and every q_k = 1: the factors that are
    exactly 1 and the terms that are exactly 0 dropped (bit-identical, a shorter loop)."""
    low = False
    moved = False
    for k in range(w.shape[1]):
        gh = (sg * g[rg, k]) * a
        mk = b1 * m[r, k] + (1.0 - b1) * gh
        vk = b2 * v[r, k] + (1.0 - b2) * gh * gh
        m[r, k] = mk
        v[r, k] = vk
        low |= vk < thr
        wn = w[r, k] - eta * (mk / math.sqrt(vk))
        moved |= wn != w[r, k]
        w[r, k] = wn
    return low, moved


def _make_moment_chunk(adam: bool, with_plain: bool, single: bool):
    """The chunk kernel of Adam (adam=True) or Signum, with the plain lazy loop or without (with_plain), for batch
    size 1 only (single: the batch-gradient kernel is not in the code) or any batch size: all three are the
    closure's constants, so numba prunes the branches a variant cannot take before typing them (a run compiles
    only its own variant; issue 21). Cached per variant, each under a name of its own (jit_variant)."""

    def _moment_chunk(Z, idx, pos, nsteps, w, m, v, s, t0, lr, decay, b1, b2, eps, bias_corr, loss, log_frame, diag):
        """Adam (adam=True: u = m̂/(√v̂ + ε)) or Signum (u = sign m) in the log-frame; w, m, v, s in place.
        Adam steps that pass the lazy frame test run _lazy_step; the others _moment_step."""
        n, d = Z.shape
        b = idx.shape[1]
        rows = np.empty(b, dtype=np.int64)
        lw = np.empty(b)
        gt = np.empty(d)
        nogsq = np.empty(0)
        gown = np.empty(d)
        Lk = np.empty(d)
        own = np.zeros(d, dtype=np.bool_)
        wown = np.empty(d)
        q = np.empty(d)
        epss = np.empty(d)
        rownz = np.empty(n, dtype=np.bool_)  # batch size 1: is g̃ = −z_i nonzero
        for i in range(n):
            rownz[i] = False
            for k in range(d):
                rownz[i] |= Z[i, k] != 0.0
        S = _refresh(s, q, epss, eps)
        cut = (CUT_SQ if adam else CUT) if (log_frame and b > 1) else 0.0  # Adam squares g̃: its v̂ must stay normal
        thr = 2.0 * TINY / b2 if (adam and log_frame and b2 > 0.0) else np.inf
        lazy = adam and log_frame and _all_at_least(v, thr)
        gt2, q2, epss2 = gt.reshape(1, d), q.reshape(1, d), epss.reshape(1, d)  # (1, d) views for _lazy_step
        w2, m2, v2 = w.reshape(1, d), m.reshape(1, d), v.reshape(1, d)
        unit = eps == 0.0 and not bias_corr
        plain = unit and _all_at_least(-q, -1.0)
        p = pos
        for step in range(nsteps):
            p = _fill_rows(idx, step, p, n, rows)
            t = t0 + step
            eta = lr * math.pow(t + 1.0, -decay)
            c1 = 1.0 - b1 ** (t + 1.0) if bias_corr else 1.0
            c2 = 1.0 - b2 ** (t + 1.0) if bias_corr else 1.0
            nown = 0
            if single or b == 1:  # (single: run_chunk passes b = 1 only)
                i = rows[0]
                zw = 0.0
                for k in range(d):
                    zw += Z[i, k] * w[k]
                L = _log_weight(zw, loss)
                nonzero = rownz[i]
                g2, rg, sg = Z, i, -1.0  # g̃ = −z_i, read from the data on the lazy path
            else:
                L, nonzero, nown = _batch_gradient(Z, rows, w, loss, lw, gt, nogsq, diag, cut, gown, Lk, own)
                g2, rg, sg = gt2, 0, 1.0
            if lazy and L + S <= 0.0 and nown == 0:
                if with_plain and plain:
                    low, moved = _lazy_step_plain(g2, rg, sg, math.exp(L + S), w2, m2, v2, 0, eta, b1, b2, thr)
                else:
                    low, moved = _lazy_step(g2, rg, sg, math.exp(L + S), q2, epss2, w2, m2, v2, 0, eta, b1, b2, c1, c2,
                                            thr)
                lazy = not low
                _count_stall(diag, nonzero, moved)
            else:
                if b == 1:
                    for k in range(d):
                        gt[k] = -Z[rg, k]
                if adam:
                    S = _moment_step_adam(w, m, v, s, q, epss, S, L, gt, nonzero, nown, gown, Lk, own, wown, eta, c1,
                                          c2, b1, b2, eps, log_frame, diag)
                else:
                    S = _moment_step_signum(w, m, v, s, q, epss, S, L, gt, nonzero, nown, gown, Lk, own, wown, eta, c1,
                                            c2, b1, b2, eps, log_frame, diag)
                lazy = adam and log_frame and _all_at_least(v, thr)
                plain = unit and _all_at_least(-q, -1.0)

    return jit_variant(_moment_chunk, (adam, with_plain, single))


@nb.njit(inline="always", **JIT)
def _count_kept(diag):
    """One more log-domain combination of memory and gradient, where diag has the KEPT slot (tests pass one)."""
    if diag.shape[0] > KEPT:
        diag[KEPT] += 1


@nb.njit(inline="always", **JIT)
def _count_stall(diag, nonzero, moved):
    if nonzero and not moved:
        diag[2] += 1
        diag[3] += 1
    else:
        diag[3] = 0


@nb.njit(**JIT)
def _stateless_chunk(kind, Z, idx, pos, nsteps, w, t0, lr, decay, loss, diag):
    """GD (u = e^{L} g̃: the true step, which underflows), NGD (u = g̃/‖g̃‖) and AdamProxy
    (u = g̃ ⊘ sqrt(Σ_i (e^{l_i − L} z_i)²)); the last two are scale free."""
    n, d = Z.shape
    b = idx.shape[1]
    rows = np.empty(b, dtype=np.int64)
    lw = np.empty(b)
    gt = np.empty(d)
    gsq = np.empty(d if kind == PROXY else 0)
    noown = np.zeros(0, dtype=np.bool_)
    cut = CUT_SQ if kind == PROXY else 0.0
    p = pos
    for step in range(nsteps):
        p = _fill_rows(idx, step, p, n, rows)
        t = t0 + step
        eta = lr * math.pow(t + 1.0, -decay)
        L, nonzero, _ = _batch_gradient(Z, rows, w, loss, lw, gt, gsq, diag, cut, gt, gt, noown)
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


# every variant is created (not compiled) at import, inside the engine's source-keyed cache folder (engine/__init__)
# (adam, with_plain, single): plain for Adam at d ≥ PLAIN_MIN_D, ε = 0, no bias correction; single for batch size 1
MOMENT_CHUNKS = {(a, p, one): _make_moment_chunk(a, p, one) for a, p in ((True, False), (True, True), (False, False))
                 for one in (True, False)}
adam_chunk = MOMENT_CHUNKS[True, False, False]
adam_plain_chunk = MOMENT_CHUNKS[True, True, False]
signum_chunk = MOMENT_CHUNKS[False, False, False]


def run_chunk(kind, Z, idx, pos, nsteps, w, m, v, s, t0, lr, decay, b1, b2, eps, bias_corr, loss, log_frame,
              diag):
    """Advance w (and state m, v, s) by nsteps steps starting at global step t0, in place. Samples:
    idx[step] (shape (nsteps, b)), or cyclic from position pos when idx has 0 rows (shape (0, b)).

    Plain Python: the kernel family is chosen here, so a run compiles (or loads from the cache) only the
    kernels of its own optimizer, not every branch of one all-kinds kernel (issue 21: a cold first run)."""
    if kind == ADAM or kind == SIGNUM:
        plain = kind == ADAM and Z.shape[1] >= PLAIN_MIN_D and eps == 0.0 and not bias_corr
        MOMENT_CHUNKS[kind == ADAM, plain, idx.shape[1] == 1](Z, idx, pos, nsteps, w, m, v, s, t0, lr, decay, b1, b2,
                                                              eps, bias_corr, loss, log_frame, diag)
    else:
        _stateless_chunk(kind, Z, idx, pos, nsteps, w, t0, lr, decay, loss, diag)
