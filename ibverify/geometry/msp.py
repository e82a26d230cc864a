"""Max-spectral geometry over layers (Muon on a multilayer net): ‖θ‖_msp = max_k ‖W_k‖_sp.

1-D blocks are 1×m row matrices (spectral = ℓ2). Dual: Σ_k ‖G_k‖_nuc. LMO: (−U_kV_kᵀ)_k blockwise.
∂‖θ‖_msp = conv ∪_{k active} embed_k(∂‖W_k‖_sp), active = {k : ‖W_k‖_sp = ‖θ‖_msp} (relaxed by tau), so
∂(½‖·‖²)(θ) = ‖θ‖_msp · {(U_{1k} T_k V_{1k}ᵀ)_k : T_k ⪰ 0, Σ_k tr T_k = 1}.
"""

from __future__ import annotations

import numpy as np

from ..blocks import Params
from .base import GeometryBase, cvx_nuclear, cvx_psd_combo, cvx_spectral, nuclear, polar, spectral, spectral_face
from ..lazyimport import lazy

cp = lazy("cvxpy")  # imported on first use (start-up time)


def msp_face(theta: Params, level: float, scale: float, tau: float):
    """Expressions scale·U_{1k} T_k V_{1k}ᵀ on blocks with ‖W_k‖_sp ≥ (1−tau)·level; returns (S, Σ tr T_k, cons)."""
    S, total, cons = {}, 0, []
    for k, W in theta.items():
        if spectral(W) < (1.0 - tau) * level:
            S[k] = cp.Constant(np.zeros(W.shape))
            continue
        U1, V1 = spectral_face(W, level, tau)
        expr, tr, c = cvx_psd_combo(U1, V1, W.shape)
        S[k] = scale * expr
        total = total + tr
        cons += c
    return S, total, cons


class MaxSpectral(GeometryBase):
    name = "msp"

    def norm(self, theta: Params) -> float:
        return float(max(spectral(v) for v in theta.values()))

    def dual_norm(self, g: Params) -> float:
        return float(sum(nuclear(v) for v in g.values()))

    def lmo(self, g: Params) -> Params:
        return {k: -polar(v) for k, v in g.items()}

    def cvx_norm(self, V: dict) -> cp.Expression:
        return cp.max(cp.hstack([cvx_spectral(e, e.shape) for e in V.values()]))

    def cvx_dual_norm(self, V: dict) -> cp.Expression:
        return sum(cvx_nuclear(e, e.shape) for e in V.values())

    def cvx_face(self, theta: Params, tau: float = 0.0):
        n = self.norm(theta)
        S, total, cons = msp_face(theta, n, n, tau)
        return S, cons + [total == 1]
