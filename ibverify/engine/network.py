"""Compiled (numba) kernels for the paper-2 network optimizers, in the same log frame as the numpy reference.

Models (flat parameter vector θ, blocks in `model.blocks` order, each block row-major):
  CHAIN      f(x) = W_K ⋯ W_1 x (K ≤ 4): deep-linear; K = 1 with one row is the linear model, and the
             matrix-linear model ⟨W, X⟩ is the K = 1 case on flattened inputs (degree-1 models)
  TWO_LAYER  f(x) = Σ_j a_j σ(w_j·x), σ(z) = max(0, z)^q (σ'(0) := 0 for q = 1)
  DEEP       f(x) = aᵀ σ(W_{K−1} ⋯ σ(W_1 x)) (q > 1), dims = [d, h_1, ..., h_{K−1}]; K = 2 is TWO_LAYER's model
Loss in the log frame (exactly as ibverify.losses.evaluate): q_i = y_i f(x_i), l_i = log(−ℓ'(q_i)),
S = logsumexp(l), p_i = e^{l_i − S}, ∇ℒ = e^S ĝ with ĝ = Σ_i (−p_i y_i) ∇f(x_i).
Optimizer = groups of blocks (one group, or matrices/vectors for the hybrids), each group a chain
  moment (none | EMA β | Adam β1, β2, bias correction, ε) → direction (none | ℓ2 | sign | polar | NS5)
  → u = η_g t^{−p_g} d,  θ ← θ − u.
Moments are held as e^{s} m̂ (one scale s per group and moment, v with scale 2S): on a new gradient
s ← max(s, S), m̂ ← β e^{s_old − s} m̂ + (1−β) e^{S − s} ĝ, renormalised to max|m̂| = 1 on the first step
and every 64 steps, the same arithmetic as ibverify.optim.logframe._mix. polar(M) = UVᵀ of the compact SVD
(singular values ≤ 1e−12 σ_max dropped), computed by one-sided Jacobi (engine.polar; the numpy reference uses
LAPACK's SVD), each block's sweeps started from its rotation of the previous step (kept in the run state, `keep`);
for a block with one row or one column it is M/‖M‖.
Counters (diag): all-weights-flushed steps, zero momentum, Adam v underflow, zero direction.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .kernels import LOGISTIC, _log_weight, jit_variant  # the one compiled log-weight
from .polar import polar_block_kept

CHAIN, TWO_LAYER, DEEP = 0, 1, 2
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


@nb.njit(inline="always", **_JIT)
def _normalized(n, w, tot, y, c):
    """c_i = −p_i y_i with p_i = w_i/tot (w: the weights, tot: their sum); returns #p_i == 0."""
    zeros = 0
    for i in range(n):
        pi = w[i] / tot
        zeros += pi == 0.0
        c[i] = -(pi * y[i])
    return zeros


@nb.njit(**_JIT)
def _weights(qv, y, loss, lw, c):
    """c_i = −p_i y_i with p_i = w_i/Σ_j w_j, w_i = −ℓ'(q_i); returns (S = log Σ_j w_j, #p_i == 0).

    Log domain: w_i = e^{l_i − M}·e^{M}, l_i = log(−ℓ'(q_i)), M = max l. Logistic loss with every q_i < 700
    (no w_i below 1e−304) takes the direct form w_i = 1/(1 + e^{q_i}) = e^{−q_i}/(1 + e^{−q_i}): one exp per
    sample instead of three, equal to the log-domain value to a few ulps."""
    n = qv.shape[0]
    if loss == LOGISTIC:
        qmax = -np.inf
        for i in range(n):
            qmax = max(qmax, qv[i])
        if qmax < 700.0:
            tot = 0.0
            for i in range(n):
                q = qv[i]
                if q > 0.0:
                    u = math.exp(-q)
                    w = u / (1.0 + u)
                else:
                    w = 1.0 / (1.0 + math.exp(q))
                lw[i] = w
                tot += w
            return math.log(tot), _normalized(n, lw, tot, y, c)
    mx = -np.inf
    for i in range(n):
        lw[i] = _log_weight(qv[i], loss)
        mx = max(mx, lw[i])
    tot = 0.0
    for i in range(n):
        e = math.exp(lw[i] - mx)
        lw[i] = e
        tot += e
    return mx + math.log(tot), _normalized(n, lw, tot, y, c)


