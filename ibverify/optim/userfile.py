"""A user's own optimizer from a Python file: `--optimizer path/to/file.py[:function]` (docs/commands.md).

The protocol. The file defines `function` (default `make`): called with no arguments, it returns a
`UserOptimizer`:
    name     the optimizer's name in every output (not a name of the table: `ibverify train --help` lists those)
    update   one line saying the update it makes (shown as a table row's `update` is)
    vector   the linear model's chain: (spec, xp) -> transforms of `ibverify.optim.transforms` (one, or a list),
             before the schedule; ibverify appends scale_by_schedule(xp, spec.lr, spec.lr_decay), so the step is
             w ← w − η_t u with η_t = lr · t^(−lr_decay), t = 1, 2, … (the table's one convention)
    block    the block models' chain (matrix, two-layer): (spec) -> log-frame transforms of
             `ibverify.optim.logframe` (one, or a list: EMA, Adam, NormalizeL2, Sign, Polar, …), before the schedule;
             ibverify appends Schedule(spec.lr, spec.lr_decay)
    knobs    defaults of the knobs it reads, e.g. {"beta1": 0.9, "lr": 0.05} (the rest: the table's DEFAULTS; the
             schedule's lr_decay: 0.5 on the linear model, 1 − 1/(2L) on a block model of degree L)
A transform of the user's own follows the protocol of both chains (`ibverify.optim.protocol`): init(params) -> state,
update(updates, state, params=None, **extra) -> (updates, state); one of the protocol before issue 32 (vector:
init(d), update(u, grad, state, t); block: update(x, state, t, ctr)) is adapted (`transforms.legacy_prefix`,
`logframe.adapt`). The row carries the two factories as `vector` and `block`, as a table row carries its chains.
At least one of `vector` and `block`: the models it runs are those it has a chain for. `spec` is the run's resolved
`OptimizerSpec` (spec.lr, spec.beta1, spec.beta2, spec.eps, …: the knobs given on the command line or in a claim file,
else `knobs`, else the table's defaults). Its own geometry is "adaptive" (unknown: what `ibverify bias` finds out); it
runs on the reference engines (float64 numpy; a block chain the compiled block engine recognises runs compiled).

Loading (`load`, called by `OptimizerSpec` for a name that is a file): the file is read once, executed as a fresh
module named after its sha256, `function()` called and the description checked; the commands then probe the chains
(`userprobe.probe`: two steps on a small problem, with the run's knobs). Any failure is one IbverifyError line naming
the option (exit 2). A loaded file is kept per (path, function, sha256): an edited file is loaded afresh. A row
pickles by its file (reloaded on unpickling, refused if the file has changed since), and a spec's JSON carries the
file's sha256 (`source_sha256`), so a run store never mixes two versions of a file.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from .. import optfile
from ..errors import IbverifyError
from .table import KNOBS, NAMES, OptimizerInfo

# knobs a user's optimizer may default (the hybrids' lr_matrix/lr_vector, the sample order, loss and seed are the
# run's, not the optimizer's)
USER_KNOBS = ("lr", "lr_decay", "beta1", "beta2", "eps", "bias_correction", "weight_decay", "batch_size")
_MOMENTS = ("beta1", "beta2", "eps", "bias_correction", "weight_decay")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.+-]{0,63}$")


@dataclass(frozen=True)
class UserOptimizer:
    """What a user's optimizer file's function returns (the protocol: module docstring)."""

    name: str
    update: str = ""
    vector: Callable[[Any, Any], Any] | None = None
    block: Callable[[Any], Any] | None = None
    knobs: Mapping[str, Any] = field(default_factory=dict)


class UserChains:
    """The chain factories of a loaded file, with where they come from (`source` = absolute path:function).
    `gd_step_scale`: for a shipped plain SGD (heavy ball, no weight decay), the factor s that makes its constant step
    lr = s/β as large in effect as plain GD's 1/β (s = (1 − μ)/(1 − dampening)); None for any other optimizer."""

    gd_step_scale: float | None = None
    hyperparameters: Mapping[str, Any] | None = None   # a torch or optax optimizer's own (ForeignSpec.to_json)
    library: str | None = None

    def __init__(self, source: str, sha256: str, vector, block):
        self.source, self.sha256, self.vector, self.block = source, sha256, vector, block

    def __repr__(self) -> str:   # stable (no addresses): cache fingerprints feed it
        return f"UserChains({self.source}, sha256={self.sha256})"

    def __eq__(self, other) -> bool:
        return isinstance(other, UserChains) and (self.source, self.sha256) == (other.source, other.sha256)

    def __hash__(self) -> int:
        return hash((self.source, self.sha256))

    def row_reduce(self):
        return (_reloaded, (self.source, self.sha256))


