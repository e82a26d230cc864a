"""The shared evidence rules (ibverify.checks.rules): each tested for its defining property."""


import numpy as np
import pytest

from ibverify.checks.rules import OUT_OF_REACH, closeness, falling, rate_fit, value_before

X = np.logspace(2, 5, 13)


def test_falling_accepts_a_power_law_and_rejects_a_creeping_plateau():
    assert falling(X, X ** -0.5)
    creep = 0.05 * X ** -0.0004  # 0.1 % per decade: a plateau
    assert not falling(X, creep)
    assert not falling(X, creep, decades=2.0)
    assert not falling(X, X ** 0.1)  # rising


def test_falling_threshold_is_the_relative_drop():
    y = np.where(X >= X[-1], 0.91, 1.0)  # drops by 9 % in the last decade
    assert not falling(X, y, min_drop=0.1)
    assert falling(X, y, min_drop=0.05)


def test_falling_window_is_the_number_of_decades():
    y = np.ones_like(X)
    y[X <= 1e3] = 2.0  # drops only between 1e3 and 1e4: seen over two decades, not over one
    assert falling(X, y, decades=2.0)
    assert not falling(X, y, decades=1.0)


def test_falling_floor_and_short_curves():
    assert falling(X, np.full_like(X, 1e-13))
    assert not falling([1e4, 2e4], [1.0, 0.1])  # no value one decade earlier
    assert not falling(X, np.r_[X[:-1] ** -1.0, np.nan])
    assert value_before(X, X, 1.0) == pytest.approx(1e4)


def test_closeness():
    assert closeness(0.01, 0.05) and not closeness(0.06, 0.05) and not closeness(float("nan"), 1.0)


def test_rate_fit_recovers_slope_and_crossing():
    y = 3.0 * X ** -0.4
    f = rate_fit(X, y, bound=1e-3)
    assert f.slope == pytest.approx(-0.4)
    assert f.crossing == pytest.approx((3.0 / 1e-3) ** (1 / 0.4), rel=1e-9)
    assert f.stability < 1e-9 and not f.reached
    assert "on track" in f.describe(1e-3)


def test_a_crossing_out_of_reach_is_not_called_on_track():
    """A gap falling like t^−0.03 crosses 1e-3 near 1e69 steps: said as out of reach, with the crossing, not "on
    track"; one crossing just inside OUT_OF_REACH still is."""
    slow = rate_fit(X, 0.2 * X ** -0.03, bound=1e-3)
    assert slow.crossing > OUT_OF_REACH
    text = slow.describe(1e-3)
    assert "on track" not in text and "too slowly" in text and f"{slow.crossing:.2g}" in text
    near = rate_fit(X, X ** -0.5, bound=OUT_OF_REACH ** -0.5 * 1.01)
    assert near.crossing < OUT_OF_REACH and "on track" in near.describe(OUT_OF_REACH ** -0.5 * 1.01)


def test_rate_fit_flat_and_reached():
    assert rate_fit(X, np.full_like(X, 0.2), bound=0.05).crossing is None
    assert rate_fit(X, X ** 0.3, bound=0.05).crossing is None
    r = rate_fit(X, X ** -1.0, bound=1.0)
    assert r.reached and r.crossing is None and "reached" in r.describe(1.0)


def test_rate_fit_uses_only_the_last_decades():
    y = np.where(X < 1e4, X ** -1.0, 1e-4 * (X / 1e4) ** -0.1)
    assert rate_fit(X, y, bound=1e-9, decades=1.0).slope == pytest.approx(-0.1)
    assert rate_fit(X, y, bound=1e-9, decades=1.0).stability < 1e-9


def test_settled_accepts_a_constant_and_rejects_growth():
    from ibverify.checks.rules import settled

    assert settled(X, np.full_like(X, 6.3))
    assert settled(X, 6.3 + 1e-3 * np.sin(X))           # settled up to jitter
    assert settled(X, 10.0 * X ** -0.2)                # falling is also bounded
    assert not settled(X, 1e-3 * X ** 0.5)             # grows ×3.2 per decade (a gap that does not fall)
    y = np.where(X >= X[-1] / 3, 1.2, 1.0)             # a late 20 % step: not settled at rise_max 0.1
    assert not settled(X, y, rise_max=0.1) and settled(X, y, rise_max=0.25)
    assert not settled([1e4, 2e4], [1.0, 1.0])         # no value one decade earlier
    assert settled(X, np.full_like(X, 1e-14))          # no floor shortcut needed: the ratio is 1


