"""A PyTorch optimizer run unchanged, in float64, on the linear (vector) model: `--optimizer torch:NAME[:k=v,...]`
(or the row's own name, `torch:NAME(k=v,...)`).

`torch:Adam:eps=0`, `torch:SGD:momentum=0.9`, `torch:Adagrad` (a class of `torch.optim`, its keyword arguments as
Python literals: `torch:Adam:betas=(0.9,0.99),eps=0`), or from Python a `torch.optim.Optimizer` subclass or a
`functools.partial` of one (`ibverify.bias(functools.partial(torch.optim.Adam, eps=0.0))`; adapters.ADAPTERS).

ibverify supplies the batch gradient (`p.grad`) and the step size: before every step the group's lr is set to
η_t = lr · t^(−lr_decay) (t = 1, 2, …; the knobs `--lr`, `--lr-decay`), then `opt.step()` runs. The transform makes the
whole step (torch's update is not always linear in lr: weight decay, Adagrad's own `lr_decay`), so its row
`owns_schedule` and `optimizers.build` appends no schedule. The torch parameter is the iterate: it is set to ibverify's
w before each step, and the step returned is its change. An `lr` keyword becomes the `lr` knob's default.
Float64 reference engine only (no mpmath oracle, no compiled kernel). The block models (matrix, two-layer) are added
to the row by `torchblock.with_blocks` (`adapters.to_spec`). Own geometry
"adaptive" (unknown: what `ibverify bias` finds out). torch is imported only when such an optimizer is asked for.
Every refusal is one IbverifyError line. torch's Muon (2-D parameters only) is read here too and built by
`torchmuon`: `torch:Muon[:k=v]+PARTNER[:k=v]` (Muon on the matrices, a torch.optim partner on the other blocks),
`torch:Muon:ns_float64=True` (its Newton–Schulz in float64); those rows run the block models only.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import types
from typing import Any, Mapping

from ..errors import IbverifyError
from .table import OptimizerInfo
from .userfile import UserChains

PREFIX = "torch:"


def is_name(name: object) -> bool:
    """A `torch:NAME[:k=v,...]` string."""
    return isinstance(name, str) and name.strip().startswith(PREFIX)


def _torch():
    try:
        import torch
    except ImportError:
        raise IbverifyError("torch optimizers need PyTorch (pip install torch)") from None
    return torch


def parse(name: str, what: str = "--optimizer") -> tuple[type, dict]:
    """(class, keyword arguments) of `torch:NAME[:k=v,...]`; one IbverifyError line for a bad name or value.
    `torch:Muon[:k=v]+PARTNER[:k=v]` and `torch:Muon:ns_float64=True` are torch's Muon (optim/torchmuon.py)."""
    body = name.strip()[len(PREFIX):]
    if body.split(":", 1)[0].split("(", 1)[0].strip() == "Muon" or "+" in body:
        from . import torchmuon

        parts = [_parse_one(p, name, what) for p in torchmuon.split(body)]
        if len(parts) > 1 or torchmuon.is_muon(parts[0][0]):
            return torchmuon.resolve(*parts[0], parts, name, what)
    return _parse_one(body, name, what)


def _parse_one(body: str, name: str, what: str) -> tuple[type, dict]:
    cls_name, _, rest = body.partition(":")
    if not rest and "(" in body and body.endswith(")"):   # the row's own name: torch:Adam(eps=0)
        cls_name, _, rest = body[:-1].partition("(")
    torch = _torch()
    cls = getattr(torch.optim, cls_name, None) if cls_name.isidentifier() else None
    if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)) or cls is torch.optim.Optimizer:
        known = sorted(n for n, c in vars(torch.optim).items() if isinstance(c, type)
                       and issubclass(c, torch.optim.Optimizer) and c is not torch.optim.Optimizer)
        raise IbverifyError(f"{what} {name!r}: {cls_name!r} is not an optimizer of torch.optim; use one of "
                            f"{', '.join(known)}")
    kwargs: dict = {}
    if rest.strip():
        try:
            call = ast.parse(f"f({rest})", mode="eval").body
            if call.args or any(k.arg is None for k in call.keywords):
                raise ValueError("give key=value pairs")
            kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        except (SyntaxError, ValueError) as e:
            raise IbverifyError(f"{what} {name!r}: cannot read {rest!r} as key=value,... with Python literal values "
                                f"({' '.join(str(e).split()) or type(e).__name__})") from None
    return cls, kwargs