def plain_value(v: Any) -> Any:
    """A foreign optimizer's hyper-parameter as a stable JSON value: numbers, booleans, strings and None as they are
    (a 0-d array: its number), tuples and lists elementwise, a function or class by its module and name, anything
    else by its type's name (never an address)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (tuple, list)):
        return [plain_value(x) for x in v]
    if getattr(v, "shape", None) == () and hasattr(v, "item"):
        return plain_value(v.item())
    if callable(v) and hasattr(v, "__qualname__"):
        return f"{getattr(v, '__module__', '') or ''}.{v.__qualname__}".lstrip(".")
    return type(v).__name__


class _Bad(Exception):
    """A problem with the file, worded without the option's name (added by `load`)."""


def load(name: str, what: str = "--optimizer") -> OptimizerInfo:
    """The row of the user's optimizer file `name` (path.py[:function]); one IbverifyError line naming `what`."""
    s = optfile.split(name)
    if s is None:
        raise IbverifyError(f"{what} {name!r}: not an optimizer file (path/to/file.py or path/to/file.py:function)")
    path = Path(s[0]).expanduser()
    try:
        src = path.read_bytes()
    except OSError as e:
        raise IbverifyError(f"{what} {name}: cannot read {s[0]} ({e.strerror or e})") from None
    try:
        return _load(str(path.resolve()), s[1], hashlib.sha256(src).hexdigest(), src)
    except _Bad as e:
        raise IbverifyError(f"{what} {name}: {e}") from None


def _reloaded(source: str, sha256: str) -> OptimizerInfo:
    """A pickled user row, loaded again from its file (which must be unchanged)."""
    row = load(source, "optimizer file")
    if row.user.sha256 != sha256:
        raise IbverifyError(f"optimizer file {source} changed since this run was made (sha256 {sha256[:12]}… → "
                            f"{row.user.sha256[:12]}…)")
    return row


@functools.lru_cache(maxsize=32)
def _load(path: str, func: str, sha: str, src: bytes) -> OptimizerInfo:
    desc = _describe(path, func, sha, src)
    return _row(desc, f"{path}:{func}", sha)


def _describe(path: str, func: str, sha: str, src: bytes) -> UserOptimizer:
    modname = f"ibverify_user_{sha[:16]}"
    mod = types.ModuleType(modname)
    mod.__file__ = path
    try:
        code = compile(src, path, "exec")
    except SyntaxError as e:
        raise _Bad(f"syntax error at line {e.lineno}: {e.msg}") from None
    except ValueError as e:   # null bytes
        raise _Bad(f"not Python source ({e})") from None
    sys.modules[modname] = mod   # for what the file defines that looks its module up (dataclasses, pickle)
    try:
        exec(code, mod.__dict__)
    except (Exception, SystemExit) as e:
        sys.modules.pop(modname, None)
        raise _Bad(f"running the file raised {_one_line(e)}") from None
    fn = getattr(mod, func, None)
    if not callable(fn):
        raise _Bad(f"{Path(path).name} defines no function {func!r}")
    try:
        desc = fn()
    except (Exception, SystemExit) as e:
        raise _Bad(f"{func}() raised {_one_line(e)}") from None
    if not isinstance(desc, UserOptimizer):
        raise _Bad(f"{func}() must return ibverify.optim.userfile.UserOptimizer, got {type(desc).__name__}")
    return desc


def _one_line(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def _row(d: UserOptimizer, source: str, sha: str) -> OptimizerInfo:
    if not isinstance(d.name, str) or not _NAME.match(d.name):
        raise _Bad(f"name {d.name!r}: use letters, digits and _ . + - (a letter first, at most 64)")
    if d.name in NAMES or optfile.split(d.name):
        raise _Bad(f"name {d.name!r} is an optimizer of the table; choose another")
    if not isinstance(d.update, str):
        raise _Bad(f"update must be a string, got {type(d.update).__name__}")
    for which in ("vector", "block"):
        f = getattr(d, which)
        if f is not None and not callable(f):
            raise _Bad(f"{which} must be a function (the chain's factory), got {type(f).__name__}")
    if d.vector is None and d.block is None:
        raise _Bad("no chain: give vector=(spec, xp) -> transforms and/or block=(spec) -> log-frame transforms")
    if not isinstance(d.knobs, Mapping):
        raise _Bad(f"knobs must be a dict, got {type(d.knobs).__name__}")
    bad = [k for k in d.knobs if k not in USER_KNOBS]
    if bad:
        raise _Bad(f"unknown knob(s) {', '.join(map(repr, bad))} in knobs; use {', '.join(USER_KNOBS)}"
                   + ("" if all(k in KNOBS for k in bad) else " (the table's knob names)"))
    models = tuple(m for m, f in (("vector", d.vector), ("block", d.block)) if f is not None)
    return OptimizerInfo(d.name, "user", d.update or f"a user's chain ({source})", "adaptive", models,
                         types.MappingProxyType({m: ("reference",) for m in models}),
                         types.MappingProxyType(dict(d.knobs)), "any", tuple(k for k in _MOMENTS if k in d.knobs),
                         user=UserChains(source, sha, d.vector, d.block), vector=d.vector, block=d.block)
