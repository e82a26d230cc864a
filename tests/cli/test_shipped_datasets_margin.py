"""Issue 35 item 6 (sweep): every binary split of scikit-learn's iris and wine, raw breast_cancer and digits 0-vs-1
through `ibverify margin` in ℓ2, ℓ∞ and ℓ1: a certified answer (its certificate re-checked here in the original
units) or a refusal that names a dual witness of non-separability. About 15 CPU-s."""

import json

import numpy as np
import pytest
from _shipped import binary_splits

from ibverify.cli import main

TOL = 1e-7


SPLITS = [s[:3] for s in binary_splits()]


@pytest.mark.parametrize("name,X,y", SPLITS, ids=[s[0] for s in SPLITS])
def test_margin_on_shipped_data_is_certified_or_refused_with_a_witness(capfd, tmp_path, name, X, y):
    p = tmp_path / f"{name}.npz"
    np.savez(p, X=X, y=y)
    Z = X * y[:, None]
    for norm, ords in (("l2", (2, 2)), ("linf", (np.inf, 1)), ("l1", (1, np.inf))):
        rc = main(["margin", "--data", str(p), "--norm", norm, "--json"])
        out, err = capfd.readouterr()
        if rc != 0:
            assert rc == 2 and len(err.splitlines()) == 1, err
            assert "not linearly separable: dual witness" in err, err
            continue
        r = json.loads(out)
        w, lam = np.asarray(r["direction"]) / r["margin"], np.asarray(r["duals"])
        nw = np.linalg.norm(w, ords[0])
        assert np.min(Z @ w) >= 1 - TOL and lam.min() >= -TOL * lam.sum()
        assert np.linalg.norm(Z.T @ lam, ords[1]) <= 1 + TOL and abs(nw - lam.sum()) <= TOL * nw
        assert np.max(np.abs(lam * (Z @ w - 1))) <= TOL * lam.sum()


def test_the_sweep_has_both_answers(capfd, tmp_path):
    """iris versicolor-vs-virginica is not linearly separable (a refusal), setosa-vs-versicolor is (an answer)."""
    assert [s[0] for s in SPLITS] == ["iris0v1", "iris0v2", "iris1v2", "wine0v1", "wine0v2", "wine1v2",
                                      "breast_cancer", "digits0v1"]
    rcs = {}
    for name, X, y in SPLITS[:3:2]:
        np.savez(tmp_path / f"{name}.npz", X=X, y=y)
        rcs[name] = main(["margin", "--data", str(tmp_path / f"{name}.npz"), "--json"])
        capfd.readouterr()
    assert rcs == {"iris0v1": 0, "iris1v2": 2}
