"""M(c), the batch metric, and the certified P_Adam(c) solve: hand-computed values and certificates."""

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.theory import certificate, metric, padam


def test_metric_hand_computed():
    Z = np.array([[3.0, 0.0], [-1.0, 2.0]])
    c = np.array([0.5, 0.5])
    # M_kk = sqrt(Σ c_i² z_ik²): k=0: sqrt(.25·9 + .25·1) = sqrt(2.5); k=1: sqrt(.25·4) = 1
    assert np.allclose(metric.metric_diag(Z, c), [np.sqrt(2.5), 1.0], rtol=0, atol=1e-15)


def test_batch_metric_endpoints():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((6, 4))
    c = rng.dirichlet(np.ones(6))
    m1 = metric.metric_diag(Z, c)
    # b = 1: sqrt(N) M(c);  b = N: |S(c)|
    assert np.allclose(metric.metric_diag_batch(Z, c, 1), np.sqrt(6) * m1, rtol=1e-14)
    assert np.allclose(metric.metric_diag_batch(Z, c, 6), np.abs(c @ Z), rtol=1e-14)
    # b = 3 by hand
    S, Q = c @ Z, (c * c) @ (Z * Z)
    assert np.allclose(metric.metric_diag_batch(Z, c, 3), np.sqrt(6 / 15 * (2 * S**2 + 3 * Q)), rtol=1e-14)


def test_simplex_validation():
    with pytest.raises(IbverifyError):
        metric.metric_diag(np.eye(2), [0.7, 0.7])
    with pytest.raises(IbverifyError):
        metric.metric_diag(np.eye(2), [1.5, -0.5])


def test_loss_weights_log_domain_at_huge_margins():
    Z = np.array([[1.0, 0.0], [0.0, 1.0]])
    w = np.array([2000.0, 2001.0])  # σ(−2000) underflows in float64
    c = metric.loss_weights(Z, w)
    assert np.allclose(c, [np.e / (1 + np.e), 1 / (1 + np.e)], rtol=1e-12)


def test_padam_two_point_hand_solution():
    # M = I, z1 = (1, 0), z2 = (0, 2): w = (1, 1/2), λ = (1, 1/4)
    Z = np.array([[1.0, 0.0], [0.0, 2.0]])
    for solver in ("clarabel", "nnls"):
        sol = padam.solve(Z, np.ones(2), solver=solver)
        assert np.allclose(sol.w, [1.0, 0.5], atol=1e-12)
        assert np.allclose(sol.lam, [1.0, 0.25], atol=1e-12)
        assert sol.cert.kkt < 1e-12


def test_padam_inactive_constraint_has_zero_dual():
    # z3 = (2, 2) has margin 3 at w = (1, 1/2): inactive, λ3 = 0
    Z = np.array([[1.0, 0.0], [0.0, 2.0], [2.0, 2.0]])
    sol = padam.solve(Z, np.ones(2))
    assert sol.lam[2] == 0.0 and list(sol.active) == [0, 1]


def test_padam_metric_enters():
    # M = diag(4, 1), single constraint z = (1, 1): M w = λ z, z·w = 1 → w = λ(1/4, 1), λ = 4/5
    sol = padam.solve(np.array([[1.0, 1.0]]), np.array([4.0, 1.0]))
    assert np.allclose(sol.w, [0.2, 0.8], atol=1e-12) and np.isclose(sol.lam[0], 0.8, atol=1e-12)


def test_clarabel_and_nnls_agree_on_random_data():
    rng = np.random.default_rng(3)
    Z = rng.standard_normal((8, 20))
    m = rng.uniform(0.2, 3.0, 20)
    a, b = padam.solve(Z, m), padam.solve(Z, m, solver="nnls")
    assert np.allclose(a.w, b.w, rtol=1e-9, atol=1e-12) and np.allclose(a.lam, b.lam, rtol=1e-8, atol=1e-12)


def test_certificate_rejects_wrong_metric_and_perturbed_dual():
    rng = np.random.default_rng(4)
    Z = rng.standard_normal((6, 12))
    m = rng.uniform(0.5, 2.0, 12)
    sol = padam.solve(Z, m)
    certificate.verify(Z, m, sol.w, sol.lam)  # passes
    with pytest.raises(IbverifyError, match="KKT certificate failed"):
        certificate.verify(Z, m * 1.01, sol.w, sol.lam)  # a wrong M
    lam = sol.lam.copy()
    lam[0] *= 1.001
    with pytest.raises(IbverifyError, match="stationarity"):
        certificate.verify(Z, m, sol.w, lam)  # a perturbed dual
    with pytest.raises(IbverifyError):
        certificate.verify(Z, m, sol.w * 0.999, sol.lam)  # infeasible primal
    neg = sol.lam.copy()
    neg[np.argmin(neg)] = -1e-3
    assert certificate.residuals(Z, m, sol.w, neg).dual > 0


def test_not_separable_raises():
    Z = np.array([[1.0, 0.0], [-1.0, 0.0]])
    for solver in ("clarabel", "nnls"):
        with pytest.raises(IbverifyError):
            padam.solve(Z, np.ones(2), solver=solver)


def test_bad_metric_raises():
    with pytest.raises(IbverifyError):
        padam.solve(np.eye(2), np.array([1.0, -1.0]))
    with pytest.raises(IbverifyError):
        padam.solve(np.eye(2), np.ones(2), solver="simplex")
