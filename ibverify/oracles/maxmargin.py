"""ℓp max margin of separable data, p ∈ {2, ∞, 1}, with a primal–dual certificate.

Primal (P):  min ‖w‖_p  s.t.  Z w ≥ 1          γ_p = 1/‖w*‖_p,  direction w*/‖w*‖_p
Dual   (D):  max 1ᵀλ    s.t.  ‖Zᵀλ‖_{p*} ≤ 1, λ ≥ 0

Certificate (checked before any result is returned): primal feasibility, dual feasibility, zero
duality gap ‖w‖_p = 1ᵀλ, complementarity λ_i (z_i·w − 1) = 0. For p = 2 the stationarity w = ‖w‖ Zᵀλ
is checked too. Solver pinned to Clarabel via cvxpy; the ℓ∞/ℓ1 LPs are cross-checked with HiGHS
(scipy `linprog`) by optimal value (ℓ∞/ℓ1 maximizers can be non-unique: compare margins, not
directions). A failed solve, an inaccurate status or a failed certificate raises IbverifyError.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np
from scipy.optimize import linprog

from .. import IbverifyError

DUAL = {"l2": 2, "linf": 1, "l1": np.inf}
ORD = {"l2": 2, "linf": np.inf, "l1": 1}
CERT_RTOL = 1e-7
CLARABEL = dict(tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11, max_iter=500)


@dataclass
class MaxMargin:
    norm: str
    direction: np.ndarray  # unit in the norm
    margin: float          # γ_p
    duals: np.ndarray      # λ of (D), normalized so that ‖Zᵀλ‖_{p*} = 1 and 1ᵀλ = 1/γ_p
    certificate: dict = field(default_factory=dict)

    @property
    def support(self) -> np.ndarray:
        return np.flatnonzero(self.duals > 1e-7 * self.duals.max())


def norm_of(w: np.ndarray, norm: str) -> float:
    return float(np.linalg.norm(w, ORD[norm]))


def normalized_margin(Z: np.ndarray, w: np.ndarray, norm: str) -> float:
    """min_i z_i·w / ‖w‖_p (0 for w = 0)."""
    nw = norm_of(w, norm)
    return float(np.min(Z @ w) / nw) if nw > 0 else 0.0


def _solve_primal(Z: np.ndarray, norm: str) -> tuple[np.ndarray, np.ndarray]:
    n, d = Z.shape
    w = cp.Variable(d)
    cons = [Z @ w >= 1]
    obj = cp.Minimize(0.5 * cp.sum_squares(w)) if norm == "l2" else cp.Minimize(cp.norm(w, ORD[norm]))
    prob = cp.Problem(obj, cons)
    try:
        prob.solve(solver=cp.CLARABEL, **CLARABEL)
    except cp.error.SolverError as e:
        raise IbverifyError(f"{norm} max-margin solve failed: {e}") from None
    if prob.status != cp.OPTIMAL:
        if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
            raise IbverifyError(f"data are not linearly separable: {norm} max-margin problem is infeasible")
        raise IbverifyError(f"{norm} max-margin solve ended with status '{prob.status}'")
    lam = np.asarray(cons[0].dual_value, dtype=np.float64).ravel()
    wv = np.asarray(w.value, dtype=np.float64)
    if norm == "l2":  # QP duals satisfy w = Zᵀλ_qp, 1ᵀλ_qp = ‖w‖²; rescale to the norm-form dual
        lam = lam / np.linalg.norm(wv)
    return wv, lam


def certify(Z: np.ndarray, w: np.ndarray, lam: np.ndarray, norm: str, rtol: float = CERT_RTOL) -> dict:
    """Residuals of the primal–dual certificate; raises IbverifyError if any exceeds rtol."""
    nw = norm_of(w, norm)
    scale = max(1.0, nw)
    zw = Z @ w
    cert = {
        "primal_infeasibility": float(max(0.0, 1.0 - zw.min())),
        "dual_negativity": float(max(0.0, -lam.min())),
        "dual_infeasibility": float(max(0.0, np.linalg.norm(Z.T @ lam, DUAL[norm]) - 1.0)),
        "duality_gap": float(abs(nw - lam.sum()) / scale),
        "complementarity": float(np.max(np.abs(lam * (zw - 1.0))) / scale),
    }
    if norm == "l2":
        cert["stationarity"] = float(np.linalg.norm(w - nw * (Z.T @ lam)) / scale)
    bad = {k: v for k, v in cert.items() if not (v <= rtol)}
    if bad:
        worst = max(bad, key=bad.get)
        raise IbverifyError(f"{norm} max-margin certificate failed: {worst} = {bad[worst]:.2e} > {rtol:.0e}")
    return cert


def _highs_value(Z: np.ndarray, norm: str) -> float:
    """min ‖w‖_p s.t. Zw ≥ 1 as an LP in HiGHS (p = ∞ or 1)."""
    n, d = Z.shape
    if norm == "linf":  # vars (w, t): min t, −t ≤ w_k ≤ t
        c = np.r_[np.zeros(d), 1.0]
        A = np.block([[-Z, np.zeros((n, 1))], [np.eye(d), -np.ones((d, 1))], [-np.eye(d), -np.ones((d, 1))]])
        b = np.r_[-np.ones(n), np.zeros(2 * d)]
        bounds = [(None, None)] * d + [(0, None)]
    else:  # l1, vars (w+, w−) ≥ 0
        c = np.ones(2 * d)
        A = np.hstack([-Z, Z])
        b = -np.ones(n)
        bounds = [(0, None)] * (2 * d)
    res = linprog(c, A_ub=A, b_ub=b, bounds=bounds, method="highs")
    if res.status != 0:
        raise IbverifyError(f"HiGHS cross-check of the {norm} LP failed: {res.message}")
    return float(res.fun)


def max_margin(Z: np.ndarray, norm: str = "l2", cross_check: bool = True) -> MaxMargin:
    """Certified ℓp max margin of label-folded data Z (rows z_i = y_i x_i)."""
    if norm not in ORD:
        raise IbverifyError(f"unknown norm {norm!r}; use l2, linf or l1")
    Z = np.asarray(Z, dtype=np.float64)
    w, lam = _solve_primal(Z, norm)
    cert = certify(Z, w, lam, norm)
    nw = norm_of(w, norm)
    if cross_check and norm != "l2":
        v = _highs_value(Z, norm)
        cert["highs_relative_difference"] = abs(v - nw) / nw
        if cert["highs_relative_difference"] > 1e-6:
            raise IbverifyError(f"{norm} max margin: Clarabel ({nw:.10g}) and HiGHS ({v:.10g}) disagree")
    return MaxMargin(norm, w / nw, 1.0 / nw, lam, cert)
