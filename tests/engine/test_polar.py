"""engine.polar: the compiled Jacobi polar factor against its definition and a 50-digit SVD.

polar(A) = UVᵀ over the singular values > rtol·σ_max. Defining properties: P = polar(A) is a partial isometry
with PᵀP the projector onto A's kept row space, and PᵀA = V Σ Vᵀ is symmetric positive semidefinite with
A ≈ P (PᵀA). Ground truth: mpmath's SVD at 50 digits.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from ibverify.engine.polar import polar_block, polar_block_kept
from ibverify.geometry.base import polar as lapack_polar

RTOL = 1e-12


def jacobi(A, rtol=RTOL):
    x = np.ascontiguousarray(A, dtype=float).ravel().copy()
    out = np.full_like(x, 7.0)
    sweeps = polar_block(x, 0, A.shape[0], A.shape[1], out, rtol)
    return out.reshape(A.shape), sweeps


def exact(A, rtol=RTOL):
    """UVᵀ of a 50-digit SVD, singular values ≤ rtol·σ_max dropped."""
    with mpmath.workdps(50):
        U, S, V = mpmath.svd_r(mpmath.matrix(A.tolist()))
        keep = [i for i in range(len(S)) if S[i] > rtol * S[0]]
        return np.array([[float(mpmath.fsum(U[r, i] * V[i, c] for i in keep)) for c in range(A.shape[1])]
                         for r in range(A.shape[0])])


def with_singular_values(m, n, sv, seed):
    """An m×n matrix U diag(sv) Vᵀ with random orthonormal U, V."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((m, len(sv))))[0]
    V = np.linalg.qr(rng.standard_normal((n, len(sv))))[0]
    return (U * np.asarray(sv)) @ V.T


SHAPES = [(16, 6), (6, 16), (8, 8), (2, 2), (4, 6), (19, 3), (3, 19)]


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{n}" for m, n in SHAPES])
def test_defining_properties_on_random_blocks(shape):
    rng = np.random.default_rng(sum(shape))
    for _ in range(20):
        A = rng.standard_normal(shape)
        P, sweeps = jacobi(A)
        k = min(shape)
        G = P.T @ P if shape[0] >= shape[1] else P @ P.T
        np.testing.assert_allclose(G, np.eye(k), atol=1e-14)                      # isometry (full rank)
        H = P.T @ A
        np.testing.assert_allclose(H, H.T, atol=1e-13)                            # PᵀA symmetric ...
        assert np.linalg.eigvalsh((H + H.T) / 2).min() > -1e-13                   # ... and PSD
        np.testing.assert_allclose(P @ H, A, atol=1e-13)                          # A = P H
        assert 1 <= sweeps <= 12


@pytest.mark.parametrize("shape", [(16, 6), (4, 6), (8, 8)])
def test_graded_singular_values_match_the_50_digit_svd(shape):
    """σ = 1, 2e−7, 5e−12 (the deep-linear Muon momentum's spectrum): the smallest kept direction is fixed to
    ε/5e−12 ≈ 4e−5 by the data, and Jacobi gets it to ~1e−6; an update of ‖b_i‖² by ∓tg instead of recomputing
    it loses that direction entirely (error O(1))."""
    k = min(shape)
    sv = [1.0, 2e-7, 5e-12] + [0.0] * (k - 3)
    A = with_singular_values(*shape, sv, seed=1)
    P, _ = jacobi(A)
    assert np.abs(P - exact(A)).max() < 1e-5
    assert np.abs(lapack_polar(A) - exact(A)).max() < 1e-3  # LAPACK's own error here: ~1e−4


def test_well_conditioned_blocks_match_the_50_digit_svd_to_rounding():
    for seed, shape in enumerate(SHAPES):
        A = with_singular_values(*shape, np.geomspace(1.0, 1e-3, min(shape)), seed)
        P, _ = jacobi(A)
        assert np.abs(P - exact(A)).max() < 1e-12, shape


