"""Faithful re-frames (issue 50 item 4): a coordinate's old m̂, v̂ are combined with a new gradient in the log domain
(ibverify.engine.kernels._combine) where a shared frame cannot hold both, instead of being dropped below LOST.

Each branch on a constructed state, against the exact moments worked out in mpmath (the old rule's answer is
written next to it: the test fails if the memory is dropped again); then whole runs of every kernel family with
moments against the mpmath chain (no frames, 30 digits) to ≤ 1e−12 relative, on data where one sample's gradient
falls past the float64 range relative to the other's (a shared frame flushes it) while its coordinate keeps memory.
A reference that moves when its digits double is reported ill-conditioned, not passed (checks.numerics).
"""

import math

import mpmath
import numpy as np
import pytest

from ibverify.checks.numerics import ILL_FRACTION, ill_conditioned, reference_drift
from ibverify.engine import kernels as K
from ibverify.engine import run
from ibverify.engine.vector import CompiledState, check_data
from ibverify.optim import OptimizerSpec

RTOL = 1e-12
CYCLIC1 = np.empty((0, 1), np.int64)
CYCLIC2 = np.empty((0, 2), np.int64)


def true_log(x_hat, s):
    """log |x| of a framed value x = x̂ e^{−s} (the unit that a frame cannot change)."""
    return math.log(abs(x_hat)) - s


def test_pre_step_shift_keeps_the_old_v_when_the_gradient_is_too_small_for_the_frame():
    """Issue 35's state (det-adam on digits 2-vs-3, step 198226): coordinate 1 is fed only by a sample 460 past the
    batch's smallest margin (g̃_1 = −e^{−460}/2, (1−β2)g̃² = 0); shifting its frame by L + s_1 = 323 put its v̂ below
    LOST, and the old rule re-framed at g, dropping v_old = e^{−2010}, which is e^{276} times (1−β2)g². Kept, the
    moments are 0.9·m_old + 0.1·g and 0.99·v_old + 0.01·g² exactly, and m stays positive (the old rule: m̂ = −0.1)."""
    Z = np.array([[1.0, 0.0], [0.0, 1.0]])
    w = np.array([682.0, 1142.0])                  # margins 682 and 1142: L = −682
    m, v, s = np.array([0.5, 1e-60]), np.array([1.0, 1.0]), np.array([682.0, 1005.0])
    diag = np.zeros(K.N_DIAG + 1, dtype=np.int64)  # with the KEPT slot
    K.run_chunk(K.ADAM, Z, CYCLIC2, 0, 1, w, m, v, s, 198225, 0.1, 0.5, 0.9, 0.99, 0.0, False, K.LOGISTIC, True, diag)
    mp = mpmath.mp.clone()
    mp.dps = 50
    g = -mp.exp(-1142) / 2                          # the true gradient of coordinate 1 (batch mean of two samples)
    m_true = mp.mpf("0.9") * mp.mpf(1e-60) * mp.exp(-1005) + mp.mpf("0.1") * g
    v_true = mp.mpf("0.99") * mp.exp(-2010) + mp.mpf("0.01") * g * g
    assert abs(true_log(m[1], s[1]) - float(mp.log(m_true))) <= RTOL * 1000     # logs of size 1000: 1e−12 relative
    assert abs(true_log(v[1], s[1] * 2) - float(mp.log(v_true))) <= RTOL * 2000
    assert m[1] > 0 and v[1] > K.TINY and diag[K.KEPT] == 1                           # memory kept (counted once)
    assert abs(m[1] / math.sqrt(v[1]) - float(m_true / mp.sqrt(v_true))) <= RTOL * float(m_true / mp.sqrt(v_true))