def test_falling_min_drop_decides_a_slow_decay():
    """A gap that falls 5 % per decade: falling at min_drop 0.01, not at 0.1 (the claims' threshold)."""
    y = 0.02 * X ** np.log10(0.95)
    assert falling(X, y, min_drop=0.01) and not falling(X, y, min_drop=0.1)


def test_conditioning_bound_values():
    from ibverify.checks.rules import conditioning_bound

    np.testing.assert_allclose(conditioning_bound([1e-16, 2e-7, np.inf, np.nan], 1e-12, 100),
                               [1e-12, 2e-5, 1e-12, 1e-12], rtol=1e-15)


def test_within_conditioning_each_bound_decides():
    from ibverify.checks.rules import within_conditioning

    # stable points (sensitivity ≈ 1e-16): rtol decides
    assert within_conditioning([5e-13, 2e-13], [1e-16, 0.0], 1e-12, 100).all()
    assert not within_conditioning([5e-12], [1e-16], 1e-12, 100).any()
    # unstable points: factor × sensitivity decides, in both directions
    assert within_conditioning([1e-5], [2e-7], 1e-12, 100).all()
    assert not within_conditioning([1e-5], [2e-8], 1e-12, 100).any()
    assert not within_conditioning([1e-5], [2e-7], 1e-12, 10).any()
    # pointwise, NaN never within, a non-finite sensitivity gives no allowance
    np.testing.assert_array_equal(within_conditioning([1e-13, 1e-6, np.nan], [0, 1e-7, 1.0], 1e-12, 100),
                                  [True, True, False])
    assert not within_conditioning([1e-6], [np.nan], 1e-12, 100).any()


def test_rate_fit_a_crossing_beyond_the_float_range_is_no_crossing():
    # a slope just below the flat threshold puts the crossing past 1e308 steps: no OverflowError, no crossing
    y = 0.5 * X ** -0.0011
    f = rate_fit(X, y, bound=1e-3)
    assert f.crossing is None and f.slope < -1e-3 and not f.reached


# ------------------------------------------------------------------ three-valued decisions

from ibverify.checks.rules import (CONTRADICTED, INCONCLUSIVE, SET_ASIDE, SUPPORTED, judge_gap,  # noqa: E402
                                   judge_invariant, tally, window_fit)


def test_window_fit_needs_three_points_over_the_window():
    assert window_fit(X, X ** -0.5, 1e-3, decades=2.0).slope == pytest.approx(-0.5)
    assert window_fit(X[-2:], X[-2:] ** -0.5, 1e-3, decades=0.2) is None       # two points: never a trend
    assert window_fit(X[-5:], X[-5:] ** -0.5, 1e-3, decades=2.0) is None       # spans one decade only


def test_judge_gap_supported_needs_both_halves():
    assert judge_gap(X, 0.1 * X ** -0.5, bound=1e-3).word == SUPPORTED         # 3e-4 at the horizon, falling
    # closeness alone: falling but above the bound → not yet (with the fitted crossing), never contradicted
    d = judge_gap(X, 10 * X ** -0.5, bound=1e-3)
    assert d.word == INCONCLUSIVE and "on track" in d.reason and d.fit.crossing == pytest.approx(1e8, rel=1e-6)
    # trend alone: within the bound but a stable plateau → contradicted at the final horizon
    assert judge_gap(X, np.full_like(X, 1e-4), bound=1e-3).word == CONTRADICTED
    assert judge_gap(X, np.full_like(X, 1e-4), bound=1e-3, final=False).word == INCONCLUSIVE


def test_judge_gap_plateau_and_rise_contradict_and_bumps_do_not():
    assert judge_gap(X, 0.05 * X ** 0.1, bound=1e-3).word == CONTRADICTED      # rising
    bumpy = 0.1 * X ** -0.3 * (1 + 0.3 * np.where(X >= 1e4, 1, 0))             # a bump in the last decade
    assert judge_gap(X, bumpy, bound=1e-6).word == INCONCLUSIVE
    assert judge_gap(X, np.r_[X[:-1] ** -1, np.nan], bound=1.0).word == CONTRADICTED
    assert judge_gap(X, np.full_like(X, 1e-13), bound=1e-3).word == SUPPORTED  # reached the floor


