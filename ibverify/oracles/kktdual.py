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
    """Orthonormal basis (columns) of the column space of M."""
    if M.size == 0:
        return np.zeros((M.shape[0], 0))
    U, s, _ = np.linalg.svd(M, full_matrices=False)
    keep = s > s[0] * 1e-13 if s.size and s[0] > 0 else np.zeros(s.size, bool)
    return U[:, keep]


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


def _solve_active(kinds: dict, G: dict, shapes: dict, c: np.ndarray, S: np.ndarray):
    """min t s.t. ‖w‖ ≤ t, ⟨Ĝ_i, w⟩ ≥ c_i (i ∈ S) by Clarabel: (w as blocks, multipliers of the S constraints) or
    None when the solver returns no point."""
    import clarabel  # start-up time: only a checkpoint's residual needs it

    # variables x = (t, z_k for each block); block k is w_k = E_k z_k (E_k = C ⊗ R for a reduced matrix)
    E, red, cols = {}, {}, 1
    for k, s in shapes.items():
        kind = kinds.get(k, kinds.get(None))[0]
        if kind == "sp":
            Gk = G[k][S].reshape(len(S), *s)
            C = _basis(np.concatenate(list(Gk), axis=1))           # columns of every Ĝ_i
            R = _basis(np.concatenate([g.T for g in Gk], axis=1))   # rows of every Ĝ_i
            if C.shape[1] == 0 or R.shape[1] == 0:
                C, R = np.zeros((s[0], 1)), np.zeros((s[1], 1))
            E[k], red[k] = np.kron(C, R), (C.shape[1], R.shape[1])
        else:
            E[k] = None
        size = E[k].shape[1] if E[k] is not None else int(np.prod(s))
        red.setdefault(k, None)
        cols, start = cols + size, cols
        E[k] = (E[k], start, size)
    A_rows, b_rows, cones = [], [], []
    # ⟨Ĝ_i, w⟩ − c_i ≥ 0  ↔  s = −(−M z) ... Clarabel: A x + s = b, s ∈ cone
    M = np.zeros((len(S), cols))
    for k in shapes:
        Ek, start, size = E[k]
        M[:, start:start + size] = G[k][S] if Ek is None else G[k][S] @ Ek
    A_rows.append(sp.csc_matrix(-M))
    b_rows.append(-c[S])
    cones.append(clarabel.NonnegativeConeT(len(S)))

    def row(entries, n_rows):
        """A sparse block of n_rows rows: entries [(row, column, value)]."""
        r, cc, v = zip(*entries, strict=True) if entries else ((), (), ())
        return sp.csc_matrix((v, (r, cc)), shape=(n_rows, cols))

    if None in kinds:   # one ℓ2 cone over all of w: (t, z) ∈ SOC
        n = cols
        A_rows.append(row([(j, j, -1.0) for j in range(n)], n))
        b_rows.append(np.zeros(n))
        cones.append(clarabel.SecondOrderConeT(n))
    else:
        for k in shapes:
            kind, f = kinds[k]
            Ek, start, size = E[k]
            if kind == "linf":       # f·|z_j| ≤ t: t − f z_j ≥ 0, t + f z_j ≥ 0
                ent = [(2 * j, 0, -1.0) for j in range(size)] + [(2 * j, start + j, f) for j in range(size)]
                ent += [(2 * j + 1, 0, -1.0) for j in range(size)] + [(2 * j + 1, start + j, -f) for j in range(size)]
                A_rows.append(row(ent, 2 * size))
                b_rows.append(np.zeros(2 * size))
                cones.append(clarabel.NonnegativeConeT(2 * size))
            elif kind == "l2":       # (t, f z) ∈ SOC
                ent = [(0, 0, -1.0)] + [(1 + j, start + j, -f) for j in range(size)]
                A_rows.append(row(ent, size + 1))
                b_rows.append(np.zeros(size + 1))
                cones.append(clarabel.SecondOrderConeT(size + 1))
            else:                    # [[t I, f Z], [f Zᵀ, t I]] ⪰ 0, svec: upper triangle by columns, off-diagonal ×√2
                p, q = red[k]
                d = p + q
                ent, r2 = [], np.sqrt(2.0)
                for j in range(d):
                    for i in range(j + 1):
                        idx = j * (j + 1) // 2 + i
                        if i == j:
                            ent.append((idx, 0, -1.0))
                        elif i < p <= j:   # entry (i, j) of the off-diagonal block: Z[i, j − p]
                            ent.append((idx, start + i * q + (j - p), -f * r2))
                A_rows.append(row(ent, d * (d + 1) // 2))
                b_rows.append(np.zeros(d * (d + 1) // 2))
                cones.append(clarabel.PSDTriangleConeT(d))
    A = sp.vstack(A_rows, format="csc")
    b = np.concatenate(b_rows)
    q = np.zeros(cols)
    q[0] = 1.0
    st = clarabel.DefaultSettings()
    st.verbose = False
    st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-12
    st.tol_ktratio = 1e-10
    st.max_iter = 200
    sol = clarabel.DefaultSolver(sp.csc_matrix((cols, cols)), q, A, b, cones, st).solve()
    x = np.asarray(sol.x, float)
    if x.size != cols or not np.all(np.isfinite(x)):
        return None
    w = {}
    for k, s in shapes.items():
        Ek, start, size = E[k]
        z = x[start:start + size]
        w[k] = (z if Ek is None else Ek @ z).reshape(s)
    nu = np.maximum(np.asarray(sol.z, float)[:len(S)], 0.0)
    return w, nu


def solve(geometry, G: dict, shapes: dict, c: np.ndarray, q: np.ndarray) -> Certificate | None:
    """The certified Fenchel problem on a growing active set (module docstring); None for a geometry it does not
    solve, else the certificate of the last pair (the caller checks `accepted`)."""
    kinds = _kinds(geometry, shapes)
    if kinds is None:
        return None
    n = c.size
    S = np.sort(np.argsort(q, kind="stable")[:min(n, FIRST)])
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
            return cert
        add = out[np.argsort(-viol[out], kind="stable")[:GROW]]
        S = np.union1d(S, add)
    return cert
