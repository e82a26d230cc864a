"""Values of paper1_laws' log-domain helpers, including past the float64 underflow of the loss."""

import numpy as np

from ibverify.checks.paper1_laws import proxy_quantities, realized_weights


def _direct(Z, w):
    m = Z @ w
    s = 1 / (1 + np.exp(m))
    L = np.mean(np.log1p(np.exp(-m)))
    g = -(s @ Z) / len(Z)
    P = np.sqrt(((s[:, None] * Z) ** 2).sum(axis=0))  # P = diag(sqrt(Σ_i (σ_i z_i)²)), no 1/N
    return L, np.sqrt(g @ (g / P))


def test_proxy_quantities_equal_the_direct_formulas():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(6, 3))
    ws = rng.normal(size=(4, 3))
    Q = proxy_quantities(Z, ws)
    for k, w in enumerate(ws):
        L, G = _direct(Z, w)
        assert np.isclose(Q["L"][k], L, rtol=1e-12)
        assert np.isclose(Q["grad_norm"][k], G, rtol=1e-10)
        assert np.isclose(Q["ratio"][k], G / L, rtol=1e-10)
        assert np.isclose(Q["sq_ratio"][k], G * G / L, rtol=1e-10)
        assert np.isclose(Q["norm"][k], np.linalg.norm(w))


def test_proxy_ratio_is_exact_where_the_loss_underflows():
    """Margins 800 and 900: L ≈ e^{−800}/2 underflows, the ratio ‖∇L‖/L ≈ sqrt(N)·… does not."""
    Z = np.array([[800.0, 0.0], [0.0, 900.0]])
    w = np.array([1.0, 1.0])
    Q = proxy_quantities(Z, w[None] * 1.0)
    # σ_i = ℓ_i = e^{−m_i} to 1e−300: ‖∇L‖²_{P⁻¹} = (σ1·800 + σ2·900)/N² ≈ 800 e^{−800}/4, L ≈ e^{−800}/2.
    log_ratio = 0.5 * np.log(800) + 400
    assert np.isfinite(Q["ratio"][0]) and Q["ratio"][0] > 0
    assert np.isclose(np.log(Q["ratio"][0]), log_ratio, rtol=1e-9)
    assert np.isclose(np.log(Q["sq_ratio"][0]), np.log(800) - np.log(2), rtol=1e-9)


def test_realized_weights_recover_known_weights_without_overflow():
    """w1 − w0 = Σ_j c_j z_j with c_j = η σ_j κ̃_j / max_l σ_l a_l: the helper returns κ̃ of the kept samples,
    and a sample with σ_j ≈ e^{−900} (c_j ≈ 0) is dropped without an overflow."""
    Z = np.array([[1.0, 0.0, 0.0], [2.0, 1.0, 0.0], [1.0, 0.0, 900.0]])
    w0 = np.array([0.5, 0.2, 1.0])
    eta, kappa = 0.1, np.array([1.3, 0.7, 5.0])
    ls = -np.logaddexp(0.0, Z @ w0)
    la = np.log(np.abs(Z[:, 0]))
    top = (ls + la).max()
    c = eta * kappa * np.exp(ls - top)
    w1 = w0 + c @ Z
    with np.errstate(over="raise"):
        k = realized_weights(Z, w0, w1, eta)
    assert np.allclose(k, kappa[:2], rtol=1e-9)
