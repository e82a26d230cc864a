"""Resumable runs: kill -9 mid-run, `--resume`, bit-identical final state; Ctrl-C keeps a checkpoint."""

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from ibverify.data import gr


@pytest.fixture(scope="module")
def datafile(tmp_path_factory):
    d = gr(10, 5, np.random.default_rng(11))
    p = tmp_path_factory.mktemp("resume") / "gr.npz"
    np.savez(p, X=d.X, y=d.y)
    return p


def train_cmd(datafile, ckpt, *extra):
    return [sys.executable, "-m", "ibverify", "train", "--data", str(datafile), "--optimizer", "adam",
            "--batch-size", "2", "--order", "replacement", "--seed", "5", "--steps", "4000000",
            "--checkpoint", str(ckpt), "--checkpoint-every", "0.05", "--json", "-q", *extra]


def wait_for(path, proc, timeout=120):
    t0 = time.monotonic()
    while not path.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() - t0 < timeout
        time.sleep(0.05)


@pytest.fixture(scope="module")
def reference(datafile, tmp_path_factory):
    ref = subprocess.run(train_cmd(datafile, tmp_path_factory.mktemp("ref") / "ref.ckpt"), capture_output=True,
                         text=True, timeout=600)
    assert ref.returncode == 0, ref.stderr
    return json.loads(ref.stdout)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_interrupted_run_resumes_bit_identically(tmp_path, datafile, reference, sig):
    ckpt = tmp_path / "run.ckpt"
    p = subprocess.Popen(train_cmd(datafile, ckpt), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(ckpt, p)
    time.sleep(0.3)
    p.send_signal(sig)
    p.wait(timeout=120)
    if sig == signal.SIGINT:  # clean stop: one line, exit 2, checkpoint kept
        err = p.stderr.read()
        assert p.returncode == 2 and "interrupted at step" in err and "Traceback" not in err
    else:
        assert p.returncode == -signal.SIGKILL
    assert ckpt.exists()  # (a torn run.ckpt.tmp may remain after SIGKILL; it is never read)
    saved_t = int(json.loads(str(np.load(ckpt)["meta"]))["t"])
    assert 0 < saved_t < 4_000_000  # really interrupted mid-run
    res = subprocess.run(train_cmd(datafile, ckpt, "--resume"), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    a, b = reference, json.loads(res.stdout)
    assert a["w"] == b["w"]  # exact float equality: bit-identical
    assert a["diagnostics"] == b["diagnostics"]


def test_resume_against_other_run_is_refused(tmp_path, datafile):
    ckpt = tmp_path / "c.ckpt"
    cmd = train_cmd(datafile, ckpt)
    cmd[cmd.index("--steps") + 1] = "1000"
    assert subprocess.run(cmd, capture_output=True, text=True).returncode == 0
    cmd[cmd.index("--seed") + 1] = "6"
    r = subprocess.run(cmd + ["--resume"], capture_output=True, text=True)
    assert r.returncode == 2 and "different run" in r.stderr
