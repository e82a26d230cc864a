"""Normalized gradient descent as a user's optimizer file: `ibverify bias --optimizer docs/examples/my_ngd.py`
(the function's name defaults to `make`).

θ ← θ − η_t g/‖g‖₂,  η_t = lr · t^(−lr_decay)  (ibverify appends the schedule): steepest descent in ℓ2.
"""

from ibverify.optim import logframe as F
from ibverify.optim import transforms as T
from ibverify.optim.userfile import UserOptimizer


def make():
    return UserOptimizer(
        name="my-ngd",
        update="θ ← θ − η_t g/‖g‖₂",
        vector=lambda spec, xp: T.normalize_l2(xp),
        block=lambda spec: F.NormalizeL2(),
        knobs={"lr": 0.1},
    )
