"""An optimizer's chain from its row (`table.OptimizerInfo`, or a user's file's row): every row carries its chains
(`vector`, `block`) before the schedule; these append the schedule.

  build(spec, xp)            the linear model's chain of `transforms` (float64 or mpmath backend xp)
  make_optimizer(spec, …)    the block models' `logframe.Optimizer` (hybrids: their parts' chains, partitioned)

Both chains follow one protocol (`protocol`, optax's): init(params) -> state, update(updates, state, params=None,
**extra) -> (updates, state), the step count t = 1, 2, … held in the state."""

from __future__ import annotations

import warnings

from ..errors import IbverifyError
from .. import geometry as geo
from ..blocks import Params
from . import logframe as F
from . import transforms as T
from .logframe import Optimizer, Partition, Schedule, ScheduleWarning, check_schedule
from .protocol import Chain, chain
from .spec import OptimizerSpec
from .table import info
from .userguard import guard_block, guard_vector


def user_chain(out, family: str = "vector") -> list:
    """A chain builder's output as a list of transforms: one transform, a list of them, or a chain.
    `family` ("vector" or "block") only words the error."""
    kind = T.Transform if family == "vector" else F.Transform
    ts = (list(out.ts) if isinstance(out, Chain) else [out] if isinstance(out, kind)   # (a T.Transform is a tuple)
          else list(out) if isinstance(out, (list, tuple)) else [out])
    if not all(isinstance(t_, (kind, Chain)) for t_ in ts):
        what = ("ibverify.optim.transforms transforms (Transform(init, update))" if family == "vector" else
                "ibverify.optim.logframe transforms (EMA, Sign, NormalizeL2, …)")
        raise IbverifyError(f"its {family} chain must be {what} or a list of them, got {type(out).__name__}")
    return ts


def build(spec: OptimizerSpec, xp) -> Chain:
    """The linear model's chain of `spec` (resolved): its row's vector chain, then scale_by_schedule(lr, lr_decay)
    (none for a row that `owns_schedule`).
    A user's transforms of the protocol before issue 32 (init(d), update(u, grad, state, t)) are adapted
    (`transforms.legacy_prefix`)."""
    row = spec.row
    if row.vector is None:
        raise IbverifyError(f"{spec.name} has no chain for the linear model")
    ts = user_chain(row.vector(spec, xp), "vector")
    if spec.user is not None:   # a user's file: old-protocol transforms adapted, its exceptions one line (userguard)
        ts = guard_vector(T.legacy_prefix(ts), spec.user.user.source)
    if row.owns_schedule:   # its chain makes the whole step, η_t included (a torch optimizer: torchadapt)
        return chain(*ts)
    return chain(*ts, T.scale_by_schedule(xp, spec.lr, spec.lr_decay))


def _block_chain(row, spec: OptimizerSpec) -> list:
    ts = user_chain(row.block(spec), "block")
    return guard_block(F.adapt(ts), spec.user.user.source) if spec.user is not None else ts


def make_optimizer(spec: OptimizerSpec | str, *, params: Params | None = None, L: float | None = None,
                   warn: bool = True, **knobs) -> Optimizer:
    """The block optimizer of `spec` (or of a name and knobs, e.g. `make_optimizer("muon", lr=0.3)`).

    Hybrids (a row with `parts`) partition their parts' chains: matrix blocks (2-D) of `params` get the first part
    (Muon) at lr_matrix, vector blocks the second (Signum/Adam) at lr_vector. `L` (the model's degree) settles the
    default lr_decay and the schedule check."""
    if isinstance(spec, str):
        spec = OptimizerSpec.from_params({"optimizer": spec, **knobs})
    elif knobs:
        raise IbverifyError("give knobs in the spec or with a name, not both")
    spec._check_name()
    if spec.lr_decay is None and L is None:
        raise IbverifyError(f"{spec.name}: lr_decay is needed (or the model's degree L for its default)")
    spec = spec.for_block(L if L is not None else 1.0)
    row = spec.row
    check_schedule(spec.lr_decay, L, warn=warn)
    if spec.is_adam and not row.parts and spec.beta1 > spec.beta2:
        warnings.warn(f"Adam with β1 = {spec.beta1} > β2 = {spec.beta2}: outside the theorem (β1 ≤ β2)",
                      ScheduleWarning, stacklevel=2)
    hyper = {k: getattr(spec, k) for k in ("lr", "lr_decay", *row.moments)}
    if not row.parts:
        sch = Schedule(spec.lr, spec.lr_decay)
        # "adaptive" (adagrad): no geometry of its own; its run diagnostics (alignment) are measured in ℓ2
        own = geo.L2() if row.geometry == "adaptive" else geo.get(row.geometry)
        return Optimizer(row.name, chain(*_block_chain(row, spec), sch), own, sch.rate, hyper, spec)
    if params is None:
        raise IbverifyError(f"{row.name} needs the parameter blocks to split matrices from vectors")
    mats = tuple(k for k, v in params.items() if v.ndim == 2)
    vecs = tuple(k for k, v in params.items() if v.ndim != 2)
    if not mats or not vecs:
        raise IbverifyError(f"{row.name} needs both matrix and vector blocks (got {list(params)})")
    mat, vec = (info(p) for p in row.parts)
    lm, lv = spec.lr_matrix, spec.lr_vector
    ch = Partition({"matrices": (mats, chain(*_block_chain(mat, spec), Schedule(lm, spec.lr_decay))),
                    "vectors": (vecs, chain(*_block_chain(vec, spec), Schedule(lv, spec.lr_decay)))})
    hyper.update(lr_matrix=lm, lr_vector=lv)
    return Optimizer(row.name, ch, geo.Hybrid(lv / lm, mats), Schedule(lv, spec.lr_decay).rate, hyper, spec)
