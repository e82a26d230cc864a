"""P_Adam(c) := argmin_w ½ wᵀ M w  s.t.  z_i·w ≥ 1 for all i  (spec §5.5), M = diag(m) ⪰ 0.

Primary solver: a parametrized cvxpy QP with Clarabel (pinned, tight tolerances), followed by an
active-set polish (solve Z_A M⁻¹ Z_Aᵀ λ_A = 1 exactly). Cross-check: the least-distance program
min ‖u‖ s.t. Z M^{-1/2} u ≥ 1 solved by Lawson–Hanson NNLS (spec §5.7). Every returned solution has
passed its KKT certificate (certificate.verify); anything else raises IbverifyError.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from ..errors import IbverifyError
from . import certificate
from .certificate import Certificate
from ..lazyimport import lazy

cp = lazy("cvxpy")  # imported on first use (start-up time)

CLARABEL = dict(tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, tol_ktratio=1e-10, max_iter=400)
ACTIVE_TOL = 1e-7  # slack below which a constraint is treated as active when polishing


@dataclass(frozen=True)
class PAdamSolution:
    w: np.ndarray        # the minimizer p ∈ P_Adam(c) (margin-1 scaling: min_i z_i·w = 1)
    lam: np.ndarray      # a dual optimum λ ≥ 0 with M w = Σ_i λ_i z_i
    m: np.ndarray        # diagonal of M
    cert: Certificate    # verified KKT residuals
    solver: str
    Zw: np.ndarray       # z_i·w for every sample

    @property
    def direction(self) -> np.ndarray:
        return self.w / np.linalg.norm(self.w)

    @property
    def active(self) -> np.ndarray:
        """Indices of (weakly) active constraints: z_i·w − 1 ≤ ACTIVE_TOL."""
        return np.flatnonzero(self.Zw - 1.0 <= ACTIVE_TOL)


_PROBLEMS: dict[tuple, tuple] = {}


def _problem(Z: np.ndarray):
    """A DPP-parametrized QP for this Z (compiled once, reused: compilation is ~95% of a solve)."""
    key = (Z.shape, Z.tobytes())
    if key not in _PROBLEMS:
        if len(_PROBLEMS) > 32:
            _PROBLEMS.clear()
        s = cp.Parameter(Z.shape[1], nonneg=True)  # s = sqrt(m)
        w = cp.Variable(Z.shape[1])
        con = Z @ w >= 1
        prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(cp.multiply(s, w))), [con])
        _PROBLEMS[key] = (prob, s, w, con)
    return _PROBLEMS[key]


def _clarabel(Z, m):
    prob, s, w, con = _problem(Z)
    s.value = np.sqrt(m)
    try:
        prob.solve(solver=cp.CLARABEL, **CLARABEL)
    except cp.error.SolverError as e:
        raise IbverifyError(f"P_Adam(c): Clarabel failed: {e}") from None
    if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or w.value is None:
        raise IbverifyError(f"P_Adam(c): Clarabel status {prob.status} (data not separable?)")
    return np.array(w.value, dtype=np.float64), np.maximum(np.array(con.dual_value, dtype=np.float64), 0.0)


def _polish(Z, m, w, lam):
    """Exact solve on the active set A: λ_A = (Z_A M⁻¹ Z_Aᵀ)⁺ 1, w = M⁻¹ Z_Aᵀ λ_A; a few
    primal–dual active-set corrections if the guess was wrong. Returns None if it does not settle."""
    if m.min() <= 0:
        return None
    A = set(np.flatnonzero(Z @ w - 1.0 <= ACTIVE_TOL * max(1.0, np.abs(Z @ w).max())).tolist())
    for _ in range(2 * Z.shape[0]):
        idx = np.array(sorted(A), dtype=int)
        if idx.size == 0:
            return None
        ZA = Z[idx] / np.sqrt(m)
        lamA = np.linalg.lstsq(ZA @ ZA.T, np.ones(idx.size), rcond=1e-13)[0]
        wp = (Z[idx].T @ lamA) / m
        slack = Z @ wp - 1.0
        if lamA.min() < -1e-14 * np.abs(lamA).max():
            A.discard(int(idx[np.argmin(lamA)]))
        elif slack.min() < -1e-13:
            A.add(int(np.argmin(slack)))
        else:
            lam_full = np.zeros(Z.shape[0])
            lam_full[idx] = np.maximum(lamA, 0.0)
            return wp, lam_full
    return None


def least_distance_nnls(Z, m):
    """Spec §5.7: u = M^{1/2} w, A = Z M^{-1/2}; min ‖u‖ s.t. Au ≥ 1 via NNLS on E = [Aᵀ; 1ᵀ],
    f = e_{d+1}: r = Eμ − f, u = −r_{1:d}/r_{d+1}, λ = μ/(−r_{d+1}), w = M^{-1/2} u. Needs M ≻ 0."""
    if m.min() <= 0:
        raise IbverifyError("NNLS least-distance solve needs M(c) ≻ 0 (a zero metric coordinate)")
    sq = np.sqrt(m)
    A = Z / sq
    E = np.vstack([A.T, np.ones((1, Z.shape[0]))])
    f = np.zeros(E.shape[0])
    f[-1] = 1.0
    mu, _ = nnls(E, f, maxiter=50 * E.shape[1])
    r = E @ mu - f
    if not r[-1] < -1e-14:
        raise IbverifyError("P_Adam(c) infeasible: the data are not linearly separable")
    return (-r[:-1] / r[-1]) / sq, mu / (-r[-1])


def solve(Z, m, solver: str = "clarabel", tol: float = certificate.DEFAULT_TOL) -> PAdamSolution:
    """Solve P_Adam with metric diagonal m; verify the KKT certificate to `tol` or raise."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    if m.shape != (Z.shape[1],) or not np.all(np.isfinite(m)) or m.min() < 0:
        raise IbverifyError("metric diagonal must be finite, nonnegative, of length d")
    if solver == "clarabel":
        w, lam = _clarabel(Z, m)
        pol = _polish(Z, m, w, lam)
        if pol is not None and certificate.residuals(Z, m, *pol).kkt <= certificate.residuals(Z, m, w, lam).kkt:
            w, lam = pol
            solver = "clarabel+polish"
    elif solver == "nnls":
        w, lam = least_distance_nnls(Z, m)
    else:
        raise IbverifyError(f"unknown P_Adam solver {solver!r} (clarabel, nnls)")
    cert = certificate.verify(Z, m, w, lam, tol=tol)
    return PAdamSolution(w=w, lam=lam, m=m, cert=cert, solver=solver, Zw=Z @ w)
