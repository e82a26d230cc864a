"""Issue 33 item 2, paper 1: the same-speed wrong-limit controls of Thm 3.3 and Thm 5.1 (strategies.scaled).

Thm 3.3 (baek.control.gr-inc-adam-l2-scaled): Inc-Adam itself on GR data whose coordinate j is scaled by s_j goes to
s^(−1/2) ⊙ SVM(Z·s^(1/2)), not ŵ2 of the scaled data, at Inc-Adam's own speed. Thm 5.1
(baek.control.signum-weighted-linf): precond-signum, θ ← θ − η D sign(m), = D ⊙ (Signum on Z·D), whose limit has an
ℓ∞ margin gap ≥ weighted_linf_gap(Z, D) > 0. Each fact against values computed by hand or an independent run."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibverify.checks.per_sample import signum_curves
from ibverify.engine import run
from ibverify.oracles import max_margin, normalized_margin
from ibverify.optim import OptimizerSpec
from ibverify.optim.table import info
from ibverify.optim.transforms import precond_diagonal
from ibverify.strategies import linear as S
from ibverify.strategies import scaled as SC

Z = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 1.0], [0.5, 0.5, 2.0]])


def test_coordinate_scale_by_hand():
    np.testing.assert_allclose(SC.coordinate_scale(3, 1.0), [10 ** -0.5, 1.0, 10 ** 0.5], rtol=1e-15)
    np.testing.assert_allclose(SC.coordinate_scale(5, 0.05), 10 ** (0.05 * (np.arange(5) / 4 - 0.5)), rtol=1e-15)
    assert SC.coordinate_scale(1, 0.3).tolist() == [1.0]


def test_weighted_linf_gap_by_hand():
    # Z = [(1, 1)], D = (0.1, 1): Z·D = [(0.1, 1)] has the unique ℓ∞ optimum v = (1, 1), w = D v = (0.1, 1) with
    # ℓ∞ margin 1.1 against γ∞ = 2: gap 0.45
    assert SC.weighted_linf_gap(np.array([[1.0, 1.0]]), np.array([0.1, 1.0])) == pytest.approx(0.45, abs=1e-7)
    assert SC.weighted_linf_gap(np.array([[1.0, 1.0]]), np.ones(2)) == pytest.approx(0.0, abs=1e-7)
    # Z = [(1, 0)], D = (0.1, 1): the weighted optimal set is a face {v0 = 1, |v1| ≤ 1}; w = (0.1, v1) with |v1| ≤ 0.1
    # is ℓ∞ optimal, so the smallest gap over the face is 0 (an endpoint v1 = 1 would give 0.9)
    assert SC.weighted_linf_gap(np.array([[1.0, 0.0]]), np.array([0.1, 1.0])) == pytest.approx(0.0, abs=1e-7)


def test_precond_signum_row_and_its_first_step_by_hand():
    r = info("precond-signum")
    assert r.geometry == "adaptive" and r.moments == ("beta1",) and r.implementations["vector"] == ("reference",
                                                                                                   "mpmath")
    # step 1 at w = 0, full batch: g = −(z_0 + z_1 + z_2)/6 = −(4.5, 1.5, 3.5)/6, m = (1 − β) g, sign(m) = −1
    out = run(Z, OptimizerSpec("precond-signum", lr=0.3, lr_decay=0.0, beta1=0.9, batch_size=3), 1,
              checkpoints=np.array([1]), engine="reference")
    np.testing.assert_allclose(out.ws[-1], 0.3 * precond_diagonal(3), rtol=1e-15)


@pytest.mark.parametrize("b", [1, 2, 3])
def test_precond_signum_is_D_times_signum_on_the_scaled_data(b):
    """The identity the check runs by (per_sample.signum_curves): the reference chain of precond-signum on Z equals
    D ⊙ (Signum's compiled run on Z·D), cyclic mini-batches of size b, over 3000 steps."""
    D = precond_diagonal(3)
    kw = dict(lr=0.1, lr_decay=0.5, beta1=0.95, batch_size=b)
    cps = np.array([10, 300, 3000])
    a = run(Z, OptimizerSpec("precond-signum", **kw), 3000, checkpoints=cps, engine="reference")
    s = run(Z * D, OptimizerSpec("signum", **kw), 3000, checkpoints=cps)
    np.testing.assert_allclose(a.ws, s.ws * D, rtol=1e-12, atol=1e-14)


def test_signum_curves_judge_precond_signum_on_the_original_data():
    """signum_curves of precond-signum: the ℓ∞ gap and ‖w‖∞ of D ⊙ w (w Signum's run on Z·D), measured on Z."""
    D = precond_diagonal(3)
    p = {"optimizer": "precond-signum"}
    x, gap, scale = signum_curves(Z, p, 1, 0.9, 2000, checkpoints=5)
    ref = run(Z, OptimizerSpec("precond-signum", beta1=0.9, batch_size=1), 2000, checkpoints=x.astype(int),
              engine="reference")
    g = max_margin(Z, "linf").margin
    np.testing.assert_allclose(gap, [(g - normalized_margin(Z, w, "linf")) / g for w in ref.ws], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(scale, np.abs(ref.ws).max(axis=1), rtol=1e-12)
    assert gap[-1] >= SC.weighted_linf_gap(Z, D) > 0.1   # off γ∞ by at least the LP's bound on its limits


def test_inc_adam_on_scaled_gr_data_goes_to_the_predicted_limit_not_w2():
    """Inc-Adam (compiled) on GR data scaled by s: at 10⁵ epochs its direction is 20× closer to the predicted limit
    s^(−1/2) ⊙ SVM(Z·s^(1/2)) than to ŵ2 of the scaled data, and 1 − cos(w, ŵ2) is within 10% of the limit's."""
    rng = np.random.default_rng(1)
    n, d = 4, 6
    a = rng.uniform(0.5, 2.0, n)
    sg = rng.choice([-1.0, 1.0], (n, d))
    sg[:, 0] = 1.0
    Zg = a[:, None] * sg
    s = SC.coordinate_scale(d, 0.3)
    Zs = Zg * s
    lim = S.precond_limit(Zs, 1.0 / s)
    gap = SC.inc_adam_limit_gap(Zg, s)
    assert gap == pytest.approx(1 - lim.cos_l2) and gap > 1e-3
    r = run(Zs, OptimizerSpec("inc-adam", beta1=0.45, beta2=0.9, lr=0.1, lr_decay=0.3), 10 ** 5 * n,
            checkpoints=np.array([10 ** 5 * n]))
    w = r.ws[-1] / np.linalg.norm(r.ws[-1])
    to_w2 = 1 - w @ max_margin(Zs, "l2").direction
    assert 1 - w @ lim.direction < 0.05 * to_w2
    assert to_w2 == pytest.approx(gap, rel=0.1)


@settings(max_examples=4, deadline=None, derandomize=True)
@given(SC.coordinate_scaled(S.data("gr", discriminate=True, n=st.integers(3, 10), d=st.integers(3, 30)), 0.05,
                            (2e-4, 8e-4)))
def test_the_scaled_controls_data_have_their_limit_in_band_and_are_certified(cert):
    Zs = cert.dataset.Z
    d = Zs.shape[1]
    s = SC.coordinate_scale(d, 0.05)
    assert 2e-4 <= SC.inc_adam_limit_gap(Zs / s, s) <= 8e-4
    assert np.min(Zs @ cert.w) > 0 and cert.margin == pytest.approx(np.min(Zs @ cert.w) / np.linalg.norm(cert.w))
    assert np.ptp(np.abs(Zs[:, 1:]) / np.abs(Zs[:, 1:2]), axis=0).max() < 1e-12   # rows stay GR-shaped up to s
    assert not np.allclose(np.abs(Zs[0]), np.abs(Zs[0, 0]))                        # but not GR: magnitudes differ


@settings(max_examples=3, deadline=None, derandomize=True)
@given(SC.weighted_linf(S.data("gr", discriminate=True, n=st.integers(3, 10), d=st.integers(3, 30)),
                        precond_diagonal, 0.1))
def test_the_weighted_controls_data_keep_every_limit_off_the_linf_optimum(cert):
    Zc = cert.dataset.Z
    D = precond_diagonal(Zc.shape[1])
    assert SC.weighted_linf_gap(Zc, D) >= 0.1
    v = max_margin(Zc * D, "linf").direction        # one weighted optimum: its ℓ∞ gap is at least the LP's minimum
    g = max_margin(Zc, "linf").margin
    assert (g - normalized_margin(Zc, D * v, "linf")) / g >= SC.weighted_linf_gap(Zc, D) - 1e-6