def test_singular_values_at_or_below_rtol_are_dropped_and_above_it_kept():
    below = with_singular_values(16, 6, [1.0, 0.5, 1e-13], seed=2)
    above = with_singular_values(16, 6, [1.0, 0.5, 1e-11], seed=2)
    Pb, Pa = jacobi(below)[0], jacobi(above)[0]
    assert np.linalg.matrix_rank(Pb, tol=0.5) == 2 and np.linalg.matrix_rank(Pa, tol=0.5) == 3
    assert np.abs(Pb - exact(below)).max() < 1e-8
    assert np.abs(Pa - exact(above)).max() < 1e-3         # σ_3 = 1e−11: direction fixed to ε/1e−11 only
    np.testing.assert_allclose(jacobi(below, rtol=1e-14)[0] @ jacobi(below, rtol=1e-14)[0].T,
                               Pa @ Pa.T, atol=1e-3)      # a smaller rtol keeps σ_3 = 1e−13 too


def test_rank_one_block_is_u_v_transpose():
    rng = np.random.default_rng(5)
    u, v = rng.standard_normal(16), rng.standard_normal(6)
    P, _ = jacobi(np.outer(u, v))
    np.testing.assert_allclose(P, np.outer(u / np.linalg.norm(u), v / np.linalg.norm(v)), atol=1e-15)


@pytest.mark.parametrize("shape", [(16, 6), (6, 16)])
@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1.0, 1e150, 1e300])
def test_scale_free_from_underflow_to_overflow(scale, shape):
    A = np.random.default_rng(3).standard_normal(shape)
    P1 = jacobi(A)[0]
    Ps = jacobi(A * scale)[0]
    np.testing.assert_allclose(Ps, P1, atol=1e-14)
    np.testing.assert_allclose(Ps, lapack_polar(A), atol=1e-14)


def test_zero_nan_inf_and_offset_blocks():
    assert not jacobi(np.zeros((4, 3)))[0].any()
    for bad in (np.nan, np.inf, -np.inf):
        A = np.ones((4, 3))
        A[2, 1] = bad
        assert np.isnan(jacobi(A)[0]).all()
    x = np.arange(1.0, 31.0)                   # a 4×6 block at offset 3 of a 30-vector; the rest untouched
    out = np.full(30, -1.0)
    polar_block(x, 3, 4, 6, out, RTOL)
    assert (out[:3] == -1.0).all() and (out[27:] == -1.0).all()
    np.testing.assert_allclose(out[3:27].reshape(4, 6), exact(x[3:27].reshape(4, 6)), atol=1e-10)


# ---- warm start: polar_block_kept starts the sweeps from the rotation kept from the previous call

def kept_run(mats, keep=None):
    """polar_block_kept over a sequence of equally shaped blocks, one keep array; [(P, sweeps)], keep."""
    rows, cols = mats[0].shape
    n = min(rows, cols)
    keep = np.zeros(3 + n * n) if keep is None else keep
    out = []
    for A in mats:
        x = np.ascontiguousarray(A, dtype=float).ravel().copy()
        P = np.full_like(x, 7.0)
        sweeps = polar_block_kept(x, 0, rows, cols, P, RTOL, keep, 2)   # at an offset: slots 0, 1 untouched
        out.append((P.reshape(rows, cols), sweeps))
    return out, keep


def drifting(m, n, sv, steps, rate, seed):
    """A block that changes a little each step, as Muon's momentum does: A_t = A_0 + rate·t·E."""
    A = with_singular_values(m, n, sv, seed)
    E = np.random.default_rng(seed + 100).standard_normal((m, n))
    return [A + rate * t * E for t in range(steps)]


