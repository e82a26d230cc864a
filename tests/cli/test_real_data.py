"""Real data shipped with scikit-learn (no downloads), on the splits that are linearly separable:
iris setosa vs rest, digits pairs, wine class 0 vs rest. Pixels that are zero in every image are
inert coordinates: set aside and reported, never refused; results do not depend on the data's scale."""

import json

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris, load_wine

from ibverify.cli import main
from ibverify.data.dataset import make
from ibverify.engine import run
from ibverify.optim import OptimizerSpec
from ibverify.oracles import max_margin
from ibverify.theory import predict


def one_vs(X, y, a, b=None):
    """Label +1 for class a, −1 for class b (or for every other class when b is None)."""
    keep = np.ones(len(y), bool) if b is None else (y == a) | (y == b)
    return make(X[keep], np.where(y[keep] == a, 1.0, -1.0), f"{a}-vs-{'rest' if b is None else b}")


@pytest.fixture(scope="module")
def iris():
    return one_vs(*load_iris(return_X_y=True), 0)


@pytest.fixture(scope="module")
def digits01():
    return one_vs(*load_digits(return_X_y=True), 0, 1)


def ib_json(capsys, tmp_path, D, *args):
    p = tmp_path / f"{D.name}.npz"
    np.savez(p, X=D.X, y=D.y)
    rc = main([*map(str, args), "--data", str(p), "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_digits_predict_sets_inert_pixels_aside(capsys, tmp_path, digits01):
    # issue 11: exit 2 with "M(c) is singular (coordinate 0 is zero on supp(c))" on digits 0 vs 1
    inert = np.flatnonzero(~np.any(digits01.X != 0, axis=0))
    assert len(inert) == 12
    out = ib_json(capsys, tmp_path, digits01, "predict")
    assert out["inert_coordinates"] == inert.tolist() == out["data"]["inert_coordinates"]
    p = np.asarray(out["direction"])
    assert np.all(p[inert] == 0.0) and np.linalg.norm(p) == pytest.approx(1.0)
    assert out["residual"] <= 1e-8 and out["kkt_residual"] <= 1e-8
    # set aside = the same fixed point as on the data without those columns
    live = np.setdiff1d(np.arange(64), inert)
    ref = predict(digits01.Z[:, live], damping=out["damping"])
    np.testing.assert_allclose(p[live], ref["direction"], atol=1e-7)


def test_adam_never_moves_inert_coordinates(digits01):
    """Why inert coordinates can be set aside: per-sample Adam's update there is 0/0 := 0, and the
    other coordinates run exactly as on the data without them."""
    inert = np.flatnonzero(~np.any(digits01.X != 0, axis=0))
    live = np.setdiff1d(np.arange(64), inert)
    spec = OptimizerSpec("inc-adam", beta1=0.9, beta2=0.99)
    full, reduced = run(digits01.Z, spec, 2000), run(digits01.Z[:, live], spec, 2000)
    assert np.all(full.w[inert] == 0.0)
    np.testing.assert_array_equal(full.w[live], reduced.w)


@pytest.mark.parametrize("pair", [(0, 1), (1, 7), (3, 8)])
def test_digits_margin_reports_inert_pixels(capsys, tmp_path, pair):
    D = one_vs(*load_digits(return_X_y=True), *pair)
    inert = np.flatnonzero(~np.any(D.X != 0, axis=0))
    out = ib_json(capsys, tmp_path, D, "margin", "--norm", "l2")
    assert out["inert_coordinates"] == inert.tolist() and len(inert) >= 9
    d = np.asarray(out["direction"])
    assert np.all(d[inert] == 0.0)
    assert np.min(D.Z @ d) == pytest.approx(out["margin"], rel=1e-7)  # the margin the direction attains
    assert len(out["support"]) >= 2


def test_iris_predict_is_scale_free_and_agrees_with_the_issue(capsys, tmp_path, iris):
    # issue 11: on iris (setosa vs rest) predict works; cos to ŵ2 0.88, to the ℓ∞ direction 0.90
    out = ib_json(capsys, tmp_path, iris, "predict")
    assert out["cos_l2"] == pytest.approx(0.8837, abs=1e-3) and out["cos_linf"] == pytest.approx(0.9004, abs=1e-3)
    for s in (1e-8, 1e8):
        r = predict(s * iris.Z)
        np.testing.assert_allclose(r["direction"], out["direction"], atol=1e-9)
        assert r["gamma_l2"] == pytest.approx(s * out["gamma_l2"], rel=1e-9)
        assert r["support_vectors"] == out["support_vectors"]


def test_iris_train_reports_distance_to_its_limit(capsys, tmp_path, iris):
    out = ib_json(capsys, tmp_path, iris, "train", "--optimizer", "inc-adam", "--steps", 30000)
    mv, cmp = out["direction_change"], out["comparison"]
    assert mv["still_moving"] and mv["angle_rad"] > 1e-3  # far from the limit at 3·10⁴ steps
    assert 0.8 < cmp["p_star"]["cos"] < 0.999 and cmp["l2"]["cos"] < cmp["p_star"]["cos"]
    assert out["data"] == {"file": str(tmp_path / f"{iris.name}.npz"), "n": 150, "d": 4, "intercept": False,
                           "inert_coordinates": []}


def test_wine_features_on_different_scales(iris):
    # wine's features range from ~0.1 to ~1000: the oracles and predict solve on Z/max|Z|
    D = one_vs(*load_wine(return_X_y=True), 0)
    for norm in ("l2", "linf", "l1"):
        a, b = max_margin(D.Z, norm), max_margin(1e-6 * D.Z, norm)
        assert b.margin == pytest.approx(1e-6 * a.margin, rel=1e-9)
        assert a.support.tolist() == b.support.tolist() and len(a.support) >= 2
    r = predict(D.Z)
    assert r["residual"] <= 1e-8 and r["damping"] == 0.0


def _walk_sets():
    from sklearn.datasets import load_breast_cancer, make_moons

    out = [("digits1v2", *_pair(load_digits, 1, 2)), ("digits0v8", *_pair(load_digits, 0, 8))]
    X, y = load_breast_cancer(return_X_y=True)
    out.append(("breast_cancer_std", (X - X.mean(axis=0)) / X.std(axis=0), np.where(y == 1, 1.0, -1.0)))
    X, y = make_moons(200, noise=0.1, random_state=0)
    out.append(("moons", X, np.where(y == 1, 1.0, -1.0)))
    return out


def _pair(load, a, b):
    X, y = load(return_X_y=True)
    k = (y == a) | (y == b)
    return X[k].astype(float), np.where(y[k] == a, 1.0, -1.0)


@pytest.mark.parametrize("name,X,y", _walk_sets(), ids=lambda v: v if isinstance(v, str) else "")
def test_issue47_margin_and_train_answer_or_refuse_in_one_line(capsys, tmp_path, name, X, y):
    """Issue 47 (done when): digits 1v2 and 0v8, standardized breast_cancer and make_moons through `margin` and
    `train` (inc-adam, signum): an answer whose numbers are those of its direction, or one line naming the dual
    witness of non-separability (moons: not linearly separable; standardized breast_cancer: only with an intercept,
    and the line says so; with --intercept it is answered)."""
    p = tmp_path / f"{name}.npz"
    np.savez(p, X=X, y=y)
    Z = X * y[:, None]
    rc = main(["margin", "--data", str(p), "--json"])
    out, err = capsys.readouterr()
    extra = []
    if name in ("moons", "breast_cancer_std"):   # centred data: no separating direction through the origin
        assert rc == 2 and len(err.strip().splitlines()) == 1 and "not linearly separable: dual witness" in err, err
        if name == "moons":
            return
        assert err.strip().endswith("these data are separable with one: add --intercept (a column of ones)")
        extra = ["--intercept"]
        Z = np.c_[X, np.ones(len(X))] * y[:, None]
        rc = main(["margin", "--data", str(p), "--json", *extra])
        out, err = capsys.readouterr()
    assert rc == 0, err
    r = json.loads(out)
    assert np.min(Z @ np.asarray(r["direction"])) == pytest.approx(r["margin"], rel=1e-6)
    for opt in ("inc-adam", "signum"):
        rc = main(["train", "--data", str(p), "--optimizer", opt, "--epochs", "2", "--no-compare", "--json", *extra])
        out, err = capsys.readouterr()
        assert rc == 0, err
        t = json.loads(out)
        assert t["min_margin"] == pytest.approx(float(np.min(Z @ np.asarray(t["w"]))), rel=1e-9, abs=1e-12)
