"""The map T(c) = λ*(c)/‖λ*(c)‖₁ and Algorithm 3, the fixed-point iteration c ← T(c) (spec §5.5–5.7).

b = 1 uses M(c); b > 1 uses Kim et al.'s batch metric M_{N,b}(c) (spec §5.8). Inert coordinates (columns of Z
that are zero in every sample: real images' blank pixels) are set aside, as `ibverify margin`/`predict` do: M(c) is
0 there whatever c, so P_Adam(c) is solved on the other columns and p is 0 on them. The output direction is
p/‖p‖₂ with p ∈ P_Adam(c*). Uniqueness of c* and convergence are not established by the paper; the
iteration reports its history and raises IbverifyError when it does not converge.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..errors import IbverifyError
from ..data.dataset import inert_coordinates
from . import duals, padam
from .certificate import DEFAULT_TOL
from .metric import metric_diag, metric_diag_batch


@dataclass(frozen=True)
class TStep:
    c: np.ndarray                 # input weights
    sol: padam.PAdamSolution      # certified solution of P_Adam(c)
    dual: duals.DualSet           # dual optimal set and the chosen dual
    image: np.ndarray             # T(c) (chosen dual, normalized)

    @property
    def residual(self) -> float:
        """dist₁(c, T(c)); with a unique dual this is ‖T(c) − c‖₁."""
        return duals.distance_to_image(self.dual, self.c)


def metric(Z, c, b: int = 1) -> np.ndarray:
    return metric_diag(Z, c) if b == 1 else metric_diag_batch(Z, c, b)


def tmap(Z, c, b: int = 1, solver: str = "clarabel", tol: float = DEFAULT_TOL) -> TStep:
    """One application of T: solve P_Adam(c) (certified), pick the dual (duals.analyse), normalize."""
    Z = np.asarray(Z, dtype=np.float64)
    inert = inert_coordinates(Z)
    m = metric(Z, c, b)
    if np.any(m[np.setdiff1d(np.arange(Z.shape[1]), inert)] <= 0) or len(inert) == Z.shape[1]:
        k = int(np.flatnonzero(np.isin(np.arange(Z.shape[1]), inert, invert=True) & (m <= 0))[0]) if len(
            inert) < Z.shape[1] else 0
        raise IbverifyError(f"M(c) is singular (coordinate {k} is zero on supp(c)); P_Adam(c) has no unique direction")
    if len(inert):
        return _embed(tmap(np.delete(Z, inert, axis=1), c, b, solver, tol), inert, Z)
    sol = padam.solve(Z, m, solver=solver, tol=tol)
    ds = duals.analyse(Z, sol)
    s = ds.lam.sum()
    if not s > 0:
        raise IbverifyError("P_Adam(c) has a zero dual (no active constraint)")
    return TStep(np.asarray(c, dtype=np.float64), sol, ds, ds.lam / s)


def _embed(st: TStep, inert: np.ndarray, Z: np.ndarray) -> TStep:
    """A step computed without the inert coordinates (zero in every sample), as one of the full Z: p and M(c) are 0
    there (no margin depends on them and per-sample Adam never moves them: its update is 0/0 := 0); the duals, the
    image T(c) and the certificate are those of the live coordinates."""
    live = np.setdiff1d(np.arange(Z.shape[1]), inert)
    w, m = np.zeros(Z.shape[1]), np.zeros(Z.shape[1])
    w[live], m[live] = st.sol.w, st.sol.m
    sol = dataclasses.replace(st.sol, w=w, m=m)
    return TStep(st.c, sol, st.dual, st.image)


def damped(image: np.ndarray, c: np.ndarray, theta: float) -> np.ndarray:
    """One damped step of Algorithm 3: (1 − θ)·T(c) + θ·c, a convex combination of two points of the
    simplex (so in the simplex); rounding is clipped at 0 and renormalized."""
    if not 0.0 <= theta < 1.0:
        raise IbverifyError(f"damping θ must be in [0, 1), got {theta}")
    out = np.maximum((1.0 - theta) * np.asarray(image, np.float64) + theta * np.asarray(c, np.float64), 0.0)
    return out / out.sum()


@dataclass
class FixedPoint:
    c: np.ndarray                 # c* (the last iterate, c* ≈ T(c*))
    w: np.ndarray                 # p* ∈ P_Adam(c*), scaled to min_i z_i·p = 1
    direction: np.ndarray         # p*/‖p*‖₂
    residual: float               # dist₁(c*, T(c*))
    iterations: int
    history: list[float] = field(default_factory=list)  # ‖T(c^k) − c^k‖₁ per iteration
    support: np.ndarray = None    # supp(c*) (c*_i > 1e-12)
    active: np.ndarray = None     # support vectors of p* (weakly active constraints)
    kkt: float = np.nan           # KKT residual of P_Adam(c*)
    unique_dual: bool = True      # whether every T(c^k) was single-valued
    b: int = 1
    damping: float = 0.0          # θ of the damped iteration that converged


AUTO_DAMPING = 0.3


def iterate(Z, c0=None, b: int = 1, tol: float = 1e-10, max_iter: int = 500, damping: float | None = 0.0,
            solver: str = "clarabel") -> FixedPoint:
    """Algorithm 3: c⁰ = 1/N (default); c^{k+1} = (1−θ) T(c^k) + θ c^k with θ = damping (0: plain).
    Stops when dist₁(c^k, T(c^k)) < tol; raises IbverifyError after max_iter iterations. damping=None: plain, and
    when that fails damped with θ = AUTO_DAMPING (on real data T(c) often puts zero weight on every sample where
    some pixel is nonzero, so M(c) is singular at the next step; damping keeps c > 0 and has the same fixed
    points); `FixedPoint.damping` says which."""
    if damping is None:
        try:
            return iterate(Z, c0, b, tol, max_iter, 0.0, solver)
        except IbverifyError:
            return iterate(Z, c0, b, tol, max_iter, AUTO_DAMPING, solver)
    Z = np.asarray(Z, dtype=np.float64)
    n = Z.shape[0]
    if b == n and n > 1:
        raise IbverifyError("b = N: M_{N,N}(c) = |S(c)| degenerates at its fixed point (the ℓ∞ geometry, "
                            "spec §5.8); use the ℓ∞ max-margin oracle instead")
    c = np.full(n, 1.0 / n) if c0 is None else np.asarray(c0, dtype=np.float64)
    hist: list[float] = []
    unique = True
    for k in range(max_iter + 1):
        st = tmap(Z, c, b=b, solver=solver)
        r = st.residual
        hist.append(r)
        unique &= st.dual.unique
        if r < tol:
            return FixedPoint(c=c, w=st.sol.w, direction=st.sol.direction, residual=r, iterations=k,
                              history=hist, support=np.flatnonzero(c > 1e-12), active=st.sol.active,
                              kkt=st.sol.cert.kkt, unique_dual=unique, b=b, damping=damping)
        c = damped(st.image, c, damping)
    tail = ", ".join(f"{h:.1e}" for h in hist[-5:])
    raise IbverifyError(f"fixed-point iteration did not converge in {max_iter} iterations "
                        f"(last ‖T(c)−c‖₁: {tail}); try damping > 0")
