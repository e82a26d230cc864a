"""Kernel shortcuts are exact (each against the formula it replaces), memoryless updates stay exact
past a 745 margin spread, the reshuffle stream is unchanged, and a Ctrl-C in the last chunk stops
the run (issue 11 item 9)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.data import gr
from ibverify.engine import kernels as K
from ibverify.engine import run
from ibverify.engine.run import INTERRUPT_AT_ENV
from ibverify.optim import OptimizerSpec, Sampler

SPREAD = np.array([[3.0, 0.0, 1.0], [0.0, 1.0, 1.0]])  # margins 4W and 2W drift apart


def test_log_weight_shortcut_is_the_rounded_formula():
    z = np.concatenate([np.linspace(K.SHORTCUT, 60.0, 20001), np.geomspace(60.0, 1e300, 2001)])
    full = -z - np.log1p(np.exp(-z))
    assert np.array_equal(full, -z)  # so returning −z for z ≥ 37 changes no bit
    assert -20.0 - math.log1p(math.exp(-20.0)) != -20.0  # (the identity is not vacuous)


def cumulative_eta(steps, lr, decay=0.5):
    w = 0.0
    out = []
    for t in range(steps):
        w = w - lr * math.pow(t + 1.0, -decay) * -1.0
        out.append(w)
    return np.array(out)


@pytest.mark.parametrize("kw", [dict(name="det-adam", beta1=0.0, beta2=0.0), dict(name="signum", beta1=0.0),
                                dict(name="adam-proxy")])
def test_memoryless_full_steps_past_a_745_margin_spread(kw):
    """On SPREAD every coordinate's exact gradient is negative at every step, so β2 = 0 Adam and
    β = 0 Signum step +η_t in each coordinate (AdamProxy +η_t/2 in the coordinates fed by one sample,
    g̃_k/√(g̃_k²·b²)): w_T = Σ η_t (or half of it) exactly, while the margins 4W, 2W spread past 745
    (coordinate 0 is fed only by the far sample, whose relative weight e^{−2W} underflows in the
    shared frame)."""
    T = 1500
    r = run(SPREAD, OptimizerSpec(lr=10.0, **kw), T, checkpoints=np.array([300, T]))
    closed = cumulative_eta(T, 10.0)
    cols, half = ([0, 1], 0.5) if kw["name"] == "adam-proxy" else ([0, 1, 2], 1.0)
    assert np.array_equal(r.ws[:, cols], np.repeat(half * closed[[299, T - 1], None], len(cols), axis=1))
    margins = SPREAD @ r.w
    assert margins.max() - margins.min() > 745


def test_plain_loop_specialization_is_bit_identical():
    """From d = PLAIN_MIN_D the lazy Adam loop drops ×1, /1 and +0 (ε = 0, no bias correction, q = 1)."""
    Z = np.ascontiguousarray(gr(6, K.PLAIN_MIN_D + 5, np.random.default_rng(2)).Z)
    outs = []
    for plain in (False, True):
        w, m, v, s = (np.zeros(Z.shape[1]) for _ in range(4))
        diag = np.zeros(K.N_DIAG, dtype=np.int64)
        (K.adam_plain_chunk if plain else K.adam_chunk)(Z, np.empty((0, 1), dtype=np.int64), 0, 3000, w, m, v, s, 0,
                                                        0.1, 0.5, 0.9, 0.999, 0.0, False, K.LOGISTIC, True, diag)
        outs.append((w, m, v, s, diag))
    for a, b in zip(*outs, strict=True):
        assert np.array_equal(a, b)
    assert np.abs(outs[0][0]).max() > 0


def test_reshuffle_stream_unchanged_and_cyclic_needs_no_array():
    s = Sampler(7, 3, "reshuffle", seed=9)
    got = np.concatenate([s.next(k).ravel() for k in (1, 5, 11, 2)])
    rng = np.random.default_rng(9)
    old = np.concatenate([rng.permutation(7) for _ in range(-(-got.size // 7))])[:got.size]
    assert np.array_equal(got, old)  # the stream of one rng.permutation(n) per epoch
    c = Sampler(5, 2, "cyclic")
    assert [c.take_cyclic(3), c.take_cyclic(1), c.take_cyclic(4)] == [0, 1, 3]


def test_ctrl_c_in_the_last_chunk_stops_and_resumes(tmp_path, monkeypatch):
    """The stop flag is read after every chunk: a Ctrl-C that lands in the final chunk (no save due
    there by the schedule) stops the run with a checkpoint of the finished state."""
    Z = gr(5, 4, np.random.default_rng(0)).Z
    spec = OptimizerSpec("adam", batch_size=2, order="replacement", seed=3)
    ref = run(Z, spec, 5000, checkpoints=5)
    ck = tmp_path / "r.ckpt"
    monkeypatch.setenv(INTERRUPT_AT_ENV, "5000")
    with pytest.raises(IbverifyError, match="interrupted at step 5000"):
        run(Z, spec, 5000, checkpoints=5, save_to=str(ck), save_every=1e9)
    monkeypatch.delenv(INTERRUPT_AT_ENV)
    again = run(Z, spec, 5000, checkpoints=5, save_to=str(ck), resume=True)
    assert np.array_equal(again.ws, ref.ws)


def test_adam_reframe_at_a_gradient_too_small_to_square():
    """Issue 35 (verify --data on digits 2-vs-3, det-adam at step 198226): a coordinate fed only by a sample 460 past
    the batch's smallest margin has a relative gradient g ≈ 5e-201; the pre-step shift (by 323) left its v̂ below
    LOST, and the re-frame at g stored (1−β2)g² = 0, so w_k = −m/0 = −inf. Now such a coordinate (every contribution
    below CUT_SQ) is computed in its own frame L_1 = −1142, where g = −1/2: finite, along −g. (Coordinate 1 has no
    memory here; with memory the old moments are kept: tests/engine/test_faithful_reframe.py, the same state.)"""
    Z = np.array([[1.0, 0.0], [0.0, 1.0]])
    w = np.array([682.0, 1142.0])                  # margins 682 and 1142: L = −682, g̃_1 = −e^{−460}/2
    m, v, s = np.array([0.5, 0.0]), np.array([1.0, 0.0]), np.array([682.0, 1005.0])   # s_1 − (−L) = 323
    diag = np.zeros(K.N_DIAG, dtype=np.int64)
    K.run_chunk(K.ADAM, Z, np.empty((0, 2), np.int64), 0, 1, w, m, v, s, 198225, 0.1, 0.5, 0.9, 0.99, 0.0, False,
                K.LOGISTIC, True, diag)
    assert np.all(np.isfinite(w)) and np.all(np.isfinite(m)) and np.all(np.isfinite(v)) and np.all(np.isfinite(s))
    assert v[1] == (1 - 0.99) * 0.25 and m[1] == (1 - 0.9) * -0.5 and w[1] > 1142.0   # (1−β2)g², (1−β1)g in frame L_1
    assert s[1] == 1142.0


def test_adam_first_gradient_too_small_to_square_is_reframed_at_itself():
    """No memory and (1−β2)g² < LOST even in the frame at L (data entry 1e−200, batch size 1): the exact first
    moments are re-framed at g itself, ±1 in the frame L + log|g̃|, and the step is the full −η sign g."""
    Z = np.array([[1e-200]])
    w, m, v, s = np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1)
    diag = np.zeros(K.N_DIAG, dtype=np.int64)
    K.run_chunk(K.ADAM, Z, np.empty((0, 1), np.int64), 0, 1, w, m, v, s, 0, 0.1, 0.0, 0.9, 0.99, 0.0, False,
                K.LOGISTIC, True, diag)
    assert m[0] == (1 - 0.9) * -1.0 and v[0] == 1 - 0.99                     # (1−β1)·(−1), (1−β2)·1
    assert abs(s[0] - (math.log(2.0) + 200 * math.log(10.0))) < 1e-9          # −(L + log|g̃|), L = log ½
    assert w[0] == -0.1 * (m[0] / math.sqrt(v[0])) and abs(w[0] - 0.1) < 1e-15  # −η·m̂/√v̂ = η