def test_judge_invariant():
    assert judge_invariant(X, np.full_like(X, 6.3), floor=1e-3).word == SUPPORTED
    assert judge_invariant(X, 1e-3 * X ** 0.5, floor=1e-6).word == CONTRADICTED    # ×3.2 per decade
    assert judge_invariant(X, 1e-3 * X ** 0.5, floor=1.0).word != CONTRADICTED     # below the floor
    assert judge_invariant(X, 1e-3 * X ** 0.2, floor=1e-6).word == INCONCLUSIVE    # ×1.6: neither


def test_tally():
    assert tally([SUPPORTED] * 3, 2) == (True, "3 supported")
    assert tally([SUPPORTED, SUPPORTED, CONTRADICTED], 1)[0] is False               # one contradiction decides
    assert tally([SUPPORTED, INCONCLUSIVE, INCONCLUSIVE], 2)[0] is None
    assert tally([SUPPORTED, SUPPORTED, SET_ASIDE], 2)[0] is True                   # set aside: neither side
    assert tally([SET_ASIDE, SET_ASIDE], 0)[0] is None                              # nothing judged


# --------------------------------------------------------------- judge_rate_invariant (gap → 0 like 1/scale)

XS = np.logspace(2, 6, 17)  # 4 decades, 4 points per decade
SQRT_T = 0.2 * np.sqrt(XS)  # ‖w‖∞ of a sign method at η ∝ t^−1/2: ×3.16 per decade


def test_rate_invariant_supports_a_gap_falling_like_one_over_the_scale():
    from ibverify.checks.rules import SUPPORTED, judge_rate_invariant
    gap = 0.5 / SQRT_T  # gap·scale = 0.5 exactly; gap 2.5e-3 at the horizon
    d = judge_rate_invariant(XS, gap, SQRT_T, 0.03)
    assert d.word == SUPPORTED
    assert d.fit.slope == pytest.approx(-0.5, abs=1e-9)


def test_rate_invariant_contradicts_a_plateau_at_the_final_horizon_only():
    from ibverify.checks.rules import CONTRADICTED, INCONCLUSIVE, judge_rate_invariant
    gap = 0.2 + 0 * XS  # no momentum / β below β_c: a flat gap, gap·scale rising ×3.16 per decade
    assert judge_rate_invariant(XS, gap, SQRT_T, 0.03).word == CONTRADICTED
    d = judge_rate_invariant(XS, gap, SQRT_T, 0.03, final=False)
    assert d.word == INCONCLUSIVE and d.reason.endswith("to be extended")


def test_rate_invariant_half_contradicts_alone_a_slow_approach_the_gap_rule_calls_falling():
    """Gap ×0.7 per decade (the measured slow approach to a small plateau): judge_gap alone supports it (within 3 %,
    falling ≥ 10 % per decade), gap·scale rises ×2.21 per decade ≥ 2: contradicted by the invariant half alone."""
    from ibverify.checks.rules import CONTRADICTED, SUPPORTED, judge_gap, judge_rate_invariant
    gap = 0.02 * (XS / XS[-1]) ** np.log10(0.7)
    assert judge_gap(XS, gap, 0.03).word == SUPPORTED
    d = judge_rate_invariant(XS, gap, SQRT_T, 0.03)
    assert d.word == CONTRADICTED and "rises ×2.21" in d.reason
    assert judge_rate_invariant(XS, gap, SQRT_T, 0.03, rise=2.5).word == "inconclusive"  # ×2.21 < 2.5: not decided


def test_rate_invariant_gap_half_contradicts_alone_when_the_scale_grows_slowly():
    """A flat gap with a scale growing ×1.5 per decade: gap·scale rises only ×1.5 (< rise = 2, the invariant half is
    undecided), but the gap half sees a stable plateau: contradicted by it alone."""
    from ibverify.checks.rules import CONTRADICTED, INCONCLUSIVE, judge_invariant, judge_rate_invariant
    scale = (XS / XS[0]) ** np.log10(1.5)
    gap = 0.1 + 0 * XS
    assert judge_invariant(XS, gap * scale, floor=1e-12).word == INCONCLUSIVE
    d = judge_rate_invariant(XS, gap, scale, 0.03)
    assert d.word == CONTRADICTED and d.reason.startswith("gap: plateau at 0.1")