def row_from_name(name: str, what: str = "--optimizer") -> OptimizerInfo:
    cls, kwargs = parse(name, what)
    return row(cls, kwargs, name.strip(), what)


def row_from_object(obj: Any, what: str = "optimizer") -> OptimizerInfo:
    """The row of a torch.optim.Optimizer subclass or a functools.partial of one."""
    torch = _torch()
    cls, kwargs = getattr(obj, "func", obj), dict(getattr(obj, "keywords", None) or {})
    if getattr(obj, "args", ()):
        raise IbverifyError(f"{what}: give a torch optimizer's arguments by keyword (functools.partial(cls, k=v))")
    if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)):
        raise IbverifyError(f"{what}: a torch object of type {type(obj).__name__} is not an optimizer class; give a "
                            f"torch.optim.Optimizer subclass or functools.partial(subclass, k=v, ...) (not an "
                            f"instance: ibverify makes it on its own float64 parameter)")
    return row(cls, kwargs, None, what)


def _fmt(v: Any) -> str:
    return repr(v).replace(" ", "")


def row(cls: type, kwargs: Mapping[str, Any], source: str | None = None, what: str = "optimizer") -> OptimizerInfo:
    """The optimizer-table row of torch optimizer `cls(params, **kwargs)`: vector model, float64 reference."""
    kwargs = dict(kwargs)
    try:
        sig = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        sig = {}
    bad = [k for k in kwargs if k not in sig or k in ("self", "params")]
    label = f"{what} {source!r}" if source else f"{what} torch.optim.{cls.__name__}"
    if bad and sig and not any(p.kind == p.VAR_KEYWORD for p in sig.values()):
        keys = [k for k in sig if k not in ("self", "params") and sig[k].kind != sig[k].VAR_POSITIONAL]
        raise IbverifyError(f"{label}: unknown key{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))} of "
                            f"torch.optim.{cls.__name__}; its keys are {', '.join(keys)}")
    knobs = {}
    if "lr" in kwargs:   # the step size is ibverify's schedule: lr becomes the lr knob's default
        knobs["lr"] = float(kwargs.pop("lr"))
    mod = "" if cls.__module__.startswith("torch.optim") else f"{cls.__module__}."
    args = ",".join(f"{k}={_fmt(v)}" for k, v in sorted(kwargs.items()))
    name = f"torch:{mod}{cls.__name__}" + (f"({args})" if args else "")
    if hasattr(cls, "ibverify_name"):   # torch's Muon with its partner, or in float64 (optim/torchmuon.py)
        from .torchmuon import check_keys

        check_keys(cls, kwargs, label)
        name = cls.ibverify_name(kwargs)
    source = source or name
    torch = _torch()
    sha = hashlib.sha256(repr((torch.__version__, cls.__module__, cls.__qualname__, sorted(kwargs.items()),
                               sorted(knobs.items()))).encode()).hexdigest()

    def vector(spec, xp):
        return torch_step(xp, cls, kwargs, spec.lr, spec.lr_decay, name)

    chains = TorchChains(source, sha, vector, (cls, kwargs, knobs))
    chains.gd_step_scale = heavy_ball_scale(cls, kwargs)
    return OptimizerInfo(name, "user", f"torch.optim.{cls.__name__}({args}) run unchanged in float64, its group lr "
                         f"set to η_t each step (the torch step is the whole update)", "adaptive", ("vector",),
                         types.MappingProxyType({"vector": ("reference",)}), types.MappingProxyType(knobs), "any",
                         user=chains, vector=vector, owns_schedule=True)


