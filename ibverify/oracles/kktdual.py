"""The Fenchel KKT residual of oracles.kkt without cvxpy: a small conic solve on a growing active set, accepted only
on its own primal–dual certificate.

In kkt's normalized units (θ' = θ*/‖θ*‖, directions Ĝ_i with ⟨Ĝ_i, θ'⟩ = q_i, c_i = q_i − (q_i − 1)/L > 0) the
residual is sqrt(2·F*) with
    F* = min_{μ ≥ 0} F(μ),   F(μ) = ½ + ½‖Aμ‖_*² − ⟨c, μ⟩,   Aμ = Σ_i μ_i Ĝ_i,
and its dual is the least-norm point of a polyhedron:
    F* = max { D(w) = ½ − ½‖w‖² : ⟨Ĝ_i, w⟩ ≥ c_i for every i }.
For any μ ≥ 0 and any w the gap splits into the KKT conditions of the pair, each ≥ 0 when w is feasible:
    F(μ) − D(w) = [½‖Aμ‖_*² + ½‖w‖² − ⟨w, Aμ⟩]  (stationarity: Fenchel–Young, 0 iff w ∈ ∂(½‖·‖_*²)(Aμ))
                + Σ_i μ_i (⟨Ĝ_i, w⟩ − c_i)      (complementary slackness)
so D(w) ≤ F* ≤ F(μ) brackets the value, whichever solver found μ and w. `certify` computes the three conditions
(dual feasibility: the largest relative violation of ⟨Ĝ_i, w⟩ ≥ c_i, made exact by scaling w up) from the geometry's
own numpy norms, never from a solver's status.

The solver (`solve`): min t s.t. ‖w‖ ≤ t written in cones (ℓ2: a second-order cone; ℓ∞: 2p inequalities; a
spectral norm: a PSD block [[t·I, Z], [Zᵀ, t·I]] ⪰ 0) with Clarabel, over the constraints of an active set only,
grown by the most violated samples until w is feasible for all (at the optimum few samples are active: those at the
margin). A matrix block enters as W = C Z Rᵀ, C and R orthonormal bases of the column and row spaces of the active
samples' Ĝ_i (⟨Ĝ_i, W⟩ only sees that part and dropping the rest does not increase ‖W‖_sp): the PSD block is
(rank + rank), not (rows + columns). Geometries other than ℓ2, ℓ∞, max-spectral and hybrid return None (the
caller solves them as before).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..blocks import Params

RTOL = 1e-7          # accepted gap F(μ) − D(w) ≤ ATOL + RTOL·F(μ)
ATOL = 1e-11
FEAS_TOL = 1e-7      # largest relative violation max_i (c_i − ⟨Ĝ_i, w⟩)/c_i accepted before w is scaled to feasibility
FIRST = 16           # samples of the first active set (the smallest margins)
GROW = 16            # most violated samples added per round
ROUNDS = 25


@dataclass
class Certificate:
    value: float            # F(μ): the upper end of the bracket (the residual is sqrt(2·value))
    lower: float            # D(w) for the feasible (scaled) w
    stationarity: float     # ½‖Aμ‖_*² + ½‖w‖² − ⟨w, Aμ⟩ ≥ 0
    slackness: float        # Σ μ_i (⟨Ĝ_i, w⟩ − c_i) ≥ 0
    infeasibility: float    # max_i (c_i − ⟨Ĝ_i, w⟩)/c_i before scaling (≤ 0: feasible as given)
    support: int            # samples with μ_i > 0

    @property
    def tolerance(self) -> float:
        return ATOL + RTOL * max(self.value, 0.0)

    @property
    def accepted(self) -> bool:
        """All three KKT conditions of the pair, each within the tolerance."""
        return bool(np.isfinite(self.value) and np.isfinite(self.lower) and self.infeasibility <= FEAS_TOL
                    and -self.tolerance <= self.stationarity <= self.tolerance
                    and -self.tolerance <= self.slackness <= self.tolerance
                    and self.value - self.lower <= self.tolerance)


def _combo(G: dict, shapes: dict, mu: np.ndarray) -> Params:
    return {k: (mu @ G[k]).reshape(shapes[k]) for k in G}


def _inner(a: Params, b: Params) -> float:
    return float(sum(np.vdot(a[k], b[k]) for k in a))


def certify(geometry, G: dict, shapes: dict, c: np.ndarray, mu: np.ndarray, w: Params) -> Certificate:
    """The certificate of a pair (μ, w) for the problem of the module docstring (G: per block, the n × size matrix
    of the flattened Ĝ_i): μ clipped to ≥ 0 and scaled optimally along its ray (F(sμ) is least at s = ⟨c, μ⟩/‖Aμ‖_*²),
    w scaled up just enough to satisfy every constraint."""
    mu = np.maximum(np.asarray(mu, float), 0.0)
    g = sum(G[k] @ np.ravel(w[k]) for k in G)       # ⟨Ĝ_i, w⟩
    if not np.all(g > 0):
        return Certificate(float("nan"), -np.inf, float("nan"), float("nan"), float("inf"), 0)
    scale = max(1.0, float(np.max(c / g)))
    infeas = float(np.max((c - g) / c))
    w = {k: scale * np.asarray(v, float) for k, v in w.items()}
    g = scale * g
    V = _combo(G, shapes, mu)
    h, cm = geometry.dual_norm(V), float(c @ mu)
    s = cm / h ** 2 if h > 0 and cm > 0 else 0.0
    mu, V, h = s * mu, {k: s * v for k, v in V.items()}, s * h
    value = 0.5 + 0.5 * h * h - float(c @ mu)
    nw = geometry.norm(w)
    lower = 0.5 - 0.5 * nw * nw
    stationarity = 0.5 * h * h + 0.5 * nw * nw - _inner(w, V)
    slackness = float(mu @ (g - c))
    return Certificate(float(value), float(lower), float(stationarity), slackness, infeas,
                       int(np.count_nonzero(mu)))


# ---------------------------------------------------------------- the cones of ‖w‖ ≤ t

def _basis(M: np.ndarray) -> np.ndarray:
    """Orthonormal basis (columns) of the column space of M, from the eigenvectors of M Mᵀ (small: M's rows are few)
    with eigenvalue above 1e-14 of the largest; a direction dropped at that level shows in the certificate."""
    lam, U = np.linalg.eigh(M @ M.T)
    if lam.size == 0 or not lam[-1] > 0:
        return np.zeros((M.shape[0], 0))
    return U[:, lam > lam[-1] * 1e-14]


def _kinds(geometry, shapes: dict) -> dict | None:
    """Per block: ("l2" | "linf" | "sp", factor): the block's part of the norm is factor·‖w_k‖ of that kind, the
    geometry's norm their maximum (ℓ2: one joint cone, key None). None: a geometry this module does not solve."""
    kind = type(geometry).__name__
    if kind == "L2":
        return {None: ("l2", 1.0)}
    if kind == "Linf":
        return {k: ("linf", 1.0) for k in shapes}
    if kind == "MaxSpectral":
        return {k: ("sp" if len(s) == 2 and min(s) > 1 else "l2", 1.0) for k, s in shapes.items()}
    if kind == "Hybrid":
        mats, _ = geometry.split({k: np.zeros(s) for k, s in shapes.items()})
        return {k: (("sp" if len(s) == 2 and min(s) > 1 else "l2") if k in mats else "linf",
                    geometry.c if k in mats else 1.0) for k, s in shapes.items()}
    return None


class _Conic:
    """A conic program min t s.t. A x + s = b, s in the cones, built row block by row block from (row, column, value)
    triplets; x = (t, the blocks' coordinates z_k, auxiliary variables)."""

    def __init__(self):
        self.r, self.c, self.v, self.b, self.cones, self.rows, self.cols = [], [], [], [], [], 0, 1

    def variables(self, n: int) -> int:
        self.cols += n
        return self.cols - n

    def block(self, entries, rhs: np.ndarray, cone) -> None:
        for i, j, x in entries:
            self.r.append(self.rows + i)
            self.c.append(j)
            self.v.append(x)
        self.b.append(np.asarray(rhs, float))
        self.rows += len(rhs)
        self.cones.append(cone)

    def solve(self):
        import clarabel  # start-up time: only a checkpoint's residual needs it

        A = sp.csc_matrix((self.v, (self.r, self.c)), shape=(self.rows, self.cols))
        q = np.zeros(self.cols)
        q[0] = 1.0
        st = clarabel.DefaultSettings()
        st.verbose = False
        st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-12
        st.tol_ktratio = 1e-10
        st.max_iter = 200
        sol = clarabel.DefaultSolver(sp.csc_matrix((self.cols, self.cols)), q, A, np.concatenate(self.b),
                                     [cone() for cone in self.cones], st).solve()
        return np.asarray(sol.x, float), np.asarray(sol.z, float)


def _svec(i: int, j: int) -> int:
    """Index of entry (i, j), i ≤ j, in Clarabel's svec (upper triangle by columns)."""
    return j * (j + 1) // 2 + i


def _spectral(prog: _Conic, start: int, p: int, r: int, f: float, group: int = 4) -> None:
    """‖f·Z‖_sp ≤ t for Z (p × r, row-major at x[start:]) in small cones: with m = min(p, r) and the other side's
    slices z_j (columns of Z when p ≤ r, else rows) taken `group` at a time as m × g blocks Z_J, ‖Z‖_sp ≤ τ = t/f iff
    there are m × m matrices Y_J with [[Y_J, Z_J], [Z_Jᵀ, τ·I]] ⪰ 0 (Y_J ⪰ Z_J Z_Jᵀ/τ) and τ·I − Σ_J Y_J ⪰ 0 (then
    ZZᵀ/τ ⪯ τ·I, and Y_J = Z_J Z_Jᵀ/τ attains it): cones of size m + g and one of size m, not one of size p + r."""
    import clarabel

    m, count = min(p, r), max(p, r)
    tri, r2 = m * (m + 1) // 2, np.sqrt(2.0)
    total = []
    for first in range(0, count, group):
        J = range(first, min(count, first + group))
        d = m + len(J)
        y = prog.variables(tri)        # svec(Y_J), off-diagonals already ×√2
        ent = [(e, y + e, -1.0) for e in range(tri)]
        for b, j in enumerate(J):
            for a in range(m):         # entry (a, m + b): coordinate a of slice j, ×√2
                ent.append((_svec(a, m + b), start + (a * r + j if p <= r else j * r + a), -r2))
            ent.append((_svec(m + b, m + b), 0, -1.0 / f))
        prog.block(ent, np.zeros(d * (d + 1) // 2), lambda d=d: clarabel.PSDTriangleConeT(d))
        total += [(e, y + e, 1.0) for e in range(tri)]
    total += [(_svec(a, a), 0, -1.0 / f) for a in range(m)]
    prog.block(total, np.zeros(tri), lambda d=m: clarabel.PSDTriangleConeT(d))


def _solve_active(kinds: dict, G: dict, shapes: dict, c: np.ndarray, S: np.ndarray):
    """min t s.t. ‖w‖ ≤ t, ⟨Ĝ_i, w⟩ ≥ c_i (i ∈ S) by Clarabel: (w as blocks, multipliers of the S constraints) or
    None when the solver returns no point."""
    import clarabel

    prog, E = _Conic(), {}
    for k, s in shapes.items():        # block k is w_k = E_k z_k (E_k = C ⊗ R for a reduced matrix, else I)
        Ek, red = None, None
        if kinds.get(k, kinds.get(None))[0] == "sp":
            Gk = G[k][S].reshape(len(S), *s)
            C = _basis(np.concatenate(list(Gk), axis=1))            # columns of every Ĝ_i
            R = _basis(np.concatenate([g.T for g in Gk], axis=1))    # rows of every Ĝ_i
            if C.shape[1] == 0 or R.shape[1] == 0:
                C, R = np.zeros((s[0], 1)), np.zeros((s[1], 1))
            Ek, red = np.kron(C, R), (C.shape[1], R.shape[1])
        size = Ek.shape[1] if Ek is not None else int(np.prod(s))
        E[k] = (Ek, prog.variables(size), size, red)
    ent = []                           # ⟨Ĝ_i, w⟩ − c_i ≥ 0: A = −M, b = −c
    for k in shapes:
        Ek, start, size, _ = E[k]
        M = G[k][S] if Ek is None else G[k][S] @ Ek
        ii, jj = np.nonzero(M)
        ent += list(zip(ii.tolist(), (start + jj).tolist(), (-M[ii, jj]).tolist(), strict=True))
    prog.block(ent, -c[S], lambda: clarabel.NonnegativeConeT(len(S)))
    if None in kinds:                  # one ℓ2 cone over all of w: (t, z) ∈ SOC
        n = sum(E[k][2] for k in shapes) + 1
        prog.block([(j, j, -1.0) for j in range(n)], np.zeros(n), lambda: clarabel.SecondOrderConeT(n))
    else:
        for k in shapes:
            kind, f = kinds[k]
            _, start, size, red = E[k]
            if kind == "linf":         # f·|z_j| ≤ t: t − f z_j ≥ 0, t + f z_j ≥ 0
                ent = [(2 * j + h, 0, -1.0) for j in range(size) for h in (0, 1)]
                ent += [(2 * j + h, start + j, f if h == 0 else -f) for j in range(size) for h in (0, 1)]
                prog.block(ent, np.zeros(2 * size), lambda d=2 * size: clarabel.NonnegativeConeT(d))
            elif kind == "l2":         # (t, f z) ∈ SOC
                ent = [(0, 0, -1.0)] + [(1 + j, start + j, -f) for j in range(size)]
                prog.block(ent, np.zeros(size + 1), lambda d=size + 1: clarabel.SecondOrderConeT(d))
            else:
                _spectral(prog, start, red[0], red[1], f)
    x, z = prog.solve()
    if x.size != prog.cols or not np.all(np.isfinite(x)):
        return None
    w = {}
    for k, s in shapes.items():
        Ek, start, size, _ = E[k]
        zk = x[start:start + size]
        w[k] = (zk if Ek is None else Ek @ zk).reshape(s)
    return w, np.maximum(z[:len(S)], 0.0)


# the last active set by geometry, shapes and sample count: the next checkpoint of a run starts from it (a warm start:
# it changes how fast the solve ends, not what it certifies)
_LAST: dict = {}


def solve(geometry, G: dict, shapes: dict, c: np.ndarray, q: np.ndarray, key=None) -> Certificate | None:
    """The certified Fenchel problem on a growing active set (module docstring): first the FIRST smallest margins
    and the samples of the last solve under `key`, then the most violated constraints added each round until w is
    feasible for all. None for a geometry it does not solve, else the certificate of the last pair (the caller
    checks `accepted`)."""
    kinds = _kinds(geometry, shapes)
    if kinds is None:
        return None
    n = c.size
    S = np.argsort(q, kind="stable")[:min(n, FIRST)]
    warm = _LAST.get(key)
    if warm is not None and warm.size and warm.max() < n:
        S = np.union1d(S, warm)
    S = np.sort(S)
    cert = None
    for _ in range(ROUNDS):
        got = _solve_active(kinds, G, shapes, c, S)
        if got is None:
            return cert
        w, nu = got
        mu = np.zeros(n)
        mu[S] = nu
        cert = certify(geometry, G, shapes, c, mu, w)
        g = sum(G[k] @ np.ravel(w[k]) for k in G)
        viol = (c - g) / c
        viol[S] = -np.inf
        out = np.flatnonzero(viol > FEAS_TOL * 1e-2)
        if out.size == 0 or S.size == n:
            break
        add = out[np.argsort(-viol[out], kind="stable")[:max(GROW, S.size // 2)]]
        S = np.union1d(S, add)
    if key is not None and cert is not None and cert.accepted:
        if len(_LAST) >= 64:
            _LAST.pop(next(iter(_LAST)))
        _LAST[key] = S
    return cert
