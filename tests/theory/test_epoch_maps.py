"""Numeric epoch maps (spec §3, §5.1–5.2) and the sympy proofs (each a few seconds at most)."""

import mpmath
import numpy as np
import pytest
import sympy as sp

from ibverify.theory import epoch_map as em
from ibverify.theory import symbolic


def test_c_inc_hand_values():
    assert em.c_inc(0.0, 0.0, 5) == 1.0
    # N = 2, β1 = 1/2, β2 = 1/2: (1/2)/(3/4) · sqrt((3/4)/(1/2)) = (2/3) sqrt(3/2)
    assert em.c_inc(0.5, 0.5, 2) == pytest.approx(2 / 3 * np.sqrt(1.5), rel=1e-15)


@pytest.mark.parametrize("n", [5, 8, 17, 32])
@pytest.mark.parametrize("b1,b2", [(0.9, 0.95), (0.5, 0.6), (0.0, 0.0), (0.9, 0.999), (0.3, 0.3)])
def test_frozen_cyclic_adam_equals_c_inc_map(n, b1, b2):
    G = np.random.default_rng(n).standard_normal((n, 4))
    sim, closed = em.frozen_cyclic_adam(G, b1, b2), em.inc_epoch_map(G, b1, b2)
    assert np.allclose(sim, closed, rtol=1e-8, atol=0)


def test_beta_zero_is_sum_of_per_sample_signs():
    G = np.random.default_rng(0).standard_normal((7, 3))
    assert np.array_equal(em.inc_epoch_map(G, 0.0, 0.0), np.sign(G).sum(axis=0))


def test_proxy_limit_numeric():
    G = np.random.default_rng(1).standard_normal((6, 5))
    for b1 in (0.0, 0.5, 0.9, 0.99):
        assert np.allclose(em.inc_epoch_map(G, b1, 1 - 1e-7), em.proxy_map(G), rtol=1e-6, atol=0)


def test_map_at_w_is_log_domain_exact():
    """At margins ~1000 float64 σ underflows; the map must equal an mpmath evaluation."""
    rng = np.random.default_rng(2)
    Z = rng.standard_normal((5, 3))
    w = 400.0 * np.linalg.lstsq(Z, np.ones(5), rcond=None)[0] + rng.standard_normal(3)
    got = em.inc_epoch_map_at(Z, w, 0.9, 0.95)
    ctx = mpmath.mp.clone()
    ctx.dps = 60
    s = [ctx.exp(-ctx.log1p(ctx.exp(ctx.mpf(float(z @ w))))) for z in Z]  # σ(−z·w)
    G = [[-s[j] * ctx.mpf(float(Z[j, k])) for k in range(3)] for j in range(5)]
    ref = []
    for k in range(3):
        tot = ctx.mpf(0)
        for i in range(5):
            A = sum(ctx.mpf(0.9) ** ((i - j) % 5) * G[j][k] for j in range(5))
            B = sum(ctx.mpf(0.95) ** ((i - j) % 5) * G[j][k] ** 2 for j in range(5))
            tot += A / ctx.sqrt(B)
        ref.append(float(tot * ctx.mpf(em.c_inc(0.9, 0.95, 5))))
    assert np.allclose(got, ref, rtol=1e-12)
    assert np.all(np.isfinite(got)) and np.any(got != 0)


def test_proxy_step_is_scale_free_and_matches_formula():
    rng = np.random.default_rng(5)
    Z = rng.standard_normal((4, 3))
    w = rng.standard_normal(3)
    s = 1 / (1 + np.exp(Z @ w))
    expected = (s @ Z) / 4 / np.sqrt((s * s) @ (Z * Z))  # −∇L ⊘ sqrt(Σ ∇L_i²), L = mean
    assert np.allclose(em.proxy_step(Z, w), expected, rtol=1e-13)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_symbolic_epoch_map_inc(n):
    pr = symbolic.prove_epoch_map_inc(n)
    assert pr.holds, pr.failures()


@pytest.mark.parametrize("n", [2, 3, 4])
def test_symbolic_proxy_limit(n):
    pr = symbolic.prove_proxy_limit(n)
    assert pr.holds, pr.failures()


@pytest.mark.parametrize("n", [2, 3])
def test_symbolic_proxy_closed_form(n):
    assert symbolic.prove_proxy_closed_form(n).holds


def test_symbolic_gr_isotropic():
    assert symbolic.prove_gr_isotropic(3, 3).holds


def test_symbolic_proofs_can_fail():
    """Wrong statements are rejected with an exact counterexample, not silently accepted."""
    wrong_c = symbolic.prove_epoch_map_inc(2, c_inc=lambda b1, b2, n: (1 - b1) / (1 - b1 ** n))
    assert not wrong_c.holds and wrong_c.failures()[0].counterexample
    wrong_lim = symbolic.prove_proxy_limit(2, target=lambda S, Q, n: n * S / sp.sqrt(Q))
    assert not wrong_lim.holds
    eps = symbolic.prove_proxy_closed_form(2, eps=sp.Rational(1, 10**8))
    assert not eps.holds and eps.steps[0].counterexample


def test_identity_counterexample_is_exact():
    x = sp.Symbol("x", real=True)
    st = symbolic.identity("x² = x", x ** 2, x, (x,))
    assert not st.holds and float(st.counterexample["difference"]) != 0
    assert symbolic.identity("(x+1)² = x²+2x+1", (x + 1) ** 2, x ** 2 + 2 * x + 1, (x,)).holds
