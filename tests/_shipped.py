"""scikit-learn's shipped datasets as the binary splits the own-data sweeps run over (issue 35): (name, X, y in ±1,
intercept) for every pair of iris's and wine's classes, raw breast_cancer (also with --intercept when asked) and the
given digits pairs, the first class of each pair labelled +1."""

from itertools import combinations

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine


def binary_splits(digits=((0, 1),), breast_cancer_intercept: bool = False) -> list[tuple]:
    out = []
    for name, load in (("iris", load_iris), ("wine", load_wine)):
        X, y = load(return_X_y=True)
        for a, b in combinations(sorted(set(y)), 2):
            k = (y == a) | (y == b)
            out.append((f"{name}{a}v{b}", X[k], np.where(y[k] == a, 1.0, -1.0), False))
    X, y = load_breast_cancer(return_X_y=True)
    out.append(("breast_cancer", X, np.where(y == 1, 1.0, -1.0), False))
    if breast_cancer_intercept:
        out.append(("breast_cancer+intercept", X, np.where(y == 1, 1.0, -1.0), True))
    X, y = load_digits(return_X_y=True)
    for a, b in digits:
        k = (y == a) | (y == b)
        out.append((f"digits{a}v{b}", X[k], np.where(y[k] == a, 1.0, -1.0), False))
    return out
