"""Compiled (numba) kernels for the paper-2 network optimizers, in the same log frame as the numpy reference.

Models (flat parameter vector θ, blocks in `model.blocks` order, each block row-major):
  CHAIN      f(x) = W_K ⋯ W_1 x (K ≤ 4): deep-linear; K = 1 with one row is the linear model, and the
             matrix-linear model ⟨W, X⟩ is the K = 1 case on flattened inputs (degree-1 models)
  TWO_LAYER  f(x) = Σ_j a_j σ(w_j·x), σ(z) = max(0, z)^q (σ'(0) := 0 for q = 1)
Loss in the log frame (exactly as ibverify.networks.loss.evaluate): q_i = y_i f(x_i), l_i = log(−ℓ'(q_i)),
S = logsumexp(l), p_i = e^{l_i − S}, ∇ℒ = e^S ĝ with ĝ = Σ_i (−p_i y_i) ∇f(x_i).
Optimizer = groups of blocks (one group, or matrices/vectors for the hybrids), each group a chain
  moment (none | EMA β | Adam β1, β2, bias correction, ε) → direction (none | ℓ2 | sign | polar | NS5)
  → u = η_g t^{−p_g} d,  θ ← θ − u.
Moments are held as e^{s} m̂ (one scale s per group and moment, v with scale 2S): on a new gradient
s ← max(s, S), m̂ ← β e^{s_old − s} m̂ + (1−β) e^{S − s} ĝ, renormalised to max|m̂| = 1 on the first step
and every 64 steps, the same arithmetic as ibverify.networks.optim._mix. polar(M) = UVᵀ of the compact SVD
(singular values ≤ 1e−12 σ_max dropped); for a block with one row or one column it is M/‖M‖ (no SVD).
Counters (diag): all-weights-flushed steps, zero momentum, Adam v underflow, zero direction.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

CHAIN, TWO_LAYER = 0, 1
LOGISTIC, EXPONENTIAL = 0, 1
M_NONE, M_EMA, M_ADAM = 0, 1, 2
D_NONE, D_L2, D_SIGN, D_POLAR, D_NS5 = 0, 1, 2, 3, 4
# group configuration columns (float64 array, one row per group)
G_MOMENT, G_DIR, G_ETA, G_P, G_B1, G_B2, G_BC, G_EPS = range(8)
N_GCFG = 8
# per-group frame state columns: s_m, s_v, age_m, age_v
N_SC = 4
DIAG_ALL_FLUSHED, DIAG_MOMENTUM_ZERO, DIAG_V_UNDERFLOW, DIAG_ZERO_DIRECTION = range(4)
N_DIAG = 4
RENORM_EVERY = 64
POLAR_RTOL = 1e-12
NS5_A, NS5_B, NS5_C = 3.4445, -4.7750, 2.0315

_JIT = dict(cache=True, error_model="numpy", fastmath=False)


@nb.njit(**_JIT)
def _log_weight(q, loss):
    """log(−ℓ'(q)): −q (exponential) or −logaddexp(0, q) (logistic, numpy's formula)."""
    if loss == EXPONENTIAL:
        return -q
    if q > 0.0:
        return -(q + math.log1p(math.exp(-q)))
    return -math.log1p(math.exp(q))


@nb.njit(**_JIT)
def _weights(qv, y, loss, lw, c):
    """c_i = −p_i y_i with p_i = e^{l_i − M}/Σ_j e^{l_j − M} (M = max l); returns (S = logsumexp l, #p_i == 0)."""
    n = qv.shape[0]
    mx = -np.inf
    for i in range(n):
        lw[i] = _log_weight(qv[i], loss)
        mx = max(mx, lw[i])
    tot = 0.0
    for i in range(n):
        e = math.exp(lw[i] - mx)
        lw[i] = e
        tot += e
    zeros = 0
    for i in range(n):
        pi = lw[i] / tot
        zeros += pi == 0.0
        c[i] = -(pi * y[i])
    return mx + math.log(tot), zeros


@nb.njit(**_JIT)
def _two_layer_grad(X, y, th, m, qpow, loss, H, D, C, qv, lw, c, g):
    """ĝ of the two-layer net into g; returns (S, flushed samples). H ← σ(XWᵀ), D ← σ'(XWᵀ), C ← (D ∘ c) ∘ a
    (n×m); the two products XWᵀ and Cᵀ X are BLAS calls, as in the reference."""
    n, d = X.shape
    na = m * d
    W = th[:na].reshape(m, d)
    np.dot(X, W.T, out=H)
    for i in range(n):
        h = H[i]
        ds = D[i]
        if qpow == 2.0:
            for j in range(m):
                r = max(h[j], 0.0)
                h[j] = r * r
                ds[j] = 2.0 * r
        elif qpow == 1.0:
            for j in range(m):
                r = h[j]
                ds[j] = 1.0 if r > 0.0 else 0.0
                h[j] = max(r, 0.0)
        else:
            for j in range(m):
                r = max(h[j], 0.0)
                h[j] = r ** qpow
                ds[j] = qpow * r ** (qpow - 1.0)
        out = 0.0
        for j in range(m):
            out += h[j] * th[na + j]
        qv[i] = y[i] * out
    S, zeros = _weights(qv, y, loss, lw, c)
    for j in range(m):
        g[na + j] = 0.0
    for i in range(n):
        ci = c[i]
        for j in range(m):
            g[na + j] += H[i, j] * ci
            C[i, j] = (D[i, j] * ci) * th[na + j]
    np.dot(C.T, X, out=g[:na].reshape(m, d))
    return S, zeros


@nb.njit(**_JIT)
def _chain_grad(X, y, th, dims, loss, A, qv, lw, c, g):
    """ĝ of f = W_K ⋯ W_1 x into g (dims = [d, h_1, ..., 1]); A holds the activations a_1..a_{K−1}."""
    n = X.shape[0]
    K = dims.shape[0] - 1
    off = np.zeros(K + 1, np.int64)
    for k in range(K):
        off[k + 1] = off[k] + dims[k + 1] * dims[k]
    aoff = np.zeros(K + 1, np.int64)  # activation a_k (k ≥ 1) at A[i, aoff[k]:aoff[k] + dims[k]]
    for k in range(1, K):
        aoff[k + 1] = aoff[k] + dims[k]
    for i in range(n):
        for k in range(1, K + 1):
            rows, cols = dims[k], dims[k - 1]
            for r in range(rows):
                acc = 0.0
                for s in range(cols):
                    prev = X[i, s] if k == 1 else A[i, aoff[k - 1] + s]
                    acc += th[off[k - 1] + r * cols + s] * prev
                if k < K:
                    A[i, aoff[k] + r] = acc
                else:
                    qv[i] = y[i] * acc
    S, zeros = _weights(qv, y, loss, lw, c)
    # δ_K = 1, δ_{k−1} = W_kᵀ δ_k;  ĝ_{W_k} = δ_k (Σ_i c_i a_{k−1,i})ᵀ
    delta = np.ones(1)
    for k in range(K, 0, -1):
        rows, cols = dims[k], dims[k - 1]
        sv = np.zeros(cols)
        for i in range(n):
            ci = c[i]
            for s in range(cols):
                sv[s] += ci * (X[i, s] if k == 1 else A[i, aoff[k - 1] + s])
        for r in range(rows):
            for s in range(cols):
                g[off[k - 1] + r * cols + s] = delta[r] * sv[s]
        nd = np.zeros(cols)
        for r in range(rows):
            for s in range(cols):
                nd[s] += th[off[k - 1] + r * cols + s] * delta[r]
        delta = nd
    return S, zeros


@nb.njit(**_JIT)
def _group_maxabs(x, blocks, grp):
    z = 0.0
    for b in range(blocks.shape[0]):
        if blocks[b, 3] != grp:
            continue
        o = blocks[b, 0]
        for k in range(o, o + blocks[b, 1] * blocks[b, 2]):
            a = abs(x[k])
            if a > z or a != a:
                z = a
    return z


@nb.njit(**_JIT)
def _mix(first, wa, M, sc_s, sc_age, wb, g, S, power, blocks, grp):
    """M ← wa e^{s−s'} M + wb e^{S·power − s'} g^power in place (s' = max); returns (new s, new age)."""
    sb = power * S
    if first:
        for b in range(blocks.shape[0]):
            if blocks[b, 3] == grp:
                o = blocks[b, 0]
                for k in range(o, o + blocks[b, 1] * blocks[b, 2]):
                    gk = g[k] if power == 1 else g[k] * g[k]
                    M[k] = wb * gk
        return _renorm(M, sb, blocks, grp), 0.0
    s = max(sc_s, sb)
    ca = wa * math.exp(sc_s - s)
    cb = wb * math.exp(sb - s)
    for b in range(blocks.shape[0]):
        if blocks[b, 3] == grp:
            o = blocks[b, 0]
            for k in range(o, o + blocks[b, 1] * blocks[b, 2]):
                gk = g[k] if power == 1 else g[k] * g[k]
                M[k] = ca * M[k] + cb * gk
    age = sc_age + 1.0
    if age >= RENORM_EVERY:
        return _renorm(M, s, blocks, grp), 0.0
    return s, age


@nb.njit(**_JIT)
def _renorm(M, s, blocks, grp):
    z = _group_maxabs(M, blocks, grp)
    if z == 0.0 or not math.isfinite(z):
        return s
    for b in range(blocks.shape[0]):
        if blocks[b, 3] == grp:
            o = blocks[b, 0]
            for k in range(o, o + blocks[b, 1] * blocks[b, 2]):
                M[k] = M[k] / z
    return s + math.log(z)


@nb.njit(**_JIT)
def _polar_block(x, o, rows, cols, out):
    """out[o:o+rows·cols] = polar factor of the rows×cols block x[o:...] (exact: SVD, or M/‖M‖ for a vector)."""
    size = rows * cols
    nz = False
    for k in range(o, o + size):
        nz |= x[k] != 0.0
    if not nz:
        for k in range(o, o + size):
            out[k] = 0.0
        return
    if rows == 1 or cols == 1:
        ss = 0.0
        for k in range(o, o + size):
            ss += x[k] * x[k]
        nrm = math.sqrt(ss)
        for k in range(o, o + size):
            out[k] = x[k] / nrm
        return
    Mt = np.empty((rows, cols))
    for r in range(rows):
        for s in range(cols):
            Mt[r, s] = x[o + r * cols + s]
    U, sv, Vt = np.linalg.svd(Mt, full_matrices=False)
    keep = 0
    for i in range(sv.shape[0]):
        if sv[i] > POLAR_RTOL * sv[0]:
            keep += 1
    for r in range(rows):
        for s in range(cols):
            acc = 0.0
            for i in range(keep):
                acc += U[r, i] * Vt[i, s]
            out[o + r * cols + s] = acc


@nb.njit(**_JIT)
def _ns5_block(x, o, rows, cols, out):
    """Keller Jordan's quintic Newton–Schulz (5 steps, float64) of the block, as optim.newton_schulz5."""
    tr = rows > cols
    R, C = (cols, rows) if tr else (rows, cols)
    Xm = np.empty((R, C))
    ss = 0.0
    for r in range(rows):
        for s in range(cols):
            v = x[o + r * cols + s]
            ss += v * v
            if tr:
                Xm[s, r] = v
            else:
                Xm[r, s] = v
    Xm = Xm / (math.sqrt(ss) + 1e-7)
    for _ in range(5):
        A = Xm @ Xm.T
        B = NS5_B * A + NS5_C * (A @ A)
        Xm = NS5_A * Xm + B @ Xm
    for r in range(rows):
        for s in range(cols):
            out[o + r * cols + s] = Xm[s, r] if tr else Xm[r, s]


@nb.njit(**_JIT)
def _direction(kind, x, blocks, grp, out, diag):
    """out (group's blocks) = direction of x: ℓ2-normalised (jointly), sign, polar or NS5 per block."""
    if kind == D_L2:
        ss = 0.0
        for b in range(blocks.shape[0]):
            if blocks[b, 3] == grp:
                part = 0.0
                o = blocks[b, 0]
                for k in range(o, o + blocks[b, 1] * blocks[b, 2]):
                    part += x[k] * x[k]
                ss += part
        nrm = math.sqrt(ss)
        if nrm == 0.0:
            diag[DIAG_ZERO_DIRECTION] += 1
    for b in range(blocks.shape[0]):
        if blocks[b, 3] != grp:
            continue
        o, rows, cols = blocks[b, 0], blocks[b, 1], blocks[b, 2]
        if kind == D_POLAR:
            _polar_block(x, o, rows, cols, out)
        elif kind == D_NS5:
            _ns5_block(x, o, rows, cols, out)
        else:
            for k in range(o, o + rows * cols):
                if kind == D_L2:
                    out[k] = x[k] / nrm if nrm != 0.0 else 0.0
                elif kind == D_SIGN:
                    out[k] = np.sign(x[k])
                else:
                    out[k] = x[k]


@nb.njit(**_JIT)
def adam_ratio(M, V, s_m, s_v, b1, b2, bc, eps, k, blocks, grp, out, diag):
    """out = m̂/(bc1 (sqrt(v̂/bc2) e^{s_v/2 − s_m} + ε e^{−s_m})) with 0/0 := 0 (optim.Adam, step count k)."""
    bc1 = 1.0 - b1 ** k if bc else 1.0
    bc2 = 1.0 - b2 ** k if bc else 1.0
    a = math.exp(min(s_v / 2.0 - s_m, 700.0))
    eps_term = eps * math.exp(min(-s_m, 700.0)) if eps > 0.0 else 0.0
    for b in range(blocks.shape[0]):
        if blocks[b, 3] != grp:
            continue
        o = blocks[b, 0]
        for j in range(o, o + blocks[b, 1] * blocks[b, 2]):
            den = bc1 * (math.sqrt(V[j] / bc2) * a + eps_term)
            if den == 0.0 and M[j] != 0.0:
                diag[DIAG_V_UNDERFLOW] += 1
            out[j] = M[j] / den if den > 0.0 else 0.0


@nb.njit(**_JIT)
def advance(model, dims, qpow, X, y, loss, blocks, gcfg, th, M, V, sc, t0, nsteps, diag):
    """Advance θ (and moments M, V, frames sc) by nsteps steps t0+1 … t0+nsteps in place.

    Returns the number of steps taken: fewer than nsteps when θ became non-finite (divergence)."""
    n = X.shape[0]
    P = th.shape[0]
    ng = gcfg.shape[0]
    g = np.empty(P)
    dvec = np.empty(P)
    tmp = np.empty(P)
    qv = np.empty(n)
    lw = np.empty(n)
    c = np.empty(n)
    width = dims[1] if model == TWO_LAYER else 1
    H = np.empty((n, width))
    D = np.empty((n, width))
    C = np.empty((n, width))
    asz = 0
    if model == CHAIN:
        for k in range(1, dims.shape[0] - 1):
            asz += dims[k]
    A = np.empty((n, max(asz, 1)))
    for step in range(nsteps):
        t = t0 + step + 1
        if model == TWO_LAYER:
            S, zeros = _two_layer_grad(X, y, th, dims[1], qpow, loss, H, D, C, qv, lw, c, g)
        else:
            S, zeros = _chain_grad(X, y, th, dims, loss, A, qv, lw, c, g)
        if zeros == n:
            diag[DIAG_ALL_FLUSHED] += 1
        for grp in range(ng):
            mom = int(gcfg[grp, G_MOMENT])
            kind = int(gcfg[grp, G_DIR])
            b1 = gcfg[grp, G_B1]
            first = t == 1
            if mom == M_NONE:
                _direction(kind, g, blocks, grp, dvec, diag)
            elif mom == M_EMA:
                s, age = _mix(first, b1, M, sc[grp, 0], sc[grp, 2], 1.0 - b1, g, S, 1, blocks, grp)
                sc[grp, 0] = s
                sc[grp, 2] = age
                if _group_maxabs(M, blocks, grp) == 0.0:
                    diag[DIAG_MOMENTUM_ZERO] += 1
                _direction(kind, M, blocks, grp, dvec, diag)
            else:
                b2 = gcfg[grp, G_B2]
                s, age = _mix(first, b1, M, sc[grp, 0], sc[grp, 2], 1.0 - b1, g, S, 1, blocks, grp)
                sc[grp, 0] = s
                sc[grp, 2] = age
                s, age = _mix(first, b2, V, sc[grp, 1], sc[grp, 3], 1.0 - b2, g, S, 2, blocks, grp)
                sc[grp, 1] = s
                sc[grp, 3] = age
                adam_ratio(M, V, sc[grp, 0], sc[grp, 1], b1, b2, gcfg[grp, G_BC] != 0.0, gcfg[grp, G_EPS],
                           float(t), blocks, grp, tmp, diag)
                _direction(kind, tmp, blocks, grp, dvec, diag)
            eta = gcfg[grp, G_ETA] * float(t) ** (-gcfg[grp, G_P])
            for b in range(blocks.shape[0]):
                if blocks[b, 3] == grp:
                    o = blocks[b, 0]
                    for k in range(o, o + blocks[b, 1] * blocks[b, 2]):
                        dvec[k] = eta * dvec[k]
        tot = 0.0
        for k in range(P):
            th[k] = th[k] - dvec[k]
            tot += th[k]
        if not math.isfinite(tot):
            return step + 1
    return nsteps
