"""Signum as a user's optimizer file: `ibverify bias --optimizer docs/examples/my_signum.py:make`.

m ← β1 m + (1−β1) g;  θ ← θ − η_t sign(m),  η_t = lr · t^(−lr_decay)  (ibverify appends the schedule).
The same chain as the table's `signum` row (tests/test_userfile.py holds the two to the same iterates).
"""

from ibverify.optim import logframe as F
from ibverify.optim import transforms as T
from ibverify.optim.userfile import UserOptimizer


def make():
    return UserOptimizer(
        name="my-signum",
        update="m ← β1 m + (1−β1) g; θ ← θ − η_t sign(m)",
        vector=lambda spec, xp: [T.trace(xp, spec.beta1), T.scale_by_sign(xp)],   # linear model
        block=lambda spec: [F.EMA(spec.beta1), F.Sign()],                          # matrix, two-layer
        knobs={"beta1": 0.9},
    )
