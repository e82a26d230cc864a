"""T(c), non-unique duals, and Algorithm 3 on the worked datasets of spec §5.8."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibverify import IbverifyError
from ibverify.data import gaussian, shifted_diagonal
from ibverify.strategies import linear as S
from ibverify.oracles import max_margin, normalized_margin
from ibverify.theory import duals, fixed_point, metric, padam, predict


@pytest.fixture(scope="module")
def spec_gaussian():
    """The spec's test setup: N = 10, d = 50, x ~ N(0, I), seed 1."""
    return gaussian(10, 50, np.random.default_rng(1)).Z


def test_gaussian_fixed_point_matches_spec_figures(spec_gaussian):
    Z = spec_gaussian
    fp = fixed_point.iterate(Z)
    assert fp.residual < 1e-10 and fp.kkt < 1e-12 and fp.iterations < 30
    # stationarity form of Thm 4.8: M(c*) p = α Σ c*_i z_i with α > 0
    lhs, rhs = metric.metric_diag(Z, fp.c) * fp.w, fp.c @ Z
    alpha = (lhs @ rhs) / (rhs @ rhs)
    assert alpha > 0 and np.allclose(lhs, alpha * rhs, rtol=1e-8, atol=1e-12)
    l2 = max_margin(Z, "l2")
    assert abs(fp.direction @ l2.direction - 0.964) < 5e-4  # spec §5.8 table
    # supp(c*) ⊆ support vectors of p*
    assert set(fp.support) <= set(fp.active)


def test_l2_solution_is_not_a_fixed_point_on_gaussian(spec_gaussian):
    Z = spec_gaussian
    l2 = max_margin(Z, "l2")
    c2 = l2.duals / l2.duals.sum()
    assert fixed_point.tmap(Z, c2).residual > 1e-2


def test_fixed_point_is_mahalanobis_max_margin(spec_gaussian):
    """p* maximizes min_i z_i·w / ‖w‖_M(c*) (spec §5.5): no random direction beats it."""
    Z = spec_gaussian
    fp = fixed_point.iterate(Z)
    m = metric.metric_diag(Z, fp.c)
    marg = lambda w: (Z @ w).min() / np.sqrt(w @ (m * w))
    best = marg(fp.w)
    rng = np.random.default_rng(0)
    for _ in range(200):
        assert marg(fp.w + 0.05 * np.linalg.norm(fp.w) * rng.standard_normal(Z.shape[1])) <= best + 1e-12


@pytest.mark.parametrize("delta", [0.1, 0.5])
def test_shifted_diagonal_gives_all_ones(delta):
    a = np.arange(1.0, 7.0)
    Z = shifted_diagonal(a, delta).Z
    fp = fixed_point.iterate(Z)
    assert np.allclose(fp.c, np.eye(6)[0], atol=1e-12)  # c* = e_{argmin a}
    assert np.allclose(fp.direction, np.ones(6) / np.sqrt(6), atol=1e-12)
    li = max_margin(Z, "linf")
    assert abs(li.margin - normalized_margin(Z, fp.direction, "linf")) <= 1e-9 * li.margin
    assert np.isclose(li.margin, a.min() + 6 * delta, rtol=1e-9)  # γ∞ = min a + dδ by hand


@settings(max_examples=8, deadline=None, derandomize=True)
@given(S.gr_data(n=st.integers(3, 8), d=st.integers(4, 20)), st.integers(0, 2**31))
def test_gr_every_c_gives_l2(cert, seed):
    Z = cert.dataset.Z
    c = np.random.default_rng(seed).dirichlet(np.ones(Z.shape[0]))
    m = metric.metric_diag(Z, c)
    assert (m.max() - m.min()) <= 4e-16 * m.max()  # M(c) ∝ I up to rounding
    l2 = max_margin(Z, "l2")
    assert padam.solve(Z, m).direction @ l2.direction >= 1 - 1e-9
    fp = fixed_point.iterate(Z, c0=c)
    assert fp.direction @ l2.direction >= 1 - 1e-9 and fp.iterations <= 1


def test_duplicate_samples_make_the_dual_non_unique(spec_gaussian):
    Z = np.vstack([spec_gaussian[:3], spec_gaussian[:1]])  # sample 0 twice
    st_ = fixed_point.tmap(Z, np.full(4, 0.25))
    ds = st_.dual
    assert not ds.unique
    assert ds.hi[0] - ds.lo[0] > 1e-3 and ds.lo[0] == pytest.approx(0.0, abs=1e-12)
    # λ0 + λ3 is determined; the least-norm choice splits it equally
    assert ds.lam[0] == pytest.approx(ds.lam[3], rel=1e-9)
    assert ds.lo[0] + ds.hi[3] == pytest.approx(ds.lam[0] + ds.lam[3], rel=1e-9)
    # set-valued residual: a c in T(c)'s set has distance 0 although it is not the chosen point
    s = ds.base.sum()
    extreme = ds.base.copy()
    extreme[0], extreme[3] = ds.base[0] + ds.base[3], 0.0
    c_extreme = extreme / s
    assert duals.distance_to_image(ds, c_extreme) < 1e-9
    assert np.abs(st_.image - c_extreme).sum() > 1e-3


def test_unique_dual_is_flagged_unique(spec_gaussian):
    assert fixed_point.tmap(spec_gaussian, np.full(10, 0.1)).dual.unique


def test_iteration_raises_when_not_converging(spec_gaussian):
    with pytest.raises(IbverifyError, match="did not converge"):
        fixed_point.iterate(spec_gaussian, max_iter=2)


def test_b_equal_n_is_refused(spec_gaussian):
    with pytest.raises(IbverifyError, match="b = N"):
        fixed_point.iterate(spec_gaussian, b=10)


def test_singular_metric_raises():
    Z = np.array([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(IbverifyError, match="singular"):
        fixed_point.tmap(Z, np.array([1.0, 0.0]))


def test_batch_fixed_points_move_toward_linf(spec_gaussian):
    """Spec §5.8 table: ℓ∞ margins of the batch-b fixed points 4.62, 4.92, 5.84 (γ∞ = 8.28)."""
    Z = spec_gaussian
    got = [normalized_margin(Z, fixed_point.iterate(Z, b=b).direction, "linf") for b in (1, 2, 5)]
    assert np.allclose(got, [4.62, 4.92, 5.84], atol=0.015)


def test_predict_dict(spec_gaussian):
    r = predict(spec_gaussian)
    assert set(r) >= {"direction", "c", "support", "cos_l2", "cos_linf", "iterations", "residual"}
    assert abs(np.linalg.norm(r["direction"]) - 1) < 1e-12 and r["residual"] < 1e-10
    assert r["cos_linf"] <= r["cos_linf_bound"] + 1e-12 and abs(r["cos_linf"] - 0.837) < 1e-3
