"""Issue 53 item 3: progress anywhere. With stderr a pipe (a log file, CI, a notebook's capture), `train`, `bias` and
`verify` report progress in plain lines naming the dataset, the model and the horizon; `--quiet` prints none."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ibverify.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def csv_file(tmp_path) -> Path:
    f = tmp_path / "four.csv"
    f.write_text("1,2,1\n-1,-2,-1\n2,1,1\n-2,-1.5,-1\n")
    return f


def _train(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("CI", None)
    r = subprocess.run([sys.executable, "-m", "ibverify", "train", *argv], capture_output=True, text=True, env=env,
                       timeout=300)   # stderr: a pipe
    assert r.returncode == 0, r.stderr
    return r


def _progress_lines(err: str) -> list[str]:
    return [x for x in err.splitlines() if " · horizon " in x]


@pytest.mark.slow
def test_train_on_a_file_logs_its_horizon_naming_the_file_and_model(csv_file):
    r = _train("--data", str(csv_file), "--optimizer", "gd", "--steps", "1000")
    lines = _progress_lines(r.stderr)
    assert len(lines) == 1, r.stderr
    assert re.fullmatch(r"train gd · four\.csv \(linear model\) · horizon 1e3: 1000/1000 steps \(100 %\), \d+ s",
                        lines[0]), lines
    quiet = _train("--data", str(csv_file), "--optimizer", "gd", "--steps", "1000", "--quiet")
    assert _progress_lines(quiet.stderr) == [] and "horizon" not in quiet.stderr


@pytest.mark.slow
def test_train_on_a_network_logs_dataset_model_and_horizon():
    r = _train("--data", "linear", "--model", "two-layer", "--optimizer", "gd", "--steps", "2000")
    lines = _progress_lines(r.stderr)
    assert len(lines) == 1 and lines[0].startswith(
        "train gd · linear(n=20,d=6,seed=0) (two-layer) · horizon 2e3: 2000/2000 steps (100 %)"), r.stderr
    quiet = _train("--data", "linear", "--model", "two-layer", "--optimizer", "gd", "--steps", "2000", "-q")
    assert _progress_lines(quiet.stderr) == []


@pytest.mark.slow
def test_bias_logs_each_dataset_and_horizon_and_quiet_silences_it(capsys, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    argv = ["bias", "--optimizer", "nsd-l2", "--tier", "smoke", "--model", "linear", "--datasets", "1", "--json",
            "--seed", "7919"]   # a seed no other test draws: its runs are made here, not found in the session's store
    assert main(argv) == 0
    err = capsys.readouterr().err   # capsys: not a terminal
    lines = _progress_lines(err)
    assert len(lines) >= 1, err
    assert all(re.fullmatch(r"bias nsd-l2 · linear: dataset 1/1 \(n=\d+,d=\d+,\w+\) · horizon 1e5: "
                            r"100000/100000 steps \(100 %\), \d+ s", x) for x in lines), lines
    said = [x for x in err.splitlines() if re.fullmatch(r"bias nsd-l2 · linear: dataset 1/1 \(n=\d+,d=\d+,\w+\)", x)]
    assert len(said) == 1, err   # the dataset's own line, before its runs
    assert main([*argv, "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_verify_logs_a_line_a_minute_in_a_log(capsys, monkeypatch):
    from ibverify import progress
    from ibverify.claims import load_registry, select
    from ibverify.cli import verify as verify_cli

    clock = [1000.0]
    monkeypatch.setattr(verify_cli.time, "monotonic", lambda: clock[0])
    monkeypatch.delenv("CI", raising=False)
    claims = select(load_registry(), ["baek.gr-v-isotropic", "gronich.dual-norms"], "smoke")
    bar = verify_cli.RunBar(claims, "smoke", enabled=True)   # stderr captured: a log
    assert bar.log and bar.bar is None
    bar.claim_started(claims[0])
    bar.message("seed 3")
    clock[0] += progress.LOG_EVERY_S - 1
    bar.example()
    assert capsys.readouterr().err == ""   # under a minute: nothing yet
    clock[0] += 2
    bar.claim_done({"id": claims[0].id, "outcome": {"examples": 1}})
    err = capsys.readouterr().err
    assert re.fullmatch(r"verify: 1/2 claims done, examples 1/~\d+ \(seed 3\), \d+ min\n", err), err
    quiet = verify_cli.RunBar(claims, "smoke", enabled=False)
    clock[0] += 600
    quiet.claim_done({"id": claims[1].id, "outcome": {}})
    assert capsys.readouterr().err == ""
