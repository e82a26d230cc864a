"""Signum in a fixed rotated basis as a user's optimizer file (docs/power.md, the linear-`bias` family; issue 45):

    m ← β1 m + (1−β1) g;   θ ← θ − η_t Q sign(Qᵀ m),   Q a fixed random orthogonal d × d matrix

(Q from numpy's default_rng(SEED + d): the QR factor of a Gaussian matrix, signs fixed by R's diagonal). With v = Qᵀθ
it is Signum on the data z Q, so its limit is Q times the ℓ∞ max-margin direction of z Q: the max margin of
‖Qᵀθ‖∞, a geometry that is neither ℓ1, ℓ2 nor ℓ∞.

    ibverify bias --optimizer benchmarks/optimizers/rotated_signum.py --model linear
"""

import numpy as np

from ibverify.optim import transforms as T
from ibverify.optim.userfile import UserOptimizer

SEED = 4500


def rotation(d: int) -> np.ndarray:
    """The fixed orthogonal Q of dimension d."""
    q, r = np.linalg.qr(np.random.default_rng(SEED + int(d)).standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def rotated_sign(xp) -> T.Transform:
    """u ← Q sign(Qᵀ u)."""
    def update(u, Q, params=None, **extra):
        return Q @ xp.sign(Q.T @ u), Q

    return T.Transform(lambda params: xp.array(rotation(len(params))), update)


def make():
    return UserOptimizer(name="rotated-signum", update="m ← β1 m + (1−β1) g; θ ← θ − η_t Q sign(Qᵀ m), Q fixed",
                         vector=lambda spec, xp: [T.trace(xp, spec.beta1), rotated_sign(xp)],
                         knobs={"beta1": 0.9})
