"""The classical-theorem checks (ibverify/checks/classic.py) and the strategies they draw from: values, each rule half
on its own, and the data filters' quantities on hand-built data."""

import math

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.checks.classic import (decade_slopes, gaussian_l1_dataset, logistic_smoothness, soudry_decision,
                                     soudry_series)
from ibverify.checks.per_sample import gap_series
from ibverify.checks.rules import CONTRADICTED, INCONCLUSIVE, SUPPORTED
from ibverify.oracles import max_margin, normalized_margin
from ibverify.strategies import linear as S

# ℓ1, ℓ2 and ℓ∞ max-margin directions differ on these rows (tests/test_new_optimizers.py)
Z = np.array([[0.846, 0.822, 0.33], [1.803, 0.905, 0.446], [1.037, 0.581, 0.365], [0.794, 0.028, 0.547]])
TOL = {"k_rise_max": 0.15, "rho_rise_max": 0.1, "slope_gap_max": 0.05, "slope_gap_floor": 0.005, "trend_drop": 0.1,
       "norm_drop": 0.1, "decades": 2.0}
X = np.unique(np.round(np.logspace(0, 5, 51))).astype(float)


def test_decade_slopes_of_a_log_linear_curve_are_its_slope_and_nan_before_a_decade():
    a = decade_slopes(X, 3.0 * np.log(X) + 7.0)
    assert np.all(np.isnan(a[X < 10]))
    np.testing.assert_allclose(a[X >= 10], 3.0, rtol=1e-10)


def test_logistic_smoothness_bounds_the_hessian_and_is_attained_at_zero():
    beta = logistic_smoothness(Z)
    H0 = Z.T @ Z / (4 * len(Z))                                   # σ'(0) = 1/4: the Hessian at w = 0
    assert beta == pytest.approx(np.linalg.eigvalsh(H0).max(), rel=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(20):
        w = rng.standard_normal(3)
        s = 1 / (1 + np.exp(-(Z @ w)))
        H = (Z * (s * (1 - s))[:, None]).T @ Z / len(Z)
        assert np.linalg.eigvalsh(H).max() <= beta * (1 + 1e-12)


def _soudry_run(coef=1.0, offset=(0.3, -0.2, 0.1), growth="log"):
    ref = max_margin(Z, "l2")
    what = ref.direction / ref.margin
    L = np.log(X) if growth == "log" else X
    return soudry_series(Z, coef * L[:, None] * what + np.asarray(offset), X), ref


def test_soudry_series_of_an_exact_log_law_has_constant_K_and_rho_and_unit_slope():
    ev, ref = _soudry_run()
    late = X >= 1e3
    assert ev["gamma_l2"] == pytest.approx(ref.margin)
    np.testing.assert_allclose(ev["rho"], np.linalg.norm([0.3, -0.2, 0.1]), rtol=1e-10)   # ρ = the offset exactly
    assert np.ptp(ev["K"][late]) / ev["K"][-1] < 0.02                                     # K → ‖ρ⊥‖²/2
    assert np.all(ev["slope_gap"][late] < 0.01)


def test_soudry_decision_each_half_on_its_own():
    good, _ = _soudry_run()
    dec, parts = soudry_decision(X, good, TOL, final=True)
    assert dec.word == SUPPORTED and all(p.word == SUPPORTED for p in parts.values())
    half, _ = _soudry_run(coef=0.5)                       # a = 1/(2γ2): direction right, rate wrong
    dec, parts = soudry_decision(X, half, TOL, final=True)
    assert parts["K"].word == SUPPORTED and parts["slope"].word == CONTRADICTED and dec.word == CONTRADICTED
    assert soudry_decision(X, half, TOL, final=False)[1]["slope"].word == INCONCLUSIVE   # a plateau only at the cap
    lin, _ = _soudry_run(growth="linear", offset=(0.0, 0.0, 0.0))
    lin["K"] = lin["K"] + X ** 2 * 1e-3                    # a wrong direction at linear growth: K ∝ ‖w‖²
    lin["rho"] = X * 1.0
    dec, parts = soudry_decision(X, lin, TOL, final=True)
    assert parts["K"].word == CONTRADICTED and parts["rho"].word == CONTRADICTED and dec.word == CONTRADICTED


def test_soudry_decision_norm_half_refuses_a_frozen_run_and_unknown_halves():
    ev, _ = _soudry_run()
    frozen = dict(ev, norm=np.full_like(ev["norm"], ev["norm"][-1]))
    assert soudry_decision(X, ev, TOL, True, ("K", "norm"))[0].word == SUPPORTED
    assert soudry_decision(X, frozen, TOL, True, ("K", "norm"))[1]["norm"].word == CONTRADICTED
    with pytest.raises(IbverifyError, match="unknown half"):
        soudry_decision(X, ev, TOL, True, ("cosine",))


def test_regularity_slack_and_duals_on_hand_built_data():
    # two support vectors (±e1 + e2 folded): ŵ2 = e2 direction; a third sample at twice the margin has slack 1
    Zh = np.array([[1.0, 1.0], [-1.0, 1.0], [0.0, 2.0]])
    r = S.regularity(Zh)
    assert r.slack == pytest.approx(1.0, abs=1e-6)
    assert r.dual == pytest.approx(1.0, abs=1e-6)          # symmetric support: equal duals
    assert r.rate == pytest.approx(1.0, rel=1e-6)          # α = (½, ½): Σ α_i z_i z_iᵀ = I
    assert S.regularity(3.0 * Zh).rate == pytest.approx(1.0, rel=1e-6)   # dimensionless
    # (1, 1) is ON the margin of ŵ2 = e2 (set by (0, 1) alone) but Zᵀλ ∝ e2 forces its dual to 0: the degenerate case
    Zd = np.array([[0.0, 1.0], [1.0, 1.0]])
    rd = S.regularity(Zd)
    assert rd.slack == math.inf and rd.dual < 1e-5


def test_l1_gap_of_l2_by_margin_and_the_gaussian_generator_respects_it():
    g = S.l1_gap_of_l2(Z)
    l1, l2 = max_margin(Z, "l1"), max_margin(Z, "l2")
    assert g == pytest.approx((l1.margin - normalized_margin(Z, l2.direction, "l1")) / l1.margin)
    assert g >= 0.1
    Zg = gaussian_l1_dataset(6, 9, 0)
    assert Zg.shape == (6, 9) and S.l1_gap_of_l2(Zg) >= S.L1_GAP_MIN
    np.testing.assert_array_equal(Zg, gaussian_l1_dataset(6, 9, 0))      # deterministic in its seed


def test_gap_series_l1_is_the_relative_l1_margin_gap():
    l1 = max_margin(Z, "l1")
    ws = np.array([l1.direction * 5.0, [1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    gap, refs = gap_series(Z, ws, "l1")
    assert refs == {"gamma_l1": pytest.approx(l1.margin)}
    assert gap[0] == pytest.approx(0.0, abs=1e-7)
    for k in (1, 2):
        assert gap[k] == pytest.approx((l1.margin - normalized_margin(Z, ws[k], "l1")) / l1.margin)
