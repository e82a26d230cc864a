"""Hashes that stale only what changed (issue 50 item 3): a claim's check hash counts a compiled kernel that CI holds
to its numpy reference through that reference (ibverify.codehash.ACCELERATED, the rule in its module docstring).

(a) On a tiny package written to tmp_path: editing the kernel leaves the hash, editing its reference changes it (also
    when the check reaches only the kernel), and what only the kernel imports still counts.
(b) On a copy of ibverify itself: an edit of each accelerator leaves every registry check's code hash as it was, an
    edit of the reference chain changes every one of them.
(c) Every listed accelerator is held: each named test exists, reaches the module, runs it and its reference, and
    compares them at ≤ 1e-12 relative or bit for bit; a module that holds deciding code is not listed."""

from __future__ import annotations

import ast
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from ibverify import codehash
from ibverify.claims import NOT_DECIDING, load_registry
from ibverify.codehash import ACCELERATED, ACCELERATORS, Accelerator

REPO = codehash.ROOT.parent

FILES = {
    "__init__.py": '"""A fake package."""\n',
    "checks.py": "from .engine import run\n\n\ndef check(ctx):\n    return run(ctx) > 0\n",
    "engine.py": "from .kernel import fast\nfrom .reference import slow\n\n\ndef run(x, compiled=True):\n"
                 "    return fast(x) if compiled else slow(x)\n",
    "kernel.py": "from .frames import shift\n\n\ndef fast(x):\n    return shift(x) * 2.0\n",
    "frames.py": "def shift(x):\n    return x + 1.0\n",
    "reference.py": "def slow(x):\n    return sum([x + 1.0, x + 1.0])\n",
    "direct.py": "from .kernel import fast\n\n\ndef check(ctx):\n    return fast(ctx)\n",
}
FAKE = (Accelerator("fakepkg.kernel", ("fakepkg.reference",), ()),)


@pytest.fixture
def pkg(tmp_path):
    root = tmp_path / "fakepkg"
    root.mkdir()
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


def chash(root: Path, module: str = "fakepkg.checks", accelerated=FAKE) -> str:
    return codehash.code_hash(codehash.check_closure(root, "fakepkg", module, accelerated=accelerated), "fakepkg")


def edit(root: Path, name: str, old: str, new: str) -> None:
    f = root / name
    assert old in f.read_text(), (name, old)
    f.write_text(f.read_text().replace(old, new))


# ---------------------------------------------------------------- (a) the rule on a constructed package

def test_check_closure_leaves_out_the_kernel_and_keeps_its_imports_and_reference(pkg):
    assert set(codehash.check_closure(pkg, "fakepkg", "fakepkg.checks", accelerated=FAKE)) == {
        "fakepkg", "fakepkg.checks", "fakepkg.engine", "fakepkg.frames", "fakepkg.reference"}
    assert set(codehash.check_closure(pkg, "fakepkg", "fakepkg.direct", accelerated=FAKE)) == {
        "fakepkg", "fakepkg.direct", "fakepkg.frames", "fakepkg.reference"}   # the reference joins
    assert "fakepkg.kernel" in codehash.check_closure(pkg, "fakepkg", "fakepkg.checks")   # none accelerated


@pytest.mark.parametrize("module", ["fakepkg.checks", "fakepkg.direct"])
def test_a_kernel_edit_keeps_the_hash_and_a_reference_edit_changes_it(pkg, module):
    before, counted = chash(pkg, module), chash(pkg, module, accelerated=())
    edit(pkg, "kernel.py", "shift(x) * 2.0", "shift(x) + shift(x)")
    assert chash(pkg, module) == before
    assert chash(pkg, module, accelerated=()) != counted   # the control: the old rule counts the kernel
    edit(pkg, "reference.py", "sum([x + 1.0, x + 1.0])", "2.0 * (x + 1.0)")
    assert chash(pkg, module) != before


def test_what_only_the_kernel_imports_still_counts(pkg):
    before = chash(pkg, "fakepkg.direct")
    edit(pkg, "frames.py", "x + 1.0", "x + 2.0")
    assert chash(pkg, "fakepkg.direct") != before


# ---------------------------------------------------------------- (b) the rule on ibverify itself

