"""ℓp max margin of separable data for a finite p > 1 (Gunasekar et al. 2018's steepest descent in ℓp), certified.

    γ_p = max_{‖w‖_p ≤ 1} min_i z_i·w          (solved as min ‖w‖_p s.t. Z w ≥ 1, cvxpy `pnorm`, Clarabel)

Certificate (its own optimality conditions, not the solver's status), for a direction d and dual weights α:
    primal feasibility   ‖d‖_p ≤ 1 (+ rtol), and γ_primal = min_i z_i·d > 0
    dual sign            α ≥ 0 (−min α ≤ rtol)
    dual normalization   Σ α = 1 (|Σ α − 1| ≤ rtol)
    duality gap          (γ_dual − γ_primal)/γ_dual ≤ rtol, γ_dual = ‖Σ_i α_i z_i‖_q, 1/p + 1/q = 1
Weak duality: for any feasible d and any α in the simplex, min_i z_i·d ≤ Σ α_i z_i·d = ⟨Zᵀα, d⟩ ≤ ‖Zᵀα‖_q ‖d‖_p
≤ ‖Zᵀα‖_q, so γ_primal ≤ γ_p ≤ γ_dual and a relative gap ≤ rtol pins γ_p to within rtol (complementarity, α on the
support only, follows from the equality). Scale-free: solved on Z/max|Z| and rescaled (γ(sZ) = s·γ(Z)).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import IbverifyError
from .base import CLARABEL, MaxMargin, prepared

LP_CERT_RTOL = 1e-6   # the power-cone solve reaches ~1e-9; 1e-6 of γ_p is far below any claim's tolerance


def dual_exponent(p: float) -> float:
    """q with 1/p + 1/q = 1 (p > 1 finite)."""
    return p / (p - 1.0)


def lp_residuals(Z: np.ndarray, d: np.ndarray, alpha: np.ndarray, p: float) -> dict:
    """The certificate's residuals (each relative or dimensionless) and the two bounds γ_primal ≤ γ_p ≤ γ_dual."""
    Z, d, alpha = (np.asarray(a, dtype=np.float64) for a in (Z, d, alpha))
    q = dual_exponent(p)
    primal = float(np.min(Z @ d))
    dual = float(np.linalg.norm(Z.T @ alpha, q))
    return {
        "primal_infeasibility": float(max(0.0, np.linalg.norm(d, p) - 1.0)),
        "nonpositive_margin": 0.0 if primal > 0 else float("inf"),
        "dual_negativity": float(max(0.0, -alpha.min())),
        "dual_normalization": float(abs(alpha.sum() - 1.0)),
        "duality_gap": float(abs(dual - primal) / dual) if dual > 0 else float("inf"),
        "gamma_primal": primal,
        "gamma_dual": dual,
    }


def lp_certify(Z: np.ndarray, d: np.ndarray, alpha: np.ndarray, p: float, rtol: float = LP_CERT_RTOL) -> dict:
    """Residuals of the certificate; raises IbverifyError naming every condition above rtol."""
    cert = lp_residuals(Z, d, alpha, p)
    bad = {k: v for k, v in cert.items() if not k.startswith("gamma_") and not (v <= rtol)}
    if bad:
        raise IbverifyError(f"l{p:g} max-margin certificate failed: "
                            + ", ".join(f"{k} = {v:.2e}" for k, v in sorted(bad.items(), key=lambda kv: -kv[1]))
                            + f" > {rtol:.0e}")
    return cert


def _solve(Zn: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    import cvxpy as cp  # start-up time, as maxmargin._solve_primal

    w = cp.Variable(Zn.shape[1])
    cons = [Zn @ w >= 1]
    prob = cp.Problem(cp.Minimize(cp.pnorm(w, p)), cons)
    try:
        with warnings.catch_warnings():   # "may be inaccurate": the certificate, not the status, decides
            warnings.simplefilter("ignore", UserWarning)
            prob.solve(solver=cp.CLARABEL, **CLARABEL)
    except cp.error.SolverError as e:
        raise IbverifyError(f"l{p:g} max-margin solve failed: {e}") from None
    if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        raise IbverifyError(f"data are not linearly separable: l{p:g} max-margin problem is infeasible")
    if w.value is None or cons[0].dual_value is None:
        raise IbverifyError(f"l{p:g} max-margin solve ended with status '{prob.status}' and no solution")
    # the status is not trusted: the certificate decides
    return np.asarray(w.value, dtype=np.float64), np.asarray(cons[0].dual_value, dtype=np.float64).ravel()


def lp_max_margin(Z: np.ndarray, p: float, rtol: float = LP_CERT_RTOL) -> MaxMargin:
    """Certified ℓp max margin (1 < p < ∞) of label-folded data Z. `duals` follow MaxMargin's convention
    (λ ≥ 0 with ‖Zᵀλ‖_q = 1, 1ᵀλ = 1/γ_p); `certificate` holds the residuals of lp_certify on Z/max|Z|."""
    p = float(p)
    if not (1 < p < np.inf):
        raise IbverifyError(f"lp_max_margin needs 1 < p < inf, got {p}")
    Z, inert, live, s, Zn = prepared(Z)
    w, lam = _solve(Zn, p)
    nw = float(np.linalg.norm(w, p))
    if not (nw > 0 and lam.sum() > 0):
        raise IbverifyError(f"l{p:g} max-margin solve returned a degenerate point (‖w‖_p = {nw:g})")
    d, alpha = w / nw, lam / lam.sum()
    cert = lp_certify(Zn, d, alpha, p, rtol)
    gamma = cert["gamma_primal"]
    direction = np.zeros(Z.shape[1])
    direction[live] = d
    zd = Zn @ d
    slack = np.maximum(zd / zd.min() - 1.0, 0.0)
    duals = np.maximum(alpha, 0.0) / cert["gamma_dual"]   # ‖Zᵀλ‖_q = 1 and 1ᵀλ = 1/γ (on Z/s; /s on Z)
    return MaxMargin(f"l{p:g}", direction, s * gamma, duals / s, cert, slack, inert)
