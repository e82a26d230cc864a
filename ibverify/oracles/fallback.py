"""Second attempts of the max-margin oracles, for data on which the pinned solve is not certified.

On raw breast_cancer (features from 1e-3 to 4e3) with an intercept column, Clarabel ends the ℓ2 QP
'optimal_inaccurate' and its ℓ1 duals miss dual feasibility by 1.5e-7 (tolerance 1e-7). Before refusing,
`second_attempts` solves the same column-scaled problem (base.solve_primal) again:
    highs            HiGHS (its active-set QP solver for ℓ2, simplex for ℓ1/ℓ∞: a vertex and its duals);
    clarabel-strict  Clarabel with a smaller static regularization and more iterations;
and for ℓ2 also polishes each answer on its active set S (w = the least-norm solution of Z_S w = 1, λ ≥ 0 from
nnls(Z_Sᵀ, w)). An answer is accepted only when the same certificate as the first attempt's (base.certify: primal
feasibility, dual sign and feasibility, duality gap, complementary slackness, ℓ2 stationarity) passes, checked in
the original units (Z itself, w/s and λ/s). When no attempt is certified: a refusal with the separability LP's dual
witness (data.files.separability) when it proves the data not separable, else one line naming every attempt.

`min_norm_lower_bound`: the same for theory.linf_set's min-norm QP over the ℓ∞ max-margin set, a lower bound on
min ‖v‖₂ proved by weak duality from any solver's multipliers (no solver status is trusted).
"""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

from ..errors import IbverifyError
from .base import SUPPORT_RTOL, certify, column_scale, solve_primal

STRICT = dict(tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11, max_iter=2000,
              static_regularization_constant=1e-12)
# HiGHS capped by iteration counts, never by time (deterministic): its QP solver ran for minutes on the min-norm QP
HIGHS = dict(qp_iteration_limit=20_000, simplex_iteration_limit=200_000)
ATTEMPTS = (("highs", "HIGHS", HIGHS), ("clarabel-strict", "CLARABEL", STRICT))


