"""Epoch maps of Adam under frozen gradients (spec §3, §5.1–5.2), numerically.

G is an N×d array of per-sample gradients g_j = ∇L_j(w) at a frozen w. Adam as in spec §2.1:
m_t = β1 m_{t−1} + (1−β1) g_t, v_t = β2 v_{t−1} + (1−β2) g_t², step m_t ⊘ sqrt(v_t), 0/0 := 0.
All maps are homogeneous of degree 0 in G (a common positive scale cancels).
"""

from __future__ import annotations

import mpmath
import numpy as np


def c_inc(beta1: float, beta2: float, n: int) -> float:
    """C_inc(β1, β2, N) = (1−β1)/(1−β1^N) · sqrt((1−β2^N)/(1−β2)), written as
    1/Σ_{k<N} β1^k · sqrt(Σ_{k<N} β2^k) (exact also at β = 0 and stable near β = 1)."""
    k = np.arange(n)
    return float(np.sqrt(np.sum(beta2 ** k)) / np.sum(beta1 ** k))


def _ratio(num, den):
    """num ⊘ den with 0/0 := 0 (spec §2.1)."""
    out = np.zeros_like(num)
    np.divide(num, den, out=out, where=den > 0)
    return out


def cyclic_weights(beta: float, n: int) -> np.ndarray:
    """W[i, j] = β^((i−j) mod N): the age weight of sample j's gradient at position i."""
    i = np.arange(n)
    return float(beta) ** ((i[:, None] - i[None, :]) % n)


def inc_epoch_map(G, beta1: float, beta2: float) -> np.ndarray:
    """Prop 2.5: C_inc · Σ_i [Σ_j β1^((i−j) mod N) g_j] ⊘ sqrt(Σ_j β2^((i−j) mod N) g_j²).
    The epoch displacement of Inc-Adam is −η_{rN} times this, + o(η)."""
    G = np.asarray(G, dtype=np.float64)
    n = G.shape[0]
    A = cyclic_weights(beta1, n) @ G
    B = cyclic_weights(beta2, n) @ (G * G)
    return c_inc(beta1, beta2, n) * _ratio(A, np.sqrt(B)).sum(axis=0)


def inc_epoch_map_at(Z, w, beta1: float, beta2: float) -> np.ndarray:
    """inc_epoch_map at the iterate w, with g_j = −s_j z_j, s_j = σ(−z_j·w), in the log domain.

    Row i of the map, A_i/√B_i, is invariant to scaling all s_j of that row by one α_i > 0, so each
    row is shifted by its own max log-weight over the samples it sees (β2^age > 0). This keeps
    β = 0 (per-sample signs) exact when relative weights underflow."""
    Z = np.asarray(Z, dtype=np.float64)
    n = Z.shape[0]
    logs = -np.logaddexp(0.0, Z @ np.asarray(w, dtype=np.float64))
    seen = cyclic_weights(beta2, n) > 0
    shift = np.where(seen, logs[None, :], -np.inf).max(axis=1)
    S = np.exp(logs[None, :] - shift[:, None])  # S[i, j] = s_j / α_i
    A = (cyclic_weights(beta1, n) * S) @ Z
    B = (cyclic_weights(beta2, n) * S * S) @ (Z * Z)
    return -c_inc(beta1, beta2, n) * _ratio(A, np.sqrt(B)).sum(axis=0)


def proxy_map(G) -> np.ndarray:
    """Prop 4.1 / §5.2: the β2 → 1 limit sqrt(N) · S ⊘ sqrt(Q), S = Σ_j g_j, Q = Σ_j g_j²."""
    G = np.asarray(G, dtype=np.float64)
    return np.sqrt(G.shape[0]) * _ratio(G.sum(axis=0), np.sqrt((G * G).sum(axis=0)))


def sign_map(G) -> np.ndarray:
    """Full-batch SignGD over one epoch of N steps: N · sign(Σ_j g_j) (Prop 2.4, Det-Adam)."""
    G = np.asarray(G, dtype=np.float64)
    return G.shape[0] * np.sign(G.sum(axis=0))


def frozen_cyclic_adam(G, beta1: float, beta2: float, rtol: float = 1e-15, max_epochs: int = 10**6) -> np.ndarray:
    """Run the Adam recursion cyclically over the frozen gradients G (m, v from 0, carried across
    epochs) until β^(N·epochs) < rtol, and return Σ_{i<N} m_i ⊘ sqrt(v_i) over the last epoch.
    An independent simulation of the quantity Prop 2.5 predicts (no closed form used)."""
    G = np.asarray(G, dtype=np.float64)
    n, d = G.shape
    bmax = max(beta1, beta2)
    epochs = 2 if bmax == 0 else min(max_epochs, int(np.ceil(np.log(rtol) / (n * np.log(bmax)))) + 2)
    m, v = np.zeros(d), np.zeros(d)
    G2 = G * G
    for _ in range(epochs):
        total = np.zeros(d)
        for i in range(n):
            m = beta1 * m + (1.0 - beta1) * G[i]
            v = beta2 * v + (1.0 - beta2) * G2[i]
            total += _ratio(m, np.sqrt(v))
    return total


def per_sample_gradients(Z, w) -> np.ndarray:
    """g_j = −s_j z_j with s_j ∝ σ(−z_j·w) in the log domain, rescaled so max_j s_j = 1
    (a common positive scale, which every map here ignores)."""
    Z = np.asarray(Z, dtype=np.float64)
    logs = -np.logaddexp(0.0, Z @ np.asarray(w, dtype=np.float64))
    return -np.exp(logs - logs.max())[:, None] * Z


def proxy_step(Z, w, eps: float = 0.0) -> np.ndarray:
    """AdamProxy direction −∇L(w) ⊘ (sqrt(Σ_i ∇L_i(w)²) + ε) (spec §5.2) with L = (1/N) Σ L_i,
    computed from log-domain weights rescaled so that max_j s_j = 1. Exact for ε = 0 (the map is
    scale invariant); for ε > 0 the rescaling changes the result (what a control shows)."""
    G = per_sample_gradients(Z, w)
    return -_ratio(G.sum(axis=0) / G.shape[0], np.sqrt((G * G).sum(axis=0)) + eps)


def proxy_step_mp(Z, w, eps: float = 0.0, dps: int = 60) -> np.ndarray:
    """The same AdamProxy direction with the true (unrescaled) loss derivatives s_i = σ(−z_i·w),
    in mpmath (local context, `dps` digits): the reference for proxy_step at huge margins."""
    ctx = mpmath.mp.clone()
    ctx.dps = dps
    Z = np.asarray(Z, dtype=np.float64)
    n, d = Z.shape
    s = [1 / (1 + ctx.exp(ctx.mpf(float(z @ w)))) for z in Z]
    out = np.zeros(d)
    for k in range(d):
        num = sum(s[i] * ctx.mpf(float(Z[i, k])) for i in range(n)) / n
        den = ctx.sqrt(sum((s[i] * ctx.mpf(float(Z[i, k]))) ** 2 for i in range(n))) + ctx.mpf(eps)
        out[k] = float(num / den) if den != 0 else 0.0
    return out
