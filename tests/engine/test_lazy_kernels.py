"""A run compiles only the kernels it needs (issue 21: a cold first `train` compiled every kernel of the engine).

Each check runs in a child process, whose dispatchers start empty: after a run, a kernel has signatures if the run
compiled it or loaded it from numba's cache (a cache load adds the signature of the called kernel only, a
compilation also those of its callees). So "only these may have signatures" holds whether the cache is warm or
cold, and "this one has none" says the run neither compiled nor loaded it. No timing is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from _hang_guard import HANG_GUARD_S
from _isolation import subprocess_env

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import ibverify.engine as E
    from ibverify.engine.network_run import Unsupported  # noqa: F401  (the network driver imports cleanly)
    before = sorted(k for k, f in E.dispatchers().items() if f.signatures)
    what = json.loads(sys.argv[1])
    if what:
        from ibverify.optim.spec import OptimizerSpec
        Z = np.array([[1.0, 0.2, 0.1], [0.8, -0.4, 0.3], [1.0, 0.1, -0.2]])
        if what.get("model"):
            from ibverify.cli import main  # the CLI's network path, as a user runs it
            main(["train", "--data", "teacher", "--model", what["model"], "--optimizer", what["optimizer"],
                  "--steps", "3", "--json", "-q", "--n", "6", "--width", "3", "--d", "3"])
        else:
            E.run(Z, OptimizerSpec(name=what["optimizer"]), 3, checkpoints=2)
    after = sorted(k for k, f in E.dispatchers().items() if f.signatures)
    print(json.dumps({"before": before, "after": after, "compiled": E.kernels_compiled()}), file=sys.stderr)
""")


def _child(what: dict, tmp_path, **env) -> dict:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    out = subprocess.run([sys.executable, str(script), json.dumps(what)], capture_output=True, text=True,
                         env=subprocess_env(**env), timeout=HANG_GUARD_S, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stderr.strip().splitlines()[-1])


def test_importing_the_engine_compiles_nothing(tmp_path):
    got = _child({}, tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "empty-cache"))
    assert got["before"] == [] and got["after"] == [] and got["compiled"] == 0


CHUNK = "kernels.moment_chunk["   # the Adam/Signum chunk variants: [adam=…,plain=…,single=…]


@pytest.mark.parametrize("name, adam, single", [("inc-adam", True, True), ("det-adam", True, False),
                                                ("signum", False, None)])
def test_a_linear_run_reaches_only_its_optimizers_kernels(name, adam, single, tmp_path):
    got = _child({"optimizer": name}, tmp_path)
    chunks = [k for k in got["after"] if k.startswith(CHUNK) or k == "kernels._stateless_chunk"]
    assert len(chunks) == 1 and chunks[0].startswith(f"{CHUNK}adam={adam},plain=False,"), chunks
    forbidden = {"kernels._stateless_chunk", "kernels._moment_step_signum" if adam else "kernels._moment_step_adam"}
    if single is not None:
        assert chunks[0].endswith(f"single={single}]")
    if "single=True" in chunks[0]:   # batch size 1: the batch-gradient kernels are not in its code
        forbidden |= {"kernels._batch_gradient", "kernels._own_frames"}
    assert not forbidden & set(got["after"])


def test_a_gradient_descent_run_reaches_only_the_stateless_kernel(tmp_path):
    got = _child({"optimizer": "gd"}, tmp_path)
    assert "kernels._stateless_chunk" in got["after"]
    assert not [k for k in got["after"] if k.startswith(CHUNK) or k.startswith("kernels._moment_step")]


def test_a_two_layer_adam_run_compiles_neither_other_models_nor_matrix_directions(tmp_path):
    got = _child({"model": "two-layer", "optimizer": "adam"}, tmp_path)
    advances = [k for k in got["after"] if k.startswith("network.advance[")]
    assert advances == ["network.advance[model=1,polar=False,ns5=False,vec=True,adam=True]"]   # TWO_LAYER = 1
    for other in ("network._chain_grad", "network._deep_grad", "network._polar_step", "network._ns5_step",
                  "network._ns5_block", "polar.polar_block"):
        assert other not in got["after"]
    assert not [k for k in got["after"] if k.startswith(CHUNK)]   # nor any linear-model kernel


def test_a_muon_run_reaches_the_polar_variant(tmp_path):
    got = _child({"model": "two-layer", "optimizer": "muon"}, tmp_path)
    advances = [k for k in got["after"] if k.startswith("network.advance[")]
    assert advances == ["network.advance[model=1,polar=True,ns5=False,vec=False,adam=False]"]
    for other in ("network._ns5_step", "network._deep_grad", "network._step", "network.adam_ratio"):
        assert other not in got["after"]


def test_train_says_whether_it_compiled_or_loaded_the_kernels(tmp_path):
    """A cold cache: the first `train` says it compiled (and how many kernels); the second loads them."""
    path = tmp_path / "d.npz"
    np.savez(path, X=np.array([[1.0, 0.2], [0.8, -0.4], [-1.0, 0.1]]), y=np.array([1.0, 1.0, -1.0]))
    env = subprocess_env(NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    argv = [sys.executable, "-m", "ibverify", "train", "--data", str(path), "--optimizer", "gd", "--steps", "50",
            "--no-compare", "-q"]
    lines = []
    for _ in range(2):
        out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=HANG_GUARD_S, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        lines.append(out.stdout.splitlines()[0])
    assert "50 steps in" in lines[0] and "compiling" in lines[0] and "kernels: first run only" in lines[0]
    assert "loading the compiled kernels" in lines[1] and "compiling" not in lines[1]
    out = subprocess.run([*argv, "--json"], capture_output=True, text=True, env=env, timeout=HANG_GUARD_S,
                         cwd=tmp_path)
    assert json.loads(out.stdout)["kernels_compiled"] == 0
