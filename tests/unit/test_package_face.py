"""The package root is the API's face: nothing below it imports `ibverify` itself (issue 47 item 7)."""

import ast
from pathlib import Path

import ibverify
from ibverify.errors import IbverifyError

PKG = Path(ibverify.__file__).parent


def _imports_root(tree: ast.AST, depth: int) -> list[str]:
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module == "ibverify":
                bad += [a.name for a in node.names]
            elif node.level == depth + 1 and node.module is None:
                # `from .. import x` in a subpackage module: only a submodule may be named, never a root name
                bad += [a.name for a in node.names if not (PKG / a.name).exists()
                        and not (PKG / f"{a.name}.py").exists()]
        elif isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name == "ibverify"]
    return bad


def test_no_module_imports_a_name_from_the_root():
    offenders = {}
    for f in PKG.rglob("*.py"):
        if f == PKG / "__init__.py":
            continue
        depth = len(f.relative_to(PKG).parts) - 1
        bad = _imports_root(ast.parse(f.read_text()), depth)
        if bad:
            offenders[str(f.relative_to(PKG))] = bad
    assert offenders == {}


def test_the_root_reexports_the_one_error():
    assert ibverify.IbverifyError is IbverifyError
    assert ibverify.__version__ == __import__("ibverify.version", fromlist=["x"]).__version__


def test_the_detector_sees_a_root_import():
    assert _imports_root(ast.parse("from .. import IbverifyError"), 1) == ["IbverifyError"]
    assert _imports_root(ast.parse("from ibverify import IbverifyError"), 0) == ["IbverifyError"]
    assert _imports_root(ast.parse("from .. import geometry"), 1) == []
