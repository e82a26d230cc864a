"""Each optimizer's first steps against values computed by hand (scalar formulas written out here,
independent of the library's transforms), on both the reference and the compiled engine."""

import math

import numpy as np
import pytest

from ibverify.engine import run
from ibverify.optim import OptimizerSpec

Z = np.array([[1.0, 2.0], [3.0, -1.0]])


def sig(x):  # σ(x)
    return 1.0 / (1.0 + math.exp(-x))


def eta(t, lr=0.1, a=0.5):
    return lr * (t + 1) ** (-a)


def grad(i, w):
    """∇ℓ(z_i·w) = −σ(−z_i·w) z_i (logistic)."""
    z = Z[i]
    s = sig(-(z[0] * w[0] + z[1] * w[1]))
    return [-s * z[0], -s * z[1]]


def adam_by_hand(samples_per_step, steps, b1=0.9, b2=0.99, eps=0.0, bc=False):
    w, m, v = [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]
    for t in range(steps):
        gs = [grad(i, w) for i in samples_per_step(t)]
        g = [sum(x[k] for x in gs) / len(gs) for k in range(2)]
        for k in range(2):
            m[k] = b1 * m[k] + (1 - b1) * g[k]
            v[k] = b2 * v[k] + (1 - b2) * g[k] ** 2
        c1 = 1 - b1 ** (t + 1) if bc else 1.0
        c2 = 1 - b2 ** (t + 1) if bc else 1.0
        w = [w[k] - eta(t) * (m[k] / c1) / (math.sqrt(v[k] / c2) + eps) for k in range(2)]
    return w


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_inc_adam_first_step_is_signed_and_scaled(engine):
    # step 0: g = −½ z_0, m = (1−β1) g, v = (1−β2) g² ⇒ w1 = η0 (1−β1)/sqrt(1−β2) sign(z_0) = 0.1·[1, 1]
    r = run(Z, OptimizerSpec("inc-adam", beta1=0.9, beta2=0.99), 1, engine=engine)
    np.testing.assert_allclose(r.w, [0.1, 0.1], rtol=1e-15)


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_inc_adam_two_steps_hand_values(engine):
    # worked by hand: step 1 uses sample 1 at w1 = (0.1, 0.1): margin 0.2, σ(−0.2) = 0.4501660...
    r = run(Z, OptimizerSpec("inc-adam", beta1=0.9, beta2=0.99), 2, engine=engine)
    np.testing.assert_allclose(r.w, [0.18846, 0.12913], atol=5e-6)
    np.testing.assert_allclose(r.w, adam_by_hand(lambda t: [t % 2], 2), rtol=1e-13)


@pytest.mark.parametrize("engine", ["reference", "compiled"])
@pytest.mark.parametrize("eps,bc", [(0.0, False), (1e-8, True), (0.3, False), (0.3, True)])
def test_adam_variants_match_hand_formula(engine, eps, bc):
    steps = 7
    inc = run(Z, OptimizerSpec("inc-adam", eps=eps, bias_correction=bc, beta1=0.9, beta2=0.99), steps, engine=engine)
    det = run(Z, OptimizerSpec("det-adam", eps=eps, bias_correction=bc, beta1=0.9, beta2=0.99), steps, engine=engine)
    np.testing.assert_allclose(inc.w, adam_by_hand(lambda t: [t % 2], steps, eps=eps, bc=bc), rtol=1e-13)
    np.testing.assert_allclose(det.w, adam_by_hand(lambda t: [0, 1], steps, eps=eps, bc=bc), rtol=1e-13)


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_signum_gd_ngd_proxy_hand_values(engine):
    steps = 5
    w_sig, m = [0.0, 0.0], [0.0, 0.0]
    w_gd, w_ngd, w_px = [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]
    for t in range(steps):
        g = [sum(x) / 2 for x in zip(*[grad(i, w_sig) for i in (0, 1)], strict=True)]
        m = [0.8 * m[k] + 0.2 * g[k] for k in range(2)]
        w_sig = [w_sig[k] - eta(t) * math.copysign(1.0, m[k]) for k in range(2)]
        g = [sum(x) / 2 for x in zip(*[grad(i, w_gd) for i in (0, 1)], strict=True)]
        w_gd = [w_gd[k] - eta(t) * g[k] for k in range(2)]
        g = [sum(x) / 2 for x in zip(*[grad(i, w_ngd) for i in (0, 1)], strict=True)]
        n = math.hypot(*g)
        w_ngd = [w_ngd[k] - eta(t) * g[k] / n for k in range(2)]
        gs = [grad(i, w_px) for i in (0, 1)]
        w_px = [w_px[k] - eta(t) * ((gs[0][k] + gs[1][k]) / 2) / math.sqrt(gs[0][k] ** 2 + gs[1][k] ** 2)
                for k in range(2)]
    kw = dict(engine=engine)
    np.testing.assert_allclose(run(Z, OptimizerSpec("signum", beta1=0.8), steps, **kw).w, w_sig, rtol=1e-14)
    np.testing.assert_allclose(run(Z, OptimizerSpec("gd"), steps, **kw).w, w_gd, rtol=1e-13)
    np.testing.assert_allclose(run(Z, OptimizerSpec("ngd"), steps, **kw).w, w_ngd, rtol=1e-13)
    np.testing.assert_allclose(run(Z, OptimizerSpec("adam-proxy"), steps, **kw).w, w_px, rtol=1e-13)


def test_exponential_loss_first_step():
    # ℓ(z) = e^{−z}: ℓ'(0) = −1, so GD's first step is η0 · mean(z_i)
    r = run(Z, OptimizerSpec("gd", loss="exponential"), 1, engine="compiled")
    np.testing.assert_allclose(r.w, 0.1 * Z.mean(axis=0), rtol=1e-15)


def test_zero_gradient_coordinate_stays_put():
    # 0/0 := 0: a coordinate that is zero in every sample never moves, for every optimizer
    Z0 = np.array([[1.0, 0.0], [2.0, 0.0]])
    for name in ("inc-adam", "det-adam", "signum", "ngd", "adam-proxy"):
        for engine in ("reference", "compiled"):
            w = run(Z0, OptimizerSpec(name), 50, engine=engine).w
            assert w[1] == 0.0 and w[0] > 0, (name, engine)
