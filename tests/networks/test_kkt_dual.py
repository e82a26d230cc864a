"""oracles.kktdual: the Fenchel KKT residual without cvxpy, accepted only on its own certificate, and kkt's fallback to
the cvxpy solve when the certificate fails. Hand-solved problems, a degenerate active set, and the two-layer net in
every geometry against the cvxpy solve."""

import numpy as np
import pytest

from ibverify import geometry as G
from ibverify import models
from ibverify.data import netdata as datasets
from ibverify.oracles import kkt, kktdual

L2_HAND = np.sqrt(0.6)     # θ = (2, 1) on X = I, y = (1, 1): F* = 0.3 in ℓ2 (μ = (0.2, 0.2)), 3/8 in ℓ∞ (s = 1/4)
LINF_HAND = np.sqrt(0.75)


def same(fast: float, slow: float) -> bool:
    """Two residuals r = sqrt(2F) agree when their F do, to cvxpy's solver tolerance (1e-11 absolute: at r ≈ 0
    cvxpy's r is ≈ 1e-6) and 1e-7 relative."""
    return abs(fast * fast - slow * slow) / 2 <= 1e-10 + 1e-7 * slow * slow


def hand(theta):
    return models.Linear(2), {"w": np.array(theta, float)}, np.eye(2), np.ones(2)


@pytest.fixture
def fresh(monkeypatch):
    """Empty memos (no value remembered from another test) and a record of the cvxpy fallback's calls."""
    monkeypatch.setattr(kkt, "_SOLVED", type(kkt._SOLVED)())
    monkeypatch.setattr(kktdual, "_LAST", {})
    calls = []
    real = kkt.fenchel_cvxpy
    monkeypatch.setattr(kkt, "fenchel_cvxpy", lambda *a: calls.append(a[0].name) or real(*a))
    return calls


@pytest.mark.parametrize("geo, theta, value", [(G.L2(), (2, 1), L2_HAND), (G.Linf(), (2, 1), LINF_HAND),
                                               (G.L2(), (1, 1), 0.0), (G.Linf(), (1, 1), 0.0),
                                               (G.Linf(), (1, 0.5), np.sqrt(0.75))])
def test_fast_path_hand_values(fresh, geo, theta, value):
    m, th, X, y = hand(theta)
    assert kkt.fenchel_residual(geo, m, th, X, y) == pytest.approx(value, abs=1e-7)
    assert fresh == []                                       # certified: no cvxpy solve


def test_certificate_of_the_hand_pair_and_of_each_broken_condition():
    """Normalized ℓ2 problem of θ = (2, 1): Ĝ_i = √5 e_i, c = (1, 1); optimum μ* = (0.2, 0.2), w* = (1, 1)/√5."""
    r5 = np.sqrt(5.0)
    Gd, shapes, c = {"w": r5 * np.eye(2)}, {"w": (2,)}, np.ones(2)
    ok = kktdual.certify(G.L2(), Gd, shapes, c, np.array([0.2, 0.2]), {"w": np.ones(2) / r5})
    assert ok.accepted and ok.value == pytest.approx(0.3, abs=1e-15) and ok.lower == pytest.approx(0.3, abs=1e-15)
    assert abs(ok.stationarity) < 1e-15 and abs(ok.slackness) < 1e-15 and ok.infeasibility <= 1e-15
    # stationarity and slackness broken: w = (2, 1)/√5 is feasible (slack (1, 0)), V = w* ≠ w
    off = kktdual.certify(G.L2(), Gd, shapes, c, np.array([0.2, 0.2]), {"w": np.array([2.0, 1.0]) / r5})
    assert not off.accepted
    assert off.stationarity == pytest.approx(0.1, rel=1e-12)            # ½‖V − w‖² = ½·(1/5)
    assert off.slackness == pytest.approx(0.2, rel=1e-12)               # μ_1·(⟨Ĝ_1, w⟩ − c_1) = 0.2·1
    assert off.value - off.lower == pytest.approx(0.3, rel=1e-12)       # the gap is their sum
    # dual feasibility broken: w = (1, 0.9)/√5 violates constraint 2 by 10 %; scaled up it is feasible, the bound loose
    bad = kktdual.certify(G.L2(), Gd, shapes, c, np.array([0.2, 0.2]), {"w": np.array([1.0, 0.9]) / r5})
    assert not bad.accepted and bad.infeasibility == pytest.approx(0.1, rel=1e-12)
    assert bad.lower == pytest.approx(0.5 - 0.5 * 1.81 / (5 * 0.81), rel=1e-12)   # w/0.9: D = ½ − ½‖w‖²/0.81
    # stationarity alone broken: w = w* (every constraint active: no slack), μ = (0.4, 0) rescaled to (0.2, 0)
    one = kktdual.certify(G.L2(), Gd, shapes, c, np.array([0.4, 0.0]), {"w": np.ones(2) / r5})
    assert not one.accepted and one.infeasibility <= 1e-15 and abs(one.slackness) < 1e-15
    assert one.stationarity == pytest.approx(0.1, rel=1e-12)            # ½‖V − w‖², V = (1, 0)/√5
    assert one.value == pytest.approx(0.4, rel=1e-12) and one.support == 1   # ½ + ½·0.2 − 0.2
    # a multiplier off its optimal ray is rescaled along it: (1, 1) gives the same value
    assert kktdual.certify(G.L2(), Gd, shapes, c, np.ones(2), {"w": np.ones(2) / r5}).value == pytest.approx(0.3)


