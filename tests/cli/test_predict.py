"""`ibverify predict` (the AdamProxy fixed point) agrees with a long `ibverify train --optimizer adam-proxy`
run on the same user file (issue 3's acceptance check), and its figures match the spec's worked example."""

import json

import numpy as np
import pytest

from ibverify.cli import main
from ibverify.data import gaussian


@pytest.fixture
def ib(capsys):
    def call(*args):
        rc = main([str(a) for a in args])
        out, err = capsys.readouterr()
        assert rc == 0, err
        return json.loads(out)
    return call


@pytest.mark.parametrize("fmt", ["npz", "csv"])
def test_predict_matches_long_adam_proxy_run(ib, tmp_path, fmt):
    D = gaussian(10, 50, np.random.default_rng(1))  # spec §5.8 setting: N = 10, d = 50
    p = tmp_path / f"g.{fmt}"
    if fmt == "npz":
        np.savez(p, X=D.X, y=D.y)
    else:
        np.savetxt(p, np.c_[D.X, D.y], delimiter=",", header=",".join([f"x{k}" for k in range(50)] + ["y"]))
    pred = ib("predict", "--data", p, "--json")
    run = ib("train", "--data", p, "--optimizer", "adam-proxy", "--steps", 200000, "--lr", 1.0, "--json",
             "--no-compare")
    cos = float(np.dot(pred["direction"], run["direction"]))
    assert cos >= 0.9999, cos
    assert pred["residual"] <= 1e-8 and pred["kkt_residual"] <= 1e-8
    # the prediction is neither the ℓ2 nor an ℓ∞ solution on Gaussian data
    assert pred["cos_l2"] < 0.99 and pred["cos_linf_bound"] < 0.99
