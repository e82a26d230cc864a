"""The resume cache: a killed `ibverify verify` continues where it stopped, for every check type.

Two kinds of entries live under the cache root ($IBVERIFY_CACHE, default `.ibverify-cache/`), in one
folder per claim run:

    <root>/<claim id>/<tier>-seed<seed>-<key>/row.json                     a finished claim's results row
    <root>/<claim id>/<tier>-seed<seed>-<key>/ex-<prop>-<i>-<fingerprint>.pkl one evaluated Example

`key` = sha256(check hash, tier-resolved params, the sha256 of every data file the params name, code hash)[:16]:
editing the code of the check, the claim's data, the bytes of a user's data file (`verify --data FILE`: the key
holds the file's content, not only its path) or the code of any computing module of the package (`code_hash`; by
ibverify.codehash's rule, comments, docstrings and layout do not count) starts a fresh folder. `prop` names
the property within the claim run: the k-th `run_property` call of the check and a hash of (family
claim id, seed, evaluate's qualified name), so two properties of one check that draw the same
examples (e.g. one per optimizer) never share entries. An example entry is used only when its
property, its index i in the property's sequence and the fingerprint of the drawn example (a hash of
its exact bytes: arrays by content, floats by their exact value) all match, so a changed strategy can
never reuse a stale example, and only evaluations whose sole effect was their value are stored
(`state_fingerprint`). Every file is written atomically (temporary file + rename): a kill leaves
either the old state or the new one. Rows with verdict `error` are never stored (an error is re-run).

Shared values (`shared_value`): a deterministic computation that several claims need (a network training
run that a claim and its controls judge) is stored once under $IBVERIFY_RUNS (set by `verify`: <cache root>/runs
with a resume cache, in this process or for its Dask workers; a temporary folder for Dask without one), keyed by
the computation's key and the code hash, so worker processes compute it once. A lock file per key makes a second
process wait for the first one's result instead of computing it again. Without $IBVERIFY_RUNS the value is simply
computed.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import pickle
import types
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .errors import IbverifyError
from .claims import CheckContext
from .codehash import package_code_hash
from .atomic import atomic_write


def default_root() -> Path:
    return Path(os.environ.get("IBVERIFY_CACHE", ".ibverify-cache"))


def _feed(h, obj: Any) -> None:
    """Feed an exact, type-tagged encoding of obj into the hash h."""
    if isinstance(obj, np.ndarray):
        h.update(f"nd{obj.dtype.str}{obj.shape}".encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, np.generic):
        _feed(h, obj.item())
    elif isinstance(obj, float):
        h.update(b"f" + float.hex(obj).encode())
    elif isinstance(obj, (bool, int, str, bytes, type(None))):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif isinstance(obj, (tuple, list)):
        h.update(f"{type(obj).__name__}[{len(obj)}".encode())
        for v in obj:
            _feed(h, v)
        h.update(b"]")
    elif isinstance(obj, dict):
        h.update(f"dict[{len(obj)}".encode())
        for k in sorted(obj, key=repr):
            _feed(h, k)
            _feed(h, obj[k])
        h.update(b"]")
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(f"dc:{type(obj).__qualname__}(".encode())
        for f in dataclasses.fields(obj):
            h.update(f.name.encode())
            _feed(h, getattr(obj, f.name))
        h.update(b")")
    else:  # an object without an exact encoding: its repr (an address in it only makes entries miss)
        h.update(f"repr:{type(obj).__qualname__}:{obj!r};".encode())


class ContentMemo:
    """Base of a memo whose every entry is the value of a pure function of its content key (the run store): adding
    an entry changes no value a check can see, so `state_fingerprint` counts the memo by its type only. Hashing
    its contents would also make storing depend on what the process ran before (a memo an earlier claim filled
    keeps an evaluation state-free; a fresh one does not)."""


def state_fingerprint(fn: Callable, *args: Any) -> str | None:
    """A hash of everything a check's `evaluate` closure can change that the check sees afterwards:
    the contents of its closure cells and defaults (deeply: containers, arrays, dataclasses, objects'
    attributes, nested functions' closures) and `args`. A CheckContext counts by its claim, tier,
    params and seed only (its callbacks are not evidence); a ContentMemo by its type only. Taken before
    and after an evaluation: equal means the evaluation's only effect is its return value, so a stored
    value can stand in for it. None when the state cannot be taken (then nothing is reused)."""
    h = hashlib.sha256()
    try:
        _feed_state(h, fn, set())
        for a in args:
            _feed_state(h, a, set())
    except Exception:  # unhashable state, a repr that raises, a cycle too deep
        return None
    return h.hexdigest()


def _feed_state(h, obj: Any, seen: set[int]) -> None:
    if isinstance(obj, types.ModuleType):
        h.update(f"module:{obj.__name__};".encode())
        return
    if isinstance(obj, ContentMemo):
        h.update(f"memo:{type(obj).__qualname__};".encode())
        return
    if isinstance(obj, (types.FunctionType, CheckContext)) or not _plain(obj):
        if id(obj) in seen:
            h.update(b"<seen>")
            return
        seen.add(id(obj))
    if isinstance(obj, CheckContext):
        _feed(h, (obj.claim.id, obj.tier, obj.params, obj.seed))
    elif isinstance(obj, types.FunctionType):
        h.update(f"fn:{obj.__qualname__}(".encode())
        for c in obj.__closure__ or ():
            try:
                _feed_state(h, c.cell_contents, seen)
            except ValueError:  # an empty cell
                h.update(b"<empty>")
        _feed_state(h, (obj.__defaults__, obj.__kwdefaults__), seen)
        h.update(b")")
    elif isinstance(obj, types.MethodType):
        _feed_state(h, (obj.__func__, obj.__self__), seen)
    elif isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}[{len(obj)}".encode())
        for v in obj:
            _feed_state(h, v, seen)
        h.update(b"]")
    elif isinstance(obj, (set, frozenset)):
        h.update(f"set[{len(obj)}".encode())
        for v in sorted(obj, key=repr):
            _feed_state(h, v, seen)
        h.update(b"]")
    elif isinstance(obj, dict):
        h.update(f"dict[{len(obj)}".encode())
        for k in sorted(obj, key=repr):
            _feed(h, k)
            _feed_state(h, obj[k], seen)
        h.update(b"]")
    elif _plain(obj):
        _feed(h, obj)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(f"dc:{type(obj).__qualname__}(".encode())
        for f in dataclasses.fields(obj):
            h.update(f.name.encode())
            _feed_state(h, getattr(obj, f.name), seen)
        h.update(b")")
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        h.update(f"obj:{type(obj).__qualname__}(".encode())
        _feed_state(h, vars(obj), seen)
        h.update(b")")
    else:
        _feed(h, obj)


def _plain(obj: Any) -> bool:
    return isinstance(obj, (np.ndarray, np.generic, float, bool, int, str, bytes, type(None), type))


def fingerprint(obj: Any) -> str:
    """A hash of the exact content of a drawn example (arrays by bytes, floats by exact value)."""
    h = hashlib.sha256()
    _feed(h, obj)
    return h.hexdigest()[:20]


def code_hash() -> str:
    """Hash of the package's computing code (every ibverify module except the report renderer's), by the
    rule of ibverify.codehash (the one check_hash uses): an edit to the code of the engine, the oracles or
    a check invalidates every cache entry, not only the edited check's; a docstring, a comment, the layout
    or moving a function between modules does not. Cached per process."""
    return package_code_hash(exclude=("report",))[:16]


def run_dir(root: Path | str, claim_id: str, tier: str, seed: int, check_hash: str, params: dict) -> Path:
    """The folder of one (claim, tier, seed, check hash, params) run, for this version of the code."""
    blob = json.dumps([check_hash, params, code_hash()], sort_keys=True, default=repr)
    key = hashlib.sha256(blob.encode()).hexdigest()[:16]
    return Path(root) / claim_id / f"{tier}-seed{seed}-{key}"


@dataclasses.dataclass
class RunCache:
    """Cache entries of one claim run (see the module docstring)."""

    folder: Path
    calls: int = 0  # run_property calls so far in this claim run

    def new_property(self, tag: str) -> str:
        """The key of the next property of this claim run (call order + a hash of `tag`)."""
        self.calls += 1
        return f"p{self.calls}{hashlib.sha256(tag.encode()).hexdigest()[:8]}"

    def load_row(self) -> dict | None:
        try:
            return json.loads((self.folder / "row.json").read_text())
        except (OSError, ValueError):
            return None

    def store_row(self, row: dict) -> None:
        if row.get("verdict") == "error":
            return
        try:
            blob = json.dumps(row, allow_nan=False).encode()
        except (TypeError, ValueError):  # not plain JSON: not cached (the run is simply repeated)
            return
        atomic_write(self.folder / "row.json", blob, durable=False)

    def _example_path(self, prop: str, index: int, drawn: Any) -> Path:
        return self.folder / f"ex-{prop}-{index:05d}-{fingerprint(drawn)}.pkl"

    def load_example(self, prop: str, index: int, drawn: Any):
        try:
            return pickle.loads(self._example_path(prop, index, drawn).read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            return None

    def store_example(self, prop: str, index: int, drawn: Any, example: Any) -> None:
        atomic_write(self._example_path(prop, index, drawn), pickle.dumps(example, protocol=5), durable=False)

    def stored_examples(self) -> int:
        return len(list(self.folder.glob("ex-*.pkl")))


def for_claim(root: Path | str | None, claim, tier: str, seed: int, params: dict) -> RunCache | None:
    """The RunCache of a claim run, or None when caching is off (root None) or the check cannot be hashed. The key
    holds the content (sha256) of the data files the claim names besides their paths (`Claim.data_files`)."""
    if root is None:
        return None
    try:
        chash = claim.check_hash()
    except IbverifyError:
        return None
    files = claim.data_files()
    return RunCache(run_dir(root, claim.id, tier, seed, chash, {**params, "data_sha256": files} if files else params))


RUNS_ENV = "IBVERIFY_RUNS"


def shared_value(kind: str, key: Any, compute: Callable[[], Any]) -> Any:
    """compute(), stored once per (kind, key, code hash) under $IBVERIFY_RUNS and shared by every process
    that asks for it (see the module docstring). `key` must determine the value exactly (its repr is hashed)."""
    root = os.environ.get(RUNS_ENV)
    if not root:
        return compute()
    digest = hashlib.sha256(f"{kind}\0{key!r}\0{code_hash()}".encode()).hexdigest()[:24]
    path = Path(root) / kind / f"{digest}.pkl"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.with_suffix(".lock"), "a")
    except OSError:  # an unwritable store: compute here
        return compute()
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        try:
            return pickle.loads(path.read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            pass
        value = compute()
        try:
            data = pickle.dumps(value, protocol=5)
        except (pickle.PicklingError, AttributeError, TypeError):   # e.g. a library optimizer's local class: kept
            return value                                            # in this process only, not shared
        atomic_write(path, data, durable=False)
        return value
