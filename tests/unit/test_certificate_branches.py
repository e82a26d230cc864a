"""The max-margin certificate of oracles.kkt (`certify`, `Certificate.ok`) for matrix models in the spectral and hybrid
geometries: each condition violated alone on a hand-built (θ, λ), and the composite `ok` refusing each alone."""

import numpy as np
import pytest

from ibverify import IbverifyError, models
from ibverify import geometry as G
from ibverify.oracles import kkt

E11, E22 = np.diag([1.0, 0.0]), np.diag([0.0, 1.0])
MAT = models.MatrixLinear(2, 2)
X, Y = np.array([E11, E22]), np.ones(2)          # max ⟨W, E_ii⟩ over ‖W‖₂ ≤ 1: W = I, γ* = 1
X3, Y3 = np.array([E11, E22, E11]), np.ones(3)   # a repeated sample: λ may trade between its two copies


def _cert(geometry, X, Y, diag, lam):
    return kkt.certify(geometry, MAT, X, Y, {"W": np.diag(diag)}, np.array(lam, float))


@pytest.mark.parametrize("geometry,scale", [(G.Spectral(), 1.0), (G.Hybrid(c=2.0), 2.0)])
def test_certificate_holds_at_the_matrix_optimum(geometry, scale):
    c = _cert(geometry, X, Y, [1.0, 1.0], [0.5 * scale, 0.5 * scale])
    assert c.ok and c.lower == pytest.approx(1 / scale) and c.upper == pytest.approx(1 / scale)
    assert c.primal_violation == 0 and c.dual_violation == pytest.approx(0, abs=1e-12) and c.gap == pytest.approx(0)


@pytest.mark.parametrize("geometry,scale", [(G.Spectral(), 1.0), (G.Hybrid(c=2.0), 2.0)])
def test_primal_infeasibility_alone_fails_the_certificate(geometry, scale):
    c = _cert(geometry, X, Y, [1.0, 0.5], [0.5 * scale, 0.5 * scale])
    assert not c.primal_feasible and c.dual_feasible and c.gap_closed and not c.ok
    assert c.primal_violation == pytest.approx(0.5)


@pytest.mark.parametrize("geometry,scale", [(G.Spectral(), 1.0), (G.Hybrid(c=2.0), 2.0)])
def test_dual_infeasibility_alone_fails_the_certificate(geometry, scale):
    """‖Σλ_i y_i X_i‖_* = 1.2 > 1 (nuclear norm / c), primal feasible and Σλ = ‖θ‖: only the dual condition fails."""
    c = _cert(geometry, X, Y, [1.2, 1.2], [0.6 * scale, 0.6 * scale])
    assert c.primal_feasible and not c.dual_feasible and c.gap_closed and not c.ok
    assert c.dual_violation == pytest.approx(0.2)


def test_a_negative_multiplier_alone_fails_the_certificate():
    """λ = (0.6, 0.5, −0.1): Σλ_i X_i = ½I (nuclear norm 1), Σλ = 1 = ‖I‖₂: only λ ≥ 0 fails."""
    c = _cert(G.Spectral(), X3, Y3, [1.0, 1.0], [0.6, 0.5, -0.1])
    assert c.primal_feasible and c.gap_closed and not c.dual_feasible and not c.ok
    assert c.dual_violation == pytest.approx(0.1)
    assert _cert(G.Spectral(), X3, Y3, [1.0, 1.0], [0.25, 0.5, 0.25]).ok     # the same v with λ ≥ 0


@pytest.mark.parametrize("geometry,scale", [(G.Spectral(), 1.0), (G.Hybrid(c=2.0), 2.0)])
def test_duality_gap_alone_fails_the_certificate(geometry, scale):
    c = _cert(geometry, X, Y, [2.0, 2.0], [0.5 * scale, 0.5 * scale])
    assert c.primal_feasible and c.dual_feasible and not c.gap_closed and not c.ok
    assert c.gap == pytest.approx(0.5)


def test_the_tolerance_applies_to_each_condition():
    c = kkt.certify(G.Spectral(), MAT, X, Y, {"W": np.diag([1.2, 1.2])}, np.array([0.6, 0.6]), tol=0.25)
    assert c.ok and c.dual_violation == pytest.approx(0.2)


def test_spectral_certified_max_margin_hand_value():
    theta, c = kkt.certified_max_margin(G.Spectral(), MAT, X, Y)
    assert c.ok and c.upper == pytest.approx(1.0, rel=1e-6) and c.lower == pytest.approx(1.0, rel=1e-6)
    np.testing.assert_allclose(theta["W"], np.eye(2), atol=1e-5)


def test_a_network_is_refused():
    with pytest.raises(IbverifyError, match="linear model"):
        kkt.certify(G.L2(), models.DeepLinear(2, (2,)), X[:, :, 0], Y, {}, np.ones(2))