@pytest.mark.parametrize("far_frame", [False, True])
def test_a_sum_below_lost_is_redone_from_the_kept_moments(far_frame):
    """Adam, batch size 1: in its frame (s = −700) the new gradient is ≈ e^{−701} (its square 0) and the old
    v̂ = 1e−290: the sum 0.5·v̂ + 0.5·gh² is below LOST. The old rule re-framed at g (m̂ = (1−β1)g: u = −0.707);
    the exact moments are dominated by the old memory (true m_old = 1e−145·e^{700}, v_old = 1e−290·e^{1400}):
    u = +0.71. far_frame adds a zero-gradient
    coordinate whose frame is far above (L + S > SAFE): the per-coordinate loop (not the branch-free one) runs."""
    d = 2 if far_frame else 1
    Z = np.zeros((1, d))
    Z[0, 0] = 1.0
    w, m, v, s = np.zeros(d), np.zeros(d), np.ones(d), np.zeros(d)
    m[0], v[0], s[0] = 1e-145, 1e-290, -700.0
    if far_frame:
        s[1] = 2000.0
    diag = np.zeros(K.N_DIAG + 1, dtype=np.int64)  # with the KEPT slot
    K.run_chunk(K.ADAM, Z, CYCLIC1, 0, 1, w, m, v, s, 0, 0.1, 0.0, 0.5, 0.5, 0.0, False, K.LOGISTIC, True, diag)
    mp = mpmath.mp.clone()
    mp.dps = 50
    g = -mp.mpf(1) / 2                                   # ℓ'(0) z for the logistic loss at w = 0
    m_true = mp.mpf("0.5") * mp.mpf(1e-145) * mp.exp(700) + mp.mpf("0.5") * g
    v_true = mp.mpf("0.5") * mp.mpf(1e-290) * mp.exp(1400) + mp.mpf("0.5") * g * g
    u = float(m_true / mp.sqrt(v_true))
    assert diag[K.KEPT] == 1 and u > 0.7                        # the dropped answer: u = −0.707
    assert abs(m[0] / math.sqrt(v[0]) - u) <= RTOL * abs(u)
    assert abs(w[0] - (-0.1 * u)) <= RTOL * abs(0.1 * u)
    assert abs(true_log(v[0], 2 * s[0]) - float(mp.log(v_true))) <= RTOL * 1000


def test_signum_whose_sum_underflows_to_zero_keeps_the_sign_of_its_memory():
    """Signum, β1 = 0.4: m̂ = 5e−324 (subnormal) in a frame where the new gradient underflows: 0.4·m̂ + 0.6·gh = 0,
    and the old rule took sign(g) = −1. The exact momentum 0.4·m_old + 0.6·g is dominated by m_old (e^{54} vs 0.3):
    the step is +1, against the gradient's sign."""
    Z = np.array([[1.0]])
    w, m, v, s = np.zeros(1), np.array([5e-324]), np.zeros(1), np.array([-800.0])
    diag = np.zeros(K.N_DIAG + 1, dtype=np.int64)  # with the KEPT slot
    K.run_chunk(K.SIGNUM, Z, CYCLIC1, 0, 1, w, m, v, s, 0, 0.1, 0.0, 0.4, 0.0, 0.0, False, K.LOGISTIC, True, diag)
    mp = mpmath.mp.clone()
    mp.dps = 50
    m_true = mp.mpf("0.4") * mp.mpf(5e-324) * mp.exp(800) - mp.mpf("0.6") / 2
    assert diag[K.KEPT] == 1 and m[0] > 0 and w[0] == -0.1
    assert abs(true_log(m[0], s[0]) - float(mp.log(m_true))) <= RTOL * 1000


def test_adamw_sum_below_lost_keeps_its_memory_too():
    """kernels_more's adamw (λ = 0) on the state of the Adam test above: the same exact moments and step."""
    from ibverify.engine import kernels_more as KM
    Z = np.array([[1.0]])
    w, m, v, s = np.zeros(1), np.array([1e-145]), np.array([1e-290]), np.array([-700.0])
    diag = np.zeros(K.N_DIAG + 1, dtype=np.int64)  # with the KEPT slot
    KM.run_chunk(KM.ADAMW, Z, CYCLIC1, 0, 1, w, m, v, s, 0, 0.1, 0.0, 0.5, 0.5, 0.0, False, 0.0, K.LOGISTIC, True,
                 diag)
    mp = mpmath.mp.clone()
    mp.dps = 50
    m_true = mp.mpf("0.5") * mp.mpf(1e-145) * mp.exp(700) - mp.mpf("0.25")
    v_true = mp.mpf("0.5") * mp.mpf(1e-290) * mp.exp(1400) + mp.mpf("0.125")
    u = float(m_true / mp.sqrt(v_true))
    assert diag[K.KEPT] == 1 and abs(w[0] + 0.1 * u) <= RTOL * abs(0.1 * u)


# whole runs: Z = [[300, 0], [0, 1]], lr 1, 2000 steps: sample 1's margin reaches ≈ 697 while sample 2's stays ≈ 80,
# so the far sample's gradient is e^{−600} times the batch's largest (its square far below the float64 range) while
# coordinate 0 keeps the memory of its earlier, larger gradients. Before the faithful re-frame: det-adam 5.4e−3,
# adamw 2.1e−4 away from mpmath at step 2000.
FAR = np.array([[300.0, 0.0], [0.0, 1.0]])
FAMILIES = [("det-adam", {}, True), ("det-adam", {"eps": 1e-8, "bias_correction": True}, True),
            ("adamw", {"batch_size": 2}, False), ("adamw", {"batch_size": 2, "weight_decay": 1e-3}, False),
            ("signum", {"batch_size": 2}, True), ("lion", {"batch_size": 2}, False),
            ("adagrad", {"batch_size": 2, "lr": 10.0}, False)]  # (adagrad's steps shrink: lr 10 for the spread)


