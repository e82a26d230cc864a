"""Diagonally preconditioned GD as a user's optimizer file (docs/power.md, the linear-`bias` family; issue 45):

    θ ← θ − η_t P g,   P = diag(κ^(j/(d−1) − 1)), j = 0 … d−1   (from 1/κ on the first coordinate to 1 on the last)

Its limit on separable data is the max-margin direction of ‖P^(−1/2) w‖₂ (GD on the data z P^(1/2), w = P^(1/2) v),
reached at GD's 1/log t rate: near ŵ2 for κ near 1, a near miss of ℓ2. One function per κ:

    ibverify bias --optimizer benchmarks/optimizers/precond_gd.py:kappa2 --model linear
"""

import numpy as np

from ibverify.optim import transforms as T
from ibverify.optim.userfile import UserOptimizer

KAPPAS = {"kappa1_02": 1.02, "kappa1_05": 1.05, "kappa1_2": 1.2, "kappa1_5": 1.5, "kappa2": 2.0, "kappa4": 4.0,
          "kappa10": 10.0}


def diagonal(d: int, kappa: float) -> np.ndarray:
    """P's diagonal: κ^(j/(d−1) − 1), j = 0 … d−1 (d = 1: 1); max P = 1, so a step η < 2/β stays a descent step."""
    return np.ones(1) if d == 1 else float(kappa) ** (np.arange(d) / (d - 1) - 1.0)


def precondition(xp, kappa: float) -> T.Transform:
    """u ← P u."""
    def update(u, P, params=None, **extra):
        return u * P, P

    return T.Transform(lambda params: xp.array(diagonal(len(params), kappa)), update)


def _make(name: str, kappa: float):
    def make():
        return UserOptimizer(name=f"precond-gd-k{kappa:g}",
                             update=f"θ ← θ − η_t P g, P = diag({kappa:g}^(j/(d−1) − 1))",
                             vector=lambda spec, xp: [precondition(xp, kappa)])
    make.__name__ = name
    return make


kappa1_02, kappa1_05, kappa1_2, kappa1_5, kappa2, kappa4, kappa10 = (_make(n, k) for n, k in KAPPAS.items())