@pytest.mark.parametrize("shape", [(16, 6), (6, 16), (12, 12)])
def test_warm_start_gives_the_polar_factor_with_fewer_sweeps(shape):
    mats = drifting(*shape, np.geomspace(1.0, 1e-3, min(shape)), 6, 1e-3, seed=sum(shape))
    got, keep = kept_run(mats)
    n = min(shape)
    V = keep[3:].reshape(n, n)
    assert keep[2] == 1.0 and np.abs(V @ V.T - np.eye(n)).max() < 1e-14     # the last block's rotation, kept
    for A, (P, _) in zip(mats, got, strict=True):
        assert np.abs(P - exact(A)).max() < 1e-12
    cold = [jacobi(A)[1] for A in mats]
    assert got[0][1] == cold[0]                                     # nothing kept yet: a cold start
    assert all(w < c for (_, w), c in zip(got[1:], cold[1:], strict=True)), ([w for _, w in got], cold)


def test_warm_start_over_many_steps_keeps_the_rotation_orthogonal_and_the_factor_exact():
    mats = drifting(12, 8, np.geomspace(1.0, 1e-2, 8), 400, 1e-4, seed=11)
    got, keep = kept_run(mats)
    V = keep[3:].reshape(8, 8)
    assert np.abs(V @ V.T - np.eye(8)).max() < 1e-14
    for t in (1, 57, 200, 399):
        assert np.abs(got[t][0] - exact(mats[t])).max() < 1e-12, t
        np.testing.assert_allclose(got[t][0], jacobi(mats[t])[0], rtol=0, atol=1e-13)


def test_a_worn_kept_rotation_is_made_orthogonal_before_it_is_used():
    """A kept V whose rows are off orthogonal by 1e−6 (far more than rounding wears them) still gives the exact
    factor: the rows are re-orthonormalised first (without that the factor would be off by ~1e−6)."""
    A0, A1 = drifting(10, 7, np.geomspace(1.0, 1e-2, 7), 2, 1e-3, seed=4)
    _, keep = kept_run([A0])
    keep[3:] += 1e-6 * np.random.default_rng(0).standard_normal(49)
    (P, _), = kept_run([A1], keep)[0]
    assert np.abs(P - exact(A1)).max() < 1e-12


def test_a_kept_array_that_is_no_rotation_starts_cold():
    A = with_singular_values(9, 5, np.geomspace(1.0, 1e-2, 5), seed=6)
    keep = np.zeros(3 + 25)
    keep[2] = 1.0                                                   # marked kept, but V = 0 (no rotation)
    (P, sweeps), = kept_run([A], keep)[0]
    assert sweeps == jacobi(A)[1] and np.abs(P - exact(A)).max() < 1e-12


@pytest.mark.parametrize("shape", [(16, 6), (8, 8)])
def test_warm_start_on_graded_and_rank_deficient_blocks(shape):
    """The graded spectrum of the cold test, and a rank-2 block (zero singular values, dropped), each after a kept
    rotation of a nearby block: within the cold start's own error of the 50-digit SVD."""
    k = min(shape)
    for sv, bound in (([1.0, 2e-7, 5e-12] + [0.0] * (k - 3), 1e-4), ([1.0, 0.3] + [0.0] * (k - 2), 1e-12)):
        A = with_singular_values(*shape, sv, seed=1)
        near = A + 1e-9 * np.random.default_rng(2).standard_normal(shape)
        (_, _), (P, _) = kept_run([near, A])[0]
        assert np.abs(P - exact(A)).max() < bound
        assert np.linalg.matrix_rank(P, tol=0.5) == sum(s > RTOL for s in sv)


def test_a_zero_or_nan_block_forgets_the_kept_rotation():
    A = with_singular_values(8, 5, np.geomspace(1.0, 1e-2, 5), seed=8)
    for bad in (np.zeros((8, 5)), np.full((8, 5), np.nan)):
        got, keep = kept_run([A, bad, A])
        assert keep[2] == 1.0 and got[2][1] == jacobi(A)[1]          # the block after it started cold
        assert (got[1][0] == 0).all() if not np.isnan(bad).any() else np.isnan(got[1][0]).all()
