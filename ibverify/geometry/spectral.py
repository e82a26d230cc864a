"""Spectral geometry of a single matrix block (Muon / spectral descent on one matrix): ‖W‖_sp = σ_max(W).

Dual: nuclear norm Σσ_i. LMO(G) = −UVᵀ (exact polar factor of the compact SVD G = UΣVᵀ).
∂(½‖·‖²)(W) = ‖W‖_sp · {U_1 T V_1ᵀ : T ⪰ 0, tr T = 1}, (U_1, V_1) the top singular space (relaxed by tau).
A 1-D block is treated as a 1×m row matrix.
"""

from __future__ import annotations

import numpy as np

from ..errors import IbverifyError
from ..blocks import Params
from .base import GeometryBase, cvx_nuclear, cvx_psd_combo, cvx_spectral, nuclear, polar, spectral, spectral_face
from ..lazyimport import lazy

cp = lazy("cvxpy")  # imported on first use (start-up time)


class Spectral(GeometryBase):
    name = "spectral"

    @staticmethod
    def _one(p: Params) -> tuple[str, np.ndarray]:
        if len(p) != 1:
            raise IbverifyError(f"spectral geometry needs exactly one parameter block (got {list(p)}); "
                                "use the max-spectral geometry 'msp' for several layers")
        (k, v), = p.items()
        return k, v

    def norm(self, theta: Params) -> float:
        return spectral(self._one(theta)[1])

    def dual_norm(self, g: Params) -> float:
        return nuclear(self._one(g)[1])

    def lmo(self, g: Params) -> Params:
        k, v = self._one(g)
        return {k: -polar(v)}

    def cvx_norm(self, V: dict) -> cp.Expression:
        (k, e), = V.items()
        return cvx_spectral(e, e.shape)

    def cvx_dual_norm(self, V: dict) -> cp.Expression:
        (k, e), = V.items()
        return cvx_nuclear(e, e.shape)

    def cvx_face(self, theta: Params, tau: float = 0.0):
        k, W = self._one(theta)
        n = spectral(W)
        U1, V1 = spectral_face(W, n, tau)
        expr, tr, cons = cvx_psd_combo(U1, V1, W.shape)
        return {k: n * expr}, cons + [tr == 1]
