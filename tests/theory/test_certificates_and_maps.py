"""Each certificate condition rejects a point that breaks it alone; the maps have their defining
properties (T maps the simplex into itself and onto the dual's support, the damped step is the stated
convex combination, M(c) is the stated formula)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibverify import IbverifyError
from ibverify.data import gaussian
from ibverify.theory import certificate, fixed_point, metric, padam

CONDITIONS = ("stationarity", "primal", "dual", "complementarity")


def only_broken(cert, name, tol=1e-12):
    vals = cert.as_dict()
    assert vals[name] > 1e-3, (name, vals)
    assert all(vals[k] <= tol for k in CONDITIONS if k != name), (name, vals)
    assert cert.kkt == vals[name]


def test_certified_point_passes():
    # M = I, z1 = (1, 0), z2 = (0, 2): w = (1, 1/2), λ = (1, 1/4) is optimal
    cert = certificate.verify(np.array([[1.0, 0.0], [0.0, 2.0]]), np.ones(2), [1.0, 0.5], [1.0, 0.25])
    assert cert.kkt == 0.0 and cert.gap == 0.0


def test_stationarity_alone():
    Z = np.array([[1.0, 0.0], [0.0, 2.0]])
    c = certificate.residuals(Z, np.ones(2), [1.0, 0.5], [1.0, 0.3])  # λ2 wrong; both constraints active
    only_broken(c, "stationarity")
    with pytest.raises(IbverifyError, match="KKT certificate failed"):
        certificate.verify(Z, np.ones(2), [1.0, 0.5], [1.0, 0.3])


def test_primal_feasibility_alone():
    Z = np.array([[1.0, 0.0], [0.0, 2.0], [0.5, 0.4]])  # z3·w = 0.7 < 1, λ3 = 0
    only_broken(certificate.residuals(Z, np.ones(2), [1.0, 0.5], [1.0, 0.25, 0.0]), "primal")


def test_dual_feasibility_alone():
    Z = np.array([[1.0, 1.0], [1.0, 2.0]])  # w = (1, 0): both active, M w = 2 z1 − 1 z2, λ2 < 0
    only_broken(certificate.residuals(Z, np.ones(2), [1.0, 0.0], [2.0, -1.0]), "dual")


def test_complementarity_alone():
    Z = np.array([[1.0, 0.0], [0.0, 2.0], [2.0, 2.0]])  # z3·w = 3: inactive but λ3 = 0.1 > 0
    only_broken(certificate.residuals(Z, np.ones(2), [1.0, 0.5], [0.8, 0.15, 0.1]), "complementarity")


def test_metric_is_the_stated_formula():
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((5, 3))
    for i in range(5):  # a single sample: M(e_i) = |z_i|
        assert np.allclose(metric.metric_diag(Z, np.eye(5)[i]), np.abs(Z[i]), rtol=0, atol=1e-15)
    c = rng.dirichlet(np.ones(5))
    by_hand = np.array([np.sqrt(sum(c[i] ** 2 * Z[i, k] ** 2 for i in range(5))) for k in range(3)])
    assert np.allclose(metric.metric_diag(Z, c), by_hand, rtol=1e-14)
    # labels drop out: flipping a sample's sign leaves M(c) unchanged
    Zf = Z.copy()
    Zf[2] *= -1
    assert np.array_equal(metric.metric_diag(Zf, c), metric.metric_diag(Z, c))


@pytest.fixture(scope="module")
def Zg():
    return gaussian(8, 20, np.random.default_rng(2)).Z


@settings(max_examples=10, deadline=None, derandomize=True)
@given(st.integers(0, 2**31), st.sampled_from([0.3, 1.0, 3.0]))
def test_T_maps_the_simplex_into_itself_on_the_dual_support(seed, conc):
    Z = gaussian(8, 20, np.random.default_rng(2)).Z
    c = np.random.default_rng(seed).dirichlet(np.full(8, conc))
    st_ = fixed_point.tmap(Z, c)
    img = st_.image
    assert img.min() >= 0 and img.sum() == pytest.approx(1.0, abs=1e-14)
    # T(c) = λ/‖λ‖₁ with λ the certified dual of P_Adam(c): zero off the active constraints
    assert np.all(img[np.setdiff1d(np.arange(8), st_.sol.active)] == 0.0)
    assert np.allclose(img, st_.dual.lam / st_.dual.lam.sum(), rtol=1e-14)
    # and P_Adam(c)'s stationarity holds with that dual: M(c) w = Σ λ_i z_i
    m = metric.metric_diag(Z, c)
    assert np.allclose(m * st_.sol.w, Z.T @ st_.dual.lam, rtol=1e-8, atol=1e-10)


def test_damped_step_is_the_convex_combination(Zg):
    c = np.random.default_rng(0).dirichlet(np.ones(8))
    img = fixed_point.tmap(Zg, c).image
    for theta in (0.0, 0.25, 0.9):
        got = fixed_point.damped(img, c, theta)
        assert np.allclose(got, (1 - theta) * img + theta * c, rtol=1e-14, atol=1e-16)
        assert got.min() >= 0 and got.sum() == pytest.approx(1.0, abs=1e-14)
    with pytest.raises(IbverifyError):
        fixed_point.damped(img, c, 1.0)
    # a fixed point of T is a fixed point of every damped step, and damping reaches the same c*
    fp = fixed_point.iterate(Zg)
    fp_d = fixed_point.iterate(Zg, damping=0.5)
    assert np.allclose(fixed_point.damped(fixed_point.tmap(Zg, fp.c).image, fp.c, 0.5), fp.c, atol=1e-9)
    assert np.allclose(fp_d.c, fp.c, atol=1e-8) and fp_d.direction @ fp.direction > 1 - 1e-12


def test_a_point_that_is_not_fixed_is_rejected(Zg):
    """The fixed-point certificate ‖T(c) − c‖₁: zero at c*, large at uniform c and at ŵ2's duals."""
    fp = fixed_point.iterate(Zg)
    assert fp.residual < 1e-10
    assert fixed_point.tmap(Zg, np.full(8, 1 / 8)).residual > 1e-2
    c_bad = fp.c.copy()
    j = int(np.argmax(c_bad))
    c_bad[j] -= 0.05
    c_bad[(j + 1) % 8] += 0.05  # leaves the simplex's face only slightly: still not fixed
    assert fixed_point.tmap(Zg, c_bad).residual > 1e-3
    # KKT of P_Adam(c*) at the fixed point, and each condition would have caught a broken p*
    m = metric.metric_diag(Zg, fp.c)
    sol = padam.solve(Zg, m)
    assert sol.cert.kkt < 1e-9
    only_broken(certificate.residuals(Zg, m, sol.w, sol.lam * 1.01), "stationarity", tol=1e-8)


def test_certificate_power_flags_each_condition():
    Z = np.array([[1.0, 0.0], [0.0, 2.0], [2.0, 2.0]])  # w = (1, 1/2), λ = (1, 1/4, 0); z3 inactive
    pw = certificate.power(Z, np.ones(2), [1.0, 0.5], [1.0, 0.25, 0.0])
    assert set(pw) == set(CONDITIONS) and all(v > 1e-3 for v in pw.values())
