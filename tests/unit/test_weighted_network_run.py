"""Issue 33 item 2, the network KKT claims' same-speed wrong-limit controls (gronich_nets.weighted_run): the claim's
optimizer trained on inputs scaled per coordinate by s, its first layer mapped back (W = W'·diag(s)), is exactly that
optimizer preconditioned by a fixed diagonal in the original coordinates. Checked step by step against the update
written out by hand from the model's own gradient (vjp), for MomentumGD (D = s² in the normalization's norm) and
Signum (D = s on the sign step)."""

from types import SimpleNamespace

import numpy as np
import pytest

from ibverify.checks.gronich_nets import weighted_run
from ibverify.strategies.scaled import coordinate_scale

CFG = {"model": "two-layer", "q": 2.0, "loss": "logistic", "dataset": "teacher", "n": 16, "d": 3, "width": 6,
       "data_seed": 5, "steps": 4, "start": 1, "checkpoints": 4, "beta1": 0.9, "lr_decay": 0.8}


def grad(model, theta, X, y):
    """∇ of the mean logistic loss (any positive factor: both updates are scale free)."""
    f = model.outputs(theta, X)
    c = -y / (1.0 + np.exp(y * f)) / len(y)
    return model.vjp(theta, X, c)


def by_hand(model, theta0, X, y, s, kind, steps, lr, beta=0.9, p=0.8):
    th = {k: v.copy() for k, v in theta0.items()}
    m = {k: np.zeros_like(v) for k, v in th.items()}
    out = []
    for t in range(1, steps + 1):
        g = grad(model, th, X, y)
        m = {k: beta * m[k] + (1 - beta) * g[k] for k in th}
        eta = lr * t ** -p
        if kind == "momentum-gd":   # v = (W/s, a): normalized GD in v ⇒ W ← W − η m_W s²/‖(m_W s, m_a)‖
            nrm = np.sqrt(np.sum((m["W"] * s) ** 2) + np.sum(m["a"] ** 2))
            th = {"W": th["W"] - eta * m["W"] * s * s / nrm, "a": th["a"] - eta * m["a"] / nrm}
        else:                        # signum: W ← W − η s ⊙ sign(m_W)
            th = {"W": th["W"] - eta * np.sign(m["W"]) * s, "a": th["a"] - eta * np.sign(m["a"])}
        out.append(th)
    return out


@pytest.mark.parametrize("kind,lr", [("momentum-gd", 0.5), ("signum", 0.1)])
def test_the_scaled_run_mapped_back_is_the_diagonally_preconditioned_optimizer(kind, lr):
    ctx = SimpleNamespace(params={"input_scale": 1.0})
    r, model, data, _ = weighted_run(ctx, {**CFG, "optimizer": kind, "lr": lr}, 7, 1.0)
    s = coordinate_scale(3, 1.0)
    # checkpoint t holds θ_t, the iterate at which step t's gradient is taken: θ0 at t = 1
    hand = [r.theta0] + by_hand(model, r.theta0, data.X, data.y, s, kind, int(max(r.checkpoints)), lr)
    assert list(r.checkpoints) == [1, 2, 3, 4]
    for t, th in zip(r.checkpoints, r.thetas, strict=True):
        for k in th:
            np.testing.assert_allclose(th[k], hand[int(t) - 1][k], rtol=1e-9, atol=1e-12)
    # the same outputs as the run on the scaled inputs: the margins the run recorded are the mapped θ's on X
    q = data.y * model.outputs(r.thetas[-1], data.X)
    assert float(np.min(q)) == pytest.approx(r.q_min[-1], rel=1e-9, abs=1e-12)


def test_run_example_trains_the_weighted_optimizer_only_for_a_control_with_input_scale():
    from ibverify.checks.gronich_nets import run_example
    base = {k: v for k, v in CFG.items() if k not in ("n", "d", "width", "data_seed", "dataset", "steps", "start",
                                                      "checkpoints")}
    ex = {"dataset": "teacher", "n": 16, "d": 3, "width": 6, "data_seed": 5, "seed": 7}
    params = {**base, "optimizer": "signum", "lr": 0.1, "steps": 4}
    plain, _, _, _ = run_example(SimpleNamespace(params=params), ex)
    scaled, _, _, _ = run_example(SimpleNamespace(params={**params, "input_scale": 1.0}), ex)
    s = coordinate_scale(3, 1.0)
    assert np.allclose(scaled.thetas[0]["W"], plain.thetas[0]["W"] * s)      # the same θ0' (its seed), mapped back
    step_plain = plain.thetas[1]["W"] - plain.thetas[0]["W"]
    step_scaled = scaled.thetas[1]["W"] - scaled.thetas[0]["W"]
    np.testing.assert_allclose(np.abs(step_plain), 0.1 * np.ones_like(step_plain), rtol=1e-12)   # η sign(m)
    np.testing.assert_allclose(np.abs(step_scaled), 0.1 * np.ones_like(step_scaled) * s, rtol=1e-12)   # η s sign(m)


def test_degree_one_weighted_run_is_the_sign_step_scaled_by_s_and_keeps_the_margins():
    """gronich_linear.weighted_linear on a vector degree-1 problem (f = ⟨w, x⟩, θ0 = 0): Signum on the scaled inputs,
    w mapped back, moves w by η_t·s⊙sign(m) at its first step, and its margins on the original data are those the run
    recorded on the scaled data."""
    from ibverify.checks.gronich_linear import weighted_linear
    from ibverify.recipes import RunStore
    from ibverify.recipes.settings import degree_one
    ex = {"kind": "vector", "n": 10, "d": 4, "data_seed": 3}
    recipe = degree_one(ex, {"optimizer": "signum", "lr": 0.1, "lr_decay": 0.2, "beta1": 0.9, "loss": "logistic",
                             "steps": 5, "checkpoints": 5}, 5)
    r, model, data, _ = weighted_linear(RunStore.process(), recipe, 1.0)
    s = coordinate_scale(4, 1.0)
    step = r.thetas[1]["w"] - r.thetas[0]["w"]
    assert np.allclose(r.thetas[0]["w"], 0.0) and list(r.checkpoints[:2]) == [1, 2]
    np.testing.assert_allclose(np.abs(step), 0.1 * s, rtol=1e-12)
    q = data.y * model.outputs(r.thetas[-1], data.X)
    assert float(np.min(q)) == pytest.approx(r.q_min[-1], rel=1e-9, abs=1e-12)
