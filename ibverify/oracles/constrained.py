"""Norm-constrained logistic regression on label-folded data Z, with a KKT certificate.

    (BOX)   min L(w) = (1/N) Σ_i log(1 + e^(−z_i·w))   s.t. ‖w‖_∞ ≤ R   (AdamW's limit problem, Xie & Li 2024: R = 1/λ)
    (BALL)  min L(w)                                   s.t. ‖w‖_2 ≤ R

Both are convex; on separable data the unconstrained infimum 0 is not attained, so the constraint is active. BOX is
solved by L-BFGS-B (scipy, bounds; restarted where it stops short) and polished by projected Newton on its free
coordinates, BALL by SLSQP (scipy) and, when active, polished on the sphere by Newton's method on the Lagrange system.
Every solution is checked against its own certificate before use; each residual is relative to
s = ‖∇L(0)‖_∞ (gradients) or R (feasibility), so one tolerance serves data of any scale:
    box   primal_infeasibility  max(0, max_i |w_i| − R)/R
          stationarity_free     max |g_i| / s over the free coordinates (|w_i| < R(1 − ACTIVE))
          sign_active           max(0, sign(w_i)·g_i) / s over the active ones (w_i = ±R needs −sign(w_i) g_i ≥ 0)
          projected_gradient    ‖w − P_box(w − g)‖_∞ / R (all of KKT in one number: 0 exactly at the optimum)
    ball  primal_infeasibility  max(0, ‖w‖ − R)/R
          dual_negativity       max(0, −μ)·R / s, μ = −⟨g, w⟩/‖w‖² (the multiplier that best fits g + μw = 0)
          stationarity          ‖g + μ w‖_2 / s
          complementarity       μ·|R − ‖w‖| / s
A failed solve or a residual above CERT_RTOL raises IbverifyError naming the worst residual.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import IbverifyError

CERT_RTOL = 1e-7
ACTIVE = 1e-9   # a coordinate within R·ACTIVE of ±R is on the box's face
RESTARTS = 5    # box: L-BFGS-B runs, each from where the last stopped, until the certificate passes


def logistic(w: np.ndarray, Z: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean logistic loss and its gradient, stable for any margin (logaddexp; σ(−m) = (1 − tanh(m/2))/2)."""
    m = Z @ w
    return float(np.mean(np.logaddexp(0.0, -m))), -(Z.T @ (0.5 * (1.0 - np.tanh(0.5 * m)))) / len(Z)


def _hessian(w: np.ndarray, Z: np.ndarray) -> np.ndarray:
    s = 0.5 * (1.0 - np.tanh(0.5 * (Z @ w)))
    return (Z * (s * (1.0 - s))[:, None]).T @ Z / len(Z)


@dataclass
class Constrained:
    kind: str                 # "box" | "ball"
    radius: float
    w: np.ndarray
    loss: float
    certificate: dict = field(default_factory=dict)
    multiplier: float = float("nan")   # ball: μ


def box_residuals(Z: np.ndarray, w: np.ndarray, R: float) -> dict:
    """The box certificate's residuals (module docstring)."""
    g = logistic(w, Z)[1]
    s = max(float(np.max(np.abs(logistic(np.zeros(Z.shape[1]), Z)[1]))), 1e-300)
    act = np.abs(w) >= R * (1 - ACTIVE)
    return {"primal_infeasibility": float(max(0.0, np.max(np.abs(w)) - R) / R),
            "stationarity_free": float(np.max(np.abs(g[~act]), initial=0.0) / s),
            "sign_active": float(np.max(np.maximum(0.0, np.sign(w[act]) * g[act]), initial=0.0) / s),
            "projected_gradient": float(np.max(np.abs(w - np.clip(w - g, -R, R))) / R)}


def ball_residuals(Z: np.ndarray, w: np.ndarray, R: float) -> dict:
    """The ball certificate's residuals (module docstring)."""
    g = logistic(w, Z)[1]
    s = max(float(np.max(np.abs(logistic(np.zeros(Z.shape[1]), Z)[1]))), 1e-300)
    nw = float(np.linalg.norm(w))
    mu = -float(g @ w) / nw ** 2 if nw > 0 else 0.0
    return {"primal_infeasibility": max(0.0, nw - R) / R, "dual_negativity": max(0.0, -mu) * R / s,
            "stationarity": float(np.linalg.norm(g + mu * w)) / s, "complementarity": abs(mu) * abs(R - nw) / s,
            "multiplier": mu}


def _certify(kind: str, cert: dict, rtol: float) -> None:
    bad = {k: v for k, v in cert.items() if k != "multiplier" and not (v <= rtol)}
    if bad:
        worst = max(bad, key=bad.get)
        raise IbverifyError(f"{kind}-constrained logistic optimum: certificate failed: {worst} = {bad[worst]:.2e} > "
                            f"{rtol:.0e}")


