"""check_hash follows the code that computes a result (issue 19), by the rule of ibverify.codehash.

On a tiny package written to tmp_path (never imported: the code hash reads source files only):
(a) a code change in a module the check imports, directly, through another module or from a function
    body, changes the hash; a change in a module the check does not import does not;
(b) moving a function between two modules of the closure, reformatting, and editing comments or
    docstrings do not change it;
and on the registry: (c) two claims with the same check differ by their data; a different check
function of the same module, or other code under it, gives another hash."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from ibverify import cache, claims as claims_module, codehash
from ibverify.claims import Claim

ENGINE = '''
"""The engine."""
import math


def step(x):
    """One step."""
    return helper(x) + 1


def helper(x):
    return 2 * math.sqrt(x)  # doubled
'''

CHECKS = '''
from .engine import step
from . import deep


def check(ctx):
    return step(ctx) + deep.value()


def lazy_check(ctx):
    from .lazy import extra

    return extra(ctx)
'''

FILES = {
    "__init__.py": '"""A fake package."""\n',
    "engine.py": ENGINE,
    "checks.py": CHECKS,
    "deep.py": "from .deeper import base\n\n\ndef value():\n    return base() * 3\n",
    "deeper.py": "def base():\n    return 7\n",
    "lazy.py": "def extra(x):\n    return x - 1\n",
    "unrelated.py": "def other():\n    return 0\n",
}


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))


@pytest.fixture
def pkg(tmp_path):
    root = tmp_path / "fakepkg"
    root.mkdir()
    write(root, FILES)
    return root


def chash(root: Path, module: str = "fakepkg.checks") -> str:
    return codehash.code_hash(codehash.closure(root, "fakepkg", module), "fakepkg")


def edit(root: Path, name: str, old: str, new: str) -> None:
    f = root / name
    text = f.read_text()
    assert old in text, (name, old)
    f.write_text(text.replace(old, new))


# ---------------------------------------------------------------- (a) code under the check counts

def test_closure_is_the_upstream_imports(pkg):
    assert set(codehash.closure(pkg, "fakepkg", "fakepkg.checks")) == {
        "fakepkg", "fakepkg.checks", "fakepkg.engine", "fakepkg.deep", "fakepkg.deeper", "fakepkg.lazy"}
    assert set(codehash.closure(pkg, "fakepkg", "fakepkg.deep")) == {"fakepkg", "fakepkg.deep", "fakepkg.deeper"}


@pytest.mark.parametrize("name, old, new", [
    ("engine.py", "return helper(x) + 1", "return helper(x) + 2"),  # imported directly
    ("engine.py", "2 * math.sqrt(x)", "2 * math.log(x)"),  # a helper of the imported function
    ("deeper.py", "return 7", "return 8"),  # imported through another module
    ("lazy.py", "x - 1", "x + 1"),  # imported in a function body
    ("engine.py", "import math", "import cmath as math"),  # what an external name is bound to
    ("checks.py", "return step(ctx) + deep.value()", "return step(ctx) - deep.value()"),  # the check's module
])
def test_a_code_change_under_the_check_changes_the_hash(pkg, name, old, new):
    before = chash(pkg)
    edit(pkg, name, old, new)
    assert chash(pkg) != before


def test_a_module_outside_the_closure_does_not_count(pkg):
    before = chash(pkg)
    edit(pkg, "unrelated.py", "return 0", "return 1")
    assert chash(pkg) == before


def test_real_closure_reaches_the_engine_and_not_the_report():
    mods = set(codehash.closure(codehash.ROOT, "ibverify", "ibverify.checks.per_sample"))
    assert {"ibverify", "ibverify.checks", "ibverify.engine.kernels", "ibverify.optim.optimizers",
            "ibverify.oracles.maxmargin"} <= mods
    assert not {m for m in mods if m.startswith(("ibverify.report", "ibverify.runner", "ibverify.cli"))}


def test_no_check_of_the_registry_reaches_the_runner_the_cli_or_the_report():
    """docs/development.md: editing the runner, the CLI or the report leaves the full record current, since no claim's
    check imports them, directly or not; every check reaches the engine and the claim schema."""
    from _isolation import CLAIMS

    checks = {c.check.partition(":")[0] for c in claims_module.load_registry(CLAIMS)}
    assert len(checks) >= 10
    for name in sorted(checks):
        mods = set(codehash.closure(codehash.ROOT, "ibverify", name))
        assert not {m for m in mods if m.startswith(("ibverify.report", "ibverify.runner", "ibverify.cli"))}, name
        assert {"ibverify.engine.kernels", "ibverify.claim_schema"} <= mods, name


def test_claim_check_hash_includes_the_code_hash(monkeypatch):
    claim = _claim("ibverify.checks.per_sample:direction_converges")
    before = claim.check_hash()
    monkeypatch.setattr(claims_module, "module_code_hash", lambda *a: "another engine")
    assert claim.check_hash() != before


def test_a_skipped_module_is_neither_counted_nor_followed(pkg):
    """closure(skip=...): the lazily imported module and what only it imports drop out, so editing it keeps the hash."""
    skip = ("fakepkg.lazy",)
    assert "fakepkg.lazy" not in codehash.closure(pkg, "fakepkg", "fakepkg.checks", skip=skip)
    assert set(codehash.closure(pkg, "fakepkg", "fakepkg.checks", skip=("fakepkg.deep",))) == {
        "fakepkg", "fakepkg.checks", "fakepkg.engine", "fakepkg.lazy"}   # deeper: reached only through deep
    before = codehash.code_hash(codehash.closure(pkg, "fakepkg", "fakepkg.checks", skip=skip), "fakepkg")
    edit(pkg, "lazy.py", "x - 1", "x + 1")
    assert codehash.code_hash(codehash.closure(pkg, "fakepkg", "fakepkg.checks", skip=skip), "fakepkg") == before
    assert chash(pkg) != before


def test_adapters_and_the_resume_cache_count_only_for_a_claim_naming_a_foreign_optimizer(monkeypatch):
    """A table-only claim's hash skips codehash.NOT_DECIDING (editing torch's adapter or the resume cache leaves
    the full record current); a claim that names torch:, optax: or a user's file counts them."""
    seen = []
    monkeypatch.setattr(claims_module, "module_code_hash", lambda name, path=None, skip=(): seen.append(skip) or "h")
    assert "ibverify.optim.torchadapt" in codehash.NOT_DECIDING and "ibverify.cache" in codehash.NOT_DECIDING
    table = _claim("ibverify.checks.per_sample:direction_converges")
    assert not table.names_foreign_optimizer()
    table.check_hash()
    assert seen[-1] == codehash.NOT_DECIDING
    for where in ({"optimizer": "torch:Adam:eps=0"}, {"runs": [{"optimizer": "optax:lion"}]}):
        foreign = _claim("ibverify.checks.per_sample:direction_converges")
        foreign.params.update(where)
        assert foreign.names_foreign_optimizer()
        foreign.check_hash()
        assert seen[-1] == ()
    tiered = _claim("ibverify.checks.per_sample:direction_converges")
    tiered.tiers["fast"] = {"optimizer": "my_opt.py:make"}
    assert tiered.names_foreign_optimizer()
    mods = set(codehash.closure(codehash.ROOT, "ibverify", "ibverify.checks.gronich_nets", skip=codehash.NOT_DECIDING))
    assert not mods & set(codehash.NOT_DECIDING) and "ibverify.optim.spec" in mods