@contextlib.contextmanager
def quiet_stdout():
    """File descriptor 1 to /dev/null for the block: highspy prints its banner from C++ at every Highs() (its
    output_flag comes later), which would break `--json`'s pure JSON on stdout."""
    sys.stdout.flush()
    try:
        saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    except OSError:
        yield
        return
    try:
        os.dup2(null, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def solve_quietly(solve, solver: str):
    """solve() with HiGHS's banner kept off stdout."""
    if solver != "HIGHS":
        return solve()
    with quiet_stdout():
        return solve()


def polished_l2(Zn: np.ndarray, w: np.ndarray, lam: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Candidate (w, λ) of the ℓ2 problem refined on an active set S: the solver's dual support, then the primal's
    active constraints (z_i·w within SUPPORT_RTOL of the smallest). w_S = argmin ‖w‖ s.t. Z_S w = 1 (lstsq), λ_S =
    nnls(Z_Sᵀ, w_S)/‖w_S‖ (the norm-form dual, ≥ 0 by construction). Exact where S is the true support."""
    from scipy.optimize import nnls  # start-up time: scipy, only on this rare path

    zw = Zn @ w
    sets = []
    if lam.size and lam.max() > 0:
        sets.append(np.flatnonzero(lam > SUPPORT_RTOL * lam.max()))
    sets.append(np.flatnonzero(zw <= (1 + SUPPORT_RTOL) * zw.min()))
    out = []
    for S in sets:
        if S.size == 0:
            continue
        wS = np.linalg.lstsq(Zn[S], np.ones(S.size), rcond=None)[0]
        nw = float(np.linalg.norm(wS))
        if not nw > 0:
            continue
        alpha = nnls(Zn[S].T, wS, maxiter=50 * S.size)[0]
        lamS = np.zeros(Zn.shape[0])
        lamS[S] = alpha / nw
        out.append((wS, lamS))
    return out


def second_attempts(Z: np.ndarray, Zn: np.ndarray, s: float, norm: str, first: Exception
                    ) -> tuple[np.ndarray, np.ndarray, dict]:
    """(w, λ, certificate) on Zn = Z/s (Z: the live columns in the original units) from the first certified attempt
    of ATTEMPTS; the certificate, checked on Z, names the attempt ('solver'). Raises IbverifyError otherwise."""
    failures = [f"clarabel: {first}"]
    for name, solver, settings in ATTEMPTS:
        try:
            w, lam = solve_quietly(lambda: solve_primal(Zn, norm, solver, settings), solver)
        except IbverifyError as e:
            failures.append(f"{name}: {e}")
            continue
        candidates = [(w, lam, name)]
        if norm == "l2":
            candidates = [(pw, pl, f"{name}+active-set") for pw, pl in polished_l2(Zn, w, lam)] + candidates
        last = None
        for cw, cl, tag in candidates:
            try:
                cert = certify(Z, cw / s, cl / s, norm)   # the original units
            except IbverifyError as e:
                last = e
                continue
            return cw, cl, {**cert, "solver": tag}
        failures.append(f"{name}: {last}")
    raise IbverifyError(_refusal(Z, norm, failures))


def _refusal(Z: np.ndarray, norm: str, failures: list[str]) -> str:
    """'not linearly separable' with a dual witness when the separability LP proves it, else every attempt's
    failure."""
    from ..data.dataset import Dataset
    from ..data.files import separability

    sep = separability(Dataset(Z, np.ones(Z.shape[0]), "Z"))
    if sep.witness is not None:
        return (f"data are not linearly separable: dual witness λ ≥ 0 with Σλ = 1 and ‖Σ λ_i ẑ_i‖_1 = "
                f"{sep.bound:.2g} (column-scaled): no direction has a positive margin")
    return f"{norm} max margin not certified by any solver ({'; '.join(failures)})"


def min_norm_lower_bound(Z: np.ndarray, g: float) -> float:
    """A proved lower bound on min ‖v‖₂ s.t. Zv ≥ g·1, |v| ≤ 1 (theory.linf_set's QP), by weak duality: for any
    μ ≥ 0, ½‖v‖² ≥ q(μ) = g·Σμ + Σ_k h((Zᵀμ)_k) with h(a) = −a²/2 for |a| ≤ 1, ½ − |a| else (the minimum of
    ½v² − a·v over |v| ≤ 1). μ: the multipliers of the QP solved column-scaled (v = u/c, constraint divided by g)
    by Clarabel (default, then STRICT), then the best multiple t·μ (`best_on_ray`); the largest q > 0, less its
    rounding, counts."""
    import cvxpy as cp  # start-up time: cvxpy, only on this rare path

    Z = np.asarray(Z, dtype=np.float64)
    c = column_scale(Z)
    u = cp.Variable(Z.shape[1])
    cons = [(Z / (c * g)) @ u >= 1, cp.abs(u) <= c]
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(u / c)), cons)
    best = 0.0
    for settings in ({}, STRICT):   # Clarabel: HiGHS's QP solver did not end on raw breast_cancer with an intercept
        try:
            prob.solve(solver="CLARABEL", **settings)
        except cp.error.SolverError:
            continue
        if cons[0].dual_value is not None:
            best = max(best, best_on_ray(Z, g, np.asarray(cons[0].dual_value, dtype=np.float64).ravel()))
    if not best > 0:
        raise IbverifyError("min-norm ℓ∞ solution QP: no solver gave multipliers proving a positive lower bound")
    return float(np.sqrt(2.0 * best))


def dual_value(Z: np.ndarray, g: float, mu: np.ndarray) -> float:
    """q(μ⁺) of `min_norm_lower_bound` (μ clipped at 0, so that weak duality applies to any input), less a bound on
    its float64 rounding (n·u·|Z|ᵀμ in each (Zᵀμ)_k, h being max(1, |a|)-Lipschitz, and the sums' own)."""
    mu = np.maximum(mu, 0.0)
    unit = np.finfo(np.float64).eps
    a = np.abs(Z.T @ mu)
    da = (Z.shape[0] + 2) * unit * (np.abs(Z).T @ mu)
    h = np.where(a <= 1.0, -0.5 * a * a, 0.5 - a)
    terms = g * mu.sum(), np.sum(h)
    slack = np.sum(np.maximum(1.0, a + da) * da) + (Z.shape[0] + Z.shape[1] + 2) * unit * (
        abs(terms[0]) + np.sum(np.abs(h)))
    return float(terms[0] + terms[1] - slack)


def best_on_ray(Z: np.ndarray, g: float, mu: np.ndarray) -> float:
    """max over t ≥ 0 of q(t·μ⁺) (concave in t; its derivative g·Σμ − Σ_k a_k·clip(t·a_k, −1, 1), a = Zᵀμ, falls in t:
    bisection), so the bound does not depend on how a solver scales its multipliers."""
    mu = np.maximum(mu, 0.0)
    a = Z.T @ mu
    if not (mu.sum() > 0 and np.any(a)):
        return 0.0

    def slope(t: float) -> float:
        return g * mu.sum() - float(np.sum(a * np.clip(t * a, -1.0, 1.0)))

    lo, hi = 0.0, 1.0 / np.max(np.abs(a))
    while slope(hi) > 0 and hi < 1e300:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if slope(mid) > 0 else (lo, mid)
    return max(dual_value(Z, g, lo * mu), 0.0)
