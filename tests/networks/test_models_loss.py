"""Models: hand-computed values, gradients vs finite differences and mpmath, homogeneity; log-domain loss."""

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings

from ibverify import IbverifyError
from ibverify import losses as loss
from ibverify import models
from ibverify.strategies.network import model_and_point


def test_two_layer_hand_values():
    m = models.TwoLayer(2, 1, q=2.0)
    th = {"W": np.array([[1.0, 0.0]]), "a": np.array([2.0])}
    X = np.array([[3.0, 1.0]])
    assert m.outputs(th, X)[0] == 18.0                      # 2 · 3²
    J = m.jac(th, X)
    assert J["a"][0, 0] == 9.0                              # σ(h) = 9
    np.testing.assert_array_equal(J["W"][0, 0], [36.0, 12.0])   # a·q·h·x = 2·2·3·(3, 1)
    assert m.L == 3 and m.degrees == {"W": 2.0, "a": 1.0} and m.smooth


def test_relu_flagged_nonsmooth_and_bad_q():
    assert not models.TwoLayer(2, 3, q=1.0).smooth
    with pytest.raises(IbverifyError):
        models.TwoLayer(2, 3, q=0.5)


def test_deep_linear_hand_values():
    m = models.DeepLinear(2, (2,))
    th = {"W1": np.array([[1.0, 2.0], [0.0, 1.0]]), "W2": np.array([[3.0, -1.0]])}
    X = np.array([[1.0, 1.0]])
    assert m.outputs(th, X)[0] == 3 * 3 - 1 * 1            # W1 x = (3, 1)
    J = m.jac(th, X)
    np.testing.assert_array_equal(J["W2"][0], [[3.0, 1.0]])
    np.testing.assert_array_equal(J["W1"][0], [[3.0, 3.0], [-1.0, -1.0]])
    assert m.L == 2


def _fd(model, theta, X, eps=1e-6):
    out = {}
    for k, v in theta.items():
        g = np.zeros(v.shape + (X.shape[0],))
        for idx in np.ndindex(v.shape):
            tp = {kk: vv.copy() for kk, vv in theta.items()}
            tm = {kk: vv.copy() for kk, vv in theta.items()}
            tp[k][idx] += eps
            tm[k][idx] -= eps
            g[idx] = (model.outputs(tp, X) - model.outputs(tm, X)) / (2 * eps)
        out[k] = np.moveaxis(g, -1, 0)
    return out


def test_deep_relu_hand_values():
    m = models.DeepReLU(2, (2, 1), q=2.0)
    th = {"W1": np.array([[1.0, 0.0], [0.0, -1.0]]), "W2": np.array([[1.0, 2.0]]), "a": np.array([3.0])}
    X = np.array([[2.0, 1.0]])
    # h1 = (2, −1), z1 = (4, 0), σ'(h1) = (4, 0); h2 = 4, z2 = 16, σ'(h2) = 8; f = 3 · 16
    assert m.outputs(th, X)[0] == 48.0
    J = m.jac(th, X)
    assert J["a"][0, 0] == 16.0
    np.testing.assert_array_equal(J["W2"][0], [[96.0, 0.0]])            # a σ'(h2) z1ᵀ = 3·8·(4, 0)
    np.testing.assert_array_equal(J["W1"][0], [[192.0, 96.0], [0.0, 0.0]])   # (W2ᵀ 24) ∘ σ'(h1) xᵀ: 24·1·4·(2, 1)
    assert m.degrees == {"W1": 4.0, "W2": 2.0, "a": 1.0} and m.L == 7 and m.smooth
    assert list(m.blocks) == ["W1", "W2", "a"] and m.blocks["W2"] == (1, 2)


def test_deep_relu_two_layers_is_the_two_layer_net_and_bad_q():
    rng = np.random.default_rng(5)
    two = models.TwoLayer(3, 4, 1.5)
    th = two.init(rng)
    X = rng.standard_normal((6, 3))
    deep = models.DeepReLU(3, (4,), 1.5)
    np.testing.assert_array_equal(deep.outputs({"W1": th["W"], "a": th["a"]}, X), two.outputs(th, X))
    assert deep.degrees == {"W1": 1.5, "a": 1.0}
    with pytest.raises(IbverifyError):
        models.DeepReLU(3, (4,), 1.0)                     # ReLU: not smooth, outside (M1)
    assert isinstance(models.make_model("deep", 3, width=5, depth=3), models.DeepReLU)
    assert models.make_model("deep", 3, width=5, depth=3).blocks == {"W1": (5, 3), "W2": (5, 5), "a": (5,)}


@settings(max_examples=25, deadline=None)
@given(model_and_point())
def test_blockwise_euler_identities(mp):
    """⟨∇_{θ_k} f, θ_k⟩ = L_k f for every block: the degrees the KKT signatures and LR-MSD use are the model's."""
    model, theta, X = mp
    f = model.outputs(theta, X)
    J = model.jac(theta, X)
    n = X.shape[0]
    assert sum(model.degrees.values()) == model.L
    for k in J:
        got = J[k].reshape(n, -1) @ theta[k].ravel()
        assert np.max(np.abs(got - model.degrees[k] * f)) <= 1e-12 * (1 + np.max(np.abs(f))), k


