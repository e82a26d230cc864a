"""The dual optimal set of P_Adam(c) and the choice T makes when it is not a single point.

With w the (primal) optimum and A the weakly active set, the dual optimal set is
    D = { λ ≥ 0 : λ_i = 0 for i ∉ A,  Z_Aᵀ λ_A = M w }.
Every λ ∈ D has Σ λ_i = wᵀMw (complementarity), so T(c) = D / (wᵀMw) is a single point iff D is.
D is a point when Z_A has full row rank; otherwise we compute each λ_i's range over D (LPs).

Choice (documented, solver-independent): when D is not a point, T(c) uses the least-ℓ2-norm dual
in D (unique: strictly convex over a polytope). For exactly duplicated samples it splits weight
equally, as the loss weights c_i(w) ∝ σ(−z_i·w) of the dynamics do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import null_space
from scipy.optimize import linprog

from ..errors import IbverifyError
from .padam import PAdamSolution
from ..lazyimport import lazy

cp = lazy("cvxpy")  # imported on first use (start-up time)

RANGE_TOL = 1e-9  # relative width below which a dual coordinate counts as determined


@dataclass(frozen=True)
class DualSet:
    lam: np.ndarray       # the chosen dual: the solver's if unique, else least-ℓ2-norm in D
    unique: bool          # D is a single point (to RANGE_TOL relative)
    lo: np.ndarray        # per-coordinate min of λ_i over D
    hi: np.ndarray        # per-coordinate max of λ_i over D
    active: np.ndarray    # weakly active set A
    base: np.ndarray      # a point of D (the certified dual)
    null: np.ndarray      # basis of null(Z_Aᵀ) restricted to A: D = base + null·t, ≥ 0


def analyse(Z, sol: PAdamSolution) -> DualSet:
    """Describe D for the certified solution `sol` and choose the dual T(c) uses."""
    Z = np.asarray(Z, dtype=np.float64)
    A = sol.active
    lam = sol.lam.copy()
    lam[np.setdiff1d(np.arange(Z.shape[0]), A)] = 0.0
    ZA = Z[A]
    sv = np.linalg.svd(ZA, compute_uv=False)
    rank = int((sv > sv.max() * max(ZA.shape) * 1e-13).sum()) if sv.size else 0
    if rank == A.size:
        return DualSet(lam, True, lam.copy(), lam.copy(), A, lam, np.zeros((Z.shape[0], 0)))
    basis = null_space(ZA.T, rcond=1e-13)
    K = np.zeros((Z.shape[0], basis.shape[1]))
    K[A] = basis
    lo, hi = lam.copy(), lam.copy()
    for i in A:  # range of λ_i over D:  λ_i = base_i + K_i·t  with  base + K t ≥ 0
        for sgn, out in ((1.0, lo), (-1.0, hi)):
            r = linprog(sgn * K[i], A_ub=-K[A], b_ub=lam[A], bounds=(None, None), method="highs")
            if r.status != 0:
                raise IbverifyError(f"dual-range LP failed: {r.message}")
            out[i] = lam[i] + K[i] @ r.x
    width = (hi - lo).max() / max(lam.sum(), 1e-300)
    if width <= RANGE_TOL:
        return DualSet(lam, True, lo, hi, A, lam, K)
    t = cp.Variable(K.shape[1])
    cp.Problem(cp.Minimize(cp.sum_squares(lam + K @ t)), [lam[A] + K[A] @ t >= 0]).solve(solver=cp.CLARABEL)
    chosen = np.maximum(lam + K @ t.value, 0.0)
    return DualSet(chosen, False, lo, hi, A, lam, K)


def distance_to_image(ds: DualSet, c) -> float:
    """dist₁(c, T(c)) = min_{λ ∈ D} ‖λ/Σλ − c‖₁ (an LP); equals ‖T(c) − c‖₁ when D is a point."""
    c = np.asarray(c, dtype=np.float64)
    s = ds.base.sum()
    if ds.unique or ds.null.shape[1] == 0:
        return float(np.abs(ds.lam / ds.lam.sum() - c).sum())
    n, k = ds.null.shape
    # variables (t, e): min Σe  s.t. ±(base/s + K t/s − c) ≤ e,  base + K t ≥ 0
    Kn = ds.null / s
    d0 = ds.base / s - c
    A_ub = np.block([[Kn, -np.eye(n)], [-Kn, -np.eye(n)], [-ds.null, np.zeros((n, n))]])
    b_ub = np.r_[-d0, d0, ds.base]
    r = linprog(np.r_[np.zeros(k), np.ones(n)], A_ub=A_ub, b_ub=b_ub,
                bounds=[(None, None)] * (k + n), method="highs")
    if r.status != 0:
        raise IbverifyError(f"fixed-point distance LP failed: {r.message}")
    return float(r.fun)