def faithful(Z, spec, steps, dps):
    """(relative distance of the compiled run to the mpmath chain at `steps`, the compiled state (its diag with the
    KEPT slot), whether the reference is ill-conditioned: it moves by more than ILL_FRACTION × RTOL when its digits
    double)."""
    st = CompiledState(Z.shape[1], spec.resolved(Z.shape[0]), Z.shape[0])
    st.diag = np.zeros(K.N_DIAG + 1, dtype=np.int64)
    st.advance(check_data(Z), spec.resolved(Z.shape[0]), steps, True)
    cps = [steps // 8, steps // 2, steps]
    ref = run(Z, spec, steps, checkpoints=cps, engine="mpmath", dps=dps)
    finer = run(Z, spec, steps, checkpoints=cps, engine="mpmath", dps=2 * dps)
    err = float(np.max(np.abs(st.w - finer.ws[-1])) / np.max(np.abs(finer.ws[-1])))
    c = run(Z, spec, steps, checkpoints=cps, engine="compiled")            # the engine's own path: the same run
    assert np.array_equal(c.ws[-1], st.w)
    return err, st, ill_conditioned(ref.ws, finer.ws, RTOL)


@pytest.mark.parametrize("name,kw,kept", FAMILIES, ids=[f"{n}{kw}" for n, kw, _ in FAMILIES])
def test_past_the_float64_range_every_moment_family_matches_mpmath(name, kw, kept):
    kw = {"lr": 1.0, "beta1": 0.3, **({"beta2": 0.5} if name != "signum" else {}), **kw}
    spec = OptimizerSpec(name, **kw)
    err, c, ill = faithful(FAR, spec, 2000, 30)
    assert not ill, "ill-conditioned reference: not a pass"
    assert err <= RTOL
    margins = FAR @ c.w
    assert margins.max() - margins.min() > 372          # the far sample's g² is outside a shared frame's range
    if kept:                                            # the branch is taken (own frames combined with memory)
        assert c.diag[K.KEPT] > 100


def test_a_reference_that_moves_when_its_digits_double_is_ill_conditioned():
    """10 digits are not enough for a 1e−12 judgement: the helper (and checks.numerics) report it, whatever the
    engine's distance."""
    spec = OptimizerSpec("det-adam", lr=1.0, beta1=0.3, beta2=0.5)
    cps = [50, 200]
    coarse = run(FAR, spec, 200, checkpoints=cps, engine="mpmath", dps=10).ws
    fine = run(FAR, spec, 200, checkpoints=cps, engine="mpmath", dps=20).ws
    assert reference_drift(coarse, fine).max() > ILL_FRACTION * RTOL
    assert ill_conditioned(coarse, fine, RTOL)
    assert not ill_conditioned(fine, run(FAR, spec, 200, checkpoints=cps, engine="mpmath", dps=40).ws, RTOL)


@pytest.mark.parametrize("dps,verdict", [(8, "ill"), (30, "holds")])
def test_the_log_frame_claim_reports_an_ill_conditioned_reference_as_not_passed(dps, verdict):
    """checks.numerics on one family of ibverify.log-frame-exact at 300 steps: with 8 digits the reference moves when
    its digits double (inconclusive, the family named, not a pass); with 30 it holds."""
    from ibverify.checks.numerics import engine_matches_mpmath
    from ibverify.claims import CheckContext, load_registry

    claim = {c.id: c for c in load_registry()}["ibverify.log-frame-exact"]
    params = {**claim.params_for("smoke"), "steps": 300, "checkpoints": 3, "dps": dps,
              "families": [{"name": "inc-adam"}]}
    out = engine_matches_mpmath(CheckContext(claim, "smoke", params, 0))
    assert out.table[0]["ill-conditioned"] == (verdict == "ill")
    if verdict == "ill":
        assert "ill-conditioned" in out.inconclusive and "inc-adam" in out.inconclusive   # inconclusive: no pass
    else:
        assert out.holds is True and out.inconclusive == "" and out.table[0]["reference drift at 2× digits"] < 1e-15
