"""Hashes of the code that computes a result: one rule, for a claim's `check_hash` and the resume cache.

`code_hash(files)` hashes what a set of modules *does*, not how it is laid out in files: each module is
parsed, its docstrings (module, class, function) are dropped, and every top-level statement is dumped
without line numbers (`ast.dump(..., include_attributes=False)`); the hash is that of the sorted multiset
of the dumps of all modules together. So reformatting, editing a comment or a docstring, or moving a
function or class from one module of the set to another does not change it; a change to any statement
does. Imports are normalized so that a move does not show through them:
- an import from inside the package (`from .a import f`, also in a function body) keeps its names and
  drops where they come from (a moved `f` is imported from elsewhere, the code is the same);
- at top level, an internal import that binds a name as it is (`from .a import f`) is left out (moving
  `f` into the importing module removes that line); a renaming one (`from .geometry import l2 as geo`),
  `import package.x` and every external import (`import numpy as np`) count as a *set* over all the
  modules (the same line in two modules, or one moved with a function, counts once).
Known blind spot: a plain `from .a import f` switched to `from .b import f`, where a and b both define an
`f` and both stay in the set.

`closure(root, package, name)`: the module `name` and every module of `package` it imports, directly or
not (an `import` anywhere in a file counts, also in a function body), with their parent packages (whose
`__init__` runs first). Found from the source alone (ast), nothing is imported.

A claim's check hash skips `NOT_DECIDING` (the adapters of a user's or a library's optimizer, the resume cache,
numba's kernel cache and this module) unless the claim names such an optimizer: editing them leaves the full record
current.

A claim's check hash covers a compiled kernel through its reference, not its own code (`ACCELERATED`, issue 50):
an accelerator is a module that only computes faster what a numpy reference in the package computes (it runs on
the compiled path alone; what to run, on which data, and how a result is judged live elsewhere), and that tests of
the default `pytest` hold to that reference at ≤ 1e-12 relative or bit for bit, for each of its kernel families
and variants (`Accelerator.tests` names them; tests/test_check_hash_accelerators.py checks that each exists,
reaches the module, runs it and a reference, and compares at that resolution). So a kernel edit that lands
computes what the reference computes, to 1e-12, on every case CI holds it to, and the record stays current. The
rule (`check_closure`): the closure as above, following the accelerators' imports, without the accelerators' own
statements, and with the closures of their references added (they count whether the check reaches them otherwise
or not). An edit of a reference changes every hash above it; an edit that changes what a kernel computes must
change its reference too, or fail CI. Past float64 underflow, where the float64 reference freezes, the kernels
are held to the same chain in mpmath (`engine.vector`'s `_run_chain` with the `MPMath` backend) by the registry
claim `ibverify.log-frame-exact` at the fast tier, which CI gates. The claims whose check judges the kernels
themselves (`KERNEL_JUDGES`: `ibverify.log-frame-exact` and its control) count every accelerator: their full-tier
rows are the kernels' test at long horizons. A module that also holds deciding code is not an accelerator (split
it first: moving code between modules of the closure does not change `code_hash`). Limits: the tests hold a kernel
at their sizes and horizons (a change that shows only at the full tier's is not caught; the KERNEL_JUDGES rows are
the guard there), and a kernel edit that only reorders floating-point operations moves iterates by ulps, which a
chaotic orbit amplifies: a verdict must not depend on the last digits of such an orbit (the record's verdicts are
on directions, rates and margins, judged with tolerances far above that).

For ibverify itself: `module_code_hash(name, file, skip, accelerated)` (the check's module and its upstream
closure by `check_closure`, cached per process) and `package_code_hash(exclude)` (every module but the excluded
subpackages).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import sys
import textwrap
from pathlib import Path
from typing import Iterable, NamedTuple

ROOT = Path(__file__).resolve().parent
PACKAGE = "ibverify"


def module_file(root: Path, package: str, name: str) -> Path | None:
    """The source file of module `name` of `package` (whose folder is `root`), None when there is none."""
    if name != package and not name.startswith(package + "."):
        return None
    base = Path(root, *name.split(".")[1:])
    for f in (base / "__init__.py", base.with_suffix(".py")):
        if f.is_file():
            return f
    return None


def _internal(module: str | None, level: int, package: str) -> bool:
    return level > 0 or (module is not None and (module == package or module.startswith(package + ".")))


def _absolute(module: str | None, level: int, name: str, is_package: bool) -> str | None:
    """The absolute name of `from <level dots><module> import ...` written in module `name`."""
    if level == 0:
        return module
    parts = name.split(".") if is_package else name.split(".")[:-1]
    if level - 1 > len(parts) - 1:
        return None  # beyond the top-level package
    parts = parts[:len(parts) - (level - 1)]
    return ".".join(parts + ([module] if module else []))


class _Module(NamedTuple):
    imported: frozenset  # candidate names of the modules it imports (those not in the package are ignored)
    items: tuple  # dumps of its top-level statements but imports (a multiset)
    shared: frozenset  # its top-level imports that count, as a set (module docstring)
    defs: dict  # top-level function / class name → its dump


_HAS_DOCSTRING = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _is_docstring(stmt) -> bool:
    return type(stmt) is ast.Expr and type(stmt.value) is ast.Constant and type(stmt.value.value) is str


class _Dumper:
    """One pass over a module's tree: the normalized dump of a node (module docstring) and, on the side,
    the names of the modules imported anywhere in it.

    A dump is `ast.dump(node, annotate_fields=True, include_attributes=False)` without docstrings and
    without empty fields (None, []): the same text on every Python version (3.12 added an empty
    `type_params` to every def, 3.13's `ast.dump` leaves empty fields out), so a check hash does not
    depend on the interpreter's minor version."""

    def __init__(self, name: str, is_package: bool, package: str):
        self.name, self.is_package, self.package = name, is_package, package
        self.imported: set[str] = set()

    def imports(self, node) -> bool:
        """Record the modules `node` (an Import / ImportFrom) imports; True when it is internal."""
        if type(node) is ast.Import:
            self.imported.update(a.name for a in node.names)
            return any(_internal(a.name, 0, self.package) for a in node.names)
        base = _absolute(node.module, node.level, self.name, self.is_package)
        if base:
            self.imported.add(base)
            self.imported.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
        return _internal(node.module, node.level, self.package)

    def dump(self, node) -> str:
        out: list[str] = []
        self._dump(node, out)
        return "".join(out)

    def _dump(self, node, out: list[str]) -> None:
        t = type(node)
        if t is list:
            out.append("[")
            for v in node:
                self._dump(v, out)
                out.append(", ")
            out.append("]")
            return
        if not isinstance(node, ast.AST):
            out.append(repr(node))
            return
        if t is ast.Import:
            self.imports(node)
        elif t is ast.ImportFrom and self.imports(node):  # where the names come from does not count
            node = ast.ImportFrom(names=node.names, level=0)
        out.append(t.__name__)
        out.append("(")
        for f in node._fields:
            v = getattr(node, f, None)
            if v is None:
                continue
            if type(v) is list:
                if f == "body" and t in _HAS_DOCSTRING and v and _is_docstring(v[0]):
                    v = v[1:]
                if not v:
                    continue
            out.append(f)
            out.append("=")
            self._dump(v, out)
            out.append(", ")
        out.append(")")


@functools.lru_cache(maxsize=None)
def _analyse(text: str, name: str, is_package: bool, package: str) -> _Module:
    """One module's source, analysed. Keyed by the source text itself, so an edited file is analysed again."""
    d = _Dumper(name, is_package, package)
    items: list[str] = []
    shared: set[str] = set()
    defs: dict[str, str] = {}
    body = ast.parse(text).body
    for stmt in body[1:] if body and _is_docstring(body[0]) else body:
        t = type(stmt)
        if t is ast.ImportFrom and stmt.module == "__future__" and not stmt.level:
            continue
        if t is ast.ImportFrom and d.imports(stmt):
            shared.update(f"from {a.name} as {a.asname}" for a in stmt.names if a.asname not in (None, a.name))
        elif t is ast.ImportFrom:
            shared.update(f"from {stmt.module} import {a.name} as {a.asname}" for a in stmt.names)
        elif t is ast.Import:
            d.imports(stmt)
            shared.update(f"import {a.name} as {a.asname}" for a in stmt.names)
        else:
            items.append(d.dump(stmt))
            if t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                defs[stmt.name] = items[-1]
    return _Module(frozenset(d.imported), tuple(items), frozenset(shared), defs)


def _read(name: str, path: Path, package: str) -> _Module:
    return _analyse(Path(path).read_text(encoding="utf-8"), name, Path(path).name == "__init__.py", package)


def closure(root: Path, package: str, name: str, path: Path | None = None,
            skip: Iterable[str] = ()) -> dict[str, Path]:
    """Module name → file for `name` (at `path`, default: its file in the package) and every module of
    `package` it imports directly or not, with the parent packages of each; the modules in `skip` are neither
    included nor followed."""
    root = Path(root)
    skip = frozenset(skip)
    start = Path(path) if path is not None else module_file(root, package, name)
    if start is None:
        raise FileNotFoundError(f"no source file for module {name}")
    found: dict[str, Path] = {name: start}
    todo = [name]
    while todo:
        m = todo.pop()
        for cand in _read(m, found[m], package).imported:
            parts = cand.split(".")
            for k in range(1, len(parts) + 1):  # the module and its parent packages
                sub = ".".join(parts[:k])
                if sub not in found and sub not in skip:
                    f = module_file(root, package, sub)
                    if f is not None:
                        found[sub] = f
                        todo.append(sub)
    return dict(sorted(found.items()))


def code_hash(files: dict[str, Path] | Iterable[tuple[str, Path]], package: str = PACKAGE) -> str:
    """sha256 of the code of `files` (module name → file), by the rule of the module docstring."""
    items: list[str] = []
    shared: set[str] = set()
    for name, path in dict(files).items():
        m = _read(name, path, package)
        items.extend(m.items)
        shared |= m.shared
    h = hashlib.sha256()
    for part in sorted(items) + ["\0imports\0"] + sorted(shared):
        h.update(part.encode() + b"\n")
    return h.hexdigest()


def definition_dump(fn) -> str:
    """A function's code as `code_hash` sees it (no docstrings, no layout): the dump of its top-level
    definition in its module's file (parsed once per process), else of its source (inspect), else its
    qualified name (no source: a builtin, a callable object)."""
    mod = sys.modules.get(getattr(fn, "__module__", None) or "")
    path, qualname = getattr(mod, "__file__", None), getattr(fn, "__qualname__", "")
    if path and path.endswith(".py"):
        found = _read(mod.__name__, Path(path), PACKAGE).defs.get(qualname)
        if found is not None:
            return found
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return f"{getattr(fn, '__module__', '')}:{qualname or repr(type(fn))}"
    d = _Dumper(getattr(fn, "__module__", ""), False, PACKAGE)
    return "\n".join(d.dump(s) for s in tree.body)


# Modules that never decide a verdict of a claim that runs only the optimizer table's rows: they adapt a user's or a
# library's optimizer (a file, torch:, optax:), decide what a run reuses (the resume cache, whose own keys hold the
# whole package's code hash; numba's kernel cache, keyed by the engine's source text: tests/engine/
# test_kernel_cache.py), or compute the hashes themselves (this module: a change of the rule shows in the hashes it
# computes, not through its own code). A claim that names such an optimizer counts them (Claim.check_hash).
NOT_DECIDING = ("ibverify.cache", "ibverify.codehash", "ibverify.engine._kernel_cache", "ibverify.optim.optaxadapt",
                "ibverify.optim.torchadapt", "ibverify.optim.torchblock", "ibverify.optim.userfile",
                "ibverify.optim.userguard", "ibverify.optim.userprobe")


class Accelerator(NamedTuple):
    """A compiled module that a check hash counts through its references (module docstring)."""
    module: str
    references: tuple[str, ...]  # the modules of the numpy code it is held to: they count instead of it
    tests: tuple[str, ...]  # "file::test": default-pytest tests holding it to them at ≤ 1e-12 relative or bit for bit


ACCELERATED = (
    Accelerator("ibverify.engine.kernels", ("ibverify.engine.vector",), (  # Adam, Signum, GD, NGD, AdamProxy
        "tests/unit/test_engine.py::test_compiled_matches_reference",
        "tests/unit/test_engine.py::test_compiled_matches_reference_property",
        "tests/unit/test_engine.py::test_every_moment_kernel_variant_matches_reference")),
    Accelerator("ibverify.engine.kernels_more", ("ibverify.engine.vector",), (  # steepest-l1, Lion, AdaGrad, AdamW
        "tests/unit/test_engine.py::test_compiled_matches_reference",
        "tests/engine/test_kernels_more.py::test_compiled_equals_reference_over_3000_steps",
        "tests/engine/test_kernels_more.py::test_steepest_l1_exact_ties_split_the_step_as_the_reference")),
    Accelerator("ibverify.engine.kernels_precond", ("ibverify.engine.vector",), (  # precond-gd
        "tests/engine/test_kernels_precond.py::test_compiled_precond_gd_equals_reference_over_3000_steps",)),
    Accelerator("ibverify.engine.lanes", ("ibverify.engine.vector",), (  # each lane bit for bit its single run()
        "tests/engine/test_lanes.py::test_batch_one_lanes_bit_identical",
        "tests/engine/test_lanes.py::test_minibatch_lanes_with_seeds_and_own_frames",
        "tests/engine/test_lanes.py::test_plain_lanes_from_plain_min_d_bit_identical",
        "tests/engine/test_lanes.py::test_one_dataset_for_all_lanes_and_fallback_for_other_optimizers")),
    Accelerator("ibverify.engine.network", ("ibverify.engine.block",), (  # every model's gradient, direction, moment
        "tests/networks/test_engine_agreement.py::test_compiled_matches_reference_over_3000_steps",
        "tests/networks/test_engine_agreement.py::test_past_float64_underflow_both_engines_agree_and_keep_moving")),
    Accelerator("ibverify.engine.network_run", ("ibverify.engine.block",), (  # (model, chain) → the kernels' arrays
        "tests/networks/test_engine_agreement.py::test_compiled_matches_reference_over_3000_steps",)),
    Accelerator("ibverify.engine.polar", ("ibverify.engine.block", "ibverify.geometry.base"), (  # Muon's polar factor
        "tests/networks/test_engine_agreement.py::test_compiled_matches_reference_over_3000_steps",
        "tests/engine/test_polar.py::test_well_conditioned_blocks_match_the_50_digit_svd_to_rounding")),
)
ACCELERATORS = tuple(a.module for a in ACCELERATED)
# Check modules whose verdicts judge the compiled kernels themselves (the engine against its mpmath chain, past
# float64 underflow, at the claim's horizons): for their claims every accelerator counts.
KERNEL_JUDGES = ("ibverify.checks.numerics",)


def check_closure(root: Path, package: str, name: str, path: Path | None = None, skip: Iterable[str] = (),
                  accelerated: Iterable[Accelerator] = ()) -> dict[str, Path]:
    """closure(...) by the accelerator rule of the module docstring: the accelerators' own code left out (their
    imports still followed), the closure of each reached accelerator's references added."""
    by_module = {a.module: a.references for a in accelerated}
    found = closure(root, package, name, path, skip)
    while True:
        missing = {r for m in found if m in by_module for r in by_module[m] if r not in found}
        if not missing:
            break
        for r in sorted(missing):
            found.update(closure(root, package, r, None, skip))
    return {m: f for m, f in sorted(found.items()) if m not in by_module}


@functools.lru_cache(maxsize=None)
def module_code_hash(name: str, path: str | None = None, skip: tuple[str, ...] = ()) -> str:
    """code_hash of module `name` (at `path`; default its file in ibverify) and its upstream closure inside
    ibverify, without the modules in `skip`, each of ACCELERATED counted through its references (check_closure)
    unless `name` is one of KERNEL_JUDGES. Cached per process: a file edited while the process runs is not seen."""
    return code_hash(check_modules(name, path, skip))


def check_modules(name: str, path: str | None = None, skip: tuple[str, ...] = ()) -> dict[str, Path]:
    """Module name → file of what module_code_hash hashes for module `name` (the one rule: docs and reports that name
    the modules under a check read it here)."""
    accelerated = () if name in KERNEL_JUDGES else ACCELERATED
    return check_closure(ROOT, PACKAGE, name, Path(path) if path else None, skip, accelerated)


def package_modules(exclude: tuple[str, ...] = ()) -> dict[str, Path]:
    """Every module of ibverify (name → file), but those of the subpackages named in `exclude`."""
    out = {}
    for f in sorted(ROOT.rglob("*.py")):
        rel = f.relative_to(ROOT).with_suffix("").parts
        if rel and rel[0] in exclude:
            continue
        parts = rel[:-1] if rel[-1] == "__init__" else rel
        out[".".join((PACKAGE, *parts))] = f
    return out


@functools.lru_cache(maxsize=None)
def package_code_hash(exclude: tuple[str, ...] = ()) -> str:
    """code_hash of every ibverify module but the subpackages in `exclude`. Cached per process."""
    return code_hash(package_modules(exclude))
