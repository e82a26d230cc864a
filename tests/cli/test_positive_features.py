"""Issue 47 item 4: the bias-free ReLU^q nets on features that are all ≥ 0 (scikit-learn's wine 0 vs 2, iris 1 vs 2)
end with every hidden unit dead; `train --model ... --standardize` centres and scales each feature so that they
train, and a run whose units all died says so in one line naming the cause and the option. Data: scikit-learn's
shipped datasets, written to a temporary .npz (nothing downloaded)."""

import json

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine, make_moons

from ibverify.cli import main
from ibverify.cli.network import dead_units, standardized, units_alive
from ibverify.data.dataset import make
from ibverify.models import DeepReLU, TwoLayer


def pair(load, a, b):
    X, y = load(return_X_y=True)
    k = (y == a) | (y == b)
    return X[k].astype(float), np.where(y[k] == a, 1.0, -1.0)


@pytest.fixture(scope="module")
def wine02(tmp_path_factory):
    p = tmp_path_factory.mktemp("wine") / "wine02.npz"
    np.savez(p, **dict(zip("Xy", pair(load_wine, 0, 2), strict=True)))
    return p


@pytest.fixture(scope="module")
def iris12(tmp_path_factory):
    p = tmp_path_factory.mktemp("iris") / "iris12.npz"
    np.savez(p, **dict(zip("Xy", pair(load_iris, 1, 2), strict=True)))
    return p


