"""`OptimizerSpec`: every knob of a linear-model optimizer run, with validation and defaults.

Names: inc-adam (Adam, batch 1, cyclic), det-adam (Adam, full batch), adam (Adam, batch size b and
sampling order), signum, gd, ngd (normalized GD), adam-proxy (AdamProxy, full batch).
Adam convention (paper 1): eps = 0, no bias correction, m_{−1} = v_{−1} = 0, 0/0 := 0.
Learning rate η_t = lr · (t+1)^(−lr_decay), t the 0-based global step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from .. import IbverifyError
from ..losses import check_loss

NAMES = ("inc-adam", "det-adam", "adam", "signum", "gd", "ngd", "adam-proxy")
ORDERS = ("cyclic", "reshuffle", "replacement")
ADAM_FAMILY = ("inc-adam", "det-adam", "adam")


@dataclass(frozen=True)
class OptimizerSpec:
    name: str
    batch_size: int | None = None  # None: the name's default (inc-adam 1, others full batch)
    order: str = "cyclic"
    lr: float = 0.1
    lr_decay: float = 0.5
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 0.0
    bias_correction: bool = False
    loss: str = "logistic"
    seed: int = 0

    def resolved(self, n: int) -> "OptimizerSpec":
        """Validate against n samples and fill the batch size."""
        if self.name not in NAMES:
            raise IbverifyError(f"unknown optimizer {self.name!r}; use one of {', '.join(NAMES)}")
        if self.order not in ORDERS:
            raise IbverifyError(f"unknown order {self.order!r}; use one of {', '.join(ORDERS)}")
        check_loss(self.loss)
        b = self.batch_size
        if self.name == "inc-adam":
            if b not in (None, 1):
                raise IbverifyError("inc-adam is batch size 1; use --optimizer adam --batch-size B")
            b = 1
        elif self.name in ("det-adam", "adam-proxy"):
            if b not in (None, n):
                raise IbverifyError(f"{self.name} is full batch (batch size {n})")
            b = n
        elif b is None:
            b = 1 if self.name == "adam" else n
        if not 1 <= b <= n:
            raise IbverifyError(f"batch size must be in 1..{n}, got {b}")
        if not (self.lr > 0):
            raise IbverifyError(f"learning rate must be > 0, got {self.lr}")
        if not (0 <= self.lr_decay <= 1):
            raise IbverifyError(f"lr decay a must be in [0, 1], got {self.lr_decay}")
        if not (0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            raise IbverifyError(f"need 0 <= beta1, beta2 < 1, got {self.beta1}, {self.beta2}")
        if self.is_adam and self.beta2 == 0 and self.beta1 > 0:
            raise IbverifyError("beta2 = 0 needs beta1 = 0 (the papers assume 0 <= beta1 <= beta2 < 1)")
        if not (self.eps >= 0):
            raise IbverifyError(f"eps must be >= 0, got {self.eps}")
        return replace(self, batch_size=b)

    @property
    def is_adam(self) -> bool:
        return self.name in ADAM_FAMILY

    def to_json(self) -> dict:
        return asdict(self)