def test_rate_invariant_closeness_and_growth_each_withhold_support():
    from ibverify.checks.rules import INCONCLUSIVE, judge_rate_invariant
    gap = 50.0 / SQRT_T  # settled invariant, but the gap is 0.25 > 0.03 at the horizon: on track, not supported
    d = judge_rate_invariant(XS, gap, SQRT_T, 0.03)
    assert d.word == INCONCLUSIVE and "on track" in d.reason
    frozen = 0.01 + 0 * XS  # a frozen run: gap and scale constant, gap·scale "settled" but the scale does not grow
    d = judge_rate_invariant(XS, frozen, 1.0 + 0 * XS, 0.03)
    assert d.word == "contradicted"  # the gap half: a plateau (never supported by the settled invariant)
    assert "scale not growing" in d.reason


def test_rate_invariant_reached_gap_is_supported():
    from ibverify.checks.rules import SUPPORTED, judge_rate_invariant
    assert judge_rate_invariant(XS, 0 * XS, SQRT_T, 0.03).word == SUPPORTED


def test_rate_invariant_floor_decides_a_jittery_gap_below_it():
    """gap·scale jitters ±20 % (×1.41 over the last decade: undecided) while the gap is ~3e-6: the floor decides."""
    from ibverify.checks.rules import INCONCLUSIVE, SUPPORTED, judge_rate_invariant
    jitter = np.where(np.arange(len(XS)) % 2 == 0, 1.0, 0.7)
    jitter[-1] = 1.0
    jitter[-5] = 0.71
    gap = 6e-4 * jitter / SQRT_T  # 3e-6 at the horizon
    assert judge_rate_invariant(XS, gap, SQRT_T, 0.03).word == INCONCLUSIVE
    d = judge_rate_invariant(XS, gap, SQRT_T, 0.03, floor=1e-5)
    assert d.word == SUPPORTED and d.reason.startswith("reached")


def test_all_of_supports_only_when_every_half_supports_and_any_contradiction_decides():
    from ibverify.checks.rules import Decision, all_of

    s, c, i = Decision(SUPPORTED, "s"), Decision(CONTRADICTED, "c"), Decision(INCONCLUSIVE, "i")
    assert all_of({"a": s, "b": s}).word == SUPPORTED
    assert all_of({"a": s, "b": i}).word == INCONCLUSIVE           # one half not yet: not supported
    assert all_of({"a": i, "b": c}).word == CONTRADICTED           # any half contradicting decides
    assert all_of({"a": s, "b": c}).word == CONTRADICTED
    assert all_of({"a": s, "b": Decision(SET_ASIDE, "x")}).word == INCONCLUSIVE
    d = all_of({"K": s, "slope": i})
    assert "K: supported (s)" in d.reason and "slope: inconclusive (i)" in d.reason
    with pytest.raises(ValueError):
        all_of({})


def test_judge_nondecreasing_each_side_decides_alone():
    from ibverify.checks.rules import judge_nondecreasing
    x = np.logspace(1, 4, 37)
    up = 1.0 - 1.0 / np.log(x)                                   # rising over three decades
    assert judge_nondecreasing(x, up, 1e-9).word == SUPPORTED
    dip = up.copy()
    dip[5] = dip[4] * (1 - 1e-6)                                 # one step down, early, by far more than the allowance
    d = judge_nondecreasing(x, dip, 1e-9)
    assert d.word == CONTRADICTED and "decreases" in d.reason    # at any horizon: no `final` needed
    assert judge_nondecreasing(x[:8], dip[:8], 1e-9).word == CONTRADICTED   # even on a run too short to support
    flat = np.full_like(x, 0.3)
    flat[10] *= 1 - 1e-12                                        # a wobble within the float allowance
    assert judge_nondecreasing(x, flat, 1e-9).word == SUPPORTED
    assert judge_nondecreasing(x, flat, 1e-13).word == CONTRADICTED
    assert judge_nondecreasing(x[:10], up[:10], 1e-9).word == INCONCLUSIVE   # < 2 decades of checkpoints
    assert judge_nondecreasing(x[:2], up[:2], 1e-9, decades=0.0).word == INCONCLUSIVE   # < 3 points
    bad = up.copy()
    bad[3] = np.nan                                              # non-finite values are skipped
    assert judge_nondecreasing(x, bad, 1e-9).word == SUPPORTED
