"""ℓ1 geometry over all parameters jointly (steepest descent in ℓ1 = greedy coordinate descent): ‖θ‖_1 = Σ_j |θ_j|,
dual ℓ∞.

LMO(g) = −sign(g_i) e_i at the coordinate i of largest |g_i|; on exact ties the unit is split equally over the k tied
coordinates (−sign(g_i)/k each: the minimum-ℓ2 element of argmin_{‖u‖₁≤1} ⟨u, g⟩). g = 0 gives 0.
∂(½‖·‖²)(θ) = ‖θ‖_1 · {s : s_j = sign(θ_j) where θ_j ≠ 0, |s_j| ≤ 1 where θ_j = 0}; `cvx_face` treats
coordinates with |θ_j| ≤ tau·‖θ‖_∞ as zero.
"""

from __future__ import annotations

import numpy as np

from ..blocks import Params
from .base import GeometryBase, cvx_vec
from .linf import _l1, _linf
from ..lazyimport import lazy

cp = lazy("cvxpy")  # imported on first use (start-up time)


def l1_lmo(g: Params) -> Params:
    """−sign(g_i)/k on the k coordinates (over all blocks) where |g_i| = max_j |g_j|, 0 elsewhere."""
    top = _linf(g)
    if top == 0:
        return {k: np.zeros_like(v) for k, v in g.items()}
    on = {k: np.abs(v) == top for k, v in g.items()}
    n = int(sum(int(m.sum()) for m in on.values()))
    return {k: -np.sign(v) * on[k] / n for k, v in g.items()}


class L1(GeometryBase):
    name = "l1"

    def norm(self, theta: Params) -> float:
        return _l1(theta)

    def dual_norm(self, g: Params) -> float:
        return _linf(g)

    def lmo(self, g: Params) -> Params:
        return l1_lmo(g)

    def cvx_norm(self, V: dict) -> cp.Expression:
        return sum(cp.sum(cp.abs(e)) for e in V.values())

    def cvx_dual_norm(self, V: dict) -> cp.Expression:
        return cp.max(cp.hstack([cp.max(cp.abs(cvx_vec(e))) for e in V.values()]))

    def cvx_face(self, theta: Params, tau: float = 0.0):
        n, top = _l1(theta), _linf(theta)
        S, cons = {}, []
        for k, v in theta.items():
            act = np.abs(v) > tau * top if tau > 0 else v != 0
            fixed = n * np.sign(v) * act
            if act.all():
                S[k] = cp.Constant(fixed)
                continue
            z = cp.Variable(v.shape)
            S[k] = fixed + cp.multiply(1.0 - act, z)
            cons.append(cp.abs(z) <= n)
        return S, cons
