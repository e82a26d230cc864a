"""Hybrid geometry of Muon-Signum / Muon-Adam: h(θ) = max{ c·‖(W_1..W_K)‖_msp , ‖u‖_∞ }.

Matrix blocks (2-D, Muon's) form W; vector blocks (1-D, Signum's/Adam's) form u; c = η_A/η_M (1 for
Muon-Signum). Dual: h_*(g) = (1/c)·Σ_k ‖G_k‖_nuc + ‖g_u‖_1. LMO(g) = (−(1/c)·U_kV_kᵀ)_k together with −sign(g_u).
∂h(θ) = conv( c·∂‖W‖_msp [if c‖W‖_msp = h],  ∂‖u‖_∞ [if ‖u‖_∞ = h] ).
"""

from __future__ import annotations

import numpy as np

from ..errors import IbverifyError
from ..blocks import Params
from .base import GeometryBase, cvx_nuclear, cvx_spectral, cvx_vec, nuclear, polar, spectral
from .linf import linf_face
from .msp import msp_face
from ..lazyimport import lazy

cp = lazy("cvxpy")  # imported on first use (start-up time)


class Hybrid(GeometryBase):
    def __init__(self, c: float = 1.0, matrix_blocks: tuple[str, ...] | None = None):
        if not (c > 0 and np.isfinite(c)):
            raise IbverifyError(f"hybrid geometry: c must be positive and finite (got {c})")
        self.c = float(c)
        self.matrix_blocks = matrix_blocks
        self.name = "hybrid" if c == 1 else f"hybrid(c={c:g})"

    def split(self, p: Params) -> tuple[list[str], list[str]]:
        mats = [k for k, v in p.items() if (k in self.matrix_blocks if self.matrix_blocks is not None else v.ndim == 2)]
        vecs = [k for k in p if k not in mats]
        return mats, vecs

    def parts(self, theta: Params) -> tuple[float, float]:
        """(c·‖W‖_msp, ‖u‖_∞)."""
        mats, vecs = self.split(theta)
        w = self.c * max((spectral(theta[k]) for k in mats), default=0.0)
        u = max((float(np.max(np.abs(theta[k]))) for k in vecs if theta[k].size), default=0.0)
        return w, u

    def norm(self, theta: Params) -> float:
        return float(max(self.parts(theta)))

    def dual_norm(self, g: Params) -> float:
        mats, vecs = self.split(g)
        return float(sum(nuclear(g[k]) for k in mats) / self.c + sum(np.sum(np.abs(g[k])) for k in vecs))

    def lmo(self, g: Params) -> Params:
        mats, _ = self.split(g)
        return {k: (-polar(v) / self.c if k in mats else -np.sign(v)) for k, v in g.items()}

    def cvx_norm(self, V: dict) -> cp.Expression:
        mats, vecs = self.split(V)
        terms = []
        if mats:
            terms.append(self.c * cp.max(cp.hstack([cvx_spectral(V[k], V[k].shape) for k in mats])))
        if vecs:
            terms.append(cp.max(cp.hstack([cp.max(cp.abs(cvx_vec(V[k]))) for k in vecs])))
        return cp.max(cp.hstack(terms)) if len(terms) > 1 else terms[0]

    def cvx_dual_norm(self, V: dict) -> cp.Expression:
        mats, vecs = self.split(V)
        return (sum(cvx_nuclear(V[k], V[k].shape) for k in mats) / self.c
                + sum(cp.sum(cp.abs(V[k])) for k in vecs))

    def cvx_face(self, theta: Params, tau: float = 0.0):
        mats, vecs = self.split(theta)
        h = self.norm(theta)
        w, u = self.parts(theta)
        S = {k: cp.Constant(np.zeros(v.shape)) for k, v in theta.items()}
        total, cons = 0, []
        if mats and w >= (1 - tau) * h:
            Sm, tm, cm = msp_face({k: theta[k] for k in mats}, w / self.c, h * self.c, tau)
            S.update(Sm)
            total, cons = total + tm, cons + cm
        if vecs and u >= (1 - tau) * h:
            Sv, tv, cv = linf_face({k: theta[k] for k in vecs}, u, h, tau)
            S.update(Sv)
            total, cons = total + tv, cons + cv
        return S, cons + [total == 1]
