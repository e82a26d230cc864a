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
directions). A failed solve, an inaccurate status or a failed certificate is tried again (oracles.fallback: HiGHS,
then strict Clarabel, ℓ2 polished on its active set, the same certificate checked in the original units); only
when no attempt is certified does it raise IbverifyError ("not linearly separable" only with a dual witness).
"""

from __future__ import annotations

import copy

import numpy as np

from ..errors import IbverifyError
from ..cache import fingerprint
from .base import (CERT_RTOL, CLARABEL, DUAL, ORD, SUPPORT_RTOL, MaxMargin, Memo, certify,  # noqa: F401 (their
                   column_scale, data_scale, lp_exponent, norm_of, prepared, residuals)  # home before lp, fallback)
from .base import solve_primal as _solve_primal  # noqa: F401
from .fallback import second_attempts

_SOLVED = Memo(1024)   # certified results by a digest of (Z, norm, cross_check): claims and controls share data


def normalized_margin(Z: np.ndarray, w: np.ndarray, norm: str) -> float:
    """min_i z_i·w / ‖w‖_p (0 for w = 0)."""
    nw = norm_of(w, norm)
    return float(np.min(Z @ w) / nw) if nw > 0 else 0.0


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
    try:
        w, lam = _solve_primal(Zn, norm)
        cert = certify(Zn, w, lam, norm)
    except IbverifyError as e:   # not certified: a second solver and settings, the same certificate (fallback)
        w, lam, cert = second_attempts(Z[:, live], Zn, s, norm, e)
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
