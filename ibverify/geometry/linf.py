"""ℓ∞ geometry over all parameters jointly (SignGD / Signum / Adam): ‖θ‖_∞ = max_j |θ_j|, dual ℓ1.

LMO(g) = −sign(g) (coordinates with g_j = 0 get 0).
∂(½‖·‖²)(θ) = ‖θ‖_∞ · conv{sign(θ_j) e_j : |θ_j| = ‖θ‖_∞}; `cvx_face` relaxes "=" to "≥ (1 − tau)‖θ‖_∞".
"""

from __future__ import annotations

import numpy as np

from ..blocks import Params
from .base import GeometryBase, cvx_vec
from ..lazyimport import lazy

cp = lazy("cvxpy")  # imported on first use (start-up time)


def _linf(p: Params) -> float:
    return float(max((np.max(np.abs(v)) if v.size else 0.0) for v in p.values()))


def _l1(p: Params) -> float:
    return float(sum(np.sum(np.abs(v)) for v in p.values()))


def linf_face(theta: Params, level: float, scale: float, tau: float):
    """Expressions scale·Σ_j μ_j sign(θ_j) e_j over coordinates with |θ_j| ≥ (1−tau)·level; returns (S, Σμ, cons)."""
    S, total, cons = {}, 0, []
    for k, v in theta.items():
        act = np.abs(v) >= (1.0 - tau) * level
        nact = int(act.sum())
        if nact == 0:
            S[k] = cp.Constant(np.zeros(v.shape))
            continue
        mu = cp.Variable(nact, nonneg=True)
        E = np.zeros((v.size, nact))
        idx = np.flatnonzero(act.ravel())
        E[idx, np.arange(nact)] = np.sign(v.ravel()[idx])
        S[k] = cp.reshape(scale * (E @ mu), v.shape, order="C")
        total = total + cp.sum(mu)
    return S, total, cons


class Linf(GeometryBase):
    name = "linf"

    def norm(self, theta: Params) -> float:
        return _linf(theta)

    def dual_norm(self, g: Params) -> float:
        return _l1(g)

    def lmo(self, g: Params) -> Params:
        return {k: -np.sign(v) for k, v in g.items()}

    def cvx_norm(self, V: dict) -> cp.Expression:
        return cp.max(cp.hstack([cp.max(cp.abs(cvx_vec(e))) for e in V.values()]))

    def cvx_dual_norm(self, V: dict) -> cp.Expression:
        return sum(cp.sum(cp.abs(e)) for e in V.values())

    def cvx_face(self, theta: Params, tau: float = 0.0):
        n = _linf(theta)
        S, total, cons = linf_face(theta, n, n, tau)
        return S, cons + [total == 1]
