"""The classical-theorem checks (ibverify/checks/classic.py) and the strategies they draw from: values, each rule half
on its own, and the data filters' quantities on hand-built data."""

import math

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.checks.classic import (alignment_gap, decade_slopes, logistic_smoothness, neg_gradient_directions,
                                     per_sample_smoothness, soudry_decision, soudry_series)
from ibverify.checks.per_sample import gap_series
from ibverify.checks.rules import CONTRADICTED, INCONCLUSIVE, SUPPORTED
from ibverify.oracles import max_margin, normalized_margin
from ibverify.recipes import RunStore
from ibverify.recipes.linear import adagrad, gaussian_l1, gaussian_l1_data
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


def test_per_sample_smoothness_bounds_every_mini_batch_hessian_and_is_attained():
    beta = per_sample_smoothness(Z)
    assert beta == pytest.approx(max(np.sum(Z * Z, axis=1)) / 4, rel=1e-15)
    assert beta >= logistic_smoothness(Z) * (1 - 1e-12)       # the mean loss is smoother than its worst sample
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(50):
        w = 0.3 * rng.standard_normal(3)
        batch = rng.choice(len(Z), size=rng.integers(1, len(Z) + 1), replace=False)
        s = 1 / (1 + np.exp(-(Z[batch] @ w)))
        H = (Z[batch] * (s * (1 - s))[:, None]).T @ Z[batch] / len(batch)
        worst = max(worst, np.linalg.eigvalsh(H).max() / beta)
    assert worst <= 1 + 1e-12 and worst > 0.5                  # a bound, and not a loose one near w = 0
    i = int(np.argmax(np.sum(Z * Z, axis=1)))                  # one sample at w = 0: ℓ''(0)‖z_i‖² = β_max exactly
    assert np.linalg.eigvalsh(np.outer(Z[i], Z[i]) / 4).max() == pytest.approx(beta, rel=1e-12)


def test_neg_gradient_direction_in_the_log_domain_matches_the_plain_gradient_and_survives_underflow():
    w = np.array([0.4, -0.1, 0.2])
    s = 1 / (1 + np.exp(Z @ w))                                # |ℓ'(z·w)| = σ(−z·w)
    g = s @ Z
    np.testing.assert_allclose(neg_gradient_directions(Z, w[None])[0], g / np.linalg.norm(g), rtol=1e-12)
    e = np.exp(-(Z @ w)) @ Z
    np.testing.assert_allclose(neg_gradient_directions(Z, w[None], "exponential")[0], e / np.linalg.norm(e),
                               rtol=1e-12)
    far = 1e4 * w / np.min(Z @ w)                              # every margin ≥ 1e4: e^(−margin) underflows float64
    d = neg_gradient_directions(Z, far[None])[0]
    k = int(np.argmin(Z @ far))
    assert np.all(np.isfinite(d)) and np.linalg.norm(d - Z[k] / np.linalg.norm(Z[k])) < 1e-12   # the closest sample


def test_alignment_gap_is_zero_on_the_svm_limit_and_positive_on_a_wrong_direction():
    ref = max_margin(Z, "l2")
    sv = ref.duals > 1e-6 * ref.duals.max()                    # support vectors 0 and 3
    rho = np.linalg.lstsq(Z[sv], -np.log(ref.duals[sv]), rcond=None)[0]   # z_i·ρ = −log α_i on the SVs
    hat = ref.direction / ref.margin
    ws = np.array([c * hat + rho for c in (10.0, 100.0, 1000.0)])   # Soudry's w = ŵ ln t + ρ, ln t = c
    gap = alignment_gap(Z, ws, "exponential")                  # weights e^(−c) α_i on the SVs: −∇L ∝ Σ α_i z_i ∝ ŵ2
    assert np.all(np.diff(gap) < 0) and gap[-1] < 1e-5 and gap[0] > 1e-4
    ratio = gap[1:] / gap[:-1]                                 # the remaining gap is cos(w, ŵ2)'s: ~‖ρ⊥‖²/(2c²‖ŵ‖²)
    np.testing.assert_allclose(ratio, 0.01, rtol=0.25)
    inf = max_margin(Z, "linf")                                # an ℓ∞ max-margin direction, not an ℓ2 KKT one
    wrong = alignment_gap(Z, 1e4 * inf.direction[None])[0]
    assert wrong > 0.01
    x = np.array([0.3, -0.4, 0.5])
    gh = neg_gradient_directions(Z, x[None])[0]
    assert alignment_gap(Z, x[None])[0] == pytest.approx(1 - x @ gh / np.linalg.norm(x), rel=1e-9)
    assert alignment_gap(Z, x[None], geometry="linf")[0] == pytest.approx(
        1 - x @ gh / (np.max(np.abs(x)) * np.sum(np.abs(gh))), rel=1e-12)
    with pytest.raises(IbverifyError):
        alignment_gap(Z, x[None], geometry="l3")


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
    Dg = gaussian_l1(6, 9, 0)
    Zg = Dg.Z
    assert Zg.shape == (6, 9) and S.l1_gap_of_l2(Zg) >= S.L1_GAP_MIN
    np.testing.assert_array_equal(Dg.y, np.ones(6))                       # Z itself, labels 1
    np.testing.assert_array_equal(Zg, gaussian_l1(6, 9, 0).Z)            # deterministic in its seed
    rec = gaussian_l1_data(6, 9, 0)                                        # the data source of the recipe
    np.testing.assert_array_equal(rec.build().Z, Zg)
    assert rec.identity()["args"]["gap_min"] == S.L1_GAP_MIN
    assert gaussian_l1_data(6, 9, 1).identity() != rec.identity()


