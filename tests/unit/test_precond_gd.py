"""precond-gd (issue 33 item 2: the same-speed wrong-limit controls of the classical ℓ2 claims): diagonally
preconditioned GD w ← w − η_t D ∇L, D = diag(10^(j/(d−1) − 1)). Its first steps against values computed by hand, and
its limit — the D^(−1/2)-weighted ℓ2 max margin, reached at GD's rate 1/log t — measurably away from ŵ2 on the data
its controls draw (strategies.linear.discriminating_precond), certified through the ℓ2 oracle."""

import math

import numpy as np
import pytest
from hypothesis import given, settings

from ibverify.data import gr
from ibverify.engine import run
from ibverify.oracles import max_margin
from ibverify.optim import OptimizerSpec
from ibverify.optim.table import info
from ibverify.optim.transforms import precond_diagonal
from ibverify.strategies import linear as S

Z = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 1.0]])


def sig(x):
    return 1.0 / (1.0 + math.exp(-x))


def by_hand(steps, lr=0.3, decay=0.0):
    """Full batch, mean logistic loss: ∇L(w) = −(1/N) Σ_i σ(−z_i·w) z_i; D = (0.1, 10^(−1/2), 1) for d = 3."""
    D = [0.1, 10 ** -0.5, 1.0]
    w = [0.0, 0.0, 0.0]
    for t in range(steps):
        s = [sig(-sum(Z[i][k] * w[k] for k in range(3))) for i in range(2)]
        g = [-(s[0] * Z[0][k] + s[1] * Z[1][k]) / 2 for k in range(3)]
        w = [w[k] - lr * (t + 1) ** (-decay) * D[k] * g[k] for k in range(3)]
    return w


def test_the_diagonal_is_fixed_positive_not_a_multiple_of_the_identity_and_at_most_one():
    for d in (2, 3, 7, 30):
        D = precond_diagonal(d)
        assert D.shape == (d,) and D.min() == pytest.approx(0.1) and D.max() == 1.0 and np.all(np.diff(D) > 0)
    assert precond_diagonal(1).tolist() == [1.0]
    assert info("precond-gd").geometry == "adaptive" and info("precond-gd").implementations["vector"] == (
        "compiled", "reference", "mpmath") and info("precond-gd").kernel == "precond"


@pytest.mark.parametrize("engine", ["compiled", "reference", "mpmath"])
def test_first_step_by_hand(engine):
    # step 0 at w = 0: σ(0) = ½, ∇L = −(z_0 + z_1)/4 = −(1, 1/4, 3/8), so w1 = η D (1, 1/4, 3/8)
    r = run(Z, OptimizerSpec("precond-gd", lr=0.3, lr_decay=0.0), 1, checkpoints=np.array([1]), engine=engine)
    np.testing.assert_allclose(r.ws[-1], [0.3 * 0.1, 0.3 * 10 ** -0.5 / 4, 0.3 * 3 / 8], rtol=1e-14)
    np.testing.assert_allclose(r.ws[-1], by_hand(1), rtol=1e-14)


def test_three_steps_with_a_decaying_step_by_hand():
    r = run(Z, OptimizerSpec("precond-gd", lr=0.3, lr_decay=0.5), 3, checkpoints=np.array([1, 2, 3]),
            engine="reference")
    for t in (1, 2, 3):
        np.testing.assert_allclose(r.ws[t - 1], by_hand(t, decay=0.5), rtol=1e-13)


@settings(max_examples=6, deadline=None, derandomize=True)
@given(S.discriminating_precond(S.nondegenerate(S.data("gr", discriminate=True), 0.15, 0.01, 0.1)))
def test_its_limit_is_measurably_not_w2_on_the_controls_data(cert):
    """On the controls' data precond-gd's limit has cos ≤ 0.9 to ŵ2, hence (the bound of precond_limit) a·γ2 → ≥ 1/0.9:
    the slope half of soudry.gd-l2 cannot read it as ŵ2's 1/γ2 (slope_gap_max 0.05). Certified: both directions come
    from the ℓ2 oracle (max_margin checks its own KKT certificate), the limit vector separates with margin 1 in
    the weighted problem's constraints z_i·w ≥ 1, and its weighted norm is minimal against ŵ2's rescaling."""
    Zc = cert.dataset.Z
    lim = S.precond_limit(Zc)
    l2 = max_margin(Zc, "l2")
    assert lim.cos_l2 <= S.PRECOND_COS_MAX
    assert float(lim.direction @ l2.direction) == pytest.approx(lim.cos_l2)
    assert np.min(Zc @ lim.log_rate) >= 1 - 1e-6                      # feasible for z_i·w ≥ 1
    assert lim.a_gamma >= 1 / lim.cos_l2 - 1e-6 >= 1.11                 # ‖w‖γ2 ≥ 1/cos
    D = precond_diagonal(Zc.shape[1])
    w2 = l2.direction / l2.margin                                         # ŵ (z_i·ŵ ≥ 1) in the weighted norm
    assert lim.log_rate @ (lim.log_rate / D) <= w2 @ (w2 / D) * (1 + 1e-6)


def test_a_run_goes_to_its_limit_not_to_w2():
    """precond-gd's run at 10⁵ steps: its direction is closer to precond_limit's than to ŵ2 (and ‖w‖/ln t near the
    limit's log-rate norm): the wrong limit is the optimizer's, not an artefact of the check."""
    rng = np.random.default_rng(3)
    for _ in range(50):
        Zr = gr(8, 12, rng).Z
        lim = S.precond_limit(Zr)
        if lim.cos_l2 <= 0.9:
            break
    beta = float(np.linalg.eigvalsh(Zr.T @ Zr).max() / (4 * Zr.shape[0]))
    r = run(Zr, OptimizerSpec("precond-gd", lr=1.0 / beta, lr_decay=0.0), 100000, checkpoints=5, engine="reference")
    w = r.ws[-1] / np.linalg.norm(r.ws[-1])
    u2 = max_margin(Zr, "l2").direction
    assert 1 - w @ lim.direction < 0.2 * (1 - w @ u2)
