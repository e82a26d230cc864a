"""Adam's ε-switch law (checks.eps_switch): the observable, the law's speed factor and each half of the decision on
constructed inputs, and the check on one dataset (the right law supported, the ℓ2-margin law contradicted)."""

import math

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.checks import eps_switch as E
from ibverify.checks.rules import CONTRADICTED, INCONCLUSIVE, SUPPORTED

TOL = {"slope_tol": 0.1, "resid_max": 0.01, "offset_max": 0.04}
EPS_FIT = [1e-3, 1e-4, 1e-5, 1e-6]
L = np.log(1 / np.asarray(EPS_FIT))
L8 = math.log(1e8)


def _direct_log_grad(Z, w):
    s = 1 / (1 + np.exp(Z @ w))
    return math.log(np.abs(-(s @ Z) / len(Z)).max())


def test_log_grad_inf_equals_the_direct_gradient_and_survives_underflow():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(5, 3))
    ws = rng.normal(size=(4, 3))
    got = E.log_grad_inf(Z, ws)
    assert np.allclose(got, [_direct_log_grad(Z, w) for w in ws], rtol=1e-12)
    # margins 800 and 900: σ(−m) underflows float64; ∇L ≈ −(e^{−800}·z_1 + e^{−900}·z_2)/2, ln‖∇L‖∞ = −800 + ln(800/2)
    Z = np.array([[800.0, 0.0], [0.0, 900.0]])
    assert math.isclose(E.log_grad_inf(Z, np.array([[1.0, 1.0]]))[0], -800 + math.log(400), rel_tol=1e-12)


def test_switch_step_interpolates_in_log_gradient_and_refuses_what_it_cannot_see():
    x = np.arange(100.0, 1001.0, 100.0)
    lg = math.log(1.0) - 0.01 * x          # ln‖∇L‖ = −0.01 t: below ε = e^{−4.5} from t = 450
    assert math.isclose(E.switch_step(x, lg, math.exp(-4.5)), 450.0, rel_tol=1e-12)
    assert E.switch_step(x, lg, math.exp(-20.0)) is None       # never below within the horizon
    assert E.switch_step(x, lg, math.exp(-0.5)) is None        # already below at the first checkpoint
    bump = lg.copy()
    bump[2:] = -3.0                                             # first crossing, not the last
    assert E.switch_step(x, bump, math.exp(-2.5)) < 300


def test_speed_factor_solves_its_equation_and_has_both_limits():
    for g, eta, b2 in [(1.6, 1e-3, 0.999), (3.0, 3e-5, 0.999), (2.0, 1e-3, 0.99)]:
        c = E.speed_factor(g, eta, b2)
        assert 0 < c < 1
        assert math.isclose(c * c, (1 - b2 * math.exp(2 * g * eta * c)) / (1 - b2), rel_tol=1e-9)
        a = 2 * g * eta / (1 - b2)
        assert math.isclose(c, (math.sqrt(a * a + 4) - a) / 2, rel_tol=3e-3)   # the first-order quadratic
    assert math.isclose(E.speed_factor(1.0, 1e-7, 0.999), 1.0, rel_tol=1e-3)   # a ≪ 1: v follows g², sign descent
    assert math.isclose(E.speed_factor(10.0, 1e-2, 0.999), 1 / 200, rel_tol=1e-2)   # a = 200: c ≈ 1/a
    assert math.isclose(E.law_slope(1.0, 1e-7, 0.999), 1e7, rel_tol=1e-3)        # → 1/(ηγ)
    assert E.speed_factor(1.0, 1e-3, 0.0) == 1.0
    with pytest.raises(IbverifyError):
        E.speed_factor(0.0, 1e-3, 0.999)


def test_law_slope_is_covariant_with_the_data_scale():
    """Data scaled by s with step η is the run of the data with step s·η: the law depends on γη only."""
    for s in (0.1, 7.0):
        assert math.isclose(E.law_slope(2.0 * s, 1e-3, 0.999), E.law_slope(2.0, 1e-3 * s, 0.999), rel_tol=1e-12)


def _judge(t_fit, t_pred, slope=2000.0, horizon=1e6):
    return E.judge_switch(EPS_FIT, t_fit, 1e-8, t_pred, slope, horizon, TOL)


def test_every_half_supports_a_series_on_the_law():
    t = 2000.0 * L + 5000
    dec, parts, figs = _judge(list(t), 2000.0 * L8 + 5000)
    assert dec.word == SUPPORTED and all(p.word == SUPPORTED for p in parts.values())
    assert math.isclose(figs["slope_fit"], 2000.0, rel_tol=1e-12) and figs["predict_error"] < 1e-12


