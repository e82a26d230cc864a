"""KKT residuals of the margin problem in any geometry, and convex max-margin oracles for linear models.

Problem (P_‖·‖):  min ½‖θ‖²  s.t.  q_i(θ) = y_i f(x_i; θ) ≥ 1.   A feasible θ is KKT iff there are λ ≥ 0 with
Σ_i λ_i ∇q_i(θ) ∈ ∂(½‖·‖²)(θ) and λ_i (q_i − 1) = 0.

`kkt_residual` first rescales θ* = θ / q_min(θ)^{1/L} (so q_min = 1) and then reports two numbers, both
relative to ‖θ*‖ and both zero exactly at a KKT point:

* ``residual`` (the issue's definition): min ‖s − Σ_{i∈S} λ_i ∇q_i(θ*)‖_* over λ ≥ 0 and s ∈ ∂(½‖·‖²)(θ*),
  where the support is S = {i : q_i(θ*) ≤ 1 + tau} and the active set of a non-smooth norm (saturated
  coordinates, top singular values, active layers) is taken within relative tolerance tau. For ℓ2 this is NNLS.
  tau > 0 is needed because iterates never saturate a non-smooth norm exactly; with tau the residual is the exact
  KKT residual of a point within relative distance tau of θ*.
* ``fenchel``: sqrt(2·min_{λ≥0} [½‖θ*‖² + ½‖v‖_*² − ⟨v, θ*⟩ + Σ_i λ_i(q_i − 1)]) / ‖θ*‖, v = Σλ_i ∇q_i. The
  first part is the Fenchel–Young gap (zero iff v ∈ ∂(½‖·‖²)(θ*)), the second complementary slackness.
  Tolerance-free and continuous in θ; for ℓ2 it equals sqrt(‖θ* − v‖² + 2Σλ_i(q_i−1))/‖θ*‖.

Both are convex programs in normalized units: θ' = θ*/‖θ*‖ and per-sample directions Ĝ_i = ∇q_i(θ*)·‖θ*‖/L, so
⟨Ĝ_i, θ'⟩ = q_i by Euler's identity. ``fenchel`` is solved by oracles.kktdual (a small conic solve on the active
samples, no cvxpy) and taken only when its primal–dual certificate holds (stationarity, complementary slackness, dual
feasibility, checked in the geometry's own norms); else, and for the face residual of a non-ℓ2 geometry, through
cvxpy with Clarabel (SOCP; SDP for spectral norms), imported only then.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from ..errors import IbverifyError
from ..blocks import Params
from ..cache import fingerprint
from . import kktdual
from .base import Memo
from ..lazyimport import lazy

cp = lazy("cvxpy")  # imported on first use (≈ 2 CPU-s): the fallbacks, a non-ℓ2 face and the convex oracles


@dataclass
class KKTResult:
    residual: float        # face residual (issue's definition, active sets within tau)
    fenchel: float         # tolerance-free Fenchel–Young + complementary-slackness residual
    support: int           # |S|
    lam: np.ndarray        # multipliers λ (original units, θ* scale) from the face problem
    q_min: float
    status: str

    def to_json(self) -> dict:
        return {"residual": self.residual, "fenchel": self.fenchel, "support": self.support, "status": self.status}


def rescale(model, theta: Params, X, y) -> tuple[Params, np.ndarray]:
    q = y * model.outputs(theta, X)
    qmin = float(np.min(q))
    if not qmin > 0:
        raise IbverifyError(f"KKT residual needs a point with positive margin (q_min = {qmin:.3g})")
    a = qmin ** (-1.0 / model.L)
    ts = {k: a * v for k, v in theta.items()}
    return ts, q / qmin


def _solve(prob) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "may be inaccurate": reflected in the status we return
            prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11,
                       tol_ktratio=1e-9, max_iter=400)
    except cp.SolverError:
        prob.solve(solver=cp.SCS, eps=1e-9, max_iters=200000)
    return prob.status


def _normalized(geometry, model, theta: Params, X: np.ndarray, y: np.ndarray):
    """(θ* = θ/q_min^{1/L}, q/q_min, N = ‖θ*‖, θ' = θ*/N, Ĝ_i = ∇q_i(θ*)·N/L flattened per block)."""
    ts, q = rescale(model, theta, X, y)
    N = geometry.norm(ts)
    thp = {k: v / N for k, v in ts.items()}
    J = model.jac(ts, X)
    n = q.size
    G = {k: v.reshape(n, -1) * (y[:, None] * (N / model.L)) for k, v in J.items()}
    return ts, q, N, thp, G


def _geometry_key(geometry) -> tuple:
    """Everything a geometry's norm depends on: its kind, name, matrix blocks and the hybrid's exact c (the name
    rounds c to 6 digits)."""
    return (type(geometry).__name__, geometry.name, getattr(geometry, "matrix_blocks", None),
            getattr(geometry, "c", None))


_FENCHEL_PROBLEMS: dict = {}   # compiled (DPP) problems by geometry and shapes: a memo, no state that changes a value


def _fenchel_problem(geometry, shapes: dict, n: int):
    """min_{μ ≥ 0, t} ½ + ½t² − ⟨c, μ⟩  s.t.  ‖Σ_i μ_i Ĝ_i‖_* ≤ t, with Ĝ (per block) and c as parameters, so that
    cvxpy canonicalizes it once per geometry and shape and every later checkpoint only re-solves."""
    key = (_geometry_key(geometry), tuple((k, tuple(s)) for k, s in shapes.items()), n)
    if key not in _FENCHEL_PROBLEMS:
        if len(_FENCHEL_PROBLEMS) >= 64:
            _FENCHEL_PROBLEMS.pop(next(iter(_FENCHEL_PROBLEMS)))
        mu = cp.Variable(n, nonneg=True)
        t = cp.Variable(nonneg=True)
        Gp = {k: cp.Parameter((n, int(np.prod(s)))) for k, s in shapes.items()}
        c = cp.Parameter(n)
        V = {k: cp.reshape(Gp[k].T @ mu, tuple(s), order="C") for k, s in shapes.items()}
        prob = cp.Problem(cp.Minimize(0.5 + 0.5 * cp.square(t) - c @ mu), [geometry.cvx_dual_norm(V) <= t])
        _FENCHEL_PROBLEMS[key] = (prob, Gp, c)
    return _FENCHEL_PROBLEMS[key]


# results of solves by cache.fingerprint of everything they are computed from: a claim and its controls judge the same
# runs in the same geometries, and a deterministic solver returns the same value for the same inputs (a memo)
_SOLVED = Memo()


def _fenchel(geometry, model, ts: Params, q: np.ndarray, thp: Params, G: dict) -> float:
    """The objective ½ + ½t² − Σ_k⟨V_k, θ'_k⟩ + Σ_i μ_i(q_i − 1)/L with V = Σ_i μ_i Ĝ_i: linear in μ with coefficients
    c_i = Σ_k ⟨Ĝ_{i,k}, θ'_k⟩ − (q_i − 1)/L. First kktdual's active-set solve, kept only when its certificate is
    accepted; else the whole problem through cvxpy (`fenchel_cvxpy`)."""
    cval = sum(G[k] @ np.ravel(thp[k]) for k in ts) - (q - 1.0) / model.L
    shapes = {k: v.shape for k, v in ts.items()}

    def solve() -> float:
        cert = kktdual.solve(geometry, G, shapes, cval, q, (_geometry_key(geometry), tuple(shapes.items()),
                                                            q.size))
        if cert is not None and cert.accepted:
            return float(np.sqrt(2.0 * max(cert.value, 0.0)))
        return fenchel_cvxpy(geometry, G, shapes, cval)

    return _SOLVED.get(fingerprint(("fenchel", _geometry_key(geometry), tuple(shapes.items()), cval,
                                    [G[k] for k in sorted(ts)])), solve)


def fenchel_cvxpy(geometry, G: dict, shapes: dict, cval: np.ndarray) -> float:
    """The Fenchel residual of the whole problem through cvxpy and Clarabel (the fallback: its value as solved)."""
    prob, Gp, c = _fenchel_problem(geometry, shapes, cval.size)
    for k in shapes:
        Gp[k].value = G[k]
    c.value = cval
    _solve(prob)
    return float(np.sqrt(2.0 * max(prob.value, 0.0))) if prob.value is not None else float("nan")


def fenchel_residual(geometry, model, theta: Params, X: np.ndarray, y: np.ndarray) -> float:
    """The tolerance-free KKT residual alone (see the module docstring): 0 exactly at a KKT direction of
    (P_‖·‖), continuous in θ, scale-invariant; one conic solve."""
    ts, q, N, thp, G = _normalized(geometry, model, theta, X, y)
    return _fenchel(geometry, model, ts, q, thp, G)


def kkt_residual(geometry, model, theta: Params, X: np.ndarray, y: np.ndarray, tau: float = 0.02,
                 fenchel: bool = True, max_support: int | None = None) -> KKTResult:
    ts, q, N, thp, G = _normalized(geometry, model, theta, X, y)
    n = q.size

    def combo(mu, idx):
        return {k: cp.reshape(G[k][idx].T @ mu, ts[k].shape, order="C") for k in ts}

    # ---- face residual (support within tau)
    S = np.flatnonzero(q <= 1.0 + tau)
    if max_support is not None and S.size > max_support:
        S = S[np.argsort(q[S])[:max_support]]
    lam = np.zeros(n)
    if geometry.name == "l2":   # ∂(½‖·‖²)(θ) = {θ}: exact NNLS, no conic solver needed
        A = np.concatenate([G[k][S].T for k in ts], axis=0)
        b = np.concatenate([np.ravel(thp[k]) for k in ts])
        muv, res = nnls(A, b, maxiter=50 * max(A.shape))
        res, status = float(res), "optimal"
        lam[S] = muv * N * N / model.L
    else:
        def face():
            mu = cp.Variable(S.size, nonneg=True)
            V = combo(mu, S)
            Sf, cons = geometry.cvx_face(thp, tau)
            prob = cp.Problem(cp.Minimize(geometry.cvx_dual_norm({k: Sf[k] - V[k] for k in ts})), cons)
            status = _solve(prob)
            return (float(prob.value) if prob.value is not None else float("nan"), status,
                    None if mu.value is None else np.maximum(mu.value, 0))

        res, status, muv = _SOLVED.get(fingerprint(("face", _geometry_key(geometry), tau, S,
                                                [(np.asarray(thp[k]), G[k][S]) for k in sorted(ts)])), face)
        if muv is not None:
            lam[S] = muv * N * N / model.L

    fen = _fenchel(geometry, model, ts, q, thp, G) if fenchel else float("nan")
    return KKTResult(residual=res, fenchel=fen, support=int(S.size), lam=lam, q_min=1.0, status=status)


# ---------------------------------------------------------------- convex max margin (linear models)

@dataclass
class MaxMargin:
    theta: Params         # argmin ‖θ‖ s.t. q_i ≥ 1 (so q_min = 1)
    margin: float         # γ = 1/‖θ‖: the normalized max margin in the geometry
    dual_bound: float     # upper bound on γ from the dual multipliers (weak duality)
    kkt: float            # KKT residual of the solution (its own certificate)
    status: str


def _hard_margin_problem(geometry, model, X: np.ndarray, y: np.ndarray):
    """(P) min ‖θ‖ s.t. y_i f(x_i; θ) ≥ 1 for a linear model, solved: (variables, Jacobian, constraints, problem,
    status)."""
    Vs = {k: cp.Variable(s) for k, s in model.blocks.items()}
    J = model.jac({k: np.zeros(s) for k, s in model.blocks.items()}, X)
    n = X.shape[0]
    out = sum(J[k].reshape(n, -1) @ cp.vec(Vs[k], order="C") for k in Vs)
    con = [cp.multiply(y, out) >= 1]
    prob = cp.Problem(cp.Minimize(geometry.cvx_norm(Vs)), con)
    return Vs, J, con, prob, _solve(prob)


def max_margin_linear(geometry, model, X: np.ndarray, y: np.ndarray, tau: float = 1e-6) -> MaxMargin:
    """Exact max margin of a linear model (L = 1) in `geometry`: min ‖θ‖ s.t. y_i f(x_i; θ) ≥ 1.

    Certificates: (1) weak duality — for λ ≥ 0 from the solver, γ ≤ ‖Σλ_i y_i x_i‖_* / Σλ_i... computed as
    1/‖θ‖ ≤ Σλ_i / ‖Σλ_i ∇q_i‖_* ... reported as `dual_bound`; (2) the KKT residual of the solution.
    """
    if model.L != 1:
        raise IbverifyError("max_margin_linear needs a linear model (L = 1)")
    Vs, J, con, prob, status = _hard_margin_problem(geometry, model, X, y)
    n = X.shape[0]
    if prob.value is None:
        raise IbverifyError(f"max-margin solve failed ({status}); is the data separable?")
    theta = {k: np.asarray(v.value, float).reshape(model.blocks[k]) for k, v in Vs.items()}
    lam = np.maximum(np.asarray(con[0].dual_value, float), 0)
    # weak duality: for any λ ≥ 0, γ = max_{‖θ‖≤1} min_i q_i ≤ max_{‖θ‖≤1} Σλ_i q_i / Σλ_i = ‖Σλ_i y_i ∇f_i‖_*/Σλ_i
    v = {k: (J[k].reshape(n, -1).T @ (lam * y)).reshape(model.blocks[k]) for k in J}
    bound = geometry.dual_norm(v) / max(lam.sum(), 1e-300)
    k = kkt_residual(geometry, model, theta, X, y, tau=tau, fenchel=False)
    q = y * model.outputs(theta, X)
    return MaxMargin(theta=theta, margin=float(np.min(q) / geometry.norm(theta)), dual_bound=float(bound),
                     kkt=k.residual, status=status)


# ---------------------------------------------------------------- certified optimum (degree-1 models)

@dataclass
class Certificate:
    """Primal–dual certificate of the max margin of a linear model (L = 1) in a geometry ‖·‖.

    Primal (P): min ‖θ‖ s.t. q_i(θ) = y_i⟨∇f_i, θ⟩ ≥ 1.   Dual (D): max Σλ_i s.t. ‖Σ_i λ_i y_i ∇f_i‖_* ≤ 1, λ ≥ 0.
    For any θ with q_min(θ) > 0 and any λ ≥ 0 with Σλ > 0 (weak duality, exact in real arithmetic):
        lower = q_min(θ)/‖θ‖  ≤  γ*  ≤  upper = ‖Σλ_i y_i ∇f_i‖_* / Σλ_i.
    The three conditions, each checked on its own with relative tolerance tol:
        primal_feasible   q_min(θ) ≥ 1 − tol
        dual_feasible     min λ ≥ 0 and ‖Σλ_i y_i ∇f_i‖_* ≤ 1 + tol
        gap_closed        |‖θ‖ − Σλ_i| ≤ tol·‖θ‖
    When all hold, γ* is known to within (upper − lower)/upper ≤ O(tol)."""

    primal_feasible: bool
    dual_feasible: bool
    gap_closed: bool
    lower: float
    upper: float
    primal_violation: float   # max(0, 1 − q_min)
    dual_violation: float     # max(0, ‖Σλyz‖_* − 1, −min λ)
    gap: float                # |‖θ‖ − Σλ| / ‖θ‖

    @property
    def ok(self) -> bool:
        return self.primal_feasible and self.dual_feasible and self.gap_closed


def certify(geometry, model, X: np.ndarray, y: np.ndarray, theta: Params, lam: np.ndarray,
            tol: float = 1e-6) -> Certificate:
    if model.L != 1:
        raise IbverifyError("certify: the max-margin certificate needs a linear model (L = 1)")
    lam = np.asarray(lam, float)
    n = X.shape[0]
    q = y * model.outputs(theta, X)
    nt = geometry.norm(theta)
    J = model.jac(theta, X)
    v = {k: (J[k].reshape(n, -1).T @ (lam * y)).reshape(theta[k].shape) for k in J}
    dn, s = geometry.dual_norm(v), float(np.sum(lam))
    pv = max(0.0, 1.0 - float(np.min(q)))
    dv = max(0.0, dn - 1.0, -float(np.min(lam)))
    gap = abs(nt - s) / nt if nt > 0 else float("inf")
    lower = float(np.min(q)) / nt if nt > 0 else float("nan")
    upper = dn / s if s > 0 else float("inf")
    return Certificate(pv <= tol, dv <= tol, gap <= tol, lower, upper, pv, dv, gap)


def certified_max_margin(geometry, model, X: np.ndarray, y: np.ndarray,
                         tol: float = 1e-6) -> tuple[Params, Certificate]:
    """Solve (P) by cvxpy (Clarabel; SDP for spectral norms), take λ from the constraint duals, and certify.
    Raises IbverifyError when the certificate does not hold (never returns an uncertified optimum)."""
    if model.L != 1:
        raise IbverifyError("certified_max_margin needs a linear model (L = 1)")
    Vs, _, con, prob, status = _hard_margin_problem(geometry, model, X, y)
    if prob.value is None or con[0].dual_value is None:
        raise IbverifyError(f"max-margin solve failed ({status}); is the data separable?")
    theta = {k: np.asarray(v.value, float).reshape(model.blocks[k]) for k, v in Vs.items()}
    lam = np.maximum(np.asarray(con[0].dual_value, float), 0.0)
    cert = certify(geometry, model, X, y, theta, lam, tol)
    if not cert.ok:
        raise IbverifyError(f"max-margin certificate failed in {geometry.name}: primal violation "
                            f"{cert.primal_violation:.2g}, dual violation {cert.dual_violation:.2g}, "
                            f"gap {cert.gap:.2g}")
    return theta, cert


# ---------------------------------------------------------------- a KKT point near a direction (any model)

@dataclass
class LocalKKT:
    theta: Params         # a KKT point of (P_‖·‖) near the start, scaled to q_min = 1
    margin: float         # its normalized margin in the geometry, q_min/‖θ‖^L
    fenchel: float        # its own certificate: the Fenchel residual (≈ 0 at a KKT point)
    iterations: int

    def certified(self, tol: float = 1e-4) -> bool:
        return bool(self.fenchel <= tol)


def local_kkt(geometry, model, theta: Params, X: np.ndarray, y: np.ndarray, iters: int = 400,
              radius: float = 0.05, xtol: float = 1e-9) -> LocalKKT:
    """A KKT point of (P_‖·‖) reached from θ by sequential convex programming: at θ* (q_min = 1) minimize ‖θ* + Δ‖
    subject to the linearized margins q_i + ⟨∇q_i, Δ⟩ ≥ 1 and ‖Δ‖₂ ≤ r‖θ*‖₂ (a trust region); the step is kept when
    the rescaled point (homogeneity restores q_min = 1) has a smaller norm, else r shrinks ×1/4. It stops when
    r < xtol. The point is certified by its own Fenchel residual, never by the iteration's status."""
    ts, _ = rescale(model, theta, X, y)
    best, r, used = geometry.norm(ts), radius, 0
    while used < iters:
        used += 1
        J = model.jac(ts, X)
        q = y * model.outputs(ts, X)
        D = {k: cp.Variable(v.shape) for k, v in ts.items()}
        lin = q + sum(((J[k].reshape(q.size, -1) * y[:, None]) @ cp.vec(D[k], order="C")) for k in ts)
        scale = float(np.sqrt(sum(np.sum(v * v) for v in ts.values())))
        step = cp.norm(cp.hstack([cp.vec(D[k], order="C") for k in ts]), 2)
        prob = cp.Problem(cp.Minimize(geometry.cvx_norm({k: ts[k] + D[k] for k in ts})), [lin >= 1, step <= r * scale])
        _solve(prob)
        if any(v.value is None for v in D.values()):
            r /= 4
        else:
            cand = {k: ts[k] + D[k].value for k in ts}
            qc = y * model.outputs(cand, X)
            if float(np.min(qc)) > 0:
                cand, _ = rescale(model, cand, X, y)
                nc = geometry.norm(cand)
                if nc < best * (1 - 1e-13):
                    ts, best, r = cand, nc, min(2 * r, radius)
                    continue
            r /= 4
        if r < xtol:
            break
    return LocalKKT(ts, 1.0 / best ** model.L, fenchel_residual(geometry, model, ts, X, y), used)
