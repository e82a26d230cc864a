"""A user's own optimizer from a Python file (`--optimizer path.py[:function]`, ibverify.optim.userfile): the
documented examples (docs/examples/) run the same iterates as the table's rows they re-implement, `bias` answers for
them as for a table name, every bad file is one line and exit 2, and an edited file is never taken for the old one
(run-store key, claim check hash, pickles)."""

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _isolation import subprocess_env
from ibverify import IbverifyError
from ibverify.claims import load_claim
from ibverify.cli import main
from ibverify.data import netdata
from ibverify.engine import run
from ibverify.recipes import DataRecipe, Recipe
from ibverify.models import MatrixLinear
from ibverify.optim import OptimizerSpec

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"
SIGNUM = f"{EXAMPLES / 'my_signum.py'}:make"
NGD = str(EXAMPLES / "my_ngd.py")            # the function defaults to make


@pytest.mark.parametrize("knobs", [{}, {"beta1": 0.5, "batch_size": 3, "order": "reshuffle", "lr": 0.3}])
def test_user_signum_runs_the_table_signum_on_the_linear_model(knobs):
    D = netdata.linear_separable(12, 8, seed=1)
    cps = [1, 2, 10, 50, 200]
    mine = run(D.Z, OptimizerSpec.from_params(knobs, name=SIGNUM), 200, checkpoints=cps)
    table = run(D.Z, OptimizerSpec.from_params(knobs, name="signum"), 200, checkpoints=cps, engine="reference")
    assert mine.engine == "reference" and mine.spec.name == "my-signum"
    assert np.array_equal(mine.ws, table.ws)
    assert np.linalg.norm(mine.ws[-1]) > 1.0                 # it moved: the comparison has something to compare
    other = run(D.Z, OptimizerSpec.from_params(knobs, name=NGD), 200, checkpoints=cps)
    assert not np.allclose(other.ws, table.ws, atol=1e-3)    # another user chain does not pass this test


@pytest.mark.parametrize("engine", [None, "reference"])
def test_user_signum_runs_the_table_signum_on_a_block_model(engine):
    """engine None: the chain EMA → Sign → Schedule is one the compiled block engine recognises, as the table's."""
    D = netdata.matrix_separable(10, 3, 4, seed=2)
    model = MatrixLinear(3, 4)
    mine = run(D, OptimizerSpec(SIGNUM, beta1=0.8), 200, model=model, checkpoints=[1, 20, 200], engine=engine)
    table = run(D, OptimizerSpec("signum", beta1=0.8), 200, model=model, checkpoints=[1, 20, 200], engine=engine)
    assert mine.engine == table.engine
    for a, b in zip(mine.thetas, table.thetas, strict=True):
        assert np.abs(a["W"] - b["W"]).max() <= 1e-12
    assert np.abs(mine.thetas[-1]["W"]).max() > 0.5


