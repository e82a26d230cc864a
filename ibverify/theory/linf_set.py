"""How close can a direction be to ANY ℓ∞ max-margin solution? (they are often non-unique)

S∞ = { v : ‖v‖∞ ≤ 1, Zv ≥ γ∞ } is the set of ℓ∞ max-margin solutions (each has ‖v‖∞ = 1).
For a unit vector u:   max_{v ∈ S∞} cos(u, v) ≤ max_{v∈S∞} ⟨u, v⟩ / min_{v∈S∞} ‖v‖₂   (one LP, one QP).
A direction whose cosine to another reference exceeds this bound is closer to that reference than
to every ℓ∞ solution.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from ..errors import IbverifyError
from ..oracles.fallback import min_norm_lower_bound
from ..lazyimport import lazy

cp = lazy("cvxpy")  # imported on first use (start-up time)

SLACK = 1e-9  # relative relaxation of γ∞ so that rounding in γ∞ cannot empty S∞


def max_cos_bound(Z, u, gamma_linf: float) -> float:
    """Upper bound on max_{v ∈ S∞} cos(u, v) (see module docstring)."""
    Z = np.asarray(Z, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64) / np.linalg.norm(u)
    n, d = Z.shape
    g = gamma_linf * (1.0 - SLACK)
    lp = linprog(-u, A_ub=-Z, b_ub=-np.full(n, g), bounds=[(-1.0, 1.0)] * d, method="highs")
    if lp.status != 0:
        raise IbverifyError(f"ℓ∞ solution set is empty or the LP failed: {lp.message}")
    v = cp.Variable(d)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(v)), [Z @ v >= g, cp.abs(v) <= 1])
    try:
        prob.solve(solver=cp.CLARABEL)
        solved = prob.status == cp.OPTIMAL
    except cp.error.SolverError:
        solved = False
    if not solved:   # e.g. raw breast_cancer: a lower bound proved by weak duality instead (oracles.fallback)
        vmin = min_norm_lower_bound(Z, g) * (1.0 - 1e-7)
    else:
        vmin = float(np.sqrt(max(prob.value, 0.0))) * (1.0 - 1e-7)  # conservative: shrink the divisor
    return float(min(1.0, -lp.fun / vmin))


def max_cos_near_linf(Z, u, gamma_linf: float, gap: float) -> float:
    """Exact max of cos(u, v) over every direction v whose ℓ∞ margin gap (γ∞ − γ∞(v))/γ∞ ≤ gap.

    The directions with gap ≤ `gap` form the convex cone K = {v : Zv ≥ (1 − gap)·γ∞·s, |v| ≤ s}
    (s = ‖v‖∞ free). Since cos is scale free, max_{v ∈ K} cos(u, v) = 1/‖v*‖₂ with
    v* = argmin ‖v‖₂² s.t. ⟨u, v⟩ = 1, v ∈ K (one QP); 0 when no v ∈ K has ⟨u, v⟩ > 0.
    A run can pass both an ℓ2 check cos(w, u) ≥ c and an ℓ∞ check (gap ≤ `gap`) only if this is ≥ c.
    """
    Z = np.asarray(Z, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64) / np.linalg.norm(u)
    d = Z.shape[1]
    g = gamma_linf * (1.0 - gap) * (1.0 - SLACK)
    v, s = cp.Variable(d), cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.sum_squares(v)), [u @ v == 1, Z @ v >= g * s, v <= s, -v <= s])
    prob.solve(solver=cp.CLARABEL)
    if prob.status == cp.INFEASIBLE:
        return 0.0
    if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise IbverifyError(f"near-ℓ∞ cosine QP ended with status {prob.status}")
    return float(min(1.0, 1.0 / (np.sqrt(max(prob.value, 0.0)) * (1.0 - 1e-7))))
