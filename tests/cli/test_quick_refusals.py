"""Issue 53 item 5: clean, quick refusals. A typo or a damaged file is refused (one line, exit 2) before the heavy
modules load — checked structurally in a fresh interpreter: numba, cvxpy and torch are not in sys.modules when the
refusal is made (no wall-clock assertion) — and nothing is created before the inputs are validated (no empty
`--report` folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numba", "cvxpy", "torch", "jax", "matplotlib", "dask")
# the command in a fresh interpreter (this tree first on the path); its last stderr line: the heavy modules loaded
SCRIPT = ("import json, sys\nfrom ibverify.cli import main\nrc = main(sys.argv[1:])\n"
          f"print('HEAVY ' + json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr)\n"
          "sys.exit(rc)\n")


def _refuse(argv: list[str], cwd: Path) -> tuple[str, list[str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", SCRIPT, *argv], capture_output=True, text=True, env=env, cwd=cwd,
                       timeout=300)
    *lines, last = r.stderr.strip().splitlines()
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("ibverify: error: ") and "Traceback" not in r.stderr, r.stderr
    assert last.startswith("HEAVY "), r.stderr
    return lines[0], json.loads(last[len("HEAVY "):])


@pytest.fixture
def ragged(tmp_path) -> Path:
    f = tmp_path / "ragged.csv"
    f.write_text("1,2,1\n3,-1\n0.5,0.5,-1\n")
    return f


CASES = {
    "bias typo": (["bias", "--optimizer", "adma", "--report", "{out}"], "unknown optimizer 'adma'"),
    "bias typo second": (["bias", "--optimizer", "gd", "--optimizer", "sigum", "--report", "{out}"],
                         "unknown optimizer 'sigum'"),
    "bias ragged csv": (["bias", "--optimizer", "gd", "--data", "{ragged}", "--report", "{out}"],
                        "line 2 has 2 columns"),
    "bias workers": (["bias", "--optimizer", "gd", "--workers", "0", "--report", "{out}"], "--workers must be >= 1"),
    "bias intercept": (["bias", "--optimizer", "gd", "--intercept", "--report", "{out}"], "--intercept applies"),
    "verify typo": (["verify", "soudry.gd-l22", "--report", "{out}"], "unknown claim id(s): soudry.gd-l22"),
    "verify ragged csv": (["verify", "--data", "{ragged}", "--report", "{out}"], "line 2 has 2 columns"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_a_typo_or_a_damaged_file_is_refused_before_the_heavy_modules_and_creates_nothing(case, tmp_path, ragged):
    argv, text = CASES[case]
    out = tmp_path / "report" / "deeper"
    line, heavy = _refuse([a.format(out=out, ragged=ragged) for a in argv], tmp_path)
    assert text in line, line
    assert heavy == [], (case, heavy)
    assert not (tmp_path / "report").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ragged.csv"]   # nothing else made (reports/ neither)


@pytest.mark.slow
def test_a_refused_bias_run_leaves_an_existing_empty_folder_as_it_was(tmp_path):
    (tmp_path / "r").mkdir()
    _refuse(["bias", "--optimizer", "nope", "--report", str(tmp_path / "r")], tmp_path)
    assert list((tmp_path / "r").iterdir()) == []   # no figures/ made in it


def test_check_folder_creates_nothing_and_refuses_an_unwritable_place(tmp_path):
    from ibverify import IbverifyError
    from ibverify.report.bias import check_folder

    assert check_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b" and not (tmp_path / "a").exists()
    (tmp_path / "f").write_text("x")
    with pytest.raises(IbverifyError, match="cannot write there .*not a folder"):
        check_folder(tmp_path / "f" / "r")
    with pytest.raises(IbverifyError, match="cannot write there .*is a file"):
        check_folder(tmp_path / "f")
    (tmp_path / "ro").mkdir()
    os.chmod(tmp_path / "ro", 0o500)
    try:
        if os.access(tmp_path / "ro", os.W_OK):
            pytest.skip("running as a user who writes anywhere (root)")
        with pytest.raises(IbverifyError, match="not writable"):
            check_folder(tmp_path / "ro" / "r")
    finally:
        os.chmod(tmp_path / "ro", 0o700)


def test_the_page_makes_its_folder_when_it_writes(tmp_path):
    from ibverify.report.bias import render_bias_report

    index = render_bias_report([{"optimizer": "gd", "knobs": {}, "models": []}], tmp_path / "new" / "r",
                               {"versions": {}, "tier": "smoke", "seed": 0})
    assert index == tmp_path / "new" / "r" / "index.html" and index.is_file()
    assert (tmp_path / "new" / "r" / "figures").is_dir() and (tmp_path / "new" / "r" / "bias.json").is_file()
