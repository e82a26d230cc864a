"""No wrong refusal (issue 21): every binary split of scikit-learn's shipped classification datasets, raw and
standardized, gets a certificate either way — a direction whose margins are positive in exact rational arithmetic,
or a dual witness λ ≥ 0 (Σλ = 1) with ‖Ẑᵀλ‖_1 ≈ 0 — and breast_cancer raw (features from 1e−3 to 4254, refused
before as "not separable") is accepted with the ℓ2 margin of an independent QP solver (HiGHS) to 1e−6."""

from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
from sklearn import datasets as skd

from ibverify.data.dataset import make
from ibverify.data.files import separability
from ibverify.oracles import max_margin

LOADERS = {"iris": skd.load_iris, "wine": skd.load_wine, "breast_cancer": skd.load_breast_cancer,
           "digits": skd.load_digits}


def splits():
    for name, load in LOADERS.items():
        X, y = load(return_X_y=True)
        for a, b in combinations(np.unique(y), 2):
            if name == "digits" and (a + b) % 3:   # a third of digits' 45 pairs keeps the test short
                continue
            keep = (y == a) | (y == b)
            yield f"{name}:{a}v{b}", X[keep], np.where(y[keep] == b, 1.0, -1.0)


SPLITS = list(splits())


def standardized(X):
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


@pytest.mark.parametrize("name,X,y", SPLITS, ids=[s[0] for s in SPLITS])
@pytest.mark.parametrize("prep", ["raw", "standardized"])
def test_every_split_gets_a_certificate_either_way(name, X, y, prep):
    D = make(standardized(X) if prep == "standardized" else X, y, name)
    s = separability(D)
    assert (s.direction is None) != (s.witness is None), f"{name} {prep}: undecided"
    if s.direction is not None:
        w = [Fraction(float(v)) for v in s.direction]
        assert min(sum(Fraction(float(a)) * b for a, b in zip(z, w, strict=True)) for z in D.Z) > 0
        assert s.gamma > 0
    else:
        lam = s.witness
        assert np.all(lam >= 0) and lam.sum() == pytest.approx(1.0)
        assert np.abs((D.Z / s.scale).T @ lam).sum() == pytest.approx(s.bound) and s.bound <= 1e-9
        assert s.gamma <= 1e-9


def test_breast_cancer_raw_is_accepted_with_the_independent_qp_margin():
    cvxpy = pytest.importorskip("cvxpy")
    X, y = skd.load_breast_cancer(return_X_y=True)
    Z = np.where(y == 1, 1.0, -1.0)[:, None] * X
    mm = max_margin(Z, "l2")
    w = cvxpy.Variable(Z.shape[1])
    prob = cvxpy.Problem(cvxpy.Minimize(0.5 * cvxpy.sum_squares(w)), [Z @ w >= 1])
    prob.solve(solver="HIGHS")
    assert prob.status == "optimal"
    assert mm.margin == pytest.approx(1 / np.linalg.norm(w.value), rel=1e-6)
    assert mm.margin == pytest.approx(4.04756e-05, rel=1e-5)
