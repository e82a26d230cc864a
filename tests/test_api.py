"""The Python API (ibverify.api, docs/python-api.md): each function answers what its command prints with --json
(same seed and tier), bad input is one IbverifyError line, and `import ibverify` stays light until a function runs.

bias: the models lists are compared without their timing fields (`cpu_seconds`: each call's own CPU time; the
top-level `seconds` and `cpu_seconds` likewise), as JSON text (NaN compares equal to itself there)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ibverify
from ibverify import IbverifyError
from ibverify.cli import main
from ibverify.data import gr
from _hang_guard import HANG_GUARD_S
from _isolation import subprocess_env

ROOT = Path(__file__).resolve().parents[1]
TIMING = ("seconds", "cpu_seconds")


def untimed(obj):
    """`obj` without its timing fields, as canonical JSON text."""
    def strip(o):
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items() if k not in TIMING}
        if isinstance(o, list):
            return [strip(v) for v in o]
        return o
    return json.dumps(strip(obj), sort_keys=True)


def cli_json(capsys, *args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = gr(6, 5, np.random.default_rng(7))
    p = tmp_path_factory.mktemp("api") / "gr.npz"
    np.savez(p, X=d.X, y=d.y)
    return p


def test_bias_models_equal_the_cli_json(capsys):
    r = ibverify.bias("signum", models=["linear"], tier="smoke")
    cli = cli_json(capsys, "bias", "--optimizer", "signum", "--model", "linear", "--tier", "smoke", "--json",
                   "--quiet")
    assert untimed(r.models) == untimed(cli["models"])
    assert untimed(r.to_json()) == untimed(cli)
    assert (r.optimizer, r.tier, r.seed, r.knobs) == ("signum", "smoke", 0, {})
    assert r.supported() == {"linear": ["linf"]}
    assert "linear: linf" in str(r)
    figs = r.plot()
    assert len(figs) == 1 and len(figs[0].axes) == r.models[0]["datasets"]


def test_bias_intercept_equals_the_cli_and_is_needed_on_shifted_data(capsys, tmp_path):
    X = np.array([[1.0, 1.0], [2.0, -1.0], [2.5, 0.5], [4.0, 1.0], [5.0, -1.0], [3.5, -0.5]])
    y = np.array([-1.0, -1.0, -1.0, 1.0, 1.0, 1.0])   # split by x0 = 3: separable with an intercept only
    f = tmp_path / "shifted.npz"
    np.savez(f, X=X, y=y)
    r = ibverify.bias("signum", models=["linear"], data=f, intercept=True, tier="smoke")
    cli = cli_json(capsys, "bias", "--optimizer", "signum", "--model", "linear", "--data", f, "--intercept",
                   "--tier", "smoke", "--json", "--quiet")
    assert untimed(r.models) == untimed(cli["models"]) and r.models[0]["datasets"] == 1
    with pytest.raises(IbverifyError, match="intercept"):   # without it: no linear answer, with the hint
        ibverify.bias("signum", models=["linear"], data=f, tier="smoke")
    with pytest.raises(IbverifyError, match="--intercept applies to --data FILE only"):
        ibverify.bias("signum", models=["linear"], intercept=True, tier="smoke")


VERIFY_IDS = ["baek.control.shifted-diagonal-l2", "gronich.control.direction-spiral"]


def test_verify_rows_equal_the_cli_json(capsys, tmp_path):
    v = ibverify.verify(VERIFY_IDS, tier="smoke")
    cli = cli_json(capsys, "verify", *VERIFY_IDS, "--tier", "smoke", "--sequential", "--json", "-", "--quiet",
                   "--report", tmp_path / "reports")
    assert [r["id"] for r in v.rows] == VERIFY_IDS == list(v.verdicts())
    for mine, theirs in zip(v.rows, cli["claims"], strict=True):
        assert (mine["verdict"], mine["as_expected"]) == (theirs["verdict"], theirs["as_expected"])
        assert mine["outcome"]["figure"] == theirs["outcome"]["figure"]
        assert mine["outcome"]["figures"] == theirs["outcome"]["figures"]
    assert v.as_expected and len(v) == 2 and v[VERIFY_IDS[0]] is v.rows[0]
    assert v.to_json()["schema"] == cli["schema"] and v.summary["as_expected"] == 2


def test_train_final_theta_equals_the_cli_json(capsys, data):
    knobs = dict(steps=300, checkpoints=5, engine="reference", compare=False)
    t = ibverify.train("adam", data, beta1=0.5, **knobs)
    cli = cli_json(capsys, "train", "--data", data, "--optimizer", "adam", "--beta1", "0.5", "--steps", 300,
                   "--checkpoints", 5, "--engine", "reference", "--no-compare", "--json", "--quiet")
    np.testing.assert_array_equal(t.w, cli["w"])
    assert t.to_json()["w"] == cli["w"] and t.steps == 300 == t.checkpoints[-1]
    assert t.to_json()["optimizer"] == cli["optimizer"]
    assert set(t.diagnostics) == set(cli["diagnostics"])
    assert len(t.thetas) == len(t.checkpoints) and t.plot() is not None


def test_train_block_model_and_user_optimizer(capsys):
    spec = importlib.util.spec_from_file_location("my_signum", ROOT / "docs" / "examples" / "my_signum.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kw = dict(model="linear", steps=50, checkpoints=4, engine="reference", n=12, d=4)
    mine = ibverify.train(mod.make(), "linear", **kw)           # a UserOptimizer made in this process
    table = ibverify.train("signum", "linear", **kw)
    np.testing.assert_array_equal(mine.w, table.w)
    cli = cli_json(capsys, "train", "--data", "linear", "--optimizer", "signum", "--model", "linear", "--steps", 50,
                   "--checkpoints", 4, "--engine", "reference", "--n", 12, "--d", 4, "--json", "--quiet")
    assert table.to_json()["theta"] == cli["theta"]
    assert mine.to_json()["optimizer"] == "my-signum"


@pytest.mark.parametrize("call, msg", [
    (lambda: ibverify.bias("nope"), "unknown optimizer 'nope'"),
    (lambda: ibverify.bias("signum", models=["cubic"]), "unknown model 'cubic'"),
    (lambda: ibverify.bias("signum", tier="full"), "unknown tier 'full'"),
    (lambda: ibverify.bias("signum", lrr=0.1), "unknown knob 'lrr'"),
    (lambda: ibverify.bias("signum", data="/nonexistent.npz"), "/nonexistent.npz"),
    (lambda: ibverify.verify("no.such-claim", tier="smoke"), "unknown claim id(s): no.such-claim"),
    (lambda: ibverify.verify(tier="huge"), "unknown tier 'huge'"),
    (lambda: ibverify.train("adam", "/nonexistent.npz"), "/nonexistent.npz"),
    (lambda: ibverify.train("nope", "linear", model="linear"), "unknown optimizer 'nope'"),
    (lambda: ibverify.train("adam", "linear", model="cubic"), "unknown model 'cubic'"),
    (lambda: ibverify.bias(object()), "cannot use an object of type object"),
])
def test_bad_input_is_one_ibverify_error_line(call, msg):
    with pytest.raises(IbverifyError) as e:
        call()
    text = str(e.value)
    assert msg in text and "\n" not in text, text
    assert e.value.__cause__ is None and e.value.__suppress_context__


def test_an_optax_object_that_is_no_optimizer_is_one_line():
    # a stand-in from optax that is neither a factory nor an inject_hyperparams transformation (without optax: "need
    # optax"); the adapter itself: tests/test_optaxadapt.py
    thing = type("GradientTransformation", (), {"__module__": "optax._src.base"})()
    with pytest.raises(IbverifyError) as e:
        ibverify.bias(thing, models=["linear"], tier="smoke")
    assert "\n" not in str(e.value) and ("is neither a function" in str(e.value) or "need optax" in str(e.value))


def test_a_torch_object_that_is_no_optimizer_class_is_one_line():
    # a stand-in from torch that is no torch.optim.Optimizer subclass (without torch: "need PyTorch"); the adapter
    # itself: tests/test_torchadapt.py
    thing = type("Adam", (), {"__module__": "torch.optim.adam"})
    with pytest.raises(IbverifyError) as e:
        ibverify.bias(thing, models=["linear"], tier="smoke")
    assert "\n" not in str(e.value) and ("not an optimizer class" in str(e.value) or "PyTorch" in str(e.value))


def test_import_ibverify_is_light_until_a_function_runs():
    # as tests/cli/test_cli.py's start-up test: the heavy modules (and here numpy too) load only when a function runs
    code = ("import sys\n"
            "import ibverify\n"
            "f = (ibverify.bias, ibverify.verify, ibverify.train)\n"
            "heavy = ('numpy', 'cvxpy', 'numba', 'sympy', 'scipy', 'sklearn', 'matplotlib', 'dask', 'torch', 'jax')\n"
            "print(sorted(m for m in heavy if m in sys.modules))\n"
            "try:\n"
            "    ibverify.bias('nope')\n"
            "except ibverify.IbverifyError:\n"
            "    pass\n"
            "print('numpy' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD_S,
                       env=subprocess_env())
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[0] == "[]", r.stdout
    assert "bias" in dir(ibverify) and ibverify.UserOptimizer.__name__ == "UserOptimizer"
    with pytest.raises(AttributeError):
        ibverify.no_such_function  # noqa: B018
