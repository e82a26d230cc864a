"""Lyu & Li's smoothed margin (ibverify/checks/classic_nets.py) and plain GD on block models (logframe.Unscale)."""

import math
import warnings

import numpy as np
import pytest

from ibverify import losses, models
from ibverify.checks.classic import alignment_gap
from ibverify.checks.classic_nets import THRESHOLD, network_alignment_gap, smoothed_margin_series
from ibverify.engine import run
from ibverify.optim import OptimizerSpec


def test_smoothed_margin_values_for_both_losses_and_far_below_float_range():
    L, nrm = 3.0, np.array([2.0, 2.0, 2.0])
    ll = np.log(np.array([0.5, 1e-3, 1e-12]))
    np.testing.assert_allclose(smoothed_margin_series(ll, nrm, L, "exponential"), -ll / 8.0, rtol=1e-14)
    want = -np.log(np.expm1(np.exp(ll))) / 8.0                  # −log(e^ℒ − 1)/‖θ‖^L
    np.testing.assert_allclose(smoothed_margin_series(ll, nrm, L, "logistic"), want, rtol=1e-12)
    far = smoothed_margin_series(np.array([-2000.0]), np.array([10.0]), 3.0, "logistic")   # ℒ = e^−2000: no underflow
    assert far[0] == pytest.approx(2.0, rel=1e-12)
    # the threshold ℓ(0): log 2 for the logistic loss (γ̃ = 0 there), 1 for the exponential
    assert smoothed_margin_series(np.array([THRESHOLD["logistic"]]), np.ones(1), L, "logistic")[0] == pytest.approx(
        0.0, abs=1e-15)
    assert THRESHOLD["exponential"] == 0.0 and math.exp(math.exp(THRESHOLD["logistic"])) == pytest.approx(2.0)


def test_block_gd_is_the_plain_gradient_step_on_a_two_layer_net():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((12, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.sign(X[:, 0] + 0.3)
    model = models.make_model("two-layer", 3, width=4, q=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = run((X, y), OptimizerSpec("gd", lr=0.05, lr_decay=0.5), 40, model=model, init_seed=1, init_scale=0.5,
                checkpoints=[10, 40], warn=False)
    th = {k: v.copy() for k, v in r.theta0.items()}   # θ_1 = θ0; checkpoint t holds θ_t (after t − 1 steps)
    for t in range(1, 40):
        g = losses.gradient(model, th, X, y)
        th = {k: th[k] - 0.05 * t ** -0.5 * g[k] for k in th}
        if t + 1 in (10, 40):
            got = r.thetas[[10, 40].index(t + 1)]
            for k in th:
                np.testing.assert_allclose(got[k], th[k], rtol=1e-13, atol=1e-15)
    assert r.engine == "reference"


def test_network_alignment_gap_is_one_minus_cos_with_the_plain_gradient_and_the_linear_case():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((10, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.sign(X[:, 1] - 0.2)
    model = models.make_model("two-layer", 3, width=5, q=2.0)
    th = models.initial_point(model, 2, 0.5)
    g = -np.concatenate([v.ravel() for v in losses.gradient(model, th, X, y).values()])
    w = np.concatenate([v.ravel() for v in th.values()])
    want = 1 - w @ g / (np.linalg.norm(w) * np.linalg.norm(g))
    assert network_alignment_gap(model, [th], X, y)[0] == pytest.approx(want, rel=1e-10)
    assert 0.01 < want < 1.99                                 # a generic point: not aligned
    lin = models.make_model("linear", 3)
    ws = np.array([[0.3, -0.2, 0.5], [3.0, 1.0, -2.0]])
    Z = y[:, None] * X                                         # label-folded: the vector check's convention
    np.testing.assert_allclose(network_alignment_gap(lin, [{"w": w_} for w_ in ws], X, y), alignment_gap(Z, ws),
                               rtol=1e-10)
    far = {k: 400.0 * v for k, v in th.items()}               # margins ~ 400³: the loss underflows, the direction not
    assert np.isfinite(network_alignment_gap(model, [far], X, y)[0])
