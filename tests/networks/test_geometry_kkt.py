"""Geometries (LMO identities, dual norms, subdifferentials) and KKT residuals with known optima."""

import numpy as np
import pytest
from hypothesis import given, settings

from ibverify import IbverifyError
from ibverify.data import netdata as datasets
from ibverify.oracles import kkt
from ibverify import models
from ibverify import geometry as G
from ibverify.blocks import inner
from ibverify.strategies.network import block_params, separable_linear


def test_hand_values():
    g = {"u": np.array([1.0, -2.0, 0.0])}
    assert G.Linf().dual_norm(g) == 3.0 and G.Linf().norm(g) == 2.0
    np.testing.assert_array_equal(G.Linf().lmo(g)["u"], [-1.0, 1.0, 0.0])
    M = {"W": np.diag([3.0, 1.0])}
    assert G.Spectral().norm(M) == 3.0 and G.Spectral().dual_norm(M) == pytest.approx(4.0)
    np.testing.assert_allclose(G.Spectral().lmo(M)["W"], -np.eye(2), atol=1e-15)
    H = G.Hybrid(2.0)
    p = {"W": np.diag([3.0, 1.0]), "a": np.array([5.0, -1.0])}
    assert H.norm(p) == 6.0 and H.dual_norm(p) == pytest.approx(4.0 / 2 + 6.0)
    assert G.MaxSpectral().norm(p) == pytest.approx(np.sqrt(26.0))   # the vector a is a 1×2 row
    with pytest.raises(IbverifyError):
        G.Spectral().norm(p)


@settings(max_examples=40, deadline=None)
@given(block_params())
def test_lmo_identities(g):
    for geo in (G.L2(), G.Linf(), G.MaxSpectral(), G.Hybrid(0.3)):
        u = geo.lmo(g)
        ds = geo.dual_norm(g)
        assert inner(u, g) == pytest.approx(-ds, rel=1e-12, abs=1e-300)
        if ds > 0:
            assert geo.norm(u) == pytest.approx(1.0, rel=1e-12)


def test_subdifferential_membership():
    th = {"u": np.array([1.0, -1.0, 0.5])}
    Li = G.Linf()
    assert Li.in_subdifferential(th, {"u": np.array([0.5, -0.5, 0.0])})       # ‖θ‖·conv(sign e_j), j saturated
    assert not Li.in_subdifferential(th, {"u": np.array([0.5, 0.0, 0.5])})    # mass on an unsaturated coordinate
    assert G.L2().in_subdifferential(th, th) and not G.L2().in_subdifferential(th, {"u": 2 * th["u"]})
    W = {"W": np.diag([2.0, 2.0, 1.0])}
    S = G.Spectral()
    assert S.in_subdifferential(W, {"W": 2.0 * np.diag([0.25, 0.75, 0.0])})   # U1 T V1ᵀ, T ⪰ 0, tr T = 1
    assert not S.in_subdifferential(W, {"W": 2.0 * np.diag([0.5, 0.0, 0.5])})


def test_linear_max_margin_hand_values():
    m = models.Linear(2)
    X, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, 1.0])
    r2 = kkt.max_margin_linear(G.L2(), m, X, y)
    assert r2.margin == pytest.approx(1 / np.sqrt(2), rel=1e-7)
    np.testing.assert_allclose(r2.theta["w"], [1.0, 1.0], rtol=1e-6)
    ri = kkt.max_margin_linear(G.Linf(), m, X, y)
    assert ri.margin == pytest.approx(1.0, rel=1e-7)
    assert r2.kkt < 1e-6 and ri.kkt < 1e-6


def test_kkt_residual_zero_at_optimum_positive_when_perturbed():
    m = models.Linear(2)
    X, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, 1.0])
    at = kkt.kkt_residual(G.L2(), m, {"w": np.array([1.0, 1.0])}, X, y, tau=1e-9)
    assert at.residual < 1e-12 and at.fenchel < 1e-4
    np.testing.assert_allclose(at.lam, [1.0, 1.0], rtol=1e-9)            # θ* = Σ λ_i z_i
    off = kkt.kkt_residual(G.L2(), m, {"w": np.array([1.0, 1.3])}, X, y, tau=1e-9)
    # support {x_1}: NNLS residual of (1, 1.3) against e_1 is 1.3/‖(1, 1.3)‖
    assert off.residual == pytest.approx(1.3 / np.hypot(1, 1.3), rel=1e-9)
    assert off.fenchel > 0.1
    inf = kkt.kkt_residual(G.Linf(), m, {"w": np.array([1.0, 1.0])}, X, y, tau=1e-9)
    assert inf.residual < 1e-6
    inf_off = kkt.kkt_residual(G.Linf(), m, {"w": np.array([1.0, 0.7])}, X, y, tau=1e-9)
    assert inf_off.residual > 0.1 and inf_off.fenchel > 0.1