# ---------------------------------------------------------------- (b) layout does not count

def test_moving_a_function_between_modules_of_the_closure_keeps_the_hash(pkg):
    before = chash(pkg)
    helper = "\n\ndef helper(x):\n    return 2 * math.sqrt(x)  # doubled\n"
    edit(pkg, "engine.py", helper, "\n")
    edit(pkg, "engine.py", "import math\n", "import math\n\nfrom .deep import helper\n")
    edit(pkg, "deep.py", "from .deeper import base\n", "import math\n\nfrom .deeper import base\n")
    (pkg / "deep.py").write_text((pkg / "deep.py").read_text() + helper)
    assert "def helper" not in (pkg / "engine.py").read_text() and "def helper" in (pkg / "deep.py").read_text()
    assert chash(pkg) == before


def test_moving_a_function_out_of_the_closure_changes_the_hash(pkg):
    before = chash(pkg)
    edit(pkg, "deeper.py", "def base():\n    return 7\n", "from .unrelated import base\n")
    (pkg / "unrelated.py").write_text((pkg / "unrelated.py").read_text() + "\n\ndef base():\n    return 7\n")
    assert chash(pkg) != before  # `unrelated` joins the closure, with its other function


@pytest.mark.parametrize("name, old, new", [
    ("engine.py", "  # doubled", "  # twice the root"),  # a comment
    ("engine.py", '"""One step."""', '"""One step of the engine, documented at length."""'),  # a docstring
    ("engine.py", '"""The engine."""\n', ""),  # the module docstring
    ("engine.py", "return helper(x) + 1", "return (helper(x)\n            + 1)"),  # layout
    ("checks.py", "\n\ndef check(ctx):", "\n\n\n\n# a comment line\ndef check(ctx):"),  # blank lines, comments
])
def test_comments_docstrings_and_layout_keep_the_hash(pkg, name, old, new):
    before = chash(pkg)
    edit(pkg, name, old, new)
    assert chash(pkg) == before


def test_dump_leaves_out_empty_fields_and_locations():
    text = codehash._Dumper("m", False, "m").dump(ast.parse("def f(x):\n    return x\n").body[0])
    assert "lineno" not in text and "type_params" not in text and "decorator_list" not in text
    assert text.startswith("FunctionDef(name='f'")


# ---------------------------------------------------------------- (c) the claim's data and its check function

def _claim(check: str, **params) -> Claim:
    return Claim(id="t.hash", paper="p", result="r", status="paper", statement="s", check=check,
                 params={"examples": 2, **params}, tolerances={"cos_min": {"value": 0.999, "why": "w"}},
                 tiers={"smoke": {}})


def test_same_check_different_data_differ():
    a = _claim("ibverify.checks.per_sample:direction_converges", optimizer="inc-adam")
    b = _claim("ibverify.checks.per_sample:direction_converges", optimizer="signum")
    assert a.check_hash() != b.check_hash()
    assert a.check_hash() == _claim("ibverify.checks.per_sample:direction_converges",
                                    optimizer="inc-adam").check_hash()


def test_another_check_function_of_the_same_module_differs():
    a = _claim("ibverify.checks.per_sample:direction_converges")
    b = _claim("ibverify.checks.per_sample:signum_beta_trend")
    assert a.check_hash() != b.check_hash()


def test_resume_cache_uses_the_same_rule():
    assert cache.code_hash() == codehash.package_code_hash(("report",))[:16]
    assert "ibverify.report.html" not in codehash.package_modules(("report",))
    assert "ibverify.engine.kernels" in codehash.package_modules(("report",))