def _check(Z: np.ndarray, R: float) -> np.ndarray:
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2 or Z.size == 0 or not np.all(np.isfinite(Z)):
        raise IbverifyError("Z must be a finite, non-empty 2-d array (rows z_i = y_i x_i)")
    if not (R > 0 and np.isfinite(R)):
        raise IbverifyError(f"radius must be finite and > 0, got {R}")
    return Z


def box_logistic(Z: np.ndarray, R: float, rtol: float = CERT_RTOL) -> Constrained:
    """Certified solution of (BOX)."""
    from scipy.optimize import minimize   # start-up time, as in maxmargin

    Z = _check(Z, R)
    d = Z.shape[1]
    w = np.zeros(d)
    for _restart in range(RESTARTS):   # L-BFGS-B can stop short (its line search, rounding): restart where it stopped
        res = minimize(logistic, w, args=(Z,), jac=True, method="L-BFGS-B", bounds=[(-R, R)] * d,
                       options={"ftol": 0.0, "gtol": 0.0, "maxiter": 20000, "maxcor": 30})
        w = _box_polish(Z, np.clip(res.x, -R, R), R)
        cert = box_residuals(Z, w, R)
        if all(v <= rtol for v in cert.values()):
            break
    _certify("box", cert, rtol)
    return Constrained("box", R, w, logistic(w, Z)[0], cert)


def _box_polish(Z: np.ndarray, w: np.ndarray, R: float, rounds: int = 30) -> np.ndarray:
    """Snap coordinates within ACTIVE of the face onto it (L-BFGS-B stops on the face up to rounding), then projected
    Newton: the free coordinates (off the face, or on it with the gradient pointing inward) take a Newton step on
    g_free = 0, clipped to the box and re-snapped, halved until the projected gradient falls. L-BFGS-B can stop short
    of stationarity by rounding-dependent amounts (its line search); this ends where the certificate is exact to
    rounding. No step is taken that does not lower the projected gradient."""
    def snap(v):
        return np.where(np.abs(v) >= R * (1 - ACTIVE), np.sign(v) * R, v)

    w = snap(w)
    best = box_residuals(Z, w, R)["projected_gradient"]
    for _ in range(rounds):
        g = logistic(w, Z)[1]
        face = np.abs(w) >= R * (1 - ACTIVE)
        free = ~face | (np.sign(w) * g > 0)
        if not free.any() or best == 0.0:
            break
        H = _hessian(w, Z)[np.ix_(free, free)]
        step = np.linalg.lstsq(H, -g[free], rcond=None)[0]
        for _halving in range(30):
            v = w.copy()
            v[free] += step
            v = snap(np.clip(v, -R, R))
            r = box_residuals(Z, v, R)["projected_gradient"]
            if r < best:
                break
            step = step / 2
        else:
            break
        w, best = v, r
    return w


def ball_logistic(Z: np.ndarray, R: float, rtol: float = CERT_RTOL) -> Constrained:
    """Certified solution of (BALL): SLSQP, then (when the constraint is active) Newton on g(w) + μw = 0, ‖w‖² = R²."""
    from scipy.optimize import minimize

    Z = _check(Z, R)
    d = Z.shape[1]
    cons = {"type": "ineq", "fun": lambda w: R * R - w @ w, "jac": lambda w: -2.0 * w}
    res = minimize(logistic, np.zeros(d), args=(Z,), jac=True, method="SLSQP", constraints=[cons],
                   options={"ftol": 1e-16, "maxiter": 2000})
    w = np.asarray(res.x, float)
    nw = float(np.linalg.norm(w))
    if nw > R * (1 - 1e-6):   # active: polish (w, μ) by Newton on the KKT system
        w = w * (R / nw)
        mu = max(0.0, ball_residuals(Z, w, R)["multiplier"])
        for _ in range(20):
            g = logistic(w, Z)[1]
            F = np.r_[g + mu * w, 0.5 * (w @ w - R * R)]
            if np.max(np.abs(F)) < 1e-15:
                break
            J = np.block([[_hessian(w, Z) + mu * np.eye(d), w[:, None]], [w[None, :], np.zeros((1, 1))]])
            step = np.linalg.solve(J, -F)
            w, mu = w + step[:d], mu + float(step[d])
    cert = ball_residuals(Z, w, R)
    _certify("ball", cert, rtol)
    return Constrained("ball", R, w, logistic(w, Z)[0], {k: v for k, v in cert.items() if k != "multiplier"},
                       cert["multiplier"])
