"""Mini-batch / per-sample block runs (engine.block.run(batch=b), cyclic order; issue 22 point 4).

    batch = n              bit-identical to the full-batch run (batch None), in both engines: the cyclic window
                           of every step is the whole set in its order, so the indexing changes nothing
    batch = 1 (reference)  equals per-sample Adam computed by hand on a tiny two-layer net (paper 1's convention:
                           ε = 0, no bias correction; step t uses sample (t − 1) mod n, η_t = lr·t^(−p)), with the
                           gradient of the logistic loss written out from the model's formula, not models.vjp
    batch = b (compiled)   equals the reference to 1e−12 relative (b = 1, a b not dividing n, b = n), so the
                           compiled per-step windows take the samples the reference takes
    the records (min q_i, log ℒ) are over the full set, whatever the batch
"""

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify import models
from ibverify.data import netdata
from ibverify.engine import block, run
from ibverify.losses import evaluate
from ibverify.optim import OptimizerSpec

PAPER1 = {"eps": 0.0, "bias_correction": False, "beta1": 0.9, "beta2": 0.999, "lr": 0.1, "lr_decay": 0.8}


def _adam(**kw):
    return OptimizerSpec.from_params({**PAPER1, **kw}, name="adam").for_block(3.0)


def _setup(n=9, d=3, m=4, seed=2):
    data = netdata.teacher_two_layer(n, d, seed=seed)
    model = models.TwoLayer(d, m, 2.0)
    return data, model


def _same(a, b):
    return all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_batch_n_is_full_batch_exactly(engine):
    data, model = _setup()
    kw = dict(model=model, init_seed=1, checkpoints=[1, 10, 100, 300], warn=False, engine=engine)
    full = run(data, _adam(), 300, **kw)
    b = run(data, _adam(), 300, batch=data.n, **kw)
    assert full.checkpoints == b.checkpoints
    assert all(_same(x, y) for x, y in zip(full.thetas, b.thetas, strict=True))
    assert full.q_min == b.q_min and full.records["log_loss"] == b.records["log_loss"]
    # ... and a per-sample run is not the full-batch one (the option is not ignored)
    one = run(data, _adam(), 300, batch=1, **kw)
    assert not _same(one.thetas[-1], full.thetas[-1])


def _hand_per_sample(X, y, theta0, steps, lr, p, b1, b2):
    """Per-sample Adam by hand: g_t = ∇ log(1 + exp(−y_i f(x_i))) at i = (t − 1) mod n, written out for
    f = Σ_j a_j max(0, w_j·x)²; m ← b1 m + (1 − b1) g, v ← b2 v + (1 − b2) g², θ ← θ − η_t m/√v (0/0 := 0)."""
    W, a = theta0["W"].copy(), theta0["a"].copy()
    mW, ma, vW, va = (np.zeros_like(W), np.zeros_like(a), np.zeros_like(W), np.zeros_like(a))
    n = len(y)
    for t in range(1, steps + 1):
        i = (t - 1) % n
        x = X[i]
        h = W @ x
        r = np.maximum(h, 0.0)
        f = a @ r ** 2
        dl = -y[i] / (1.0 + np.exp(y[i] * f))          # dℓ/df
        ga = dl * r ** 2
        gW = dl * np.outer(a * 2.0 * r, x)
        mW, ma = b1 * mW + (1 - b1) * gW, b1 * ma + (1 - b1) * ga
        vW, va = b2 * vW + (1 - b2) * gW ** 2, b2 * va + (1 - b2) * ga ** 2
        eta = lr * t ** (-p)
        with np.errstate(invalid="ignore", divide="ignore"):
            W = W - eta * np.where(vW > 0, mW / np.sqrt(vW), 0.0)
            a = a - eta * np.where(va > 0, ma / np.sqrt(va), 0.0)
    return {"W": W, "a": a}


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_per_sample_adam_by_hand(engine):
    data, model = _setup(n=5, d=3, m=3, seed=4)
    theta0 = model.init(np.random.default_rng(7), 0.5)
    steps = 23   # four passes and three samples: the cyclic order wraps, and the last epoch is partial
    # the run records θ before step t at checkpoint t: θ after 22 and after 23 steps
    r = run(data, _adam(), steps + 1, model=model, theta0=theta0, checkpoints=[steps, steps + 1], warn=False,
            engine=engine, batch=1)
    for got, done in zip(r.thetas, (steps - 1, steps), strict=True):
        want = _hand_per_sample(data.X, data.y, theta0, done, 0.1, 0.8, 0.9, 0.999)
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("b", [1, 4, 9])
def test_compiled_batches_match_reference(b):
    data, model = _setup()
    kw = dict(model=model, init_seed=3, checkpoints=[1, 7, 50, 400], warn=False, batch=b)
    ref = run(data, _adam(), 400, engine="reference", **kw)
    com = run(data, _adam(), 400, engine="compiled", **kw)
    assert ref.checkpoints == com.checkpoints
    for x, y in zip(ref.thetas, com.thetas, strict=True):
        for k in x:
            np.testing.assert_allclose(y[k], x[k], rtol=1e-12, atol=1e-12 * np.max(np.abs(x[k])))
    # records over the full set: min q_i at the last checkpoint is that of evaluate on all samples
    ev = evaluate(model, com.thetas[-1], data.X, data.y)
    assert com.q_min[-1] == pytest.approx(float(np.min(ev.q)), rel=1e-12)


def test_batch_validated():
    data, model = _setup()
    with pytest.raises(IbverifyError, match="batch must be in"):
        run(data, _adam(), 10, model=model, init_seed=0, batch=0, warn=False)
    with pytest.raises(IbverifyError, match="batch must be in"):
        run(data, _adam(), 10, model=model, init_seed=0, batch=data.n + 1, warn=False)
    with pytest.raises(IbverifyError, match="checkpoint files"):
        block.run(model, data.X, data.y, None, 10, {}, batch=1, save_to="x.npz")