def _check_modules() -> list[tuple[str, str, tuple]]:
    out = set()
    for c in load_registry():
        c.function()
        mod = sys.modules[c.check.partition(":")[0]]
        out.add((mod.__name__, mod.__file__, () if c.names_foreign_optimizer() else NOT_DECIDING))
    return sorted(out)


@pytest.fixture(scope="module")
def checks():
    return _check_modules()


def _hashes(root: Path, checks) -> dict:
    """The code part of each registry check's hash (Claim.check_hash's rule) on the tree at `root`."""
    return {(name, skip): codehash.code_hash(codehash.check_closure(
        root, "ibverify", name, root / Path(file).relative_to(codehash.ROOT), skip,
        () if name in codehash.KERNEL_JUDGES else ACCELERATED)) for name, file, skip in checks}


def _judged(hashes: dict, judges: bool) -> dict:
    return {k: h for k, h in hashes.items() if (k[0] in codehash.KERNEL_JUDGES) is judges}


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "ibverify"
    shutil.copytree(codehash.ROOT, root, ignore=_not_source)
    return root


def _not_source(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n == "__pycache__" or (Path(folder, n).is_file() and not n.endswith(".py"))]


def _append(root: Path, module: str, text: str) -> None:
    f = codehash.module_file(root, "ibverify", module)
    f.write_text(f.read_text() + textwrap.dedent(text))


def test_every_accelerator_edit_keeps_every_check_hash_and_a_reference_edit_changes_them(tree, checks):
    assert len(checks) > 10
    checks = checks + [(*checks[0][:2], ())]   # as for a claim naming a foreign optimizer: nothing skipped
    before = _hashes(tree, checks)
    old_rule = {k: codehash.code_hash(codehash.closure(tree, "ibverify", k[0], None, k[1])) for k in before}
    f = codehash.module_file(tree, "ibverify", "ibverify.engine.kernels")
    f.write_text(f.read_text().replace("TINY = 1e-150", "TINY = 1e-140", 1))
    edited = _hashes(tree, checks)
    assert _judged(edited, False) == _judged(before, False)
    assert all(edited[k] != h for k, h in _judged(before, True).items()) and _judged(before, True)
    assert all(codehash.code_hash(codehash.closure(tree, "ibverify", k[0], None, k[1])) != h   # the control
               for k, h in old_rule.items())
    for a in ACCELERATED:
        _append(tree, a.module, "\n\ndef _edited(x):\n    return x * 3.0\n\n\nTINY_EDIT = 1e-150\n")
    assert _judged(_hashes(tree, checks), False) == _judged(before, False)
    mid = _hashes(tree, checks)
    f = codehash.module_file(tree, "ibverify", "ibverify.codehash")   # the hash rule's own code: NOT_DECIDING
    f.write_text(f.read_text() + "\n\nEDITED = 2.0\n")
    ruled = _hashes(tree, checks)
    assert all((ruled[k] == h) is bool(k[1]) for k, h in mid.items())   # counted only where nothing is skipped
    f = codehash.module_file(tree, "ibverify", "ibverify.optim.transforms")
    f.write_text(f.read_text() + "\n\nEDITED = 1.0\n")
    after = _hashes(tree, checks)
    assert all(after[k] != before[k] for k in before)


def test_every_check_reaches_the_references_and_no_accelerator(checks):
    for name, file, skip in checks:
        mods = set(codehash.check_closure(codehash.ROOT, "ibverify", name, Path(file), skip, ACCELERATED))
        assert {"ibverify.engine.vector", "ibverify.engine.block", "ibverify.geometry.base"} <= mods, name
        assert not mods & set(ACCELERATORS), name


# ---------------------------------------------------------------- (c) each accelerator is held by its tests

def _top_defs(module: str) -> set[str]:
    tree = ast.parse(codehash.module_file(codehash.ROOT, "ibverify", module).read_text())
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def _test_body(tree: ast.Module, name: str) -> list[ast.AST]:
    """The test function and the functions of its file it calls, directly or not."""
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert name in defs, name
    seen, todo = [], [defs[name]]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.append(f)
        todo += [defs[n.id] for n in ast.walk(f) if isinstance(n, ast.Name) and n.id in defs]
    return seen


def _tolerances(tree: ast.Module) -> dict[str, float]:
    out = {}
    for n in tree.body:
        if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                and isinstance(n.value, ast.Constant) and isinstance(n.value.value, float)):
            out[n.targets[0].id] = n.value.value
    return out


