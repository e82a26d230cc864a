"""Optimizers (first steps by hand, log-frame invariance, schedule warnings), datasets, CLI, claim files."""

import glob
import tomllib
from pathlib import Path
import warnings

import numpy as np
import pytest
from hypothesis import given, settings

from ibverify import IbverifyError
from ibverify.cli import network as cli
from ibverify.data import netdata as datasets
from ibverify import models
from ibverify.optim import logframe as optim
from ibverify.optim.optimizers import make_optimizer
from ibverify.engine import block as train
from ibverify.geometry.base import polar
from ibverify.optim.logframe import Scaled
from ibverify.strategies.network import separable_teacher

G0 = {"W": np.array([[3.0, 0.0], [0.0, -1.0]]), "a": np.array([0.5, -2.0])}
TH = {"W": np.zeros((2, 2)), "a": np.zeros(2)}


def _first(name, **kw):
    opt = make_optimizer(name, lr=0.1, lr_decay=0.8, params=TH, warn=False, **kw)
    opt.init(TH)
    return opt.update(Scaled(G0, 0.0))


def test_first_steps_by_hand():
    np.testing.assert_allclose(_first("signum")["a"], 0.1 * np.sign(G0["a"]))       # m_1 = (1−β) g
    n = np.sqrt(9 + 1 + 0.25 + 4)
    np.testing.assert_allclose(_first("momentum-gd")["W"], 0.1 * G0["W"] / n)
    np.testing.assert_allclose(_first("muon")["W"], 0.1 * np.diag([1.0, -1.0]), atol=1e-15)   # polar of diag
    np.testing.assert_allclose(_first("muon")["a"], 0.1 * G0["a"] / np.linalg.norm(G0["a"]))
    np.testing.assert_allclose(_first("adam")["W"], 0.1 * np.diag([1.0, -1.0]))               # m̂/√v̂ = sign g at k = 1
    u = _first("muon-adam", eta_m=0.1, eta_a=0.4)
    np.testing.assert_allclose(u["W"], 0.1 * np.diag([1.0, -1.0]), atol=1e-15)
    np.testing.assert_allclose(u["a"], 0.4 * np.sign(G0["a"]))
    nb = _first("adam", bias_correction=False, beta2=0.99)           # no correction: (1−β1)g/sqrt((1−β2)g²)
    np.testing.assert_allclose(nb["a"], 0.1 * 0.1 / np.sqrt(0.01) * np.sign(G0["a"]))


def test_second_step_signum_and_schedule():
    opt = make_optimizer("signum", lr=0.2, lr_decay=1.0, beta1=0.5, params=TH, warn=False)
    opt.init(TH)
    opt.update(Scaled(G0, 0.0))
    g2 = {"W": -3.0 * G0["W"], "a": np.array([-0.1, -2.0])}
    u = opt.update(Scaled(g2, 0.0))                                  # m_2 = 0.25 g1 + 0.5 g2
    m2 = {k: 0.25 * G0[k] + 0.5 * g2[k] for k in G0}
    for k in G0:
        np.testing.assert_allclose(u[k], 0.2 / 2 * np.sign(m2[k]))


def test_log_frame_is_exact_under_rescaling():
    rng = np.random.default_rng(0)
    gs = [{"W": rng.standard_normal((2, 2)), "a": rng.standard_normal(2)} for _ in range(30)]
    drift = np.cumsum(rng.uniform(0, 40, 30))                        # gradients shrink by up to e^{−600}
    for name in ("signum", "muon", "adam", "momentum-gd", "muon-adam"):
        a = make_optimizer(name, params=TH, warn=False, lr_decay=0.8)
        b = make_optimizer(name, params=TH, warn=False, lr_decay=0.8)
        a.init(TH), b.init(TH)
        for g, s in zip(gs, drift, strict=False):
            ua = a.update(Scaled(g, -s))
            ub = b.update(Scaled({k: 1e3 * v for k, v in g.items()}, -s - np.log(1e3) - 5.0))
            for k in ua:
                np.testing.assert_allclose(ua[k], ub[k], rtol=1e-9, atol=1e-12)
        assert a.underflow == {}


