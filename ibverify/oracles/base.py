"""What the max-margin oracles share (oracles.maxmargin for ℓ1/ℓ2/ℓ∞, oracles.lp for 1 < p < ∞): the result type,
the support rule, the pinned solver settings and the data scale."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import IbverifyError
from ..data.dataset import inert_coordinates

SUPPORT_RTOL = 1e-6  # support vector: λ_i > SUPPORT_RTOL·max λ and z_i·w ≤ (1 + SUPPORT_RTOL)·min_j z_j·w
CLARABEL = dict(tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11, max_iter=500)
DUAL = {"l2": 2, "linf": 1, "l1": np.inf}
ORD = {"l2": 2, "linf": np.inf, "l1": 1}
CERT_RTOL = 1e-7


class Memo:
    """Results of deterministic solves by a digest (`cache.fingerprint`) of everything they are computed from: a claim
    and its controls ask the oracles the same questions. The most recent `size` results are kept."""

    def __init__(self, size: int = 4096):
        self.size, self.values = size, OrderedDict()

    def get(self, key: str, solve: Callable[[], Any]) -> Any:
        if key in self.values:
            self.values.move_to_end(key)
            return self.values[key]
        value = self.values[key] = solve()
        if len(self.values) > self.size:
            self.values.popitem(last=False)
        return value


@dataclass
class MaxMargin:
    norm: str
    direction: np.ndarray  # unit in the norm (0 on inert coordinates)
    margin: float          # γ_p
    duals: np.ndarray      # λ of (D), normalized so that ‖Zᵀλ‖_{p*} = 1 and 1ᵀλ = 1/γ_p
    certificate: dict = field(default_factory=dict)
    relative_slack: np.ndarray | None = None  # z_i·w/γ_p − 1 ≥ 0 (0 on active constraints)
    inert: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # all-zero columns

    @property
    def support(self) -> np.ndarray:
        """Support vectors, decided by relative quantities only: a dual weight that is not negligible
        next to the largest one, on a constraint that is active relative to the margin."""
        lam = self.duals
        on = lam > SUPPORT_RTOL * lam.max()
        if self.relative_slack is not None:
            on &= self.relative_slack <= SUPPORT_RTOL
        return np.flatnonzero(on)


def data_scale(Z: np.ndarray) -> float:
    """s = max_ik |Z_ik|: the oracles solve on Z/s (entries in [−1, 1]) and rescale after."""
    s = float(np.max(np.abs(Z), initial=0.0))
    if not (s > 0 and np.isfinite(s)):
        raise IbverifyError("data are all zero or not finite: no margin to compute")
    return s


def prepared(Z):
    """(Z as float64, its inert columns, the live ones, s = data_scale(Z), Z[:, live]/s): what every max-margin oracle
    solves on; IbverifyError for anything but a finite, non-empty 2-d array."""
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2 or Z.size == 0 or not np.all(np.isfinite(Z)):
        raise IbverifyError("Z must be a finite, non-empty 2-d array (rows z_i = y_i x_i)")
    inert = inert_coordinates(Z)
    live = np.setdiff1d(np.arange(Z.shape[1]), inert)
    s = data_scale(Z)
    return Z, inert, live, s, Z[:, live] / s


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


def column_scale(Z: np.ndarray) -> np.ndarray:
    """c_k = max_i |Z_ik| (1 for an all-zero column): the solvers see Z·diag(1/c), every column in [−1, 1], so a
    feature in thousands and one in thousandths are conditioned alike (raw breast_cancer was refused otherwise)."""
    c = np.max(np.abs(Z), axis=0)
    return np.where(c > 0, c, 1.0)


def solve_primal(Z: np.ndarray, norm: str, solver: str = "CLARABEL", settings: dict | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(w, λ) of (P) on Z, solved in u = c ⊙ w against the column-scaled Z·diag(1/c) (same constraints, same
    duals; the norm of w = u/c is the objective); the pinned solver is Clarabel with CLARABEL's settings
    (oracles.fallback passes another)."""
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
        prob.solve(solver=solver, **(CLARABEL if settings is None else settings))
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
