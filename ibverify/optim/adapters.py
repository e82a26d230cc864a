"""What may stand for an optimizer, and the one function that turns it into an `OptimizerSpec`: `to_spec`.

Every entry point that takes an optimizer calls `to_spec` (the command line's `--optimizer`, `ibverify.bias`,
`ibverify.train`): a name of the optimizer table (aliases too), a user's file `path/to/file.py[:function]`
(ibverify.optfile, ibverify.optim.userfile), a PyTorch optimizer `torch:NAME[:k=v,...]` (e.g. `torch:Adam:eps=0`,
`torch:SGD:momentum=0.9`; ibverify.optim.torchadapt), a `UserOptimizer` object made in this process, or an
`OptimizerSpec`. Anything else goes through `ADAPTERS`, a list of (what it is, recognizes(obj), to_spec(obj, knobs))
tried in order: the place where adapters of other libraries' optimizers plug in. The PyTorch entry takes a
`torch.optim.Optimizer` subclass or a `functools.partial` of one (`functools.partial(torch.optim.Adam, eps=0.0)`):
run unchanged in float64 on the linear model, ibverify setting its lr to η_t = lr · t^(−lr_decay) each step
(torchadapt; no block models yet). The optax entry (optaxadapt) takes an optax function or a partial of one, a function
of one's own with a `learning_rate` parameter (optax loaded), or an `optax.inject_hyperparams` transformation; a name
`optax:NAME[:k=v,...]` or `optax:path.py[:function]` is read here (`to_spec`, `check_name`; not by `OptimizerSpec`, so
that no claim's check imports the optax adapter). Every refusal
is one IbverifyError line naming `what` (the option or argument).

Plain Python at import (no numpy): a spec is built, and a user's chains are probed (`userprobe.probe`: two steps on a
small problem), only when `to_spec` is called.
"""

from __future__ import annotations

import hashlib
import inspect
import types
from dataclasses import fields, replace
from typing import Any, Callable, Mapping, NamedTuple

from .. import optfile
from ..errors import IbverifyError
from .spec import OptimizerSpec
from .table import DEPRECATED, KNOBS, NAMES


class Adapter(NamedTuple):
    """One kind of foreign optimizer object: `recognizes(obj)` says whether `obj` is one, `to_spec(obj, knobs)` makes
    its spec (or raises IbverifyError: one line)."""

    what: str
    recognizes: Callable[[Any], bool]
    to_spec: Callable[[Any, Mapping[str, Any]], OptimizerSpec]


def _library(obj: Any) -> str:
    """The top-level package an object (or, for a function, class or functools.partial, what it calls) comes from."""
    target = getattr(obj, "func", obj)   # functools.partial(torch.optim.Adam, lr=…)
    mod = getattr(target, "__module__", None) if isinstance(target, (type, types.FunctionType,
                                                                      types.BuiltinFunctionType)) else None
    mod = mod or type(target).__module__ or ""
    return mod.split(".", 1)[0]


ADAPTERS: list[Adapter] = [
    Adapter("optax optimizers, factories and inject_hyperparams transformations",
            lambda o: _library(o) == "optax" or _optax_factory(o), lambda o, knobs: _optax_spec(o, knobs)),
    Adapter("torch optimizers and optimizer factories", lambda o: _library(o) == "torch"
            or _torch_subclass(o), lambda o, knobs: _torch_spec(o, knobs)),
]


def _torch_subclass(obj: Any) -> bool:
    """A torch.optim.Optimizer subclass of another module (or a partial of one); torch loaded already if so."""
    import sys

    target = getattr(obj, "func", obj)
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(target, type) and issubclass(target, torch.optim.Optimizer)


def _optax_factory(obj: Any) -> bool:
    """A function of one's own with a learning_rate parameter (or a partial of one), optax loaded already."""
    import sys

    if "optax" not in sys.modules or isinstance(obj, type) or not callable(obj):
        return False
    try:
        return "learning_rate" in inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return False


def _optax_spec(obj: Any, knobs: Mapping[str, Any]) -> OptimizerSpec:
    from .optaxadapt import row_from_object

    row = row_from_object(obj)
    return OptimizerSpec.from_params(knobs, name=row.name, user=row)


def _torch_spec(obj: Any, knobs: Mapping[str, Any]) -> OptimizerSpec:
    from .torchadapt import row_from_object

    row = row_from_object(obj)
    return OptimizerSpec.from_params(knobs, name=row.name, user=row)


# the table's knobs that a torch or optax optimizer does not read (it reads the run settings: lr, lr_decay, batch_size,
# order, loss, seed, lr_matrix, lr_vector)
TABLE_ONLY = ("beta1", "beta2", "eps", "bias_correction", "weight_decay")


