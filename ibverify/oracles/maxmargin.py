"""ℓp max margin of separable data, p ∈ {2, ∞, 1}, with a primal–dual certificate.

Primal (P):  min ‖w‖_p  s.t.  Z w ≥ 1          γ_p = 1/‖w*‖_p,  direction w*/‖w*‖_p
Dual   (D):  max 1ᵀλ    s.t.  ‖Zᵀλ‖_{p*} ≤ 1, λ ≥ 0

Scale invariance: the problem is solved on Ẑ = Z/s with s = max_ik |Z_ik| and rescaled after
(γ(Z) = s·γ(Ẑ), same direction, λ(Z) = λ(Ẑ)/s), so margin(sZ) = s·margin(Z) with the same support
and direction for any s > 0. Inert coordinates (columns of Z that are zero in every sample) are set
aside: they cannot change any margin; the direction is 0 there (the unique choice for ℓ2 and ℓ1, one
of the optimal choices for ℓ∞) and `MaxMargin.inert` lists them.

Certificate (checked before any result is returned), every residual relative, hence scale-free:
primal feasibility 1 − min z_i·w; dual sign −min λ/1ᵀλ; dual feasibility ‖Zᵀλ‖_{p*} − 1; duality gap
|‖w‖_p − 1ᵀλ|/‖w‖_p; complementarity max_i |λ_i (z_i·w − 1)|/1ᵀλ; for p = 2 also stationarity
‖w − ‖w‖ Zᵀλ‖/‖w‖. Solver pinned to Clarabel via cvxpy; the ℓ∞/ℓ1 LPs are cross-checked with HiGHS
(scipy `linprog`) by optimal value (ℓ∞/ℓ1 maximizers can be non-unique: compare margins, not
directions). A failed solve, an inaccurate status or a failed certificate raises IbverifyError.
"""

from __future__ import annotations

import copy

import numpy as np

from .. import IbverifyError
from ..cache import fingerprint
from .base import CLARABEL, SUPPORT_RTOL, MaxMargin, Memo, data_scale, prepared  # noqa: F401 (their home before oracles.lp)

DUAL = {"l2": 2, "linf": 1, "l1": np.inf}
ORD = {"l2": 2, "linf": np.inf, "l1": 1}
CERT_RTOL = 1e-7
_SOLVED = Memo(1024)   # certified results by a digest of (Z, norm, cross_check): claims and controls share data


def lp_exponent(norm: str) -> float:
    """p of a norm name: l1, l2, linf, or 'l<p>' with a finite p > 1 (e.g. 'l3', 'l1.5': lp_max_margin)."""
    if norm in ORD:
        return float(ORD[norm])
    try:
        p = float(norm[1:]) if norm.startswith("l") else float("nan")
    except ValueError:
        p = float("nan")
    if not (1 < p < np.inf):
        raise IbverifyError(f"unknown norm {norm!r}; use l2, linf, l1 or l<p> with 1 < p < inf (e.g. l3)")
    return p


def norm_of(w: np.ndarray, norm: str) -> float:
    return float(np.linalg.norm(w, lp_exponent(norm)))


def normalized_margin(Z: np.ndarray, w: np.ndarray, norm: str) -> float:
    """min_i z_i·w / ‖w‖_p (0 for w = 0)."""
    nw = norm_of(w, norm)
    return float(np.min(Z @ w) / nw) if nw > 0 else 0.0


def column_scale(Z: np.ndarray) -> np.ndarray:
    """c_k = max_i |Z_ik| (1 for an all-zero column): the solvers see Z·diag(1/c), every column in [−1, 1], so a
    feature in thousands and one in thousandths are conditioned alike (raw breast_cancer was refused otherwise)."""
    c = np.max(np.abs(Z), axis=0)
    return np.where(c > 0, c, 1.0)


def _solve_primal(Z: np.ndarray, norm: str) -> tuple[np.ndarray, np.ndarray]:
    """(w, λ) of (P) on Z, solved in u = c ⊙ w against the column-scaled Z·diag(1/c) (same constraints, same
    duals; the norm of w = u/c is the objective)."""
    import cvxpy as cp  # start-up time: cvxpy (the CLI imports the oracles before reading the data)

    n, d = Z.shape
    c = column_scale(Z)
    g = float(np.exp(np.mean(np.log(c))))   # the objective is solved for g·w: weights 1/(c/g), geometric mean 1
    u = cp.Variable(d)
    w = cp.multiply(g / c, u)
    cons = [(Z / c) @ u >= 1]
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
    lam = np.asarray(cons[0].dual_value, dtype=np.float64).ravel() / (g * g if norm == "l2" else g)
    wv = np.asarray(u.value, dtype=np.float64) / c
    if norm == "l2":  # QP duals satisfy w = Zᵀλ_qp, 1ᵀλ_qp = ‖w‖²; rescale to the norm-form dual
        lam = lam / np.linalg.norm(wv)
    return wv, lam


