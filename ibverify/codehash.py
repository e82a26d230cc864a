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

A claim's check hash skips `NOT_DECIDING` (the adapters of a user's or a library's optimizer and the resume cache)
unless the claim names such an optimizer: editing them leaves the full record current.

For ibverify itself: `module_code_hash(name, file)` (the check's module and its upstream closure, cached
per process) and `package_code_hash(exclude)` (every module but the excluded subpackages).
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
# library's optimizer (a file, torch:, optax:), or decide what a run reuses (the resume cache, whose own keys hold the
# whole package's code hash). A claim that names such an optimizer counts them (Claim.check_hash).
NOT_DECIDING = ("ibverify.cache", "ibverify.optim.optaxadapt", "ibverify.optim.torchadapt", "ibverify.optim.torchblock",
                "ibverify.optim.userfile", "ibverify.optim.userguard", "ibverify.optim.userprobe")


@functools.lru_cache(maxsize=None)
def module_code_hash(name: str, path: str | None = None, skip: tuple[str, ...] = ()) -> str:
    """code_hash of module `name` (at `path`; default its file in ibverify) and its upstream closure inside
    ibverify, without the modules in `skip` (closure). Cached per process: a file edited while the process runs is
    not seen."""
    return code_hash(closure(ROOT, PACKAGE, name, Path(path) if path else None, skip))


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