def test_a_failed_certificate_falls_back_to_cvxpy(fresh, monkeypatch):
    """The fast solve's pair is perturbed (its multipliers moved to one sample): the certificate rejects it and the
    residual is cvxpy's, still the hand value."""
    real = kktdual.solve

    def broken(geometry, Gd, shapes, c, q, key=None):
        real(geometry, Gd, shapes, c, q, key)
        return kktdual.certify(geometry, Gd, shapes, c, np.array([1.0, 0.0]),
                               {k: np.ones(s) for k, s in shapes.items()})

    monkeypatch.setattr(kktdual, "solve", broken)
    m, th, X, y = hand((2, 1))
    assert kkt.fenchel_residual(G.L2(), m, th, X, y) == pytest.approx(L2_HAND, abs=1e-6)
    assert fresh == ["l2"]


def test_no_fast_solver_for_another_geometry_uses_cvxpy(fresh):
    m, th, X, y = hand((2, 1))
    value = kkt.fenchel_residual(G.L1(), m, th, X, y)
    assert fresh == ["l1"] and value > 0.1
    # ℓ1: N = 3, Ĝ_i = 3 e_i, c = (1, 1); min ½ + ½·9·max(μ)² − Σμ at μ = (2/9, 2/9): F = ½ − 2/9
    assert value == pytest.approx(np.sqrt(2 * (0.5 - 2 / 9)), abs=1e-6)


def test_degenerate_active_set_duplicates_and_a_dependent_sample(fresh):
    """Every sample on the margin, one duplicated and one the mean of two others: the multipliers are not unique,
    the value is (both geometries: certified, and equal to cvxpy's)."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])
    y = np.ones(4)
    m = models.Linear(2)
    for th, want in (((1.0, 1.0), {"l2": 0.0, "linf": 0.0}), ((2.0, 1.0), {"l2": None, "linf": None})):
        for geo in (G.L2(), G.Linf()):
            fast = kkt.fenchel_residual(geo, m, {"w": np.array(th)}, X, y)
            assert fresh == []
            ts, q, _, thp, Gd = kkt._normalized(geo, m, {"w": np.array(th)}, X, y)
            c = sum(Gd[k] @ np.ravel(thp[k]) for k in ts) - (q - 1.0) / m.L
            slow = kkt.fenchel_cvxpy(geo, Gd, {"w": (2,)}, c)
            fresh.clear()
            assert same(fast, slow)
            if want[geo.name] is not None:
                assert fast == pytest.approx(want[geo.name], abs=1e-7)


def _net_points():
    data = datasets.make_data("teacher", n=24, d=4, seed=3)
    model = models.TwoLayer(4, 5, 2.0)
    out = []
    for s in range(400):
        th = model.init(np.random.default_rng(s), 1.0)
        if np.min(data.y * model.outputs(th, data.X)) > 0:
            out.append(th)
            if len(out) == 2:
                break
    assert len(out) == 2, "no initial point with positive margin"
    return data, model, out


@pytest.mark.parametrize("geo", [G.L2(), G.Linf(), G.MaxSpectral(), G.Hybrid(1.0), G.Hybrid(0.3)],
                         ids=lambda g: g.name)
def test_two_layer_net_every_geometry_agrees_with_cvxpy(fresh, geo):
    """The cones of each norm (a second-order cone, inequalities, the split spectral cone of a 5 × 4 matrix with its
    reduced bases) give cvxpy's value at two points, the second warm-started from the first's active set."""
    data, model, points = _net_points()
    for th in points:
        fast = kkt.fenchel_residual(geo, model, th, data.X, data.y)
        assert fresh == []
        ts, q, _, thp, Gd = kkt._normalized(geo, model, th, data.X, data.y)
        c = sum(Gd[k] @ np.ravel(thp[k]) for k in ts) - (q - 1.0) / model.L
        slow = kkt.fenchel_cvxpy(geo, Gd, {k: v.shape for k, v in ts.items()}, c)
        fresh.clear()
        assert 0.01 < fast < 1.0 and same(fast, slow)


def test_spectral_cone_is_the_spectral_norm():
    """The split cone alone: min t s.t. ‖Z‖_sp ≤ t with Z fixed to a known matrix, both orientations (p ≤ r, p > r)."""
    for Z in (np.array([[3.0, 0.0, 1.0], [0.0, 1.0, 0.0]]), np.array([[1.0, 2.0], [0.0, 1.0], [2.0, 0.0]])):
        p, r = Z.shape
        prog = kktdual._Conic()
        start = prog.variables(Z.size)
        import clarabel
        prog.block([(j, start + j, 1.0) for j in range(Z.size)], Z.ravel(), lambda: clarabel.ZeroConeT(Z.size))
        kktdual._spectral(prog, start, p, r, 2.0)                        # ‖2Z‖_sp ≤ t
        x, _ = prog.solve()
        assert x[0] == pytest.approx(2.0 * np.linalg.norm(Z, 2), rel=1e-7)
