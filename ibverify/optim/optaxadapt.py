"""An optax optimizer run unchanged, in float64, on the linear (vector) model: `--optimizer optax:NAME[:k=v,...]`
(or the row's own name, `optax:NAME(k=v,...)`), or a user's file `optax:path/to/file.py[:function]`.

`optax:adam:eps=0`, `optax:lion:b1=0.9,b2=0.99`, `optax:adamw:eps=0,weight_decay=0`, `optax:sgd:momentum=0.9` (a
function of `optax` taking `learning_rate`, its other keyword arguments as Python literals). From Python
(adapters.ADAPTERS): such a function or a `functools.partial` of one (`functools.partial(optax.lion, b1=0.95)`), a
function of one's own with a `learning_rate` parameter returning a `GradientTransformation`, or a transformation made
by `optax.inject_hyperparams(...)(learning_rate=..., ...)`. A file's `function` (default `make`) is such a factory
(it takes `learning_rate`) or, called with no arguments, returns one of these.

ibverify supplies the batch gradient and the step size: the factory is wrapped by `optax.inject_hyperparams`, and
before every step its `learning_rate` hyperparameter is set to η_t = lr · t^(−lr_decay) (t = 1, 2, …; the knobs
`--lr`, `--lr-decay`); then the transformation's own `update(g, state, w)` (jitted) makes the whole step, which is
added to the iterate as optax's `apply_updates` does, so the row `owns_schedule`. A `learning_rate` keyword becomes
the `lr` knob's default. A transformation without a `learning_rate` hyperparameter is refused (ibverify must own
the schedule). jax's float64 (`jax_enable_x64`) is switched on when such an optimizer is made; jax and optax are
imported only then. Float64 reference engines only (no mpmath oracle, no compiled kernel); on block models (matrix,
two-layer) the chain is `logframe.Unscale` (the plain gradient of every block) and the optax update of the blocks as a
dict pytree (`optax_block`). Own geometry "adaptive" (what `ibverify bias` finds out). Every refusal is one
IbverifyError line.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import sys
import types
from pathlib import Path
from typing import Any, Mapping

from .. import optfile
from ..errors import IbverifyError
from .table import OptimizerInfo
from .userfile import UserChains

PREFIX = "optax:"
LR = "learning_rate"


def is_name(name: object) -> bool:
    """An `optax:NAME[:k=v,...]` or `optax:path.py[:function]` string."""
    return isinstance(name, str) and name.strip().startswith(PREFIX)


def _optax():
    try:
        import jax
        import optax
    except ImportError:
        raise IbverifyError("optax optimizers need optax and jax (pip install optax, or ibverify[optax])") from None
    jax.config.update("jax_enable_x64", True)   # the user's optimizer runs in float64, as every run of ibverify
    return optax


def _is_transformation(obj: Any) -> bool:
    optax = sys.modules.get("optax")
    return optax is not None and isinstance(obj, optax.GradientTransformation)


def _takes_lr(obj: Any) -> bool:
    try:
        return LR in inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return False


def _literals(rest: str, name: str, what: str) -> dict:
    if not rest.strip():
        return {}
    try:
        call = ast.parse(f"f({rest})", mode="eval").body
        if call.args or any(k.arg is None for k in call.keywords):
            raise ValueError("give key=value pairs")
        return {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except (SyntaxError, ValueError) as e:
        raise IbverifyError(f"{what} {name!r}: cannot read {rest!r} as key=value,... with Python literal values "
                            f"({' '.join(str(e).split()) or type(e).__name__})") from None


def row_from_name(name: str, what: str = "--optimizer") -> OptimizerInfo:
    """The row of `optax:NAME[:k=v,...]` (or `optax:NAME(k=v,...)`) or `optax:path.py[:function]`."""
    body = name.strip()[len(PREFIX):]
    if optfile.split(body):
        return _row_from_file(body, name.strip(), what)
    fn_name, _, rest = body.partition(":")
    if not rest and "(" in body and body.endswith(")"):   # the row's own name: optax:adam(eps=0)
        fn_name, _, rest = body[:-1].partition("(")
    optax = _optax()
    fn = optax
    for part in fn_name.split("."):   # optax.contrib's too: optax:contrib.muon
        fn = getattr(fn, part, None) if part.isidentifier() else None
    if not (callable(fn) and _takes_lr(fn)):
        known = sorted(n for n, f in vars(optax).items() if not n.startswith("_") and callable(f) and _takes_lr(f)
                       and not isinstance(f, type))
        raise IbverifyError(f"{what} {name!r}: {fn_name!r} is not an optimizer of optax (a function taking "
                            f"learning_rate); use one of {', '.join(known)}")
    return factory_row(fn, _literals(rest, name, what), name.strip(), what)


def row_from_object(obj: Any, what: str = "optimizer") -> OptimizerInfo:
    """The row of an optax factory (a function with a `learning_rate` parameter, or a functools.partial of one) or of
    a transformation made by optax.inject_hyperparams with a learning_rate."""
    _optax()
    if _is_transformation(obj):
        return _injected_row(obj, what)
    if isinstance(obj, functools.partial) and _takes_lr(obj.func):
        if obj.args:
            raise IbverifyError(f"{what}: give an optax optimizer's arguments by keyword (functools.partial(f, k=v))")
        return factory_row(obj.func, dict(obj.keywords), None, what)
    if callable(obj) and _takes_lr(obj):
        return factory_row(obj, {}, None, what)
    raise IbverifyError(f"{what}: an optax object of type {type(obj).__name__} is neither a function taking "
                        f"learning_rate (optax.adam, functools.partial(optax.lion, b1=0.95)) nor a transformation of "
                        f"optax.inject_hyperparams(f)(learning_rate=..., ...)")


def _fmt(v: Any) -> str:
    return repr(v).replace(" ", "")


def _label(fn: Any) -> str:
    mod = getattr(fn, "__module__", "") or ""
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))
    if mod.startswith("optax.contrib"):   # optax.contrib.muon: named as it is called
        return f"contrib.{name}"
    return name if mod.startswith("optax") else f"{mod}.{name}"


def _code_hash(fn: Any) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):   # defined at a prompt: this object, this process only
        return f"{_label(fn)}@{id(fn)}"


def factory_row(fn: Any, kwargs: Mapping[str, Any], source: str | None = None, what: str = "optimizer",
                sha: str | None = None) -> OptimizerInfo:
    """The row of optax factory `fn(learning_rate, **kwargs)`: vector model, float64 reference."""
    optax = _optax()
    kwargs = dict(kwargs)
    label = f"{what} {source!r}" if source else f"{what} {_label(fn)}"
    sig = inspect.signature(fn).parameters
    bad = [k for k in kwargs if k not in sig]
    if bad and not any(p.kind == p.VAR_KEYWORD for p in sig.values()):
        keys = [k for k in sig if k != LR and sig[k].kind not in (sig[k].VAR_POSITIONAL, sig[k].VAR_KEYWORD)]
        raise IbverifyError(f"{label}: unknown key{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))} of "
                            f"{_label(fn)}; its keys are {', '.join(keys)}")
    knobs = {}
    if LR in kwargs:   # the step size is ibverify's schedule: learning_rate becomes the lr knob's default
        try:
            knobs["lr"] = float(kwargs.pop(LR))
        except (TypeError, ValueError):
            raise IbverifyError(f"{label}: learning_rate must be a number (ibverify sets η_t from it)") from None
    args = ",".join(f"{k}={_fmt(v)}" for k, v in sorted(kwargs.items()))
    name = f"optax:{_label(fn)}" + (f"({args})" if args else "")
    source = source or name
    own = "" if (getattr(fn, "__module__", "") or "").startswith("optax") else _code_hash(fn)  # a user's function
    sha = sha or hashlib.sha256(repr((optax.__version__, _label(fn), own, sorted(kwargs.items()),
                                      sorted(knobs.items()))).encode()).hexdigest()

    def make():
        return _injected(fn, kwargs, label)

    def vector(spec, xp):
        return optax_step(xp, make, spec.lr, spec.lr_decay, name)

    chains = OptaxChains(source, sha, vector, (fn, kwargs, knobs))
    chains.hyperparameters = factory_hyperparameters(fn, kwargs)
    return _muon(fn, kwargs, _row(name, f"{_label(fn)}({args}) of optax", vector, knobs, chains, make))


def _muon(fn: Any, kwargs: Mapping[str, Any], row: OptimizerInfo) -> OptimizerInfo:
    """optax.contrib.muon's row: the block models only (its own split: Muon on the 2-D blocks, AdamW on the others;
    on the linear model it would be AdamW alone), its update line naming the geometry it implies."""
    from dataclasses import replace

    if not _is_contrib_muon(fn):
        return row
    eps = float(kwargs.get("eps", 1e-8))
    scale = ("√max(1, fan_out/fan_in)" if kwargs.get("consistent_rms") is None else
             f"√max(fan_in, fan_out)·{_fmt(kwargs['consistent_rms'])}")
    implied = (f"the Muon–Adam hybrid max{{c‖W‖_msp, ‖a‖∞}}, c = η_A/(η_M·{scale}) per 2-D block (optax reads axis 0 "
               f"as fan_in: c = 1 for W (m × d), m ≥ d, at the defaults; its number per run stated by bias)"
               if eps == 0 and not kwargs.get("adaptive") else "not one of paper 2's (give eps=0, adaptive=False)")
    lrs = "one learning_rate η_t for both" if kwargs.get("adam_learning_rate") is None else \
        "learning_rate η_t for Muon, adam_learning_rate for AdamW"
    update = (f"optax.contrib.muon({', '.join(f'{k}={_fmt(v)}' for k, v in sorted(kwargs.items()))}) run unchanged in "
              f"float64: its own split, Muon (Newton–Schulz in float64, {int(kwargs.get('ns_steps', 5))} steps; "
              f"update × {scale}) on the 2-D blocks, AdamW (ε = eps) on the others, {lrs}; implied geometry: "
              f"{implied}")
    return replace(row, models=("block",), implementations=types.MappingProxyType({"block": ("reference",)}),
                   vector=None, update=update)


def _is_contrib_muon(fn: Any) -> bool:
    return fn is not None and fn is getattr(getattr(sys.modules.get("optax"), "contrib", None), "muon", None)


def muon_hybrid_c(kwargs: Mapping[str, Any], spec, shapes: Mapping[str, tuple]):
    """The c (optim.hybridc.ImpliedC) optax.contrib.muon(**kwargs) implies on blocks of these shapes, by optax's own
    rule (optax/contrib/_muon.py, 0.2.8: `scale_by_shape` after the Newton–Schulz polar factor, then ×learning_rate):
    a 2-D block of shape (A, B) is read as (fan_in, fan_out) = (A, B) (MuonDimensionNumbers: reduction axis 0,
    output axis 1) and its update scaled by √max(1, fan_out/fan_in), or by √max(fan_in, fan_out)·consistent_rms when
    that is given; the other blocks take AdamW at adam_learning_rate (default: learning_rate). With learning_rate =
    η_t (ibverify's schedule) c = η_A/(η_t·scale): 1/scale, or adam_learning_rate/(lr·scale) at a constant step
    (lr_decay 0). None where no fixed c exists: `adaptive` (the step scaled by the gradient's dual norm), a fixed
    adam_learning_rate under a decaying η_t, custom dimension numbers, or blocks whose c differ."""
    import math

    from .hybridc import ImpliedC, single

    if kwargs.get("adaptive"):
        return ImpliedC(None, "optax.contrib.muon(adaptive=True) scales the matrix step by ⟨G, polar(G)⟩ = ‖G‖_nuc, "
                              "no fixed step: no c, the hybrid is not judged")
    if kwargs.get("muon_weight_dimension_numbers") is not None:
        return ImpliedC(None, "optax.contrib.muon with muon_weight_dimension_numbers: the blocks' fan_in and fan_out "
                              "are the user's, not read here: no c, the hybrid is not judged")
    rms = kwargs.get("consistent_rms")
    ratio, lr_text = 1.0, "adam_learning_rate = learning_rate = η_t"
    if kwargs.get("adam_learning_rate") is not None:
        if float(spec.lr_decay or 0.0) != 0.0:
            return ImpliedC(None, f"optax.contrib.muon(adam_learning_rate={kwargs['adam_learning_rate']!r}) keeps "
                                  f"the vectors' step fixed while learning_rate = η_t decays (lr_decay "
                                  f"{spec.lr_decay:g}): c moves with t, the hybrid is not judged")
        ratio = float(kwargs["adam_learning_rate"]) / float(spec.lr)
        lr_text = f"η_A/η_M = adam_learning_rate/lr = {float(kwargs['adam_learning_rate']):g}/{float(spec.lr):g}"

    def scale(s):
        fan_in, fan_out = s[0], s[1]
        return (math.sqrt(max(1.0, fan_out / fan_in)) if rms is None else
                math.sqrt(max(fan_in, fan_out)) * float(rms))

    rule = ("√max(1, fan_out/fan_in)" if rms is None else f"√max(fan_in, fan_out)·{float(rms):g}")
    per = {k: (tuple(s), ratio / scale(s)) for k, s in shapes.items() if len(s) == 2}
    eps = float(kwargs.get("eps", 1e-8))
    note = ("AdamW at eps = 0 on the vectors: the pair is the hybrid's steepest descent" if eps == 0 else
            f"AdamW at eps = {eps:g}: the pair is no steepest descent of this norm, the hybrid judged at its lr ratio")
    return single(per, f"optax.contrib.muon: a block (A, B) read as (fan_in, fan_out), its matrix step scaled by "
                       f"{rule}, {lr_text}; c = η_A/(η_M·{rule})", note)


def factory_hyperparameters(fn: Any, kwargs: Mapping[str, Any]) -> dict:
    """The hyper-parameters of optax factory `fn(learning_rate, **kwargs)`: its parameters' defaults with `kwargs`
    over them (learning_rate is ibverify's schedule), each a stable JSON value (userfile.plain_value)."""
    from .userfile import plain_value

    try:
        sig = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        sig = {}
    out = {k: p.default for k, p in sig.items() if k != LR and p.default is not p.empty
           and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    out.update(kwargs)
    return {k: plain_value(v) for k, v in sorted(out.items()) if k != LR}


def _inside(tx: Any) -> tuple[Any, dict] | None:
    """(the factory, its hyper-parameters but learning_rate) of an optax.inject_hyperparams transformation, read from
    its init function's closure (optax's inner_factory, numeric_hps, other_hps); None where that is not found."""
    import numpy as np

    fn = getattr(tx, "init", None)
    try:
        cells = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ()), strict=True))
    except (AttributeError, ValueError):
        return None
    inner = cells.get("inner_factory")
    if not callable(inner) or not isinstance(cells.get("numeric_hps"), Mapping):
        return None
    hps = {**dict(cells.get("other_hps") or {}), **dict(cells["numeric_hps"])}
    hps = {k: (float(np.asarray(v)) if np.ndim(v) == 0 and not isinstance(v, (bool, str)) and v is not None
               and np.issubdtype(np.asarray(v).dtype, np.number) else v) for k, v in hps.items() if k != LR}
    return inner, hps


def heavy_ball_scale(fn: Any, kwargs: Mapping[str, Any]) -> float | None:
    """1 − μ for optax.sgd (its trace t = g + μ t makes the step lr/(1 − μ) times the gradient once settled): the
    factor that makes learning_rate = scale/β act as GD's 1/β. None for any other factory."""
    if fn is not _optax().sgd:
        return None
    mu = float(kwargs.get("momentum") or 0.0)
    return 1 - mu if 0 <= mu < 1 else None


def _injected(fn: Any, kwargs: Mapping[str, Any], label: str):
    """fn(learning_rate, **kwargs) under optax.inject_hyperparams (learning_rate: a hyperparameter set per step)."""
    optax = _optax()
    try:
        return optax.inject_hyperparams(functools.partial(fn, **kwargs) if kwargs else fn)(learning_rate=1.0)
    except (TypeError, ValueError) as e:
        raise IbverifyError(f"{label}: {_label(fn)} refused its arguments: {' '.join(str(e).split())}") from None


def _injected_row(tx: Any, what: str) -> OptimizerInfo:
    """A transformation of optax.inject_hyperparams: run as it is, its learning_rate set to η_t each step (this
    process only: it cannot be pickled to a worker)."""
    import numpy as np

    try:
        hp = getattr(tx.init(np.zeros(2)), "hyperparams", None)
    except Exception as e:   # noqa: BLE001  (the user's code: one line)
        raise IbverifyError(f"{what}: the optax transformation's init raised {type(e).__name__}: "
                            f"{' '.join(str(e).split())}") from None
    if not isinstance(hp, Mapping) or LR not in hp:
        raise IbverifyError(f"{what}: this optax transformation has no learning_rate hyperparameter, so ibverify "
                            f"cannot set η_t: give the factory (optax.adam, functools.partial(optax.adam, eps=0.0)) or "
                            f"optax.inject_hyperparams(f)(learning_rate=..., ...)")
    from .userfile import plain_value

    knobs = {"lr": float(np.asarray(hp[LR]))}
    found = _inside(tx)
    if found is not None:   # its factory and hyper-parameters: a stable name, the same in every process
        fn, hps = found
        own = factory_hyperparameters(fn, hps)
        try:
            defaults = factory_hyperparameters(fn, {})
        except Exception:   # noqa: BLE001
            defaults = {}
        args = ",".join(f"{k}={_fmt(v)}" for k, v in own.items() if k not in defaults or defaults[k] != v)
        name = f"optax:inject_hyperparams({_label(fn)})" + (f"({args})" if args else "")
        code = "" if (getattr(fn, "__module__", "") or "").startswith("optax") else _code_hash(fn)
        sha = hashlib.sha256(repr((_optax().__version__, name, code, sorted(own.items()),
                                   sorted(knobs.items()))).encode()).hexdigest()
    else:   # a transformation whose factory is not found: named by its hyper-parameters; its runs by this object
        own = {k: plain_value(v) for k, v in sorted(hp.items()) if k != LR}
        args = ",".join(f"{k}={_fmt(v)}" for k, v in own.items())
        name = "optax:transformation" + (f"({args})" if args else "")
        sha = hashlib.sha256(f"{name}:{id(tx)}".encode()).hexdigest()

    def vector(spec, xp):
        return optax_step(xp, lambda: tx, spec.lr, spec.lr_decay, name)

    chains = OptaxChains(name, sha, vector, None)
    chains.hyperparameters = own
    return _row(name, "an optax.inject_hyperparams transformation", vector, knobs, chains, lambda: tx)


def _row(name, update, vector, knobs, chains, make) -> OptimizerInfo:
    def block(spec):
        from .logframe import Unscale

        return [Unscale(), optax_block(make, spec.lr, spec.lr_decay, name)]

    chains.block = block
    return OptimizerInfo(name, "user", f"{update} run unchanged in float64, its learning_rate set to η_t each step "
                         f"(the optax update is the whole step)", "adaptive", ("vector", "block"),
                         types.MappingProxyType({"vector": ("reference",), "block": ("reference",)}),
                         types.MappingProxyType(knobs), "any", user=chains, vector=vector, block=block,
                         owns_schedule=True)


def _row_from_file(body: str, name: str, what: str) -> OptimizerInfo:
    """`optax:path.py[:function]`: the function is a factory (it takes learning_rate), or, called with no arguments,
    returns a factory or an inject_hyperparams transformation."""
    path, func = optfile.split(body)
    p = Path(path).expanduser()
    try:
        src = p.read_bytes()
    except OSError as e:
        raise IbverifyError(f"{what} {name}: cannot read {path} ({e.strerror or e})") from None
    sha = hashlib.sha256(src).hexdigest()
    source = f"{PREFIX}{p.resolve()}:{func}"
    fn = _file_function(str(p.resolve()), func, sha, src, name, what)
    if not _takes_lr(fn):
        try:
            fn = fn()
        except Exception as e:   # noqa: BLE001  (the user's code: one line)
            raise IbverifyError(f"{what} {name}: {func}() raised {type(e).__name__}: "
                                f"{' '.join(str(e).split())}") from None
    if _is_transformation(fn):
        row = _injected_row(fn, f"{what} {name}")
        vector, tx = row.vector, fn
        chains = OptaxChains(source, sha, vector, None, file=True)
        chains.hyperparameters = row.user.hyperparameters
        return _row(source, row.update.split(" run unchanged")[0], vector, row.defaults, chains, lambda: tx)
    if not (callable(fn) and _takes_lr(fn)):
        raise IbverifyError(f"{what} {name}: {func} must take learning_rate (an optax factory) or return an optax "
                            f"factory or an optax.inject_hyperparams transformation, got {type(fn).__name__}")
    row = factory_row(fn, {}, source, what, sha=sha)
    chains = OptaxChains(source, sha, row.vector, None, file=True)
    chains.hyperparameters = row.user.hyperparameters
    return _row(source, f"{func} of {p.name}", row.vector, row.defaults, chains, lambda: _injected(fn, {}, name))


@functools.lru_cache(maxsize=16)
def _file_function(path: str, func: str, sha: str, src: bytes, name: str, what: str):
    _optax()
    mod = types.ModuleType(f"ibverify_optax_{sha[:16]}")
    mod.__file__ = path
    try:
        exec(compile(src, path, "exec"), mod.__dict__)
    except (Exception, SystemExit) as e:
        raise IbverifyError(f"{what} {name}: running the file raised {type(e).__name__}: "
                            f"{' '.join(str(e).split())}") from None
    fn = getattr(mod, func, None)
    if not callable(fn):
        raise IbverifyError(f"{what} {name}: {Path(path).name} defines no function {func!r}")
    return fn


class OptaxChains(UserChains):
    """An optax optimizer's row's origin: pickled by its function and keyword arguments, or by its file (reloaded,
    refused if changed); an inject_hyperparams object made in this process is not picklable."""

    library = "optax"

    def __init__(self, source, sha256, vector, made, file: bool = False):
        super().__init__(source, sha256, vector, None)
        self._made, self._file = made, file

    @property
    def gd_step_scale(self) -> float | None:
        return None if self._made is None else heavy_ball_scale(*self._made[:2])

    def hybrid_c(self, spec, shapes):
        """The c of the hybrid norm optax.contrib.muon implies on blocks of these shapes (`muon_hybrid_c`, an
        optim.hybridc.ImpliedC); None for any other optax optimizer (no Muon pair)."""
        if self._made is None or not _is_contrib_muon(self._made[0]):
            return None
        return muon_hybrid_c(self._made[1], spec, shapes)

    def row_reduce(self):
        if self._file:
            return (_reloaded, (self.source, self.sha256))
        if self._made is None:
            raise IbverifyError(f"the optimizer {self.source} was made in this process and cannot be sent to another "
                                f"one; give its factory (optax.adam, functools.partial(...)) or a file")
        fn, kwargs, knobs = self._made
        return (_rebuilt, (fn, {**kwargs, **({LR: knobs["lr"]} if "lr" in knobs else {})}, self.source))


def _rebuilt(fn, kwargs, source):
    return factory_row(fn, kwargs, source)


def _reloaded(source: str, sha256: str) -> OptimizerInfo:
    row = row_from_name(source, "optimizer file")
    if row.user.sha256 != sha256:
        raise IbverifyError(f"optimizer file {source} changed since this run was made")
    return row


class _State:
    """The optax state's leaves, the jitted step on them and the step count t."""

    def __init__(self, leaves, step):
        self.leaves, self.step, self.t = leaves, step, 0


def _started(make, params, name: str) -> _State:
    """A fresh optax transformation's state on `params` (an array or a dict of blocks) as its flat leaves, with the
    jitted step (leaves, g, w, η) → (leaves, update) that sets learning_rate = η; the user's init failing is one
    line."""
    import jax

    tx = make()
    try:
        state = tx.init(params)
    except Exception as e:   # noqa: BLE001  (the user's code: one line)
        raise IbverifyError(f"{name}: its init raised {type(e).__name__}: {' '.join(str(e).split())}") from None
    if LR not in getattr(state, "hyperparams", {}):
        raise IbverifyError(f"{name}: no learning_rate hyperparameter to set η_t")
    leaves, tree = jax.tree_util.tree_flatten(state)

    def step(leaves, g, w, eta):
        st = jax.tree_util.tree_unflatten(tree, leaves)
        st = st._replace(hyperparams={**st.hyperparams, LR: eta})
        u, st = tx.update(g, st, w)
        return jax.tree_util.tree_leaves(st), u

    return _State(leaves, jax.jit(step))


def optax_step(xp, make, lr: float, lr_decay: float, name: str):
    """The vector transform: u (the batch gradient) → the optax update (the whole step, added to the iterate). The
    state travels as its flat leaves (one jitted call a step: a pytree's dispatch costs twice as much)."""
    from . import transforms as T

    if xp.name != "float64":
        raise IbverifyError(f"{name}: an optax optimizer runs in float64 only (no {xp.name} oracle)")
    import numpy as np

    _optax()
    eta0, a = float(lr), float(lr_decay)

    def init(params):
        return _started(make, np.asarray(params, dtype=np.float64), name)

    def update(u, st, params=None, **extra):
        st.t += 1
        w = np.zeros_like(u) if params is None else np.asarray(params, dtype=np.float64)
        st.leaves, step = st.step(st.leaves, np.asarray(u, dtype=np.float64), w, eta0 * float(st.t) ** (-a))
        step = np.asarray(step)
        if step.dtype != np.float64:
            raise IbverifyError(f"{name}: its update is {step.dtype}, not float64")
        return step, st

    return T.Transform(init, update)


def optax_block(make, lr: float, lr_decay: float, name: str):
    """The block transform after `logframe.Unscale` (the plain gradient e^S ĝ of every block, exact while e^S is a
    float64 number; its underflow is counted by Unscale): the optax update of the blocks (a dict pytree), jitted,
    learning_rate = η_t. The block chain's Schedule (make_optimizer) makes u = η_t d and the loop θ ← θ − u, so the
    update s is returned as d = −s/η_t."""
    import numpy as np

    from .logframe import Transform

    _optax()
    eta0, a = float(lr), float(lr_decay)

    class OptaxStep(Transform):
        def init(self, params):
            return _started(make, {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}, name)

        def update(self, x, st, params=None, **extra):
            st.t += 1
            eta = eta0 * float(st.t) ** (-a)
            g = {k: np.asarray(v, dtype=np.float64) for k, v in x.items()}
            w = g if params is None else {k: np.asarray(params[k], dtype=np.float64) for k in g}
            st.leaves, u = st.step(st.leaves, g, w, eta)
            return {k: -(np.asarray(v) / eta) for k, v in u.items()}, st

    return OptaxStep()


__all__ = ["PREFIX", "factory_row", "is_name", "optax_step", "row_from_name", "row_from_object"]
