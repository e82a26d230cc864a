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


def test_predict_speaks_plainly_and_json_keeps_the_keys(ib, tmp_path, capsys):
    # issue 21: `predict` printed raw internal keys (cos_linf_bound, unique_dual, damping)
    from ibverify.cli.commands import PREDICT_LABELS

    D = gaussian(6, 12, np.random.default_rng(2))
    p = tmp_path / "g.npz"
    np.savez(p, X=D.X, y=D.y)
    keys = set(ib("predict", "--data", p, "--json")) - {"data"}
    assert keys == set(PREDICT_LABELS)                               # every key has its plain label
    assert main(["predict", "--data", str(p)]) == 0
    text = capsys.readouterr().out
    assert not [ln for ln in text.splitlines() if ln.split(":")[0] in keys]   # no line starts with a raw key
    assert "upper bound of the cosine of p* to every ℓ∞ max-margin solution:" in text