@settings(max_examples=25, deadline=None)
@given(model_and_point())
def test_jacobian_matches_finite_differences(mp):
    model, theta, X = mp
    if not model.smooth:   # ReLU kinks: finite differences are ill-defined at h = 0 only; still check generic points
        pass
    J, F = model.jac(theta, X), _fd(model, theta, X)
    for k in J:
        scale = 1.0 + np.max(np.abs(J[k]))
        assert np.max(np.abs(J[k] - F[k])) <= 1e-5 * scale


def test_two_layer_gradient_matches_mpmath():
    rng = np.random.default_rng(3)
    m = models.TwoLayer(3, 4, q=1.5)
    th = m.init(rng)
    x = rng.standard_normal(3)
    J = m.jac(th, x[None])
    with mpmath.workdps(40):
        def f(*w):
            W = [w[4 * 0 + 3 * j: 3 * j + 3] for j in range(4)]
            h = [sum(W[j][i] * mpmath.mpf(x[i]) for i in range(3)) for j in range(4)]
            return sum(mpmath.mpf(th["a"][j]) * max(mpmath.mpf(0), h[j]) ** mpmath.mpf(1.5) for j in range(4))
        w0 = [mpmath.mpf(v) for v in th["W"].ravel()]
        for i in range(12):
            d = mpmath.diff(lambda t: f(*(w0[:i] + [t] + w0[i + 1:])), w0[i])
            assert abs(float(d) - J["W"][0].ravel()[i]) <= 1e-12 * (1 + abs(float(d)))


@settings(max_examples=25, deadline=None)
@given(model_and_point())
def test_homogeneity_and_euler(mp):
    model, theta, X = mp
    f = model.outputs(theta, X)
    f2 = model.outputs({k: 2.5 * v for k, v in theta.items()}, X)
    tol = 1e-12 * (1 + np.max(np.abs(f2)))
    assert np.max(np.abs(f2 - 2.5 ** model.L * f)) <= tol
    J = model.jac(theta, X)
    n = X.shape[0]
    eul = sum(J[k].reshape(n, -1) @ theta[k].ravel() for k in J)
    assert np.max(np.abs(eul - model.L * f)) <= 1e-12 * (1 + np.max(np.abs(f)))


def test_log_loss_accurate_far_beyond_underflow():
    q = np.array([-50.0, 0.0, 30.0, 800.0, 1e5])
    got = loss.log_loss_terms(q, "logistic")
    with mpmath.workdps(60):
        want = [float(mpmath.log(mpmath.log1p(mpmath.exp(-mpmath.mpf(v))))) for v in q]
    np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_allclose(loss.log_weights(np.array([800.0]), "logistic"), [-800.0], rtol=1e-15)
    np.testing.assert_array_equal(loss.log_loss_terms(q, "exponential"), -q)


@pytest.mark.parametrize("kind", ["logistic", "exponential"])
def test_log_frame_gradient_equals_finite_difference(kind):
    rng = np.random.default_rng(0)
    m = models.TwoLayer(3, 4)
    th = m.init(rng)
    X, y = rng.standard_normal((5, 3)), np.array([1, -1, 1, -1, 1.0])
    g = loss.gradient(m, th, X, y, kind)

    def L(t):
        return float(np.exp(loss.evaluate(m, t, X, y, kind).log_loss))
    for k in th:
        for idx in np.ndindex(th[k].shape):
            tp = {kk: vv.copy() for kk, vv in th.items()}
            tm = {kk: vv.copy() for kk, vv in th.items()}
            tp[k][idx] += 1e-6
            tm[k][idx] -= 1e-6
            assert abs((L(tp) - L(tm)) / 2e-6 - g[k][idx]) <= 1e-6 * (1 + abs(g[k][idx]))


def test_log_frame_survives_huge_margins():
    m = models.Linear(2)
    X, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, 1.0])
    ev = loss.evaluate(m, {"w": np.array([2000.0, 3000.0])}, X, y)
    assert ev.log_scale == pytest.approx(-2000.0, abs=1e-9)      # ∇ℒ ≈ e^{−2000} ĝ, far below float64
    np.testing.assert_allclose(ev.ghat["w"], [-1.0, 0.0], atol=1e-300)
    assert ev.underflow_samples == 1                               # e^{−1000} relative: flushed, reported


def test_one_loss_module():
    """networks.loss uses the per-sample losses of ibverify.losses (one implementation)."""
    from ibverify import losses

    assert loss.log_weights is losses.log_weights and loss.log_loss_terms is losses.log_loss_terms
    assert loss.logsumexp is losses.logsumexp and loss.LOSSES == losses.LOSSES
    q = np.array([-800.0, -3.0, 0.0, 2.5, 900.0])
    np.testing.assert_allclose(np.exp(losses.log_loss_terms(q[1:4], "logistic")), np.log1p(np.exp(-q[1:4])))
    np.testing.assert_allclose(losses.log_loss_terms(q, "exponential"), -q)
    assert losses.logsumexp(np.array([-1e4, -1e4])) == pytest.approx(-1e4 + np.log(2.0))
    with pytest.raises(IbverifyError):
        losses.log_loss_terms(q, "hinge")
