"""The command line: JSON outputs carry the right values; bad input is one line on stderr, exit 2."""

import json
import subprocess
import sys

import numpy as np
import pytest

from ibverify.data import gr
from ibverify.engine import run
from ibverify.optim import OptimizerSpec
from ibverify.oracles import max_margin


def ib(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ibverify", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = gr(6, 5, np.random.default_rng(7))
    p = tmp_path_factory.mktemp("data") / "gr.npz"
    np.savez(p, X=d.X, y=d.y)
    return p, d


def test_train_json_matches_engine(data):
    p, d = data
    r = ib("train", "--data", p, "--optimizer", "inc-adam", "--epochs", 200, "--beta1", 0.5, "--beta2", 0.9, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    ref = run(d.Z, OptimizerSpec("inc-adam", beta1=0.5, beta2=0.9), 1200)
    assert out["steps"] == 1200
    np.testing.assert_allclose(out["w"], ref.w, rtol=1e-14)
    np.testing.assert_allclose(out["direction"], ref.w / np.linalg.norm(ref.w), rtol=1e-14)
    assert out["margins"]["l2"] == pytest.approx(np.min(d.Z @ ref.w) / np.linalg.norm(ref.w), rel=1e-12)
    assert out["margins"]["linf"] == pytest.approx(np.min(d.Z @ ref.w) / np.abs(ref.w).max(), rel=1e-12)


def test_train_batch_and_order_options(data):
    p, d = data
    r = ib("train", "--data", p, "--optimizer", "adam", "--batch-size", 3, "--order", "reshuffle", "--steps", 50,
           "--seed", 4, "--eps", 1e-8, "--bias-correction", "--loss", "exponential", "--json")
    assert r.returncode == 0, r.stderr
    ref = run(d.Z, OptimizerSpec("adam", batch_size=3, order="reshuffle", seed=4, eps=1e-8, bias_correction=True,
                                 loss="exponential"), 50)
    np.testing.assert_allclose(json.loads(r.stdout)["w"], ref.w, rtol=1e-14)


def test_margin_json(data):
    p, d = data
    r = ib("margin", "--data", p, "--norm", "linf", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["margin"] == pytest.approx(max_margin(d.Z, "linf").margin, rel=1e-9)
    assert np.abs(out["direction"]).max() == pytest.approx(1.0)


def test_claims_lists_registry():
    r = ib("claims", "--json")
    assert r.returncode == 0
    ids = {c["id"] for c in json.loads(r.stdout)}
    assert {"baek.gr-inc-adam-l2", "zhang.det-adam-linf", "baek.control.signum-no-momentum"} <= ids


@pytest.mark.parametrize("args,msg", [
    (["train", "--data", "{bad}", "--optimizer", "inc-adam"], "not linearly separable"),
    (["train", "--data", "{good}", "--optimizer", "sgdx"], "unknown optimizer"),
    (["train", "--data", "{good}", "--optimizer", "inc-adam", "--batch-size", "3"], "batch size 1"),
    (["train", "--data", "{good}", "--optimizer", "adam", "--batch-size", "99"], "batch size must be in 1..6"),
    (["train", "--data", "{good}", "--optimizer", "adam", "--beta1", "1.5"], "need 0 <= beta1"),
    (["train", "--data", "{good}", "--optimizer", "adam", "--steps", "0"], "must be >= 1"),
    (["train", "--data", "/nonexistent.npz", "--optimizer", "adam"], "not found"),
    (["margin", "--data", "{nan}"], "non-finite"),
    (["margin", "--data", "{good}", "--norm", "l3"], "invalid choice"),
    (["verify", "no.such-claim"], "unknown claim id"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, data, args, msg):
    bad = tmp_path / "bad.csv"
    bad.write_text("1,1,1\n-1,-1,1\n1,-1,-1\n-1,1,-1\n")
    nan = tmp_path / "nan.csv"
    nan.write_text("1,nan,1\n2,2,-1\n")
    args = [a.format(bad=bad, good=data[0], nan=nan) for a in args]
    r = ib(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert msg in r.stderr
