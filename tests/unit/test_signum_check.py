"""Thm 5.1's check (per_sample.signum_beta_trend and its helpers) and the β_c bisection of paper1_laws: values of
single runs on one discriminating GR dataset (N = 10, d = 23, seed 1), judged by rules.judge_rate_invariant."""

import math

import numpy as np
import pytest

from ibverify import profiles
from ibverify.checks import rules
from ibverify.checks.paper1_laws import bisect_threshold, discriminating_gr, slope_range
from ibverify.checks.per_sample import beta_envelope, signum_curves, signum_decision, signum_horizon
from ibverify.claims import CheckContext, load_registry
from ibverify.recipes import RunStore

TOL = {"inv_rise": 2.0, "decades": 2.0, "trend_drop": 0.1}


@pytest.fixture(scope="module")
def Z():
    return RunStore.process().data(discriminating_gr(10, 23, 1)).Z


def _judge(Z, b, beta, steps, final=True, bound=0.03):
    x, gap, sc = signum_curves(Z, {"optimizer": "signum"}, b, beta, steps)
    inv = gap * sc
    return signum_decision(x, gap, sc, bound, TOL, final), gap[-1], inv[-1] / rules.value_before(x, inv, 1.0), x, gap


def test_no_momentum_plateau_is_contradicted_not_inconclusive(Z):
    d, gap, ratio, _, _ = _judge(Z, 1, 0.0, 100_000)
    assert d.word == rules.CONTRADICTED
    assert gap == pytest.approx(0.762, abs=0.005)  # per-sample SignGD: a plateau at 76 % of γ∞
    assert ratio == pytest.approx(3.17, rel=0.02)  # gap·‖w‖∞ rises like ‖w‖∞ ∝ √t
    assert _judge(Z, 1, 0.0, 100_000, final=False)[0].word == rules.INCONCLUSIVE  # before the cap: extended


def test_below_the_threshold_a_slow_approach_is_contradicted_by_the_invariant(Z):
    """b = 5 (m = 2), β = 0.8: the gap is 1.07 % and still falls (t^−0.13), so a "falling" rule counts it as converging;
    gap·‖w‖∞ rises ×2.6 per decade: contradicted (the issue's slow approach to a small plateau)."""
    d, gap, ratio, x, g = _judge(Z, 5, 0.8, 1_000_000)
    assert rules.judge_gap(x, g, 0.03).word == rules.SUPPORTED  # the gap rule alone is fooled
    assert d.word == rules.CONTRADICTED
    assert gap == pytest.approx(0.0107, abs=0.0005)
    assert ratio == pytest.approx(2.64, rel=0.03)


def test_above_the_threshold_the_gap_falls_like_one_over_the_norm(Z):
    d, gap, ratio, _, _ = _judge(Z, 1, 0.98, 1_000_000)  # m = 10, 1 − β = 0.2/m: the envelope's edge
    assert d.word == rules.SUPPORTED
    assert d.fit.slope == pytest.approx(-0.5, abs=0.02)  # gap ∝ 1/‖w‖∞ ∝ t^−1/2
    assert ratio == pytest.approx(1.0, abs=0.01)
    assert gap == pytest.approx(0.00784, abs=0.0003)


def test_envelope_and_horizon_values():
    assert beta_envelope(10, 0.2) == pytest.approx(0.98)
    assert beta_envelope(0.1, 0.2) == 0.0
    assert signum_horizon(1e6, 0.9) == 1_000_000
    assert signum_horizon(1e6, 0.995) == 2_000_000


def test_bisection_brackets_a_known_threshold_and_marks_censoring():
    """classify(β) = 1 − β ≤ 0.3/m: C_c = 0.3 lies in the bracket, whose width is (min(c_hi, m)/c_lo)^(1/2^steps)
    (C ≤ m keeps β ≥ 0)."""
    for m in (2.0, 5.0, 12.0):
        br = bisect_threshold(lambda beta, m=m: (1 - beta) * m <= 0.3, m, 0.05, 3.2, 6)
        assert br["lo"] <= 0.3 <= br["hi"] and not br["censored"]
        assert br["hi"] / br["lo"] == pytest.approx((min(3.2, m) / 0.05) ** (1 / 64), rel=1e-9)
    assert bisect_threshold(lambda beta: False, 10.0, 0.05, 3.2, 3)["censored"] == "below"
    br = bisect_threshold(lambda beta: True, 2.0, 0.05, 3.2, 3)
    assert br["censored"] == "above" and br["hi"] == 2.0  # C ≤ m: β ≥ 0


def test_slope_range_contains_the_true_slope_and_is_exact_on_points():
    lm = np.log([2.0, 3.0, 6.0, 12.0])
    ly = np.log(0.4) - 1.0 * lm
    assert slope_range(lm, ly, ly) == pytest.approx((-1.0, -1.0))
    lo, hi = slope_range(lm, ly - 0.1, ly + 0.1)
    assert lo < -1.0 < hi and hi - lo == pytest.approx(2 * 0.2 / np.ptp(lm) * 1.0, rel=0.5)


def _ctx(cid, tier="smoke", seed=0, **over):
    claim = {c.id: c for c in load_registry()}[cid]
    return CheckContext(claim, tier, {**claim.params_for(tier), **over}, seed)


def test_no_momentum_control_is_refuted_by_a_contradicted_example():
    profiles.load("ci")
    ctx = _ctx("baek.control.signum-no-momentum", examples=1)
    out = ctx.claim.function()(ctx)
    assert out.holds is False and out.inconclusive == ""
    assert out.decisions["contradicted"] == 1 and out.decisions["inconclusive"] == 0
    assert out.figures["max_gap"] > 0.1 and out.figures["max_inv_decade_ratio"] > 2.5


def test_claim_smoke_examples_are_supported_above_the_envelope():
    profiles.load("ci")
    ctx = _ctx("baek.signum-any-batch-linf")
    out = ctx.claim.function()(ctx)
    assert out.holds is True and out.decisions["supported"] == 2
    assert out.figures["max_gap"] <= 0.03 and math.isclose(out.figures["max_inv_decade_ratio"], 1.0, abs_tol=0.1)
    assert all(r["(1 − β)·m"] <= 0.2 + 1e-12 for r in out.table)