@nb.njit(**_JIT)
def _activate(h, ds, a, m, qpow):
    """h ← σ(h), ds ← σ'(h) over the width m (σ = ReLU^q), in place; returns the output Σ_j a_j σ(h_j)."""
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
            r = h[j]
            if r > 0.0:   # one power per active unit: σ = r·r^(q−1), σ' = q·r^(q−1)
                u = _pow_q1(r, qpow - 1.0)
                h[j] = r * u
                ds[j] = qpow * u
            else:
                h[j] = 0.0
                ds[j] = 0.0
    out = 0.0
    for j in range(m):
        out += h[j] * a[j]
    return out


@nb.njit(**_JIT)
def _two_layer_grad(X, y, th, m, qpow, loss, H, D, WT, GT, qv, lw, c, g):
    """ĝ of the two-layer net into g; returns (S, flushed samples).

    H ← σ(XWᵀ), D ← σ'(XWᵀ), then D ← (D ∘ c) ∘ a (n×m); WT, GT (d×m) hold Wᵀ and ĝ_Wᵀ so that every inner
    loop runs over the width, contiguously: faster than two BLAS calls below n·d·m = BLAS_MIN_WORK (1.1× at
    n·d·m = 54), slower above (1.2× at 2880, 2.4× at n = 400, d = m = 64; _two_layer_grad_blas)."""
    n, d = X.shape
    na = m * d
    for j in range(m):
        for k in range(d):
            WT[k, j] = th[j * d + k]
    a = th[na:na + m]
    for i in range(n):
        h = H[i]
        ds = D[i]
        h[:] = 0.0
        for k in range(d):
            xik = X[i, k]
            w = WT[k]
            for j in range(m):
                h[j] += xik * w[j]
        qv[i] = y[i] * _activate(h, ds, a, m, qpow)
    S, zeros = _weights(qv, y, loss, lw, c)
    ga = g[na:na + m]
    ga[:] = 0.0
    GT[:, :] = 0.0
    for i in range(n):
        ci = c[i]
        h = H[i]
        ds = D[i]
        for j in range(m):
            ga[j] += h[j] * ci
            ds[j] = (ds[j] * ci) * a[j]
        for k in range(d):
            xik = X[i, k]
            gt = GT[k]
            for j in range(m):
                gt[j] += ds[j] * xik
    for j in range(m):
        for k in range(d):
            g[j * d + k] = GT[k, j]
    return S, zeros


BLAS_MIN_WORK = 1024       # n·d·m from which the two-layer gradient's products are BLAS calls (_two_layer_grad_blas)
BLAS_ONE_THREAD = 262144   # OpenBLAS runs a product of m·n·k ≤ 65536·4 multiply-adds on the calling thread alone