def test_adagrad_recipe_is_the_block_run_from_its_theta0():
    """recipes.linear.adagrad: the linear model from θ0 = {"w": w0}, steps + 1 steps, recorded at T/10 + 1 and T + 1;
    θ0 is part of the run's identity."""
    from ibverify import models
    from ibverify.engine import run
    from ibverify.optim import OptimizerSpec

    data = gaussian_l1_data(6, 9, 0)
    w0 = 0.5 * np.random.default_rng(3).standard_normal(9)
    rec = adagrad(data, 0.1, 200, w0)
    assert rec.checkpoints == (21, 201) and rec.steps == 201 and rec.model.kind == "linear"
    assert adagrad(data, 0.1, 200, np.zeros(9)).key() != rec.key()
    r = RunStore().run(rec, warn=False)
    Zg = data.build().Z
    ref = run((Zg, np.ones(6)), OptimizerSpec("adagrad", lr=0.1, lr_decay=0.0, eps=0.0), 201, model=models.Linear(9),
              theta0={"w": w0}, checkpoints=[21, 201], warn=False)
    np.testing.assert_array_equal(np.array([t["w"] for t in r.thetas]), np.array([t["w"] for t in ref.thetas]))


def test_gap_series_l1_is_the_relative_l1_margin_gap():
    l1 = max_margin(Z, "l1")
    ws = np.array([l1.direction * 5.0, [1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    gap, refs = gap_series(Z, ws, "l1")
    assert refs == {"gamma_l1": pytest.approx(l1.margin)}
    assert gap[0] == pytest.approx(0.0, abs=1e-7)
    for k in (1, 2):
        assert gap[k] == pytest.approx((l1.margin - normalized_margin(Z, ws[k], "l1")) / l1.margin)


def test_the_approach_half_alone_separates_a_limit_elsewhere_from_a_slow_true_one():
    """Wang's third half: 1 − cos(w, ŵ2) falling like 1/ln²t (GD's rate) is supported; a same-speed wrong limit,
    1 − cos settling at 0.19, is a stable plateau: contradicted at the final horizon, undecided before it."""
    from ibverify.checks.classic import soudry_decision
    x = np.logspace(3, 7, 41)
    tol = {"approach_drop": 0.1, "decades": 2.0}
    slow = {"gap": 2.0 / np.log(x) ** 2}
    assert soudry_decision(x, slow, tol, True, halves=("approach",))[0].word == "supported"
    wrong = {"gap": 0.19 + 0.5 / np.log(x) ** 2 * 0.01}
    assert soudry_decision(x, wrong, tol, True, halves=("approach",))[0].word == "contradicted"
    assert soudry_decision(x, wrong, tol, False, halves=("approach",))[0].word == "inconclusive"
    # the tolerance decides: a series falling 5 % per decade is not "still approaching" at approach_drop 0.1
    creeping = {"gap": 0.2 * (x / 1e3) ** np.log10(0.95)}
    assert soudry_decision(x, creeping, tol, True, halves=("approach",))[0].word != "supported"
    assert soudry_decision(x, creeping, {**tol, "approach_drop": 0.04}, True, halves=("approach",))[0].word == \
        "supported"