def test_bias_on_a_user_normalized_gd_answers_l2(capsys):
    rc = main(["bias", "--optimizer", NGD, "--model", "linear", "--tier", "smoke", "--datasets", "1", "--json", "-q"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    obj = json.loads(out)
    assert obj["optimizer"] == "my-ngd"
    assert obj["source"] == f"{EXAMPLES / 'my_ngd.py'}:make"
    assert len(obj["source_sha256"]) == 64
    (m,) = obj["models"]
    assert m["model"] == "linear" and m["supported"] == ["l2"]
    assert set(m["contradicted"]) == {"l1", "linf"}
    assert m["spec"]["source_sha256"] == obj["source_sha256"]


HEAD = "from ibverify.optim import transforms as T, logframe as F\nfrom ibverify.optim.userfile import UserOptimizer\n"
GOOD = "vector=lambda spec, xp: T.normalize_l2(xp)"


def _mk(body: str) -> str:
    return HEAD + "def make():\n    return UserOptimizer(" + body + ")\n"


BAD = [
    (None, "cannot read"),
    ("def make(:\n", "syntax error at line 1"),
    ("raise RuntimeError('no GPU here')\n", "running the file raised RuntimeError: no GPU here"),
    ("def other():\n    pass\n", "defines no function 'make'"),
    ("def make():\n    return 1 / 0\n", "make() raised ZeroDivisionError"),
    ("def make():\n    return {'name': 'x'}\n", "must return ibverify.optim.userfile.UserOptimizer, got dict"),
    (_mk(f"name='signum', {GOOD}"), "is an optimizer of the table"),
    (_mk("name='x'"), "no chain"),
    (_mk(f"name='x', {GOOD}, knobs={{'momentum': 0.9}}"), "unknown knob(s) 'momentum'"),
    (_mk("name='x', vector=lambda spec, xp: T.Transform(lambda d: (), lambda u, g, s, t: (u * float('nan'), s))"),
     "vector chain: the update is NaN"),
    (_mk("name='x', vector=lambda spec, xp: T.Transform(lambda d: (), lambda u, g, s, t: (u[:2], s))"),
     "the update has shape (2,), the gradient (4,)"),
    (_mk("name='x', vector=lambda spec, xp: [T.trace(xp, spec.beta1), 3]"), "its vector chain must be"),
    (_mk("name='x', block=lambda spec: [F.EMA(0.9), 'sign']"), "its block chain must be"),
    (_mk("name='x', block=lambda spec: F.EMA(1.5)"), "momentum β must be in [0, 1)"),
    (_mk("name='x', vector=lambda spec, xp: T.Transform(lambda d: (), lambda u, g, s, t: (u @ u, s))"),
     "the update has shape ()"),
]


@pytest.mark.parametrize("source, text", BAD, ids=[t for _, t in BAD])
def test_a_bad_file_is_one_line_naming_the_option_and_exit_2(source, text, tmp_path, capsys):
    path = tmp_path / "opt.py"
    if source is not None:
        path.write_text(source)
    rc = main(["bias", "--optimizer", str(path), "--tier", "smoke", "-q"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert f"--optimizer {path}" in err and text in err, err
    assert "Traceback" not in err


def test_a_bad_file_in_train_exits_2_without_a_traceback(tmp_path):
    path = tmp_path / "opt.py"
    path.write_text(_mk("name='x', vector=lambda spec, xp: T.Transform(lambda d: (), lambda u, g, s, t: (u[:1], s))"))
    data = tmp_path / "d.npz"
    D = netdata.linear_separable(6, 3, seed=0)
    np.savez(data, X=D.X, y=D.y)
    p = subprocess.run([sys.executable, "-m", "ibverify", "train", "--data", str(data), "--optimizer", f"{path}:make"],
                       capture_output=True, text=True, env=subprocess_env(), cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "--optimizer" in p.stderr and "shape (1,)" in p.stderr
    assert "Traceback" not in p.stderr


def test_an_edited_file_is_a_new_optimizer_for_the_run_store_and_pickles(tmp_path):
    path = tmp_path / "opt.py"
    path.write_text((EXAMPLES / "my_ngd.py").read_text())
    old = OptimizerSpec(str(path)).resolved(5)
    data = DataRecipe.of_arrays(np.eye(2))
    key_old = Recipe(data, old, 10).key()
    assert pickle.loads(pickle.dumps(old)) == old                          # by its file, reloaded
    path.write_text(path.read_text() + "\n# edited: the same optimizer, another file\n")
    new = OptimizerSpec(str(path)).resolved(5)
    assert new.to_json() == {**old.to_json(), "source_sha256": new.to_json()["source_sha256"]}
    assert new.user.user.sha256 != old.user.user.sha256
    assert Recipe(data, new, 10).key() != key_old
    assert new != old
    with pytest.raises(IbverifyError, match="changed since this run was made"):
        pickle.loads(pickle.dumps(old))


CLAIM = """\
id = "mine.opt"
paper = "-"
result = "-"
status = "derived"
statement = "-"
check = "ibverify.checks.per_sample:direction_converges"

[params]
optimizer = "{opt}"
target = "l2"

[tiers.smoke]
epochs = 10
"""


def test_a_claim_names_a_file_relative_to_itself_and_hashes_its_content(tmp_path):
    (tmp_path / "opts").mkdir()
    opt = tmp_path / "opts" / "my_opt.py"
    opt.write_text((EXAMPLES / "my_ngd.py").read_text())
    claims = tmp_path / "claims"
    claims.mkdir()
    (claims / "mine.opt.toml").write_text(CLAIM.format(opt="../opts/my_opt.py:make"))
    c = load_claim(claims / "mine.opt.toml")
    assert c.params["optimizer"] == f"{opt}:make"
    assert OptimizerSpec.from_params(c.params_for("smoke")).name == "my-ngd"
    h = c.check_hash()
    assert load_claim(claims / "mine.opt.toml").check_hash() == h
    opt.write_text(opt.read_text() + "\n# edited\n")
    assert load_claim(claims / "mine.opt.toml").check_hash() != h      # a resume cache keyed by it misses
    (claims / "mine.opt.toml").write_text(CLAIM.format(opt="signum"))
    assert load_claim(claims / "mine.opt.toml").params["optimizer"] == "signum"


def test_bias_help_states_the_protocol():
    p = subprocess.run([sys.executable, "-m", "ibverify", "bias", "--help"], capture_output=True, text=True,
                       env=subprocess_env(), check=True)
    text = " ".join(p.stdout.split())
    assert "path/to/file.py[:function]" in text and "UserOptimizer(name, update, vector, block, knobs)" in text


OLD_PROTOCOL = HEAD + '''import numpy as np


def _old_signum(xp, beta):          # the vector protocol before issue 32: init(d), update(u, grad, state, t), t from 0
    seen = []

    def update(u, grad, m, t):
        assert t == len(seen) and np.array_equal(grad.g, u) and grad.w is not None
        seen.append(t)
        m = m * beta + u * (1 - beta)
        return xp.sign(m), m

    return T.Transform(lambda d: xp.zeros(d), update)


class OldEMA(F.Transform):          # the block protocol before issue 32: update(x, state, t, ctr), t from 1
    def __init__(self, beta):
        self.inner, self.seen = F.EMA(beta), []

    def update(self, g, m, t, ctr):
        assert t == len(self.seen) + 1 and isinstance(ctr, F.Counter)
        self.seen.append(t)
        return self.inner.update(g, m, ctr=ctr)


def make():
    return UserOptimizer(name="old-signum", vector=lambda spec, xp: _old_signum(xp, spec.beta1),
                         block=lambda spec: [OldEMA(spec.beta1), F.Sign()], knobs={"beta1": 0.9})
'''


def test_a_user_file_of_the_old_transform_protocol_still_runs(tmp_path):
    """Transforms written for the protocol before issue 32 (vector: init(d), update(u, grad, state, t) with t from 0;
    block: update(x, state, t, ctr)) run adapted, with the same iterates as the table's signum."""
    path = tmp_path / "old.py"
    path.write_text(OLD_PROTOCOL)
    D = netdata.linear_separable(12, 8, seed=1)
    mine = run(D.Z, OptimizerSpec(str(path), batch_size=3), 50, checkpoints=[1, 10, 50])
    table = run(D.Z, OptimizerSpec("signum", batch_size=3), 50, checkpoints=[1, 10, 50], engine="reference")
    assert np.array_equal(mine.ws, table.ws)
    M = netdata.matrix_separable(10, 3, 4, seed=2)
    model = MatrixLinear(3, 4)
    mine = run(M, OptimizerSpec(str(path)), 30, model=model, checkpoints=[1, 30], engine="reference")
    table = run(M, OptimizerSpec("signum"), 30, model=model, checkpoints=[1, 30], engine="reference")
    for a, b in zip(mine.thetas, table.thetas, strict=True):
        assert np.array_equal(a["W"], b["W"])
