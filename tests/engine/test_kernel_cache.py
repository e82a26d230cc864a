"""engine._kernel_cache: numba's on-disk cache keyed by the engine's source text.

The defining property: a cached kernel that calls a jitted function from another file is recompiled after that
file changes (numba alone re-uses the stale kernel: shown here as the control).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numba
import pytest

from _hang_guard import HANG_GUARD_S
from _isolation import subprocess_env
from ibverify.engine import _kernel_cache as kc

CALLEE = "import numba\n\n@numba.njit(cache=True)\ndef value():\n    return {v}\n"
CALLER = "import numba\nfrom .callee import value\n\n@numba.njit(cache=True)\ndef kernel():\n    return value()\n"
MAIN = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from ibverify.engine._kernel_cache import source_keyed_cache
    if sys.argv[2] == "keyed":
        with source_keyed_cache(Path(sys.argv[1]) / "pkg"):
            from pkg import caller
    else:
        from pkg import caller
    print(caller.kernel())
""")


def _package(tmp_path, v):
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "caller.py").write_text(CALLER)
    (pkg / "callee.py").write_text(CALLEE.format(v=v))
    (tmp_path / "main.py").write_text(MAIN)


def _run(tmp_path, mode):
    """main.py in a child process whose numba caches next to the package (no $NUMBA_CACHE_DIR of the caller)."""
    out = subprocess.run([sys.executable, str(tmp_path / "main.py"), str(tmp_path), mode], capture_output=True,
                         text=True, env=subprocess_env(without=("NUMBA_CACHE_DIR",)), timeout=HANG_GUARD_S)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


def test_a_kernel_is_recompiled_when_a_jitted_function_it_calls_from_another_file_changes(tmp_path):
    _package(tmp_path, 1)
    assert _run(tmp_path, "keyed") == 1
    (tmp_path / "pkg" / "callee.py").write_text(CALLEE.format(v=2))
    assert _run(tmp_path, "keyed") == 2
    assert len(list((tmp_path / "pkg" / "__pycache__").glob("numba-*"))) == 1   # the stale folder is removed


def test_control_numba_alone_runs_the_stale_kernel(tmp_path):
    _package(tmp_path, 1)
    assert _run(tmp_path, "plain") == 1
    (tmp_path / "pkg" / "callee.py").write_text(CALLEE.format(v=2))
    stale = _run(tmp_path, "plain")
    if stale == 2:   # a numba that tracks cross-file dependencies itself makes the keyed cache redundant
        pytest.skip("this numba recompiles a kernel when a jitted callee in another file changes")
    assert stale == 1                             # the hazard the keyed cache removes


def test_source_hash_changes_with_any_file_and_only_with_sources(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    h = kc.source_hash(tmp_path)
    (tmp_path / "notes.txt").write_text("not a source")
    assert kc.source_hash(tmp_path) == h
    (tmp_path / "b.py").write_text("y = 3\n")
    assert kc.source_hash(tmp_path) != h
    (tmp_path / "b.py").write_text("y = 2\n")
    assert kc.source_hash(tmp_path) == h
    (tmp_path / "b.py").rename(tmp_path / "c.py")
    assert kc.source_hash(tmp_path) != h


def test_cache_dir_is_set_inside_the_block_restored_after_and_a_user_base_kept(tmp_path, monkeypatch):
    # numba read $NUMBA_CACHE_DIR into numba.config when it was imported: start without one, whatever the caller set
    monkeypatch.setattr(numba.config, "CACHE_DIR", "")
    (tmp_path / "m.py").write_text("z = 0\n")
    before = numba.config.CACHE_DIR
    with kc.source_keyed_cache(tmp_path):
        assert numba.config.CACHE_DIR == str(tmp_path / "__pycache__" / f"numba-{kc.source_hash(tmp_path)}")
    assert numba.config.CACHE_DIR == before
    user = tmp_path / "user-cache"
    (user / "numba-0000").mkdir(parents=True)
    (user / "other").mkdir()
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(user))
    with kc.source_keyed_cache(tmp_path):
        assert numba.config.CACHE_DIR == str(user / f"numba-{kc.source_hash(tmp_path)}")
    assert numba.config.CACHE_DIR == str(user)
    assert not (user / "numba-0000").exists() and (user / "other").exists()


def test_the_engine_kernels_are_bound_to_the_keyed_folder():
    from ibverify.engine import network, polar

    want = f"numba-{kc.source_hash()}"
    for f in (*network._ADVANCE.values(), network._polar_step, polar.polar_block):
        assert want in f._cache._cache_path, f._cache._cache_path