def test_newton_schulz_is_approximate_polar():
    rng = np.random.default_rng(1)
    M = rng.standard_normal((6, 4))
    s = np.linalg.svd(optim.newton_schulz5(M), compute_uv=False)
    assert 0.6 < s.min() and s.max() < 1.2 and not np.allclose(s, 1.0, atol=1e-3)
    U, _, Vt = np.linalg.svd(M, full_matrices=False)
    np.testing.assert_allclose(polar(M), U @ Vt, atol=1e-13)
    assert optim.NS5_COEFFS == (3.4445, -4.7750, 2.0315)


def test_schedule_check_warns():
    with pytest.warns(optim.ScheduleWarning):
        assert not optim.check_schedule(0.5, 3.0)
    with pytest.warns(optim.ScheduleWarning):
        assert not optim.check_schedule(1.2, 3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert optim.check_schedule(0.8, 3.0) and optim.check_schedule(0.1, 1.0)
    with pytest.warns(optim.ScheduleWarning):
        make_optimizer("signum", lr_decay=0.3, L=3.0)


def test_bad_optimizer_inputs():
    with pytest.raises(IbverifyError):
        make_optimizer("nope")
    with pytest.raises(IbverifyError):
        make_optimizer("muon-adam")                            # needs the blocks
    with pytest.raises(IbverifyError):
        make_optimizer("signum", beta1=1.0)


def test_long_run_does_not_freeze():
    """Exponential loss, margins far past float64 underflow: the log-frame run keeps moving, no underflow."""
    m = models.Linear(2)
    X, y = np.array([[1.0, 0.2], [0.2, 1.0]]), np.array([1.0, 1.0])
    opt = make_optimizer("signum", lr=50.0, lr_decay=0.5, params={"w": np.zeros(2)}, L=1.0)
    r = train.run(m, X, y, opt, 3000, {"w": np.zeros(2)}, loss="exponential", checkpoints=[1000, 2999, 3000])
    assert r.q_min[-1] > 2000                                         # e^{−2000}: raw gradients are exactly 0
    assert np.linalg.norm(r.thetas[-1]["w"] - r.thetas[-2]["w"]) > 1.0
    assert r.underflow == {}
    w0 = {"w": np.array([800.0, 800.0])}                             # q ≈ 960: raw gradients are exactly 0.0
    opt = make_optimizer("adam", lr=1.0, lr_decay=0.5, params=w0, L=1.0)
    r = train.run(m, X, y, opt, 50, w0, loss="exponential", checkpoints=[1, 50])
    assert r.q_min[-1] - r.q_min[0] > 5 and r.underflow == {}


def test_digits_even_odd():
    d = datasets.digits_even_odd()
    assert d.X.shape == (1797, 64) and set(np.unique(d.y)) == {-1.0, 1.0}
    np.testing.assert_allclose(np.linalg.norm(d.X, axis=1), 1.0)
    from sklearn.datasets import load_digits
    np.testing.assert_array_equal(d.y, np.where(load_digits().target % 2 == 0, 1.0, -1.0))
    s = datasets.digits_even_odd(100, seed=3)
    assert s.n == 100 and (s.y > 0).sum() == 50


@settings(max_examples=10, deadline=None)
@given(separable_teacher())
def test_teacher_data_separable_by_construction(d):
    assert d.certificate["teacher_l2_margin"] > 0 and len(np.unique(d.y)) == 2


def test_cli_train_returns_json_result():
    from ibverify.cli import build_parser

    args = build_parser().parse_args(["train", "--data", "teacher", "--optimizer", "muon", "--steps", "1500",
                                      "--model", "two-layer", "--lr", "0.3", "--quiet"])
    out = cli.train(args)
    assert set(out["margins"]) == {"l2", "linf", "msp", "hybrid"} and out["kkt"]["geometry"] == "msp"
    assert out["steps"] == 1500 and set(out["theta"]) == {"W", "a"} and out["warnings"] == []
    assert out["engine"] == "compiled" and out["hyper"]["lr_decay"] == 1 - 1 / 6   # default → inside the range


def _network_args(*extra):
    from ibverify.cli import build_parser

    return build_parser().parse_args(["train", "--data", "teacher", "--optimizer", "signum", "--model", "two-layer",
                                      "--steps", "400", "--quiet", *extra])


def test_network_train_plain_summary_and_json_only_with_flag():
    import io
    import json

    from ibverify.cli.network import run_network

    buf = io.StringIO()
    assert run_network(_network_args(), stream=buf) == 0
    text = buf.getvalue()
    assert "{" not in text and "normalized margins" in text and "linf" in text and "(own)" in text
    assert "KKT residual in its own geometry (linf)" in text and "400 steps" in text
    assert "theorem range 0.6667 < lr_decay ≤ 1" in text and "t^(−0.833333)" in text and "warning" not in text
    buf = io.StringIO()
    run_network(_network_args("--json"), stream=buf)
    out = json.loads(buf.getvalue())
    assert out["optimizer"] == "signum" and out["geometry"] == "linf" and out["n"] == 30 and out["d"] == 6
    assert out["margins"]["linf"] > 0 and out["kkt"]["geometry"] == "linf"


def test_network_train_default_p_is_inside_the_theorem_range_and_explicit_p_is_kept():
    for model, L in (("two-layer", 3.0), ("deep-linear", 2.0)):
        data, mdl, spec = cli._build(_network_args("--model", model))
        assert mdl.L == L and spec.lr_decay == 1 - 1 / (2 * L) and 1 - 1 / L < spec.lr_decay <= 1
    out = cli.train(_network_args("--lr-decay", "0.5", "--steps", "50"))
    assert out["hyper"]["lr_decay"] == 0.5 and any("violates" in w for w in out["warnings"])  # kept, with a warning
    out = cli.train(_network_args("--lr-decay", "0.9", "--steps", "50"))
    assert out["hyper"]["lr_decay"] == 0.9 and out["warnings"] == []


def test_network_train_bad_options_are_one_line_errors():
    with pytest.raises(IbverifyError, match="compiled and reference"):
        cli.train(_network_args("--engine", "mpmath"))
    from ibverify.cli import build_parser

    args = build_parser().parse_args(["train", "--data", "teacher", "--optimizer", "signum", "--model",
                                      "two-layer", "--epochs", "0"])
    with pytest.raises(IbverifyError, match=">= 1"):
        cli.train(args)


def test_progress_reports_every_chunk_and_the_end():
    m = models.TwoLayer(3, 4, 2.0)
    d = datasets.make_data("teacher", n=10, d=3, seed=1)
    th0 = m.init(np.random.default_rng(0), 0.5)
    calls = []
    opt = make_optimizer("adam", params=th0, L=m.L, lr_decay=0.8)
    train.run(m, d.X, d.y, opt, 2000, th0, progress=lambda a, b: calls.append((a, b)), chunk=300)
    assert calls[-1] == (2000, 2000) and len(calls) >= 2000 // 300
    assert all(b == 2000 for _, b in calls) and [a for a, _ in calls] == sorted(a for a, _ in calls)


def test_claim_files_well_formed():
    files = sorted(glob.glob(str(Path(__file__).resolve().parents[2] / "claims" / "gronich.*.toml")))
    assert len(files) >= 17                                         # paper claims and their controls
    for f in files:
        c = tomllib.load(open(f, "rb"))
        assert all(isinstance(t, dict) and t.get("why") for t in c.get("tolerances", {}).values()), f
        if "adam" in c["id"] or c["params"].get("optimizer") in ("adam", "muon-adam"):
            assert c["convention"]["eps"] == 0.0, f
