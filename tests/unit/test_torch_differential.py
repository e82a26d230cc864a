"""Differential test against torch.optim.Adam (skipped when torch is not installed)."""

import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ibverify.data import gr  # noqa: E402
from ibverify.engine import run  # noqa: E402
from ibverify.optim import OptimizerSpec  # noqa: E402
from _isolation import subprocess_env  # noqa: E402

pytestmark = pytest.mark.torch


def torch_per_sample_adam(X, y, steps, lr, betas, eps, loss="logistic"):
    w = torch.zeros(X.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([w], lr=lr, betas=betas, eps=eps)
    Xt, yt = torch.tensor(X), torch.tensor(y)
    for t in range(steps):
        i = t % len(y)
        z = yt[i] * (Xt[i] @ w)
        L = torch.nn.functional.softplus(-z) if loss == "logistic" else torch.exp(-z)
        opt.zero_grad()
        L.backward()
        opt.step()
    return w.detach().numpy()


@pytest.mark.parametrize("loss", ["logistic", "exponential"])
def test_engine_matches_torch_adam(loss):
    D = gr(6, 8, np.random.default_rng(4))
    steps, lr, betas = 600, 0.01, (0.9, 0.99)
    ref = torch_per_sample_adam(D.X, D.y, steps, lr, betas, 1e-8, loss)
    spec = OptimizerSpec("adam", batch_size=1, eps=1e-8, bias_correction=True, lr=lr, lr_decay=0.0,
                         beta1=betas[0], beta2=betas[1], loss=loss)
    for engine in ("compiled", "reference"):
        w = run(D.Z, spec, steps, engine=engine).w
        np.testing.assert_allclose(w, ref, rtol=1e-10, atol=1e-12)


def test_cli_matches_torch_adam(tmp_path):
    D = gr(5, 4, np.random.default_rng(9))
    p = tmp_path / "d.npz"
    np.savez(p, X=D.X, y=D.y)
    r = subprocess.run([sys.executable, "-m", "ibverify", "train", "--data", str(p), "--optimizer", "adam",
                        "--batch-size", "1", "--eps", "1e-8", "--bias-correction", "--lr", "0.05", "--lr-decay", "0",
                        "--steps", "500", "--json"], capture_output=True, text=True, env=subprocess_env())
    assert r.returncode == 0, r.stderr
    ref = torch_per_sample_adam(D.X, D.y, 500, 0.05, (0.9, 0.999), 1e-8)
    np.testing.assert_allclose(json.loads(r.stdout)["w"], ref, rtol=1e-10, atol=1e-12)
