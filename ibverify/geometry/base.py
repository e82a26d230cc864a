"""The geometry protocol shared by every norm module, and helpers (polar factor, cvxpy block algebra).

A geometry is a norm ‖·‖ on parameter space (named blocks). It provides
  norm(θ), dual_norm(g)                    ‖θ‖ and ‖g‖_* = sup_{‖u‖≤1} ⟨u, g⟩
  lmo(g)                                   LMO(g) ∈ argmin_{‖u‖≤1} ⟨u, g⟩, so ⟨LMO(g), g⟩ = −‖g‖_*
  in_subdifferential(θ, s, rtol)           s ∈ ∂(½‖·‖²)(θ) ⟺ ‖s‖_* = ‖θ‖ and ⟨s, θ⟩ = ‖θ‖² (Fenchel–Young)
  cvx_norm(V), cvx_dual_norm(V)            the same norms as cvxpy expressions of block variables V
  cvx_face(θ, tau)                         ∂(½‖·‖²)(θ) = ‖θ‖·∂‖·‖(θ) as cvxpy expressions + constraints,
                                           with the active set relaxed by the relative tolerance tau
  margin(model, θ, X, y)                   normalized margin min_i y_i f(x_i; θ) / ‖θ‖^L
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..blocks import Params, inner
from ..lazyimport import lazy

cp = lazy("cvxpy")  # imported on first use (start-up time)


class Geometry(Protocol):
    name: str

    def norm(self, theta: Params) -> float: ...
    def dual_norm(self, g: Params) -> float: ...
    def lmo(self, g: Params) -> Params: ...
    def in_subdifferential(self, theta: Params, s: Params, rtol: float = 1e-8) -> bool: ...
    def cvx_norm(self, V: dict) -> cp.Expression: ...
    def cvx_dual_norm(self, V: dict) -> cp.Expression: ...
    def cvx_face(self, theta: Params, tau: float) -> tuple[dict, list]: ...
    def margin(self, model, theta: Params, X: np.ndarray, y: np.ndarray) -> float: ...


class GeometryBase:
    name = "base"

    def in_subdifferential(self, theta: Params, s: Params, rtol: float = 1e-8) -> bool:
        """s ∈ ∂(½‖·‖²)(θ) iff ‖s‖_* ≤ ‖θ‖ and ⟨s, θ⟩ ≥ ‖θ‖² (then both hold with equality)."""
        n = self.norm(theta)
        return bool(abs(self.dual_norm(s) - n) <= rtol * max(n, 1e-300)
                    and abs(inner(s, theta) - n * n) <= rtol * max(n * n, 1e-300))

    def fenchel_gap(self, theta: Params, s: Params) -> float:
        """½‖θ‖² + ½‖s‖_*² − ⟨s, θ⟩ ≥ 0, zero exactly on the subdifferential."""
        return 0.5 * self.norm(theta) ** 2 + 0.5 * self.dual_norm(s) ** 2 - inner(s, theta)

    def margin(self, model, theta: Params, X: np.ndarray, y: np.ndarray) -> float:
        q = y * model.outputs(theta, X)
        return float(np.min(q) / self.norm(theta) ** model.L)

    def steepest(self, g: Params) -> Params:
        """The unit steepest-descent step −LMO(g) negated: d with ‖d‖ = 1, ⟨d, g⟩ = ‖g‖_* (update θ ← θ − η d)."""
        return {k: -v for k, v in self.lmo(g).items()}


# ---------------------------------------------------------------- matrix helpers

def as_matrix(v: np.ndarray) -> np.ndarray:
    """A 1-D block is a 1×m row matrix (its spectral and nuclear norms are its ℓ2 norm)."""
    return v[None, :] if v.ndim == 1 else v


def polar(G: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """Exact polar factor UVᵀ of the compact SVD G = UΣVᵀ (singular values ≤ rtol·σ_max dropped).

    For rank-deficient G this is the minimum-Frobenius element of argmax_{‖U‖_sp≤1} ⟨U, G⟩.
    """
    M = as_matrix(G)
    if not np.any(M):
        return np.zeros_like(G)
    U, s, Vt = np.linalg.svd(M, full_matrices=False)
    keep = s > rtol * s[0]
    P = U[:, keep] @ Vt[keep]
    return P.reshape(G.shape)


def spectral(G: np.ndarray) -> float:
    M = as_matrix(G)
    return float(np.linalg.norm(M, 2)) if M.size else 0.0


def nuclear(G: np.ndarray) -> float:
    M = as_matrix(G)
    return float(np.sum(np.linalg.svd(M, compute_uv=False))) if M.size else 0.0


def cvx_vec(e) -> cp.Expression:
    return cp.vec(e, order="C")


def cvx_spectral(e, shape) -> cp.Expression:
    return cp.norm(e, 2) if len(shape) == 1 else cp.sigma_max(e)


def cvx_nuclear(e, shape) -> cp.Expression:
    return cp.norm(e, 2) if len(shape) == 1 else cp.normNuc(e)


def spectral_face(W: np.ndarray, level: float, tau: float):
    """Top singular space of W: singular values ≥ (1 − tau)·level. Returns (U1, V1) for ∂‖W‖_sp ∋ U1 T V1ᵀ."""
    M = as_matrix(W)
    U, s, Vt = np.linalg.svd(M, full_matrices=False)
    k = max(1, int(np.sum(s >= (1.0 - tau) * level)))
    return U[:, :k], Vt[:k].T


def cvx_psd_combo(U1: np.ndarray, V1: np.ndarray, shape) -> tuple[cp.Expression, cp.Expression, list]:
    """Expression U1 T V1ᵀ with T ⪰ 0 (reshaped to the block's shape), its trace, and constraints."""
    r = U1.shape[1]
    if r == 1:
        t = cp.Variable(nonneg=True)
        expr = t * (U1 @ V1.T)
        tr, cons = t, []
    else:
        T = cp.Variable((r, r), symmetric=True)
        expr = U1 @ T @ V1.T
        tr, cons = cp.trace(T), [T >> 0]
    if len(shape) == 1:
        expr = cp.reshape(expr, shape, order="C")
    return expr, tr, cons
