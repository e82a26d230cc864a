"""The ℓp max-margin oracle (oracles.lp) and the ℓp steepest-descent map (transforms.steepest_lp): each certificate
condition refuses a point that breaks it, and the map is Hölder's equality case."""

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.engine import run
from ibverify.optim import OptimizerSpec
from ibverify.optim.backend import Float64, MPMath
from ibverify.optim.transforms import steepest_lp
from ibverify.oracles import max_margin, normalized_margin
from ibverify.oracles.lp import LP_CERT_RTOL, lp_certify, lp_max_margin, lp_residuals

Z = np.array([[0.846, 0.822, 0.33], [1.803, 0.905, 0.446], [1.037, 0.581, 0.365], [0.794, 0.028, 0.547]])


def _raw(p=3.0):
    """(Z/s, d, α) of the certified solve, α in the simplex (the certificate's own variables)."""
    m = lp_max_margin(Z, p)
    s = float(np.abs(Z).max())
    lam = m.duals * s
    return Z / s, m.direction, lam / lam.sum()


@pytest.mark.parametrize("p", [1.5, 3.0])
def test_lp_oracle_is_certified_and_between_its_neighbours(p):
    m = max_margin(Z, f"l{p:g}")
    assert m.norm == f"l{p:g}" and abs(np.linalg.norm(m.direction, p) - 1) < 1e-9
    assert m.certificate["duality_gap"] <= LP_CERT_RTOL
    assert normalized_margin(Z, m.direction, f"l{p:g}") == pytest.approx(m.margin, rel=1e-6)
    for other in ("l1", "l2", "linf"):   # no other norm's optimum does better in ℓp margin
        assert normalized_margin(Z, max_margin(Z, other).direction, f"l{p:g}") <= m.margin * (1 + 1e-6)
    assert lp_max_margin(7.0 * Z, p).margin == pytest.approx(7.0 * m.margin, rel=1e-6)   # scale


def test_certificate_accepts_the_solution():
    Zs, d, a = _raw()
    lp_certify(Zs, d, a, 3.0)


def test_certificate_refuses_primal_infeasibility():
    Zs, d, a = _raw()
    with pytest.raises(IbverifyError, match="primal_infeasibility"):
        lp_certify(Zs, 1.01 * d, a, 3.0)


def test_certificate_refuses_nonpositive_margin():
    Zs, d, a = _raw()
    with pytest.raises(IbverifyError, match="nonpositive_margin"):
        lp_certify(Zs, -d, a, 3.0)


def test_certificate_refuses_negative_dual_weights():
    Zs, d, a = _raw()
    k = int(np.argmin(a))             # a non-support sample: its weight goes negative, the sum stays 1
    b = a.copy()
    b[k] -= 0.05
    b[int(np.argmax(a))] += 0.05
    r = lp_residuals(Zs, d, b, 3.0)
    assert r["dual_negativity"] > LP_CERT_RTOL and r["dual_normalization"] <= LP_CERT_RTOL
    with pytest.raises(IbverifyError, match="dual_negativity"):
        lp_certify(Zs, d, b, 3.0)


def test_certificate_refuses_dual_weights_off_the_simplex():
    Zs, d, a = _raw()
    with pytest.raises(IbverifyError, match="dual_normalization"):
        lp_certify(Zs, d, 1.5 * a, 3.0)


def test_certificate_refuses_a_feasible_but_suboptimal_direction():
    """ŵ2 normalized in ℓ3: feasible, positive margin, valid duals, only the duality gap fails."""
    Zs, _, a = _raw()
    w2 = max_margin(Z, "l2").direction
    d = w2 / np.linalg.norm(w2, 3)
    r = lp_residuals(Zs, d, a, 3.0)
    assert r["primal_infeasibility"] <= LP_CERT_RTOL and r["dual_negativity"] == 0 and r["dual_normalization"] < 1e-12
    with pytest.raises(IbverifyError, match="duality_gap"):
        lp_certify(Zs, d, a, 3.0)


def test_weak_duality_bounds_hold_for_any_simplex_weights():
    Zs, d, _ = _raw()
    rng = np.random.default_rng(0)
    gamma = max_margin(Z, "l3").margin / np.abs(Z).max()
    for _ in range(50):
        a = rng.dirichlet(np.ones(len(Z)))
        assert lp_residuals(Zs, d, a, 3.0)["gamma_dual"] >= gamma * (1 - 1e-9)


@pytest.mark.parametrize("p", [1.5, 3.0, 4.0])
def test_steepest_lp_is_the_unit_lp_maximizer_of_the_inner_product(p):
    rng = np.random.default_rng(1)
    q = p / (p - 1)
    for _ in range(5):
        g = rng.standard_normal(6) * 10.0 ** rng.uniform(-200, 200)   # scale free: no overflow at 1e±200
        d, _ = steepest_lp(Float64(), p).update(g, ())
        gs = g / np.abs(g).max()
        ds, _ = steepest_lp(Float64(), p).update(gs, ())
        np.testing.assert_allclose(d, ds, rtol=1e-13)
        assert np.linalg.norm(d, p) == pytest.approx(1.0, rel=1e-12)
        assert gs @ d == pytest.approx(np.linalg.norm(gs, q), rel=1e-12)
        V = rng.standard_normal((2000, 6))
        V /= np.linalg.norm(V, p, axis=1)[:, None]
        assert (V @ gs).max() <= gs @ d * (1 + 1e-12)
    d0, _ = steepest_lp(Float64(), p).update(np.zeros(3), ())
    assert not d0.any()


def test_steepest_l3_row_mpmath_oracle_agrees_and_reaches_the_l3_margin():
    spec = OptimizerSpec("steepest-l3")
    a = run(Z, spec, 30, checkpoints=[1, 5, 30], engine="reference")
    b = run(Z, spec, 30, checkpoints=[1, 5, 30], engine="mpmath", dps=40)
    np.testing.assert_allclose(a.ws, b.ws, rtol=1e-12, atol=0)
    d, _ = steepest_lp(MPMath(30), 3.0).update(MPMath(30).array([0.3, -1.2, 0.0]), ())
    assert abs(np.linalg.norm(MPMath.to_float(d), 3) - 1) < 1e-14
    r = run(Z, OptimizerSpec("steepest-l3", lr=1.0, loss="exponential"), 3000, checkpoints=[3000])
    gap = {k: 1 - normalized_margin(Z, r.ws[-1], k) / max_margin(Z, k).margin for k in ("l3", "l2", "l1", "linf")}
    assert gap["l3"] < 0.01 and gap["l3"] < 0.5 * min(gap["l1"], gap["linf"]), gap