def residuals(Z: np.ndarray, w: np.ndarray, lam: np.ndarray, norm: str) -> dict:
    """The certificate's residuals, each relative (unchanged under (Z, w, λ) → (sZ, w/s, λ/s))."""
    Z, w, lam = (np.asarray(a, dtype=np.float64) for a in (Z, w, lam))
    nw = norm_of(w, norm)
    total = float(lam.sum())
    if not (nw > 0 and total > 0):
        return {"primal_infeasibility": float("inf"), "dual_negativity": float("inf")}
    zw = Z @ w
    g = Z.T @ lam
    cert = {
        "primal_infeasibility": float(max(0.0, 1.0 - zw.min())),
        "dual_negativity": float(max(0.0, -lam.min()) / total),
        "dual_infeasibility": float(max(0.0, np.linalg.norm(g, DUAL[norm]) - 1.0)),
        "duality_gap": float(abs(nw - total) / nw),
        "complementarity": float(np.max(np.abs(lam * (zw - 1.0))) / total),
    }
    if norm == "l2":
        cert["stationarity"] = float(np.linalg.norm(w - nw * g) / nw)
    return cert


def certify(Z: np.ndarray, w: np.ndarray, lam: np.ndarray, norm: str, rtol: float = CERT_RTOL) -> dict:
    """Residuals of the primal–dual certificate; raises IbverifyError naming the worst one above rtol."""
    cert = residuals(Z, w, lam, norm)
    bad = {k: v for k, v in cert.items() if not (v <= rtol)}
    if bad:
        worst = max(bad, key=bad.get)
        raise IbverifyError(f"{norm} max-margin certificate failed: {worst} = {bad[worst]:.2e} > {rtol:.0e}")
    return cert


def _highs_value(Z: np.ndarray, norm: str) -> float:
    """min ‖w‖_p s.t. Zw ≥ 1 as an LP in HiGHS (p = ∞ or 1), in u = cs ⊙ w on the column-scaled Z (as
    _solve_primal)."""
    from scipy.optimize import linprog  # start-up time: scipy, as cvxpy in _solve_primal

    n, d = Z.shape
    cs = column_scale(Z)
    Zc = Z / cs
    if norm == "linf":  # vars (u, t): min t, −t ≤ u_k/cs_k ≤ t
        c = np.r_[np.zeros(d), 1.0]
        D = np.diag(1 / cs)
        A = np.block([[-Zc, np.zeros((n, 1))], [D, -np.ones((d, 1))], [-D, -np.ones((d, 1))]])
        b = np.r_[-np.ones(n), np.zeros(2 * d)]
        bounds = [(None, None)] * d + [(0, None)]
    else:  # l1, vars (u+, u−) ≥ 0: min Σ (u+ + u−)/cs
        c = np.r_[1 / cs, 1 / cs]
        A = np.hstack([-Zc, Zc])
        b = -np.ones(n)
        bounds = [(0, None)] * (2 * d)
    res = linprog(c, A_ub=A, b_ub=b, bounds=bounds, method="highs")
    if res.status != 0:
        raise IbverifyError(f"HiGHS cross-check of the {norm} LP failed: {res.message}")
    return float(res.fun)


def max_margin(Z: np.ndarray, norm: str = "l2", cross_check: bool = True) -> MaxMargin:
    """Certified ℓp max margin of label-folded data Z (rows z_i = y_i x_i), solved on Z/max|Z|; a norm 'l<p>'
    (1 < p < ∞, e.g. 'l3') goes to oracles.lp.lp_max_margin."""
    if norm not in ORD:
        from .lp import lp_max_margin  # 'l<p>': the power-cone oracle with its own certificate

        return lp_max_margin(Z, lp_exponent(norm))
    prep = prepared(Z)
    key = fingerprint(("max-margin", prep[0], norm, bool(cross_check)))
    return copy.deepcopy(_SOLVED.get(key, lambda: _certified(prep, norm, cross_check)))   # a copy: callers own it


def _certified(prep: tuple, norm: str, cross_check: bool) -> MaxMargin:
    Z, inert, live, s, Zn = prep
    w, lam = _solve_primal(Zn, norm)
    cert = certify(Zn, w, lam, norm)
    nw = norm_of(w, norm)
    if cross_check and norm != "l2":
        v = _highs_value(Zn, norm)
        cert["highs_relative_difference"] = abs(v - nw) / nw
        if cert["highs_relative_difference"] > 1e-6:
            raise IbverifyError(f"{norm} max margin: Clarabel ({nw:.10g}) and HiGHS ({v:.10g}) disagree")
    direction = np.zeros(Z.shape[1])
    direction[live] = w / nw
    slack = np.maximum(Zn @ w / np.min(Zn @ w) - 1.0, 0.0)
    return MaxMargin(norm, direction, s / nw, lam / s, cert, slack, inert)