def train_json(capsys, *args):
    rc = main(["train", "--model", "two-layer", *map(str, args), "--json", "-q"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def net_outputs(out, X):
    W, a = np.asarray(out["theta"]["W"]), np.asarray(out["theta"]["a"])
    return np.maximum(X @ W.T, 0.0) ** 2 @ a


# ---------------------------------------------------------------- the parts, on constructed inputs
def test_standardized_centres_and_scales_every_feature_and_keeps_a_constant_one_at_zero():
    X = np.array([[1.0, 5.0, 3.0], [3.0, 5.0, -1.0], [2.0, 5.0, 1.0], [6.0, 5.0, 1.0]])
    D, mean, scale = standardized(make(X, np.array([1.0, -1.0, 1.0, -1.0]), "m.npz"))
    np.testing.assert_array_equal(mean, [3.0, 5.0, 1.0])
    np.testing.assert_allclose(scale, [np.sqrt(3.5), 1.0, np.sqrt(2.0)], rtol=1e-15)   # population sd; constant: 1
    np.testing.assert_allclose(D.X[:, 0], np.array([-2.0, 0.0, -1.0, 3.0]) / np.sqrt(3.5), rtol=1e-15)
    assert np.all(D.X[:, 1] == 0.0)
    np.testing.assert_allclose(D.X[:, 2], np.array([2.0, -2.0, 0.0, 0.0]) / np.sqrt(2.0), rtol=1e-15)
    np.testing.assert_array_equal(D.y, [1.0, -1.0, 1.0, -1.0])
    assert D.name == "m.npz standardized"


def test_units_alive_counts_the_units_positive_on_some_sample():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    m = TwoLayer(2, 4, 2.0)
    W = np.array([[1.0, 0.0],       # alive (> 0 on samples 0 and 2)
                  [-1.0, -1.0],     # dead: < 0 everywhere
                  [1.0, -1.0],      # alive on sample 0 only
                  [0.0, 0.0]])      # dead: exactly 0 on every sample (σ = σ' = 0 there)
    assert units_alive(m, {"W": W, "a": np.ones(4)}, X) == [2]
    assert units_alive(m, {"W": -np.abs(W), "a": np.ones(4)}, X) == [0]
    # a deep net: every first-layer unit alive, the second layer dead (its weights negative on positive inputs)
    deep = DeepReLU(2, (3, 2), 2.0)
    th = {"W1": np.abs(np.ones((3, 2))), "W2": -np.ones((2, 3)), "a": np.ones(2)}
    assert units_alive(deep, th, X) == [3, 0]
    th["W2"][1] = [1.0, 1.0, -1.0]     # the first-layer units are equal: h = z1 + z1 − z1 > 0
    assert units_alive(deep, th, X) == [3, 1]
    from ibverify.models import Linear

    assert units_alive(Linear(2), {"w": np.ones(2)}, X) is None


def test_dead_units_names_the_cause_and_the_option():
    pos, mixed = np.array([[1.0, 2.0], [0.0, 3.0]]), np.array([[1.0, -2.0], [0.0, 3.0]])
    assert dead_units([3], pos, False) is None and dead_units(None, pos, False) is None
    assert dead_units([2, 1], pos, False) is None
    line = dead_units([0], pos, False)
    assert line.startswith("every hidden unit is dead") and "every feature of these data is ≥ 0" in line
    assert line.endswith("rerun with --standardize (centre and scale each feature)") and "\n" not in line
    assert dead_units([0], mixed, False).endswith(
        ": rerun with --standardize (centre and scale each feature) or a smaller --lr")
    assert dead_units([0], mixed, True).endswith("(standardized) data: rerun with a smaller --lr")
    assert dead_units([4, 0], pos, False).startswith("every unit of hidden layer 2 is dead")


# ---------------------------------------------------------------- the runs
@pytest.mark.parametrize("fixture", ["wine02", "iris12"])
def test_positive_features_kill_every_unit_and_the_run_says_why(capsys, request, fixture):
    p = request.getfixturevalue(fixture)
    rc = main(["train", "--model", "two-layer", "--data", str(p), "--optimizer", "gd", "--steps", "300", "-q"])
    text = capsys.readouterr().out
    assert rc == 0
    head = "warning: data not separated yet, and never will be in this run: every hidden unit is dead"
    warn = [ln for ln in text.splitlines() if ln.startswith(head)]
    assert len(warn) == 1 and "--standardize" in warn[0], text
    assert "run longer" not in text                        # a longer run cannot help: not suggested
    out = train_json(capsys, "--data", p, "--optimizer", "gd", "--steps", "300")
    X = np.load(p)["X"]
    assert out["units_alive"] == [0] and warn[0].endswith(": " + out["dead_units"])
    assert np.all(np.asarray(out["theta"]["W"]) @ X.T <= 0)        # dead on every sample, as said
    assert out["standardized"] is None


@pytest.mark.parametrize("fixture,steps", [("wine02", 2000), ("iris12", 20000)])
def test_standardize_lets_positive_feature_pairs_train(capsys, request, fixture, steps):
    p = request.getfixturevalue(fixture)
    out = train_json(capsys, "--data", p, "--optimizer", "adam", "--steps", steps, "--standardize")
    X, y = np.load(p)["X"], np.load(p)["y"]
    mean, sd = X.mean(axis=0), X.std(axis=0)
    np.testing.assert_allclose(out["standardized"]["mean"], mean, rtol=1e-14)
    np.testing.assert_allclose(out["standardized"]["scale"], sd, rtol=1e-14)
    assert out["data"] == f"{p.name} standardized" and out["dead_units"] is None
    assert out["units_alive"] == [16]
    # the run trained on the standardized features: its q_min is min_i y_i f(θ; (x_i − mean)/sd), and it is > 0
    q = y * net_outputs(out, (X - mean) / sd)
    assert out["q_min"] == pytest.approx(q.min(), rel=1e-9) and q.min() > 0
    assert out["kkt"] is not None


def test_standardize_then_intercept_appends_a_column_of_ones(capsys, wine02):
    out = train_json(capsys, "--data", wine02, "--optimizer", "adam", "--steps", "50", "--standardize", "--intercept")
    X, y = np.load(wine02)["X"], np.load(wine02)["y"]
    Xs = np.c_[(X - X.mean(axis=0)) / X.std(axis=0), np.ones(len(X))]
    assert out["d"] == 14 and np.asarray(out["theta"]["W"]).shape == (16, 14)
    assert out["q_min"] == pytest.approx(np.min(y * net_outputs(out, Xs)), rel=1e-9)


def test_moons_not_separated_is_reported_and_is_not_a_dead_net(capsys, tmp_path):
    X, y = make_moons(200, noise=0.1, random_state=0)
    p = tmp_path / "moons.npz"
    np.savez(p, X=X, y=np.where(y == 1, 1.0, -1.0))
    rc = main(["train", "--model", "two-layer", "--data", str(p), "--optimizer", "adam", "--steps", "3000", "-q"])
    text = capsys.readouterr().out
    assert rc == 0 and "data not separated yet (q_min ≤ 0): no margins, no KKT residual; run longer" in text
    assert "dead" not in text
    out = train_json(capsys, "--data", p, "--optimizer", "adam", "--steps", "3000")
    assert out["q_min"] <= 0 and out["dead_units"] is None and out["units_alive"][0] > 0


@pytest.mark.parametrize("argv,message", [
    (["--model", "two-layer", "--data", "teacher"], "--standardize applies to a data file, not to generated data"),
    (["--model", "matrix-linear", "--data", "DATA"], "--standardize applies to vector inputs"),
    (["--data", "DATA"], "--standardize applies to block models (--model ...)"),
])
def test_standardize_where_it_does_not_apply_is_one_line(capsys, wine02, argv, message):
    argv = [str(wine02) if a == "DATA" else a for a in argv]
    rc = main(["train", *argv, "--optimizer", "gd", "--steps", "5", "--standardize"])
    out, err = capsys.readouterr()
    assert rc == 2 and len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err, err
