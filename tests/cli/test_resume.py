"""Resumable runs: a crash (SIGKILL) or Ctrl-C (SIGINT) at a chosen step, `--resume`, bit-identical
final state. The interrupt lands at a step chosen by the test (environment hooks of the run loop,
ibverify.engine.run: IBVERIFY_KILL_AT_STEP / IBVERIFY_INTERRUPT_AT_STEP send the process that signal
at the first chunk boundary ≥ the step), so nothing depends on the engine's speed or the wall clock."""

import json
import signal
import subprocess
import sys

import numpy as np
import pytest

from ibverify.data import gr
from ibverify.engine.run import INTERRUPT_AT_ENV, KILL_AT_ENV
from _hang_guard import HANG_GUARD_S
from _isolation import subprocess_env

STEPS = 300_000


@pytest.fixture(scope="module")
def datafile(tmp_path_factory):
    d = gr(10, 5, np.random.default_rng(11))
    p = tmp_path_factory.mktemp("resume") / "gr.npz"
    np.savez(p, X=d.X, y=d.y)
    return p


def train_cmd(datafile, ckpt, *extra, every="1e9"):
    """Replacement sampling (the sampler's random state must survive the checkpoint). With every=1e9
    no timed save ever happens: only the interrupt's save, so the test is independent of speed."""
    return [sys.executable, "-m", "ibverify", "train", "--data", str(datafile), "--optimizer", "adam",
            "--batch-size", "2", "--order", "replacement", "--seed", "5", "--steps", str(STEPS),
            "--checkpoint", str(ckpt), "--checkpoint-every", every, "--json", "-q", *extra]


def run_with(cmd, **env):
    """Hooks only as given (subprocess_env drops a caller's $IBVERIFY_*; also for the module fixture below)."""
    return subprocess.run(cmd, capture_output=True, text=True, timeout=HANG_GUARD_S,
                          env=subprocess_env(without=(INTERRUPT_AT_ENV, KILL_AT_ENV), **env))


def saved_step(ckpt) -> int:
    with np.load(ckpt) as f:
        return int(json.loads(str(f["meta"]))["t"])


@pytest.fixture(scope="module")
def reference(datafile, tmp_path_factory):
    ref = run_with(train_cmd(datafile, tmp_path_factory.mktemp("ref") / "ref.ckpt"))
    assert ref.returncode == 0, ref.stderr
    return json.loads(ref.stdout)


@pytest.mark.parametrize("at", [100_000, STEPS])  # mid-run, and the very last chunk
def test_ctrl_c_at_a_chosen_step_keeps_a_checkpoint_and_resumes_bit_identically(tmp_path, datafile, reference, at):
    ckpt = tmp_path / "run.ckpt"
    p = run_with(train_cmd(datafile, ckpt), **{INTERRUPT_AT_ENV: str(at)})
    # clean stop: one line, interrupt exit status, no traceback (even in the last chunk: issue 11)
    assert p.returncode in (2, 130), p.stderr
    assert "interrupted at step" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    t = saved_step(ckpt)
    assert at <= t <= STEPS and f"interrupted at step {t}" in p.stderr
    res = run_with(train_cmd(datafile, ckpt, "--resume"))
    assert res.returncode == 0, res.stderr
    b = json.loads(res.stdout)
    assert reference["w"] == b["w"]  # exact float equality: bit-identical
    assert reference["diagnostics"] == b["diagnostics"]


def test_kill_9_at_a_chosen_step_resumes_bit_identically(tmp_path, datafile, reference):
    """Saves after every chunk (--checkpoint-every 0), then SIGKILL at the boundary ≥ 150,000 before
    that boundary's save: the resumed run replays from the previous checkpoint."""
    ckpt = tmp_path / "run.ckpt"
    p = run_with(train_cmd(datafile, ckpt, every="0"), **{KILL_AT_ENV: "150000"})
    assert p.returncode == -signal.SIGKILL
    t = saved_step(ckpt)  # (a torn .run.ckpt.*.tmp may remain after SIGKILL; it is never read)
    assert 0 < t < 150_000  # the kill came before its boundary's save: work since the last save is lost
    res = run_with(train_cmd(datafile, ckpt, "--resume"))
    assert res.returncode == 0, res.stderr
    b = json.loads(res.stdout)
    assert reference["w"] == b["w"]
    assert reference["diagnostics"] == b["diagnostics"]


def test_resume_against_other_run_is_refused(tmp_path, datafile):
    ckpt = tmp_path / "c.ckpt"
    cmd = train_cmd(datafile, ckpt)
    cmd[cmd.index("--steps") + 1] = "1000"
    assert run_with(cmd).returncode == 0
    cmd[cmd.index("--seed") + 1] = "6"
    r = run_with(cmd + ["--resume"])
    assert r.returncode == 2 and "different run" in r.stderr
