"""Compiled network runs survive kill -9 and Ctrl-C: resuming from the checkpoint file gives a bit-identical run.

The interruption lands at a chosen step (from the progress callback), never after a delay."""

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.data import netdata as datasets
from ibverify import models
from ibverify.optim.optimizers import make_optimizer
from ibverify.engine import block as train
from _hang_guard import HANG_GUARD_S
from _isolation import subprocess_env

SETUP = """
import numpy as np
from ibverify.data import netdata as datasets
from ibverify import models
from ibverify.optim.optimizers import make_optimizer
from ibverify.engine import block as train
model = models.TwoLayer(6, 4, 2.0)
data = datasets.make_data("teacher", n=12, d=6, seed=0)
theta0 = model.init(np.random.default_rng(0), 0.5)
def go(**kw):
    opt = make_optimizer("muon-adam", lr_matrix=0.1, lr_vector=0.05, lr_decay=0.8, beta2=0.999, params=theta0,
                               L=model.L)
    return train.run(model, data.X, data.y, opt, 6000, theta0, checkpoints=[1, 10, 100, 1000, 2000, 4000, 6000],
                     engine="compiled", chunk=500, save_every=0.0, **kw)
"""
ns: dict = {}
exec(SETUP, ns)


def _same(a, b):
    assert a.checkpoints == b.checkpoints
    for x, y in zip(a.thetas, b.thetas, strict=True):
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])
    for f in ("log_loss", "q_min", "align", "track", "adam_dev"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert a.underflow == b.underflow


def test_kill_9_at_a_chosen_step_then_resume_is_bit_identical(tmp_path):
    ckpt = tmp_path / "run.ckpt"
    script = SETUP + textwrap.dedent(f"""
        import os, signal
        def kill(done, total):
            if done >= 3000:
                os.kill(os.getpid(), signal.SIGKILL)
        go(save_to={str(ckpt)!r}, progress=kill)
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_GUARD_S,
                       env=subprocess_env())
    assert p.returncode == -signal.SIGKILL, p.stderr
    assert ckpt.exists() and not [f for f in tmp_path.iterdir() if f.name.endswith(".tmp")]
    with np.load(ckpt) as f:
        saved_rows = f["ws"].shape[0]
    assert 0 < saved_rows < 7                                      # stopped mid-run, with its evidence so far
    resumed = ns["go"](save_to=str(ckpt), resume=True)
    _same(resumed, ns["go"]())


def test_ctrl_c_at_a_chosen_step_saves_and_resumes_bit_identically(tmp_path):
    ckpt = tmp_path / "run.ckpt"

    def interrupt(done, total):
        if done == 2500:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(IbverifyError, match="interrupted at step 2500"):
        ns["go"](save_to=str(ckpt), progress=interrupt)
    resumed = ns["go"](save_to=str(ckpt), resume=True)
    _same(resumed, ns["go"]())


def test_resume_refuses_another_run(tmp_path):
    ckpt = tmp_path / "run.ckpt"
    ns["go"](save_to=str(ckpt))
    model = models.TwoLayer(6, 4, 2.0)
    data = datasets.make_data("teacher", n=12, d=6, seed=0)
    th0 = model.init(np.random.default_rng(0), 0.5)
    opt = make_optimizer("muon-signum", lr_matrix=0.1, lr_vector=0.05, lr_decay=0.8, params=th0, L=model.L)
    with pytest.raises(IbverifyError, match="different run"):
        train.run(model, data.X, data.y, opt, 6000, th0, checkpoints=[1, 10, 100, 1000, 2000, 4000, 6000],
                  save_to=str(ckpt), resume=True)
    with pytest.raises(IbverifyError, match="compiled engine"):
        train.run(model, data.X, data.y, opt, 10, th0, engine="reference", save_to=str(ckpt))


def test_the_interrupt_hook_stops_a_block_run_at_its_step_and_it_resumes_bit_identically(tmp_path, monkeypatch):
    # the documented test hook (IBVERIFY_INTERRUPT_AT_STEP) is honoured by the block loop as by the vector loop
    from ibverify.engine.trajectory import INTERRUPT_AT_ENV

    ckpt = tmp_path / "run.ckpt"
    monkeypatch.setenv(INTERRUPT_AT_ENV, "3000")
    with pytest.raises(IbverifyError, match="interrupted at step 3000"):
        ns["go"](save_to=str(ckpt))
    monkeypatch.delenv(INTERRUPT_AT_ENV)
    resumed = ns["go"](save_to=str(ckpt), resume=True)
    _same(resumed, ns["go"]())