def _words(nodes) -> set:
    words = set()
    for f in nodes:
        for n in ast.walk(f):
            if isinstance(n, ast.Name):
                words.add(n.id)
            elif isinstance(n, ast.Attribute):
                words.add(n.attr)
            elif isinstance(n, ast.Constant):
                words.add(n.value)
    return words


@pytest.mark.parametrize("acc", ACCELERATED, ids=lambda a: a.module)
def test_each_accelerator_is_held_to_its_reference_by_a_named_test(acc):
    assert acc.module not in NOT_DECIDING and codehash.module_file(codehash.ROOT, "ibverify", acc.module)
    assert acc.references and not set(acc.references) & set(ACCELERATORS)
    assert acc.tests
    kernel_names = _top_defs(acc.module) | {"compiled"}
    reference_names = set().union(*map(_top_defs, acc.references)) | {"reference", "mpmath"}
    for test in acc.tests:
        file, _, name = test.partition("::")
        path = REPO / file
        tree = ast.parse(path.read_text())
        assert acc.module in codehash.closure(codehash.ROOT, "ibverify", "ibverify._test", path), test
        body = _test_body(tree, name)
        assert not any(w in ast.dump(d) for d in body[0].decorator_list for w in ("skip", "xfail")), test
        words = _words(body)
        assert words & kernel_names, f"{test} does not run {acc.module}"
        assert words & reference_names, f"{test} does not run a reference of {acc.module}"
        tight = {w for w in words if isinstance(w, float) and 0 < w <= 1e-12}
        tight |= {w for w, v in _tolerances(tree).items() if 0 < v <= 1e-12} & words
        assert tight or words & {"array_equal", "assert_array_equal"}, f"{test} holds {acc.module} to no ≤ 1e-12"


def test_the_holding_rule_rejects_a_test_without_a_tight_tolerance():
    """The control of the check above: a comparison at 1e-6 is not a hold."""
    tree = ast.parse("TOL = 1e-6\n\ndef test_loose():\n    assert rel(run(engine='compiled'), 1) <= TOL\n")
    words = _words(_test_body(tree, "test_loose"))
    assert "compiled" in words and not {w for w in words if isinstance(w, float) and 0 < w <= 1e-12}
    assert not {w for w, v in _tolerances(tree).items() if 0 < v <= 1e-12} & words


def test_the_kernel_cache_is_not_deciding_and_counts_for_a_foreign_optimizer():
    assert "ibverify.engine._kernel_cache" in NOT_DECIDING
    mods = codehash.check_closure(codehash.ROOT, "ibverify", "ibverify.checks.per_sample", None, (), ACCELERATED)
    assert "ibverify.engine._kernel_cache" in mods


def test_a_check_that_judges_the_kernels_counts_them():
    """ibverify.log-frame-exact's full-tier row is the kernels' own test at long horizons: a kernel edit stales it.
    module_code_hash (Claim.check_hash's code part) applies ACCELERATED to every check module but KERNEL_JUDGES."""
    for name, judge in (("ibverify.checks.numerics", True), ("ibverify.checks.per_sample", False)):
        f = codehash.module_file(codehash.ROOT, "ibverify", name)
        every = codehash.code_hash(codehash.closure(codehash.ROOT, "ibverify", name, f, NOT_DECIDING))
        through = codehash.code_hash(codehash.check_closure(codehash.ROOT, "ibverify", name, f, NOT_DECIDING,
                                                            ACCELERATED))
        assert every != through
        assert codehash.module_code_hash(name, str(f), NOT_DECIDING) == (every if judge else through), name
    judges = {c.id for c in load_registry() if c.check.partition(":")[0] in codehash.KERNEL_JUDGES}
    assert judges == {"ibverify.log-frame-exact", "ibverify.control.naive-float64-exact"}


def test_every_check_module_that_runs_an_engine_against_another_is_a_kernel_judge():
    for f in sorted((codehash.ROOT / "checks").glob("*.py")):
        text = f.read_text()
        name = f"ibverify.checks.{f.stem}"
        if any(f'engine="{e}"' in text for e in ("mpmath", "reference", "compiled")):
            assert name in codehash.KERNEL_JUDGES, name