@nb.njit(**_JIT)
def _two_layer_grad_blas(X, y, th, m, qpow, loss, H, D, W, GW, G1, qv, lw, c, g):
    """_two_layer_grad with the two products as BLAS calls, H ← X Wᵀ and ĝ_W ← ((D ∘ c) ∘ a)ᵀ X (W, GW, G1: m×d),
    each over blocks of samples small enough for BLAS to run them on this thread (BLAS_ONE_THREAD: on a loaded
    machine a threaded product costs tens of times its CPU time in spinning threads)."""
    n, d = X.shape
    na = m * d
    for j in range(m):
        for k in range(d):
            W[j, k] = th[j * d + k]
    a = th[na:na + m]
    nb_ = max(1, BLAS_ONE_THREAD // max(1, d * m))
    for i0 in range(0, n, nb_):
        i1 = min(n, i0 + nb_)
        np.dot(X[i0:i1], W.T, H[i0:i1])
    for i in range(n):
        h = H[i]
        ds = D[i]
        qv[i] = y[i] * _activate(h, ds, a, m, qpow)
    S, zeros = _weights(qv, y, loss, lw, c)
    ga = g[na:na + m]
    ga[:] = 0.0
    for i in range(n):
        ci = c[i]
        h = H[i]
        ds = D[i]
        for j in range(m):
            ga[j] += h[j] * ci
            ds[j] = (ds[j] * ci) * a[j]
    for i0 in range(0, n, nb_):
        i1 = min(n, i0 + nb_)
        if i0 == 0:
            np.dot(D[i0:i1].T, X[i0:i1], GW)
        else:
            np.dot(D[i0:i1].T, X[i0:i1], G1)
            for j in range(m):
                for k in range(d):
                    GW[j, k] += G1[j, k]
    for j in range(m):
        for k in range(d):
            g[j * d + k] = GW[j, k]
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


@nb.njit(inline="always", **_JIT)
def _pow_q1(r, e):
    """r^e for r > 0 and e = q − 1: two square roots for e = 1/4 (q = 1.25, the deep claims) and one for e = 1/2,
    each correctly rounded (a general power costs several times as much, once per active unit and sample)."""
    if e == 0.25:
        return math.sqrt(math.sqrt(r))
    if e == 0.5:
        return math.sqrt(r)
    return r ** e


@nb.njit(**_JIT)
def _relu_q(h, qpow):
    """(σ(h), σ'(h)) for σ(z) = max(0, z)^q, q > 1."""
    if not h > 0.0:   # σ = σ' = 0 (and no power computed: half the units of a ReLU net)
        return 0.0, 0.0
    if qpow == 2.0:
        return h * h, 2.0 * h
    u = _pow_q1(h, qpow - 1.0)   # one power: σ = h·h^(q−1), σ' = q·h^(q−1)
    return h * u, qpow * u


@nb.njit(**_JIT)
def _deep_grad(X, y, th, dims, qpow, loss, Z, E, delta, nd, qv, lw, c, g):
    """ĝ of f = aᵀ σ(W_{K−1} ⋯ σ(W_1 x)) into g; returns (S, flushed samples).

    Z[i], E[i] hold z_k = σ(h_k) and σ'(h_k) of every hidden layer (layer k at zoff[k]); the backward pass per
    sample: δ = c_i a, e_k = δ ∘ σ'(h_k), ĝ_{W_k} += e_k z_{k−1}ᵀ, δ ← W_kᵀ e_k."""
    n = X.shape[0]
    K = dims.shape[0]
    off = np.zeros(K + 1, np.int64)      # W_k at off[k - 1], a at off[K - 1]
    for k in range(1, K):
        off[k] = off[k - 1] + dims[k] * dims[k - 1]
    zoff = np.zeros(K + 1, np.int64)     # z_k (k ≥ 1) at Z[i, zoff[k]:zoff[k] + dims[k]]
    for k in range(1, K - 1):
        zoff[k + 1] = zoff[k] + dims[k]
    ao, last = off[K - 1], dims[K - 1]
    for i in range(n):
        for k in range(1, K):
            rows, cols = dims[k], dims[k - 1]
            o = off[k - 1]
            for r in range(rows):
                acc = 0.0
                for s in range(cols):
                    prev = X[i, s] if k == 1 else Z[i, zoff[k - 1] + s]
                    acc += th[o + r * cols + s] * prev
                zv, dv = _relu_q(acc, qpow)
                Z[i, zoff[k] + r] = zv
                E[i, zoff[k] + r] = dv
        out = 0.0
        for j in range(last):
            out += th[ao + j] * Z[i, zoff[K - 1] + j]
        qv[i] = y[i] * out
    S, zeros = _weights(qv, y, loss, lw, c)
    for k in range(g.shape[0]):
        g[k] = 0.0
    for i in range(n):
        ci = c[i]
        for j in range(last):
            g[ao + j] += ci * Z[i, zoff[K - 1] + j]
            delta[j] = ci * th[ao + j]
        for k in range(K - 1, 0, -1):
            rows, cols = dims[k], dims[k - 1]
            o = off[k - 1]
            for r in range(rows):
                delta[r] = delta[r] * E[i, zoff[k] + r]
            for r in range(rows):
                er = delta[r]
                for s in range(cols):
                    prev = X[i, s] if k == 1 else Z[i, zoff[k - 1] + s]
                    g[o + r * cols + s] += er * prev
            if k > 1:
                for s in range(cols):
                    acc = 0.0
                    for r in range(rows):
                        acc += th[o + r * cols + s] * delta[r]
                    nd[s] = acc
                for s in range(cols):
                    delta[s] = nd[s]
    return S, zeros


@nb.njit(**_JIT)
def _maxabs(x, lo, hi):
    z = 0.0
    for k in range(lo, hi):
        a = abs(x[k])
        if a > z or a != a:
            z = a
    return z


@nb.njit(**_JIT)
def _mix(first, wa, M, sc_s, sc_age, wb, g, S, power, lo, hi):
    """M ← wa e^{s−s'} M + wb e^{S·power − s'} g^power on [lo, hi) in place (s' = max(s, S·power)); renormalised
    to max|M| = 1 on the first step and every RENORM_EVERY steps. Returns (new s, new age, M ≠ 0)."""
    sb = power * S  # (power: 1.0 or 2.0, a float so that both share one compiled specialization)
    if first:
        for k in range(lo, hi):
            gk = g[k] if power == 1 else g[k] * g[k]
            M[k] = wb * gk
        s = _renorm(M, sb, lo, hi)
        return s, 0.0, _maxabs(M, lo, hi) != 0.0
    s = max(sc_s, sb)
    ca = wa * math.exp(sc_s - s)
    cb = wb * math.exp(sb - s)
    nz = False
    if power == 1:
        for k in range(lo, hi):
            mk = ca * M[k] + cb * g[k]
            M[k] = mk
            nz |= mk != 0.0
    else:
        for k in range(lo, hi):
            mk = ca * M[k] + cb * (g[k] * g[k])
            M[k] = mk
            nz |= mk != 0.0
    age = sc_age + 1.0
    if age >= RENORM_EVERY:
        return _renorm(M, s, lo, hi), 0.0, nz
    return s, age, nz


@nb.njit(**_JIT)
def _renorm(M, s, lo, hi):
    z = _maxabs(M, lo, hi)
    if z == 0.0 or not math.isfinite(z):
        return s
    for k in range(lo, hi):
        M[k] = M[k] / z
    return s + math.log(z)


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
def _step(kind, x, eta, blocks, lo, hi, th, dvec, diag):
    """θ ← θ − η d on [lo, hi), d the direction of x: ℓ2-normalised (jointly), sign, or x itself. The per-block
    directions (polar, NS5) are _polar_step and _ns5_step, compiled only by a run that uses them."""
    if kind == D_SIGN:  # sign(x), with sign(0) = 0 and sign(nan) = nan as np.sign
        for k in range(lo, hi):
            xk = x[k]
            sk = 1.0 if xk > 0.0 else (-1.0 if xk < 0.0 else xk * 0.0)
            th[k] = th[k] - eta * sk
    elif kind == D_L2:
        ss = 0.0
        for k in range(lo, hi):
            ss += x[k] * x[k]
        nrm = math.sqrt(ss)
        if nrm == 0.0:
            diag[DIAG_ZERO_DIRECTION] += 1
        else:
            for k in range(lo, hi):
                th[k] = th[k] - eta * (x[k] / nrm)
    else:
        for k in range(lo, hi):
            th[k] = th[k] - eta * x[k]


@nb.njit(**_JIT)
def _polar_step(x, eta, blocks, lo, hi, th, dvec, keep, keep_at):
    """θ ← θ − η polar(x) on [lo, hi), block by block: the exact polar factor (Jacobi, engine.polar, each block's
    sweeps started from its rotation of the previous step, kept in keep at keep_at[b]), or M/‖M‖ for a block with
    one row or one column. (One kernel with the block loop: a separate per-block wrapper cost a cold first run
    about a second of compiling.)"""
    for b in range(blocks.shape[0]):
        o, rows, cols = blocks[b, 0], blocks[b, 1], blocks[b, 2]
        if not lo <= o < hi:
            continue
        if rows == 1 or cols == 1:
            ss = 0.0
            for k in range(o, o + rows * cols):
                ss += x[k] * x[k]
            nrm = math.sqrt(ss)
            for k in range(o, o + rows * cols):
                dvec[k] = 0.0 if nrm == 0.0 else x[k] / nrm   # NaN stays NaN
        else:
            polar_block_kept(x, o, rows, cols, dvec, POLAR_RTOL, keep, keep_at[b])
    for k in range(lo, hi):
        th[k] = th[k] - eta * dvec[k]


@nb.njit(**_JIT)
def _ns5_step(x, eta, blocks, lo, hi, th, dvec):
    """θ ← θ − η NS5(x) on [lo, hi), block by block."""
    for b in range(blocks.shape[0]):
        o, rows, cols = blocks[b, 0], blocks[b, 1], blocks[b, 2]
        if lo <= o < hi:
            _ns5_block(x, o, rows, cols, dvec)
    for k in range(lo, hi):
        th[k] = th[k] - eta * dvec[k]


@nb.njit(**_JIT)
def adam_ratio(M, V, s_m, s_v, b1, b2, bc, eps, k, lo, hi, out, diag):
    """out = m̂/(bc1 (sqrt(v̂/bc2) e^{s_v/2 − s_m} + ε e^{−s_m})) with 0/0 := 0 (optim.Adam, step count k)."""
    bc1 = 1.0 - b1 ** k if bc else 1.0
    bc2 = 1.0 - b2 ** k if bc else 1.0
    a = math.exp(min(s_v / 2.0 - s_m, 700.0))
    eps_term = eps * math.exp(min(-s_m, 700.0)) if eps > 0.0 else 0.0
    for j in range(lo, hi):
        den = bc1 * (math.sqrt(V[j] / bc2) * a + eps_term)
        if den == 0.0 and M[j] != 0.0:
            diag[DIAG_V_UNDERFLOW] += 1
        out[j] = M[j] / den if den > 0.0 else 0.0


def _make_advance(model: int, polar: bool, ns5: bool, vec: bool, adam: bool):
    """`advance` for one model and the chains a run uses (polar, ns5, vec: some group has that direction, vec for
    ℓ2, sign or none; adam: some group has Adam moments): these are the closure's constants, so numba prunes the
    branches of the other models, directions and moments before typing them and never compiles them (issue 21: a
    cold first run compiles only what it needs). Cached per variant (numba keys a closure's cache entries by its
    constants; each variant under a name of its own: kernels.jit_variant)."""

    def advance(dims, qpow, X, y, loss, blocks, granges, gcfg, th, M, V, sc, keep, keep_at, t0, nsteps, diag):
        """Advance θ (and moments M, V, frames sc, the polar blocks' kept rotations keep) by nsteps steps
        t0+1 … t0+nsteps in place; group g owns the contiguous slice granges[g] of θ.

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
        WT = np.empty((X.shape[1], width))
        GT = np.empty((X.shape[1], width))
        blas = model == TWO_LAYER and n * X.shape[1] * width >= BLAS_MIN_WORK
        W = np.empty((width, X.shape[1]) if blas else (1, 1))
        GW = np.empty((width, X.shape[1]) if blas else (1, 1))
        G1 = np.empty((width, X.shape[1]) if blas else (1, 1))
        asz = 0
        if model == CHAIN:
            for k in range(1, dims.shape[0] - 1):
                asz += dims[k]
        elif model == DEEP:
            for k in range(1, dims.shape[0]):
                asz += dims[k]
        A = np.empty((n, max(asz, 1)))
        E = np.empty((n if model == DEEP else 1, max(asz, 1)))
        hmax = 1
        for k in range(dims.shape[0]):
            hmax = max(hmax, dims[k])
        delta = np.empty(hmax)
        nd = np.empty(hmax)
        for step in range(nsteps):
            t = t0 + step + 1
            if model == TWO_LAYER and blas:
                S, zeros = _two_layer_grad_blas(X, y, th, dims[1], qpow, loss, H, D, W, GW, G1, qv, lw, c, g)
            elif model == TWO_LAYER:
                S, zeros = _two_layer_grad(X, y, th, dims[1], qpow, loss, H, D, WT, GT, qv, lw, c, g)
            elif model == DEEP:
                S, zeros = _deep_grad(X, y, th, dims, qpow, loss, A, E, delta, nd, qv, lw, c, g)
            else:
                S, zeros = _chain_grad(X, y, th, dims, loss, A, qv, lw, c, g)
            if zeros == n:
                diag[DIAG_ALL_FLUSHED] += 1
            first = t == 1
            for grp in range(ng):
                lo, hi = granges[grp, 0], granges[grp, 1]
                mom = int(gcfg[grp, G_MOMENT])
                kind = int(gcfg[grp, G_DIR])
                b1 = gcfg[grp, G_B1]
                eta = gcfg[grp, G_ETA] * float(t) ** (-gcfg[grp, G_P])
                if mom == M_NONE:
                    x = g
                elif adam and mom == M_ADAM:  # (model, polar, ns5, vec, adam: the closure's constants, pruned
                    b2 = gcfg[grp, G_B2]      # before typing: a variant runs only the groups it was made for)
                    s, age, nz = _mix(first, b1, M, sc[grp, 0], sc[grp, 2], 1.0 - b1, g, S, 1.0, lo, hi)
                    sc[grp, 0] = s
                    sc[grp, 2] = age
                    s, age, nz = _mix(first, b2, V, sc[grp, 1], sc[grp, 3], 1.0 - b2, g, S, 2.0, lo, hi)
                    sc[grp, 1] = s
                    sc[grp, 3] = age
                    adam_ratio(M, V, sc[grp, 0], sc[grp, 1], b1, b2, gcfg[grp, G_BC] != 0.0, gcfg[grp, G_EPS],
                               float(t), lo, hi, tmp, diag)
                    x = tmp
                else:                         # M_EMA
                    s, age, nz = _mix(first, b1, M, sc[grp, 0], sc[grp, 2], 1.0 - b1, g, S, 1.0, lo, hi)
                    sc[grp, 0] = s
                    sc[grp, 2] = age
                    if not nz:
                        diag[DIAG_MOMENTUM_ZERO] += 1
                    x = M
                if polar and kind == D_POLAR:
                    _polar_step(x, eta, blocks, lo, hi, th, dvec, keep, keep_at)
                elif ns5 and kind == D_NS5:
                    _ns5_step(x, eta, blocks, lo, hi, th, dvec)
                elif vec:
                    _step(kind, x, eta, blocks, lo, hi, th, dvec, diag)
            tot = 0.0
            for k in range(P):
                tot += th[k]
            if not math.isfinite(tot):
                return step + 1
        return nsteps

    return jit_variant(advance, (model, polar, ns5, vec, adam), **_JIT)


# every variant is created (not compiled) at import, inside the engine's source-keyed cache folder (engine/__init__)
_ADVANCE = {(m, p, n5, v, a): _make_advance(m, p, n5, v, a) for m in (CHAIN, TWO_LAYER, DEEP)
            for p in (False, True) for n5 in (False, True) for v in (False, True) for a in (False, True)}


def advance_kernel(model: int, gcfg):
    """The compiled `advance` for this model and the chains in gcfg's rows: a run compiles (or loads from numba's
    cache) only its own model's gradient, the polar and NS5 code only if one of its groups uses them, the vector
    directions (ℓ2, sign, none) and the Adam moments likewise."""
    kinds = {int(k) for k in gcfg[:, G_DIR]}
    vec = bool(kinds & {D_NONE, D_L2, D_SIGN})
    adam = any(int(m) == M_ADAM for m in gcfg[:, G_MOMENT])
    return _ADVANCE[(int(model), D_POLAR in kinds, D_NS5 in kinds, vec, adam)]


def keep_layout(blocks, gcfg) -> tuple[np.ndarray, int]:
    """Where each polar block keeps its rotation between steps (polar_block_kept): per block the offset of its
    1 + n² slots (n = min(rows, cols)) in the run's keep array, −1 for a block that keeps none (not in a polar
    group, or one row or column); and the array's size."""
    at = np.full(blocks.shape[0], -1, np.int64)
    size = 0
    for b in range(blocks.shape[0]):
        rows, cols, grp = int(blocks[b, 1]), int(blocks[b, 2]), int(blocks[b, 3])
        if int(gcfg[grp, G_DIR]) == D_POLAR and rows > 1 and cols > 1:
            at[b] = size
            size += 1 + min(rows, cols) ** 2
    return at, size


def advance(model, dims, qpow, X, y, loss, blocks, granges, gcfg, th, M, V, sc, keep, keep_at, t0, nsteps, diag):
    """Advance θ (and moments M, V, frames sc, the polar blocks' kept rotations keep, laid out by keep_layout) by
    nsteps steps t0+1 … t0+nsteps in place, with advance_kernel(model, gcfg); group g owns the contiguous slice
    granges[g] of θ.

    Returns the number of steps taken: fewer than nsteps when θ became non-finite (divergence)."""
    return advance_kernel(model, gcfg)(dims, qpow, X, y, loss, blocks, granges, gcfg, th, M, V, sc, keep, keep_at,
                                       t0, nsteps, diag)