@settings(max_examples=6, deadline=None)
@given(separable_linear())
def test_kkt_certifies_convex_optimum(data):
    m = models.Linear(data.X.shape[1])
    for geo in (G.L2(), G.Linf()):
        mm = kkt.max_margin_linear(geo, m, data.X, data.y)
        assert mm.kkt < 1e-5
        assert mm.dual_bound == pytest.approx(mm.margin, rel=1e-6)      # weak duality is tight at the optimum


def test_spectral_max_margin_certificate():
    d = datasets.matrix_separable(12, 3, 3, seed=1)
    m = models.MatrixLinear(3, 3)
    mm = kkt.max_margin_linear(G.Spectral(), m, d.X, d.y)
    assert mm.kkt < 1e-4 and mm.dual_bound == pytest.approx(mm.margin, rel=1e-6)
    fro = kkt.max_margin_linear(G.L2(), m, d.X, d.y)
    th = {"W": fro.theta["W"]}
    assert G.Spectral().margin(m, th, d.X, d.y) <= mm.margin * (1 + 1e-7)


def test_network_kkt_residual_needs_positive_margin():
    m = models.TwoLayer(2, 2)
    th = {"W": np.zeros((2, 2)), "a": np.zeros(2)}
    with pytest.raises(IbverifyError):
        kkt.kkt_residual(G.L2(), m, th, np.eye(2), np.array([1.0, -1.0]))


def test_solves_are_remembered_by_their_exact_inputs_only(monkeypatch):
    """kkt's memo: the same point in the same geometry is solved once; any change of the point, the geometry or the
    face tolerance is solved anew, and every remembered value equals a fresh solve."""
    data = datasets.make_data("teacher", n=12, d=3, seed=4)
    model = models.TwoLayer(3, 4, 2.0)
    points = []
    for s in range(200):   # a point with positive margin, and a small perturbation of it
        th = model.init(np.random.default_rng(s), 1.0)
        if np.min(data.y * model.outputs(th, data.X)) > 0:
            noise = np.random.default_rng(99)
            near = {k: v + 1e-3 * noise.standard_normal(v.shape) for k, v in th.items()}
            assert np.min(data.y * model.outputs(near, data.X)) > 0
            points = [th, near]
            break
    assert len(points) == 2, "no initial point with positive margin"
    th1, th2 = points
    calls = []
    real = kkt._solve
    monkeypatch.setattr(kkt, "_solve", lambda prob: calls.append(1) or real(prob))
    fast = kkt.kktdual.solve   # the Fenchel residual's certified solve (kkt's cvxpy fallback goes through _solve)
    monkeypatch.setattr(kkt.kktdual, "solve", lambda *a: calls.append(1) or fast(*a))
    monkeypatch.setattr(kkt, "_SOLVED", type(kkt._SOLVED)())
    geos = (G.Linf(), G.MaxSpectral())
    first = {(i, g.name): kkt.kkt_residual(g, model, th, data.X, data.y, tau=0.05)
             for i, th in enumerate(points) for g in geos}
    solved = len(calls)
    assert solved == 2 * len(first)                  # a face and a Fenchel solve each: nothing shared by accident
    again = {(i, g.name): kkt.kkt_residual(g, model, th, data.X, data.y, tau=0.05)
             for i, th in enumerate(points) for g in geos}
    assert len(calls) == solved                      # the same inputs: remembered
    for k in first:
        assert (again[k].residual, again[k].fenchel) == (first[k].residual, first[k].fenchel)
        np.testing.assert_array_equal(again[k].lam, first[k].lam)
    kkt.kkt_residual(geos[0], model, th1, data.X, data.y, tau=0.2)
    assert len(calls) == solved + 1                  # another face tolerance: the face solved anew
    scaled = {k: 3.0 * v for k, v in th2.items()}   # same direction: the same normalized problem
    assert kkt.fenchel_residual(geos[1], model, scaled, data.X, data.y) == pytest.approx(first[1, geos[1].name].fenchel,
                                                                                         rel=1e-9)
    monkeypatch.setattr(kkt, "_SOLVED", type(kkt._SOLVED)())
    for (i, name), r in first.items():               # remembered values equal fresh solves
        g = geos[0] if name == geos[0].name else geos[1]
        fresh = kkt.kkt_residual(g, model, points[i], data.X, data.y, tau=0.05)   # (a re-used compiled problem
        assert (fresh.residual, fresh.fenchel) == pytest.approx((r.residual, r.fenchel), rel=1e-9, abs=1e-12)  # ulps)
    assert first[0, "linf"].fenchel != first[1, "linf"].fenchel   # the two points really differ
    a, b = G.Hybrid(0.5), G.Hybrid(0.5 + 1e-9)   # one name ("hybrid(c=0.5)"), two norms: two problems, two values
    assert a.name == b.name
    ra, rb = (kkt.fenchel_residual(h, model, th1, data.X, data.y) for h in (a, b))
    assert ra != rb
