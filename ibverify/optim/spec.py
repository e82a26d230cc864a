"""`OptimizerSpec`: every knob of one optimizer run, for any model, with the table's defaults.

Knob names and the schedule convention are those of `table` (η_t = lr · t^(−lr_decay), t = 1, 2, …).
A knob left `None` takes the optimizer's default from the table; `lr_decay` and `batch_size` depend on
the model and are settled by `resolved(n)` (vector model: n samples) or `for_block(L)` (block model of
degree L). Checks build specs only through `from_params` (claim parameters, old knob names accepted).

A name `path/to/file.py[:function]` (ibverify.optfile) is a user's optimizer: the file is loaded
(`userfile.load`), `name` becomes the user's name and `user` holds its row (chains, file, sha256). Every consumer
reads the optimizer's row as `spec.row` (the user's row, or the table's row of `name`). A name `torch:NAME[:k=v,...]`
is a PyTorch optimizer (`torchadapt.row_from_name`: torch imported then), held as a user's row is.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from .. import optfile
from ..errors import IbverifyError
from ..losses import check_loss
from .table import DEFAULTS, DEPRECATED, KNOBS, NAMES, ORDERS, VECTOR_LR_DECAY, OptimizerInfo, info


@dataclass(frozen=True)
class OptimizerSpec:
    name: str
    batch_size: int | None = None
    order: str = DEFAULTS["order"]
    lr: float | None = None
    lr_decay: float | None = None
    beta1: float | None = None
    beta2: float | None = None
    eps: float | None = None
    bias_correction: bool | None = None
    weight_decay: float | None = None
    loss: str = DEFAULTS["loss"]
    seed: int = DEFAULTS["seed"]
    lr_matrix: float | None = None
    lr_vector: float | None = None
    user: OptimizerInfo | None = field(default=None, hash=False, repr=False)  # a user's optimizer file's row

    def __post_init__(self):
        if self.user is None and optfile.split(self.name):
            from .userfile import load  # a user's optimizer file (numpy: only when one is named)

            object.__setattr__(self, "user", load(self.name))
        elif self.user is None and isinstance(self.name, str) and self.name.strip().startswith("torch:"):
            from .torchadapt import row_from_name  # a torch optimizer (torch: only when one is named)

            object.__setattr__(self, "user", row_from_name(self.name))
        if self.user is not None:
            object.__setattr__(self, "name", self.user.name)
        elif self.name not in NAMES:
            return  # refused by resolved()/for_block() with the list of names
        row = self.row
        for f in fields(self):
            if f.name not in ("name", "batch_size", "lr_decay", "user") and getattr(self, f.name) is None:
                object.__setattr__(self, f.name, row.default(f.name))  # None where the default depends on the model

    @property
    def row(self) -> OptimizerInfo:
        """The optimizer's row: the user's (an optimizer file) or the table's; KeyError for an unknown name."""
        return self.user if self.user is not None else info(self.name)

    def _for_model(self, model: str) -> dict:
        """The model-dependent knobs left None, from the table."""
        row = self.row
        return {f.name: row.default(f.name, model) for f in fields(self)
                if f.name != "user" and getattr(self, f.name) is None and row.model_dependent(f.name)}

    @classmethod
    def from_params(cls, params: Mapping[str, Any], **overrides) -> "OptimizerSpec":
        """The spec named by `params["optimizer"]` (or `name=`), reading every knob present in `params`
        and `overrides` (other keys are ignored); an old knob name gives one DeprecationWarning line."""
        p = {**params, **overrides}
        name = p.get("name", p.get("optimizer"))
        if name is None:
            raise IbverifyError("no optimizer named (parameter 'optimizer')")
        kw: dict[str, Any] = {}
        for old, new in DEPRECATED.items():
            if old in p:
                if new in p and p[new] != p[old]:
                    raise IbverifyError(f"knob {old!r} (old name of {new!r}) = {p[old]!r} contradicts "
                                        f"{new} = {p[new]!r}")
                warnings.warn(f"knob {old!r} is deprecated: use {new!r}", DeprecationWarning, stacklevel=2)
                kw[new] = p[old]
        kw.update({k: p[k] for k in KNOBS if k in p})
        return cls(name, **kw, **({"user": overrides["user"]} if overrides.get("user") is not None else {}))

    def _check_name(self) -> None:
        if self.user is None and self.name not in NAMES:
            raise IbverifyError(f"unknown optimizer {self.name!r}; use one of {', '.join(NAMES)} (or a file: "
                                f"path/to/file.py[:function])")

    def _check_common(self) -> None:
        if self.order not in ORDERS:
            raise IbverifyError(f"unknown order {self.order!r}; use one of {', '.join(ORDERS)}")
        check_loss(self.loss)
        for k in ("lr", "lr_matrix", "lr_vector"):
            v = getattr(self, k)
            if v is not None and not (v > 0):
                raise IbverifyError(f"learning rate {k} must be > 0, got {v}")
        if not (0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            raise IbverifyError(f"need 0 <= beta1, beta2 < 1, got {self.beta1}, {self.beta2}")
        if self.is_adam and self.beta2 == 0 and self.beta1 > 0:
            raise IbverifyError("beta2 = 0 needs beta1 = 0 (the papers assume 0 <= beta1 <= beta2 < 1)")
        if not (self.eps >= 0):
            raise IbverifyError(f"eps must be >= 0, got {self.eps}")
        if not (self.weight_decay >= 0):
            raise IbverifyError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if self.weight_decay and "weight_decay" not in self.row.moments:
            raise IbverifyError(f"{self.name} has no weight decay (weight_decay = {self.weight_decay}); use adamw")

    def resolved(self, n: int) -> "OptimizerSpec":
        """Validated for the vector model on n samples: batch size and lr_decay settled."""
        self._check_name()
        row = self.row
        if "vector" not in row.models:
            raise IbverifyError(f"{self.name} runs block models only (use --model); vector optimizers: "
                                f"{', '.join(n_ for n_ in NAMES if 'vector' in info(n_).models)}")
        self = replace(self, **self._for_model("vector"))
        self._check_common()
        b = self.batch_size
        if row.batch == "one":
            if b not in (None, 1):
                raise IbverifyError(f"{self.name} is batch size 1; use --optimizer adam --batch-size B")
            b = 1
        elif row.batch == "full":
            if b not in (None, n):
                raise IbverifyError(f"{self.name} is full batch (batch size {n})")
            b = n
        elif b is None:
            b = row.default("batch_size") or n
        if not 1 <= b <= n:
            raise IbverifyError(f"batch size must be in 1..{n}, got {b}")
        a = self.lr_decay if self.lr_decay is not None else row.default("lr_decay", "vector")
        a = VECTOR_LR_DECAY if a is None else a
        if not (0 <= a <= 2):   # a > 1: a summable step, the weights stop moving (a control's frozen run)
            raise IbverifyError(f"lr decay a must be in [0, 2], got {a}")
        return replace(self, batch_size=b, lr_decay=a)

    def for_block(self, L: float) -> "OptimizerSpec":
        """Validated for a block model of degree L: lr_decay defaults to 1 − 1/(2L), the middle of the
        theorems' range 1 − 1/L < lr_decay ≤ 1 (a value outside it is allowed and warned about by the run)."""
        self._check_name()
        if "block" not in self.row.models:
            raise IbverifyError(f"{self.name} runs the vector (linear, per-sample) model only; block optimizers: "
                                f"{', '.join(n_ for n_ in NAMES if 'block' in info(n_).models)}")
        if self.batch_size is not None:
            raise IbverifyError("block models are trained full batch: --batch-size does not apply")
        self = replace(self, **self._for_model("block"))
        self._check_common()
        a = self.lr_decay if self.lr_decay is not None else self.row.default("lr_decay", "block")
        return replace(self, lr_decay=1.0 - 1.0 / (2.0 * L) if a is None else a)

    @property
    def is_adam(self) -> bool:
        """Adam's moments (m̂/(√v̂ + ε)): the Adam rows and adamw (lion has a β2 but no second moment)."""
        return self.user is None and self.name in NAMES and "bias_correction" in info(self.name).moments

    def to_json(self) -> dict:
        """The knobs; a user's optimizer adds its file (`source`, absolute path:function) and the file's sha256."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "user"}
        if self.user is not None:
            out.update(source=self.user.user.source, source_sha256=self.user.user.sha256)
        return out
