"""ℓ2 geometry (normalized GD / MomentumGD): ‖θ‖ = sqrt(Σ_k ‖θ_k‖_F²), self-dual.

LMO(g) = −g/‖g‖_2; ∂(½‖·‖²)(θ) = {θ}, so the KKT residual is the NNLS residual ‖θ − Σλ_i ∇q_i‖_2 / ‖θ‖.
"""

from __future__ import annotations

import numpy as np

from ..blocks import Params, fro
from .base import GeometryBase, cvx_vec
from ..lazyimport import lazy

cp = lazy("cvxpy")  # imported on first use (start-up time)


class L2(GeometryBase):
    name = "l2"

    def norm(self, theta: Params) -> float:
        return fro(theta)

    dual_norm = norm  # self-dual

    def lmo(self, g: Params) -> Params:
        n = fro(g)
        if n == 0:
            return {k: np.zeros_like(v) for k, v in g.items()}
        return {k: -v / n for k, v in g.items()}

    def cvx_norm(self, V: dict) -> cp.Expression:
        return cp.norm(cp.hstack([cvx_vec(e) for e in V.values()]), 2)

    cvx_dual_norm = cvx_norm  # self-dual

    def cvx_face(self, theta: Params, tau: float = 0.0):
        return {k: cp.Constant(v) for k, v in theta.items()}, []