@pytest.mark.parametrize("factor", [1.2, 0.8])
def test_slope_alone_decides(factor):
    """Slope 1.2× or 0.8× the law's with a large intercept: linear and the 1e-8 prediction still pass, the slope does
    not; the prediction is the law's slope from the intercept fitted with that slope held fixed."""
    t = 2000.0 * factor * L + 3e5
    t8 = 2000.0 * factor * L8 + 3e5
    dec, parts, figs = _judge(list(t), t8)
    assert parts["slope"].word == CONTRADICTED and parts["linear"].word == SUPPORTED
    assert parts["predict"].word == SUPPORTED and dec.word == CONTRADICTED
    assert math.isclose(figs["slope_error"], 0.2, rel_tol=1e-9)
    assert math.isclose(figs["t_pred_law"], np.mean(t - 2000.0 * L) + 2000.0 * L8, rel_tol=1e-12)


def test_linearity_alone_decides():
    """A bend orthogonal to the line (+δ, −δ, −δ, +δ): slope and intercept exact, the fit not linear."""
    t = 2000.0 * L + 5000
    span = t.max() - t.min()
    bent = t + 0.05 * span * np.array([1, -1, -1, 1])
    dec, parts, figs = _judge(list(bent), 2000.0 * L8 + 5000)
    assert parts["linear"].word == CONTRADICTED and dec.word == CONTRADICTED
    # the slope's interval is widened by the bend (inconclusive), never contradicted: the linear half decides alone
    assert parts["slope"].word == INCONCLUSIVE and parts["predict"].word == SUPPORTED
    assert math.isclose(figs["linearity_resid"], 0.05 * span / (bent.max() - bent.min()), rel_tol=1e-9)


def test_prediction_alone_decides():
    t = 2000.0 * L + 5000
    dec, parts, figs = _judge(list(t), (2000.0 * L8 + 5000) * 1.1)
    assert parts["predict"].word == CONTRADICTED and dec.word == CONTRADICTED
    assert parts["slope"].word == SUPPORTED and parts["linear"].word == SUPPORTED
    assert math.isclose(figs["predict_error"], 0.1 / 1.1, rel_tol=1e-9)


def test_an_unseen_switch_is_inconclusive_until_the_horizon_passes_the_prediction():
    t = list(2000.0 * L + 5000)
    pred = 2000.0 * L8 + 5000                                   # 41841
    dec, parts, _ = _judge(t, None, horizon=pred * 1.01)
    assert parts["predict"].word == INCONCLUSIVE and dec.word == INCONCLUSIVE
    dec, parts, _ = _judge(t, None, horizon=pred * 1.05)
    assert parts["predict"].word == CONTRADICTED and dec.word == CONTRADICTED
    dec, parts, _ = _judge([*t[:3], None], 4e4, horizon=3e4)   # a fitted ε not switched yet: nothing decided
    assert dec.word == INCONCLUSIVE and all(p.word == INCONCLUSIVE for p in parts.values())


def test_flat_switch_steps_and_too_few_eps_are_refused():
    dec, parts, _ = _judge([9000.0] * 4, 9000.0)
    assert parts["slope"].word == CONTRADICTED and parts["linear"].word == CONTRADICTED
    with pytest.raises(IbverifyError, match="≥ 3"):
        E.judge_switch(EPS_FIT[:2], [1.0, 2.0], 1e-8, 3.0, 1.0, 10.0, TOL)


def _check(norm):
    from ibverify.claims import CheckContext, load_registry

    claim = {c.id: c for c in load_registry()}["wang.beyond.adam-eps-switch"]
    p = dict(claim.params_for("smoke"), norm=norm, runs=[{"lr": 1e-3, "steps": 100000}])
    return E.adam_eps_switch(CheckContext(claim=claim, tier="smoke", params=p, seed=0))


def test_the_check_supports_the_linf_law_and_contradicts_the_l2_margin_law():
    right, wrong = _check("linf"), _check("l2")
    assert right.holds is True and wrong.holds is False
    row = next(r for r in right.table if "switch steps" in r)   # after the law's fit rows
    wrow = next(r for r in wrong.table if "switch steps" in r)
    steps = [row["switch steps"][k] for k in ("0.001", "0.0001", "1e-05", "1e-06", "1e-08")]
    assert all(a < b for a, b in zip(steps, steps[1:], strict=False))            # a smaller ε switches later
    assert math.isclose(row["law slope"], E.law_slope(row["γ∞"], 1e-3, 0.999), rel_tol=1e-12)
    assert row["fitted / naive 1/(ηγ∞)"] > 2   # at PyTorch's η and β2 the slope is set by β2, not 1/(ηγ∞)
    assert wrow["law slope"] > 1.05 * row["law slope"] and wrow["decision"] == CONTRADICTED
    assert right.figures["max_predict_error"] <= 0.04 < wrong.figures["max_predict_error"]
