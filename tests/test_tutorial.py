"""docs/tutorial.md, executed: its files (code blocks titled with a file name) are written into an empty folder and
its `$` commands run there in order; the verdicts it states must be the run's: `bias` finds ℓ2 (ℓ1, ℓ∞ contradicted),
the claim holds and its control is refuted. Its table-row snippet is checked against the table's types and the
tutorial's own file (same update text, same iterates)."""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
from _isolation import subprocess_env

TUTORIAL = Path(__file__).resolve().parents[1] / "docs" / "tutorial.md"
FENCE = re.compile(r'^```(?P<lang>\w+)(?: title="(?P<title>[^"]+)")?\n(?P<body>.*?)^```$', re.M | re.S)


def blocks() -> list[dict]:
    return [m.groupdict() for m in FENCE.finditer(TUTORIAL.read_text())]


def files() -> dict[str, str]:
    """{relative path: content} of the blocks titled with a file name (a title without a space)."""
    return {b["title"]: b["body"] for b in blocks() if b["title"] and " " not in b["title"]}


def commands() -> list[list[str]]:
    out = []
    for b in blocks():
        if b["lang"] == "console":
            out += [shlex.split(line[2:]) for line in b["body"].splitlines() if line.startswith("$ ")]
    return out


def test_the_tutorial_has_the_files_and_commands_it_describes():
    assert set(files()) == {"my_mngd.py", "claims/mine.mngd-l2.toml", "claims/mine.control.mngd-linf.toml"}
    assert [c[:2] for c in commands()] == [["ibverify", "bias"], ["ibverify", "--claims-dir"]]


def test_the_tutorial_runs_end_to_end(tmp_path):
    for rel, text in files().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    outs = []
    for cmd in commands():
        assert cmd[0] == "ibverify"
        p = subprocess.run([sys.executable, "-m", "ibverify", *cmd[1:]], capture_output=True, text=True,
                           env=subprocess_env(), cwd=tmp_path)
        assert p.returncode == 0, f"{shlex.join(cmd)}:\n{p.stdout}\n{p.stderr}"
        outs.append(p.stdout)
    bias_out = outs[0]
    assert re.search(r"linear: l2 \(to within [0-9.]+ % \((increments, agreeing with the iterate's bound; the "
                     r"iterate alone [0-9.]+ %\)|"
                     r"iterate(; the increments unresolved\)|\); the increments estimate [0-9.e+-]+ % \(a point "
                     r"estimate, not a bound(: in the power table it fell below the certified gap \d+ times? in "
                     r"\d+)?\)))[^\n]*\) \(on 1 dataset", bias_out)
    # ℓ2 alone supported: its δ stated with the estimate that gave it
    assert re.search(r"^\s+supported\s+l2 ", bias_out, re.M)
    assert re.search(r"^\s+contradicted l1 ", bias_out, re.M) and re.search(r"^\s+contradicted linf ", bias_out, re.M)
    res = {c["id"]: c for c in json.loads((tmp_path / "results.json").read_text())["claims"]}
    assert res["mine.mngd-l2"]["verdict"] == "holds"
    assert res["mine.control.mngd-linf"]["verdict"] == "refuted"
    assert all(c["as_expected"] for c in res.values())


def test_the_table_row_snippet_is_the_tutorial_optimizer(tmp_path):
    from ibverify.optim import table
    from ibverify.optim import transforms as T
    from ibverify.optim.backend import Float64
    from ibverify.optim.spec import OptimizerSpec
    from ibverify.optim.userfile import load

    (row_src,) = [b["body"] for b in blocks() if (b["title"] or "").startswith("ibverify/optim/table.py")]
    row = eval(row_src, vars(table))
    assert isinstance(row, table.OptimizerInfo)
    assert (row.name, row.geometry, row.models, row.moments) == ("mngd", "l2", ("vector",), ("beta1",))
    path = tmp_path / "my_mngd.py"   # the tutorial's file, loaded as a user's optimizer
    path.write_text(files()["my_mngd.py"])
    user = load(str(path))
    assert row.update == user.update
    spec = OptimizerSpec("signum", beta1=0.7).resolved(3)   # only spec.beta1 is read
    xp, sched = Float64(), T.scale_by_schedule(Float64(), 0.1, 0.5)
    mine = T.chain(*row.vector(spec, xp), sched)
    theirs = T.chain(*user.user.vector(spec, xp), sched)
    rng = np.random.default_rng(0)
    w = np.zeros(3)
    sa, sb = mine.init(w), theirs.init(w)
    for _ in range(20):
        g = rng.standard_normal(3)
        ua, sa = mine.update(g, sa, w, per_sample=g[None])
        ub, sb = theirs.update(g, sb, w, per_sample=g[None])
        assert np.array_equal(ua, ub)
    assert not np.array_equal(ua, -0.1 * 20 ** -0.5 * g / np.linalg.norm(g))  # momentum made a difference


def test_the_protocol_example_is_the_example_file():
    """docs/commands.md shows docs/examples/my_signum.py's function verbatim (the file tests/test_userfile.py runs)."""
    text = (TUTORIAL.parent / "commands.md").read_text()
    (code,) = [m["body"] for m in FENCE.finditer(text) if "my-signum" in m["body"]]
    assert code.strip() in (TUTORIAL.parent / "examples" / "my_signum.py").read_text()
