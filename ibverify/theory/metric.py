"""The Adam metric M(c) of the parametric margin problem, and its batch-b generalization.

Spec §5.5 and §5.8 (Kim et al.'s batch-b form). Rows of Z are label-folded samples z_i = y_i x_i.
M is diagonal; functions here return its diagonal as a vector.
"""

from __future__ import annotations

import numpy as np

from ..errors import IbverifyError


def simplex(c, n: int | None = None) -> np.ndarray:
    """Validate c ∈ Δ_N (c ≥ 0, Σ c = 1 up to 1e-12) and return it as float64."""
    c = np.asarray(c, dtype=np.float64)
    if c.ndim != 1 or (n is not None and c.size != n):
        raise IbverifyError(f"c must be a vector of length {n}, got shape {c.shape}")
    if not np.all(np.isfinite(c)) or c.min() < 0 or abs(c.sum() - 1.0) > 1e-12 * c.size:
        raise IbverifyError("c must lie in the simplex (c >= 0, sum c = 1)")
    return c


def metric_diag(Z, c) -> np.ndarray:
    """M(c)_kk = sqrt( Σ_i c_i² z_i[k]² )   (spec §5.5; labels drop out)."""
    Z = np.asarray(Z, dtype=np.float64)
    c = simplex(c, Z.shape[0])
    return np.sqrt((c * c) @ (Z * Z))


def metric_diag_batch(Z, c, b: int) -> np.ndarray:
    """M_{N,b}(c)_kk = sqrt( N/(b(N−1)) · ((b−1) S_k² + (N−b) Q_k) ),
    S = Σ_i c_i z_i, Q = Σ_i c_i² z_i²   (spec §5.8, Kim et al.).

    b = 1 gives sqrt(N)·M(c) (same directions); b = N gives |S| (sign / ℓ∞ geometry).
    """
    Z = np.asarray(Z, dtype=np.float64)
    n = Z.shape[0]
    if not (1 <= int(b) <= n):
        raise IbverifyError(f"batch size must be in 1..{n}, got {b}")
    c = simplex(c, n)
    S = c @ Z
    Q = (c * c) @ (Z * Z)
    if n == 1:
        return np.abs(S)
    return np.sqrt(n / (b * (n - 1.0)) * ((b - 1.0) * S * S + (n - b) * Q))


def loss_weights(Z, w) -> np.ndarray:
    """c(w) ∝ σ(−z_i·w), normalized to the simplex, computed in the log domain:
    log s_i = −logaddexp(0, z_i·w), shifted by its max before exponentiating (spec §5.2)."""
    logs = -np.logaddexp(0.0, np.asarray(Z, np.float64) @ np.asarray(w, np.float64))
    s = np.exp(logs - logs.max())
    return s / s.sum()