def hyperparameters(cls: type, kwargs: Mapping[str, Any]) -> dict:
    """The torch optimizer's own hyper-parameters: its param_groups' entries (all but params and lr, which is ibverify's
    schedule) on a one-element float64 parameter (1-D, else 2-D), each a stable JSON value (userfile.plain_value); the
    keyword arguments when it cannot be made so. A Muon pair (torchmuon.MuonPartition): {"muon": Muon's, "partner":
    its name, "partner_hyperparameters": the partner's, "c": the c the pair implies}."""
    from .userfile import plain_value

    torch = _torch()
    own = getattr(cls, "ibverify_hyperparameters", None)   # torchmuon.MuonPartition: both parts', and its c
    group = dict(kwargs)
    for shape in ((1,), (1, 1)):   # a 2-D parameter for an optimizer of matrices only (torch's Muon)
        try:
            if own is not None:
                return own(kwargs, plain_value)
            group = dict(cls([torch.zeros(shape, dtype=torch.float64)], lr=1.0, **kwargs).param_groups[0])
            break
        except Exception:   # noqa: BLE001  (refused when the run makes it: torch_step, one line)
            group = dict(kwargs)
    return {k: plain_value(v) for k, v in sorted(group.items()) if k not in ("params", "lr")}


def heavy_ball_scale(cls: type, kwargs: Mapping[str, Any]) -> float | None:
    """(1 − μ)/(1 − dampening) for torch.optim.SGD without weight decay or maximize (its step is lr·(1 − d)/(1 − μ)
    times the gradient once the momentum buffer has settled): the factor that makes lr = scale/β act as GD's 1/β.
    None for any other optimizer, and for dampening 1 (no step at all)."""
    torch = _torch()
    if cls is not torch.optim.SGD or kwargs.get("weight_decay", 0) or kwargs.get("maximize", False):
        return None
    mu, d = float(kwargs.get("momentum", 0) or 0), float(kwargs.get("dampening", 0) or 0)
    return None if not (0 <= mu < 1 and d < 1) else (1 - mu) / (1 - d)


class TorchChains(UserChains):
    """A torch optimizer's row's origin: pickled by its class and keyword arguments (rebuilt on unpickling)."""

    library = "torch"

    def __init__(self, source, sha256, vector, made):
        super().__init__(source, sha256, vector, None)
        self._made = made

    @property
    def hyperparameters(self) -> dict:
        """The optimizer's own hyper-parameters (`hyperparameters`; ForeignSpec.to_json), made once."""
        if "_hyper" not in self.__dict__:
            self._hyper = hyperparameters(*self._made[:2])
        return self._hyper

    def row_reduce(self):
        cls, kwargs, knobs = self._made
        return (_rebuilt, (cls, {**kwargs, **knobs}, self.source))


def _rebuilt(cls, kwargs, source):
    return row(cls, kwargs, source)


class _State:
    """The torch parameter (the iterate, float64), the torch optimizer and the step count t."""

    def __init__(self, p, opt):
        self.p, self.opt, self.t = p, opt, 0


def torch_step(xp, cls: type, kwargs: Mapping[str, Any], lr: float, lr_decay: float, name: str):
    """The vector transform: u (the batch gradient) → the torch step's change of the iterate (the whole step)."""
    from . import transforms as T

    if xp.name != "float64":
        raise IbverifyError(f"{name}: a torch optimizer runs in float64 only (no {xp.name} oracle)")
    import numpy as np

    torch = _torch()
    eta0, a = float(lr), float(lr_decay)

    def init(params):
        p = torch.tensor(np.asarray(params, dtype=np.float64), dtype=torch.float64, requires_grad=True)
        try:
            opt = cls([p], lr=eta0, **kwargs)
        except (TypeError, ValueError) as e:
            raise IbverifyError(f"{name}: torch.optim.{cls.__name__} refused its arguments: "
                                f"{' '.join(str(e).split())}") from None
        return _State(p, opt)

    def update(u, state, params=None, **extra):
        state.t += 1
        with torch.no_grad():
            if params is not None:
                state.p.copy_(torch.from_numpy(np.asarray(params, dtype=np.float64)))
            before = state.p.detach().clone()
            for g in state.opt.param_groups:
                g["lr"] = eta0 * float(state.t) ** (-a)
            state.p.grad = torch.from_numpy(np.array(u, dtype=np.float64))
        state.opt.step()
        with torch.no_grad():
            step = (state.p - before).numpy().copy()
        return step, state

    return T.Transform(init, update)


__all__ = ["PREFIX", "is_name", "parse", "row", "row_from_name", "row_from_object", "torch_step"]
