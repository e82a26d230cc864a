"""--intercept: the linear model has no bias; data separable only with one get a hint, and --intercept adds it."""

import json

import numpy as np
import pytest

from ibverify.cli import main


@pytest.fixture
def shifted(tmp_path):
    # two classes split by x0 = 3: separable with an intercept, not through the origin (both sides have x0 > 0
    # and x1 spans both signs on both sides)
    X = np.array([[1.0, 1.0], [2.0, -1.0], [2.5, 0.5], [4.0, 1.0], [5.0, -1.0], [3.5, -0.5]])
    y = np.array([-1.0, -1.0, -1.0, 1.0, 1.0, 1.0])
    X = np.c_[X, -X[:, 1]]          # a third column: still not separable through the origin
    path = tmp_path / "shifted.npz"
    np.savez(path, X=X, y=y)
    return path


def test_a_hint_when_the_data_are_separable_only_with_an_intercept(shifted, capsys):
    assert main(["margin", "--data", str(shifted), "--json"]) == 2
    err = capsys.readouterr().err
    assert "not linearly separable" in err and "--intercept" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("cmd", [["margin"], ["train", "--optimizer", "gd", "--steps", "200", "--no-compare", "-q"]])
def test_intercept_appends_a_column_of_ones_and_says_so(shifted, capsys, cmd):
    assert main([cmd[0], "--data", str(shifted), "--intercept", "--json", *cmd[1:]]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["data"]["intercept"] is True and out["data"]["d"] == 4
    w = np.asarray(out["direction"] if cmd[0] == "margin" else out["w"])
    X = np.load(shifted)["X"]
    y = np.load(shifted)["y"]
    if cmd[0] == "margin":
        assert np.min(y * (X @ w[:3] + w[3])) > 0     # the bias is the last weight and it separates