def to_spec(optimizer: Any, knobs: Mapping[str, Any] | None = None, *, what: str = "optimizer",
            probe: bool = True) -> OptimizerSpec:
    """The OptimizerSpec of `optimizer` with `knobs` (the table's knob names; those not given: the optimizer's
    defaults, then the table's). `probe`: a user's chains take two first steps here (userprobe.probe), so a broken
    one is refused before any run."""
    knobs = dict(knobs or {})
    bad = [k for k in knobs if k not in KNOBS and k not in DEPRECATED]
    if bad:
        raise IbverifyError(f"{what}: unknown knob{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))}; the "
                            f"knobs are {', '.join(KNOBS)}")
    from .userfile import UserOptimizer   # numpy-free; the chains' modules load when a chain is made

    if isinstance(optimizer, OptimizerSpec):
        spec = replace(optimizer, **{k: v for k, v in knobs.items() if k in {f.name for f in fields(optimizer)}})
    elif isinstance(optimizer, str) and optimizer.strip().startswith("optax:"):
        from .optaxadapt import row_from_name   # jax and optax: only when an optax optimizer is named

        row = row_from_name(optimizer, what)
        spec = OptimizerSpec.from_params(knobs, name=row.name, user=row)
    elif isinstance(optimizer, str):
        check_name(optimizer)
        spec = OptimizerSpec.from_params(knobs, name=optimizer)
    elif isinstance(optimizer, UserOptimizer):
        row = in_process_row(optimizer, what)
        spec = replace(OptimizerSpec.from_params(knobs, name=row.name), user=row)
    else:
        adapter = next((a for a in ADAPTERS if a.recognizes(optimizer)), None)
        if adapter is None:
            raise IbverifyError(f"{what}: cannot use an object of type {type(optimizer).__name__} as an optimizer; "
                                f"give a name of the optimizer table, a file path/to/file.py[:function], an "
                                f"ibverify.optim.userfile.UserOptimizer or an OptimizerSpec")
        spec = adapter.to_spec(optimizer, knobs)
    if spec.user is not None and str(spec.name).startswith("torch:"):
        from .torchblock import with_blocks   # torch on the block models too

        spec = replace(spec, user=with_blocks(spec.user))
    from .foreign import ForeignSpec, foreign

    spec = foreign(spec)   # a torch or optax optimizer: its JSON lists its own hyper-parameters
    unread = [k for k in knobs if k in TABLE_ONLY] if isinstance(spec, ForeignSpec) else []
    if unread:   # a torch/optax optimizer reads its own hyper-parameters, never the table's knobs: refused, not ignored
        raise IbverifyError(f"{what}: {', '.join(unread)} {'is a knob' if len(unread) == 1 else 'are knobs'} of the "
                            f"optimizer table, which {spec.name} does not read; give its own hyper-parameters in its "
                            f"name (e.g. torch:Adam:eps=0, optax:adam:b1=0.9)")
    if probe:
        from .userprobe import probe as first_steps  # numpy

        first_steps(spec, what)
    return spec


def check_name(name: str) -> None:
    """Refuse (one line) a string that is neither a name of the optimizer table nor a file path.py[:function]."""
    if isinstance(name, str) and name.strip().startswith("optax:"):
        from .optaxadapt import row_from_name   # jax and optax: only when an optax optimizer is named

        row_from_name(name)
        return
    if isinstance(name, str) and name.strip().startswith("torch:"):
        from .torchadapt import parse   # torch: only when a torch optimizer is named

        parse(name)
        return
    if name not in NAMES and not optfile.split(name):
        raise IbverifyError(f"unknown optimizer {name!r}; use one of {', '.join(NAMES)}, a file: "
                            f"path/to/file.py[:function], a PyTorch optimizer torch:NAME[:key=value,...] or an optax "
                            f"one optax:NAME[:key=value,...]")


def in_process_row(desc: Any, what: str = "optimizer"):
    """The optimizer-table row of a UserOptimizer made in this process (not read from a file): its source is
    `<python>:<module>.<name>` and its sha256 that of its chains' source code, knobs and update line (so a run store
    never mixes two different objects of one name). It runs in this process only: it cannot be pickled to a worker
    (save it in a file for that)."""
    from . import userfile

    h = hashlib.sha256(repr((desc.name, desc.update, sorted(dict(desc.knobs).items()) if isinstance(desc.knobs, Mapping)
                             else desc.knobs)).encode())
    for f in (desc.vector, desc.block):
        h.update(_code_of(f).encode())
    module = getattr(desc.vector or desc.block, "__module__", None) or "__main__"
    try:
        row = userfile._row(desc, f"<python>:{module}.{desc.name}", h.hexdigest())
    except userfile._Bad as e:
        raise IbverifyError(f"{what} {desc.name!r}: {e}") from None
    row.user.row_reduce = _unpicklable(row.user.source)
    return row


def _code_of(f: Any) -> str:
    if f is None:
        return ""
    try:
        return inspect.getsource(f)
    except (OSError, TypeError):   # defined at a prompt without source: the object itself (this process only)
        return f"{getattr(f, '__qualname__', type(f).__name__)}@{id(f)}"


def _unpicklable(source: str):
    def reduce():
        raise IbverifyError(f"the optimizer {source} was made in this process and cannot be sent to another one; "
                            f"put its make() in a file and name it path/to/file.py[:function]")
    return reduce


__all__ = ["ADAPTERS", "Adapter", "check_name", "in_process_row", "to_spec"]
