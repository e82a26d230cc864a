"""Each branch of the evidence rules (ibverify.checks.rules) on its own, with constructed series whose answer is known
by hand; plus the rule-level quantities of checks that were untested (issue 33, item 6): the window of two decades,
the invariant K = (1 − cos)·‖w‖², and the β_c bisection's count of undecided runs."""

import math

import numpy as np
import pytest

from ibverify.checks.rules import (CONTRADICTED, INCONCLUSIVE, SET_ASIDE, SUPPORTED, approaching, judge_gap,
                                   judge_invariant, judge_nondecreasing, judge_rate_invariant, judge_separation, tally,
                                   window_fit)

X = np.logspace(2, 5, 13)       # 3 decades, 4 points per decade
XS = np.logspace(2, 6, 17)      # 4 decades
X15 = np.logspace(3.5, 5, 7)    # 1.5 decades only: less than the two every trend needs


# ------------------------------------------------------------------ judge_gap: a gap within its bound but not falling

def test_a_rising_gap_within_its_bound_is_contradicted_at_the_final_horizon_never_supported():
    y = 1e-5 * X ** 0.1                              # 3.2e-5 ≤ 1e-3 at the horizon, rising ×1.26 per decade
    d = judge_gap(X, y, 1e-3)
    assert d.word == CONTRADICTED and d.reason.startswith("plateau at 3.16e-05")
    assert d.fit.slope == pytest.approx(0.1)
    assert judge_gap(X, y, 1e-3, final=False).word == INCONCLUSIVE


def test_a_rising_fit_with_a_last_decade_drop_is_not_supported():
    """The fitted slope half alone: the last decade drops by 50 % but the fit over two decades rises."""
    y = 1e-5 * X ** 0.3
    y[-1] = 0.5 * y[-5]
    d = judge_gap(X, y, 1e-3)
    assert d.word == INCONCLUSIVE and "not falling by 10% in the last decade" in d.reason
    assert d.fit.slope == pytest.approx(0.1397, abs=1e-3)


def test_a_falling_fit_with_a_flat_last_decade_is_not_supported():
    """The last-decade half alone: the fit over two decades falls (slope −0.5), the last decade does not drop."""
    y = np.where(X <= 1e4, X ** -1.0, 1e-4)
    d = judge_gap(X, y, 1e-3)
    assert d.word == INCONCLUSIVE and d.fit.slope == pytest.approx(-0.5)


def test_a_gap_above_the_bound_on_a_plateau_is_contradicted_not_on_track():
    assert judge_gap(X, np.full_like(X, 0.2), 1e-3).word == CONTRADICTED
    assert judge_gap(X, np.full_like(X, 0.2), 1e-3, final=False).word == INCONCLUSIVE


def test_the_floor_decides_a_gap_that_no_longer_falls():
    y = np.full_like(X, 5e-7)
    assert judge_gap(X, y, 1e-3).word == CONTRADICTED
    assert judge_gap(X, y, 1e-3, floor=1e-6).word == SUPPORTED


def test_a_non_finite_horizon_contradicts_only_at_the_final_horizon():
    y = np.r_[X[:-1] ** -1.0, np.inf]
    assert judge_gap(X, y, 1.0).word == CONTRADICTED
    assert judge_gap(X, y, 1.0, final=False).word == INCONCLUSIVE


# ------------------------------------------------------------------ two decades, never one (nor 1.5)

def test_a_series_over_one_and_a_half_decades_is_decided_by_no_trend():
    assert window_fit(X15, X15 ** -0.5, 1e-3) is None
    assert judge_gap(X15, 0.1 * X15 ** -0.5, 1e-3).word == INCONCLUSIVE         # falls, within: still not supported
    assert judge_gap(X15, np.full_like(X15, 1e-4), 1e-3).word == INCONCLUSIVE   # a plateau: not contradicted
    assert judge_gap(X15, np.full_like(X15, 1e-4), 1e-3).fit is None
    assert judge_invariant(X15, 1e-3 * X15 ** 0.5, floor=1e-9).word == INCONCLUSIVE
    assert judge_nondecreasing(X15, np.linspace(0, 1, 7), 1e-9).word == INCONCLUSIVE
    assert not approaching(X15, 0.1 * X15 ** -1.0)
    d, _ = judge_separation(X15, np.full_like(X15, 1e-2), {"b": np.full_like(X15, 5e-3)})
    assert d.word == INCONCLUSIVE
    assert judge_rate_invariant(X15, np.full_like(X15, 0.2), np.sqrt(X15), 0.03).word == INCONCLUSIVE
    # two decades exactly are enough
    X2 = np.logspace(3, 5, 9)
    assert judge_gap(X2, 0.1 * X2 ** -0.5, 1e-3).word == SUPPORTED


def test_the_window_fit_spans_two_decades_not_the_last_one():
    """Slope −1 in the first decade of the window, −0.2 in the last: the fit over both is between them."""
    y = np.where(X <= 1e4, X ** -1.0, 1e-4 * (X / 1e4) ** -0.2)
    f = window_fit(X, y, 1e-9, decades=2.0)
    one = window_fit(X, y, 1e-9, decades=1.0)
    assert one.slope == pytest.approx(-0.2)
    assert f.slope == pytest.approx(-0.6)                       # the symmetric window: the mean slope


def test_the_direction_decision_uses_two_decades_even_when_asked_for_one():
    from ibverify.checks.per_sample import decide_direction

    ctx = _ctx("baek.control.gr-inc-adam-linf")
    d, _, _ = decide_direction(X15, 1e-4 * (X15 / X15[0]) ** -0.5, None, 1e-3, "falling", 1.0, ctx, True)
    assert d.word == INCONCLUSIVE and d.fit is None


# ------------------------------------------------------------------ judge_separation, each branch

def test_separation_supports_a_falling_own_residual_with_a_falling_ratio():
    d, rival = judge_separation(XS, XS ** -0.5, {"a": np.full_like(XS, 2.0), "b": np.full_like(XS, 1.0)})
    assert d.word == SUPPORTED and rival == "b"


def test_separation_guard_withholds_support_from_a_ratio_not_small_enough():
    own, other = XS ** -0.5, {"b": XS ** -0.4}          # ratio 0.25 at the horizon, falling
    assert judge_separation(XS, own, other)[0].word == SUPPORTED
    assert judge_separation(XS, own, other, guard=5.0)[0].word == INCONCLUSIVE


def test_separation_a_rival_at_or_below_contradicts_at_any_horizon():
    d, rival = judge_separation(XS, np.full_like(XS, 1e-2), {"b": np.full_like(XS, 5e-3)}, final=False)
    assert d.word == CONTRADICTED and rival == "b" and "at or below the own geometry" in d.reason
    d, _ = judge_separation(XS, np.full_like(XS, 1e-2), {"b": np.full_like(XS, 1e-2)})   # ratio exactly 1
    assert d.word == CONTRADICTED


def test_separation_a_rival_below_but_receding_does_not_contradict():
    d, _ = judge_separation(XS, 10 * XS ** -0.5, {"b": XS ** -0.4})   # ratio 2.5 at the horizon but falling
    assert d.word == INCONCLUSIVE


def test_separation_own_plateau_contradicts_only_at_the_final_horizon_and_without_approach():
    own, other = np.full_like(XS, 1e-3), {"b": np.full_like(XS, 1e-2)}   # ratio 0.1, flat
    d, _ = judge_separation(XS, own, other)
    assert d.word == CONTRADICTED and "stable plateau" in d.reason
    assert judge_separation(XS, own, other, final=False)[0].word == INCONCLUSIVE
    # the KKT approach: a falling gap keeps it undecided; a flat one, or none found, contradicts
    d, _ = judge_separation(XS, own, other, approach=lambda: (XS ** -0.5, "a KKT point"))
    assert d.word == INCONCLUSIVE and "approaches a KKT point" in d.reason
    d, _ = judge_separation(XS, own, other, approach=lambda: (np.full_like(XS, 0.1), "a KKT point"))
    assert d.word == CONTRADICTED and "not approached" in d.reason
    d, _ = judge_separation(XS, own, other, approach=lambda: None)
    assert d.word == CONTRADICTED and "no certified KKT point" in d.reason


def test_separation_own_plateau_with_receding_rivals_is_not_contradicted():
    d, _ = judge_separation(XS, np.full_like(XS, 1e-3), {"b": 1e-2 * XS ** 0.2})
    assert d.word == INCONCLUSIVE


def test_separation_without_rivals_is_the_gap_rule():
    d, rival = judge_separation(XS, XS ** -0.5, {}, bound=0.05)
    assert d.word == SUPPORTED and rival == ""
    assert judge_separation(XS, np.full_like(XS, 1e-3), {}, bound=0.05)[0].word == CONTRADICTED


# ------------------------------------------------------------------ judge_invariant and judge_rate_invariant

def test_invariant_contradiction_needs_the_rise_in_each_of_the_decades():
    y = np.where(X >= 1e5, 3.0, 1.0)                   # ×3 in the last decade only, ×1 in the one before
    d = judge_invariant(X, y, floor=1e-9)
    assert d.word == INCONCLUSIVE
    assert judge_invariant(X, 1e-3 * X ** 0.4, floor=1e-9).word == CONTRADICTED   # ×2.51 per decade
    assert judge_invariant(X, 1e-3 * X ** 0.4, floor=1e-9, rise=3.0).word == INCONCLUSIVE


def test_invariant_settles_on_the_last_decade_only():
    y = np.where(X <= 1e4, X / 1e4, 1.0)               # rose ×10 per decade, then flat over the last one
    assert judge_invariant(X, y, floor=1e-9).word == SUPPORTED
    assert judge_invariant(X, np.where(X >= 1e5, 1.2, 1.0), floor=1e-9).word == INCONCLUSIVE   # +20 % > rise_max
    assert judge_invariant(X, np.where(X >= 1e5, 1.2, 1.0), floor=1e-9, rise_max=0.25).word == SUPPORTED


def test_rate_invariant_needs_a_growing_scale_to_support():
    gap = 1e-2 * (XS / XS[0]) ** -0.5                  # within 0.03 and falling; gap·scale falls too (settled)
    d = judge_rate_invariant(XS, gap, np.full_like(XS, 2.0), 0.03)
    assert d.word == INCONCLUSIVE and "scale not growing" in d.reason
    assert judge_rate_invariant(XS, gap, (XS / XS[0]) ** 0.5, 0.03).word == SUPPORTED


# ------------------------------------------------------------------ tally and nondecreasing

def test_tally_min_supported_boundary_and_no_decision():
    assert tally([SUPPORTED] * 2, 3) == (None, "2 supported (holds needs ≥ 3 supported)")
    assert tally([SUPPORTED] * 3, 3)[0] is True
    assert tally([SUPPORTED], 0)[0] is True                       # at least one, whatever min_supported
    assert tally([INCONCLUSIVE] * 4, 1)[0] is None
    assert tally([], 1)[0] is None
    assert tally([CONTRADICTED, SET_ASIDE, INCONCLUSIVE], 5) == (False, "1 contradicted, 1 inconclusive, 1 set aside")
    assert tally([SUPPORTED, SET_ASIDE, SET_ASIDE], 2)[0] is None  # set aside never counts as supported
    # the set-aside share cap (1/3 of the drawn examples), from the words and from the check's own rejects
    assert tally([SUPPORTED] * 2 + [SET_ASIDE], 2)[0] is True     # 1 of 3: at the cap
    held, text = tally([SUPPORTED] * 4 + [SET_ASIDE] * 3, 2)
    assert held is None and "3 of 7 drawn examples set aside" in text
    assert tally([SUPPORTED] * 4, 2, set_aside=2)[0] is True
    assert tally([SUPPORTED] * 4, 2, set_aside=3)[0] is None


def test_nondecreasing_a_rise_within_the_allowance_and_the_point_count():
    x = np.logspace(0, 3, 4)
    assert judge_nondecreasing(x, [1.0, 2.0, 3.0, 4.0], 0.0, decades=3.0).word == SUPPORTED
    assert judge_nondecreasing(x[::3], [1.0, 4.0], 0.0, decades=3.0).word == INCONCLUSIVE    # 2 points: too few
    d = judge_nondecreasing(x, [1.0, 2.0, 1.99, 4.0], 0.01, decades=3.0)                      # −0.5 % ≤ 1 %
    assert d.word == SUPPORTED
    d = judge_nondecreasing(x, [1.0, 2.0, 1.9, 4.0], 0.01, decades=3.0)                       # −5 % > 1 %
    assert d.word == CONTRADICTED and "relative -0.05" in d.reason


# ------------------------------------------------------------------ K = (1 − cos)·‖w‖² by hand

def test_soudry_K_is_one_minus_cos_times_the_squared_norm():
    from ibverify.checks.classic import soudry_series

    Z = np.array([[1.0, 0.0], [0.0, 1.0]])            # ŵ2 = (1, 1)/√2, γ2 = 1/√2
    ws = np.array([[3.0, 1.0], [2.0, 2.0], [10.0, 1.0]])
    ev = soudry_series(Z, ws, [1.0, 10.0, 100.0])
    u = np.array([1.0, 1.0]) / math.sqrt(2)
    hand = [10 - 4 / math.sqrt(2) * math.sqrt(10), 0.0, 101 - 11 / math.sqrt(2) * math.sqrt(101)]
    np.testing.assert_allclose(ev["K"], hand, atol=1e-12)
    np.testing.assert_allclose(ev["gap"], 1 - ws @ u / np.linalg.norm(ws, axis=1), atol=1e-15)
    assert ev["gamma_l2"] == pytest.approx(1 / math.sqrt(2))


def test_direction_invariant_multiplies_the_gap_by_the_squared_norm():
    """gap ∝ t^−0.9 and ‖w‖² ∝ t^1.4: K = gap·‖w‖² rises ×3.16 per decade (contradicted); gap·‖w‖ would fall."""
    from ibverify.checks.per_sample import decide_direction

    w2 = XS ** 1.4
    gap = XS ** -0.9
    d, close, trend = decide_direction(XS, gap, w2, 1e-3, "invariant", 1.0, _ctx("baek.gr-inc-adam-l2"), True)
    assert close and d.word == CONTRADICTED and "K = (1 − cos)·‖w‖² rises ×3.16" in d.reason


# ------------------------------------------------------------------ β_c bisection: an undecided run does not converge

def test_the_plateau_law_counts_an_undecided_run_as_not_converging(monkeypatch):
    """signum_converges replaced by a sharp threshold C_c = 0.4 (1 − β = C/m): supported below it, undecided above.
    Counted as not converging, the undecided runs put C_c inside each bracket; counted as converging, every bracket
    would be censored 'above'."""
    from ibverify import profiles
    from ibverify.checks import paper1_laws as P

    profiles.load("ci")
    from ibverify.recipes import DataRecipe

    monkeypatch.setattr(P, "discriminating_gr", lambda n, d, seed, store=None: DataRecipe.of_arrays(np.zeros((n, d))))
    n = 12

    def fake(Z, p, tol, b, beta):
        m = n / b
        word = SUPPORTED if (1 - beta) * m <= 0.4 else INCONCLUSIVE
        return {"word": word, "steps": 1, "gap": 0.1, "inv": 1.0, "inv ×/decade": 1.0, "why": "fake"}

    monkeypatch.setattr(P, "signum_converges", fake)
    ctx = _ctx("baek.beyond.signum-plateau-law", tier="smoke")
    out = P.signum_plateau_law(ctx)
    th = [r for r in out.table if r.get("kind") == "threshold"]
    assert len(th) == 3 * len(ctx.params["data_seeds"]) and all(not r["censored"] for r in th)   # m = 12, 4, 2 each
    assert all(r["C_lo"] <= 0.4 <= r["C_hi"] for r in th)
    assert out.figures["undecided_runs"] > 0 and out.figures["censored"] == 0
    assert out.figures["p_pooled"] == pytest.approx(1.0, abs=0.3)       # C_c the same for every m: 1 − β_c ∝ 1/m
    assert out.figures["p_min"] <= 1.0 <= out.figures["p_max"]          # the brackets' exponent range holds the law
    assert out.figures["C_spread"] < 1.5                                 # the law 1 − β_c = C/m, one C per dataset
    # on this noiseless threshold the midpoints' interval excludes 1 by their own bias ([0.991, 0.997] when measured);
    # joined to the slopes the brackets allow (which hold 1: the true thresholds lie inside them), the exact law holds
    f = out.figures
    assert f["p_midpoints_hi"] < 1.0, "the case no longer exercises the midpoints' bias"
    assert f["p_brackets_lo"] <= 1.0 <= f["p_brackets_hi"]
    assert (f["p_pooled_lo"], f["p_pooled_hi"]) == (min(f["p_midpoints_lo"], f["p_brackets_lo"]),
                                                     max(f["p_midpoints_hi"], f["p_brackets_hi"]))
    law = out.table[0]
    assert law["decision"] == SUPPORTED and out.holds is True, law


def test_pooled_slope_range_takes_the_extreme_vertices():
    """Two groups, one intercept each: the slope's extremes over the boxes equal those found by trying every vertex."""
    import itertools

    from ibverify.checks.laws import common_slope
    from ibverify.checks.paper1_laws import pooled_slope_range

    g = [(np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.9, 2.1]), np.array([0.2, 1.3, 2.2])),
         (np.array([0.0, 2.0]), np.array([5.0, 6.0]), np.array([5.5, 6.1])),
         (np.array([3.0, 3.0]), np.array([-9.0, 9.0]), np.array([-8.0, 10.0]))]   # one distinct x: drops out
    lo, hi = pooled_slope_range(g)
    slopes = []
    for bits in itertools.product((0, 1), repeat=5):
        ys = [np.where(np.array(bits[:3]) == 1, g[0][2], g[0][1]), np.where(np.array(bits[3:]) == 1, g[1][2], g[1][1])]
        slopes.append(common_slope([(g[0][0], ys[0]), (g[1][0], ys[1]), (g[2][0], g[2][1])]).estimate)
    assert lo == pytest.approx(min(slopes), abs=1e-12) and hi == pytest.approx(max(slopes), abs=1e-12)
    assert lo < hi
    assert all(math.isnan(v) for v in pooled_slope_range([g[2]]))


def test_bracketed_interval_joins_the_two_ranges():
    from ibverify.checks.laws import Fit
    from ibverify.checks.paper1_laws import bracketed_interval

    fit = Fit(0.994, 0.991, 0.997, 30, 23, 0.95)
    assert (bracketed_interval(fit, 0.92, 1.07).lo, bracketed_interval(fit, 0.92, 1.07).hi) == (0.92, 1.07)
    assert (bracketed_interval(fit, 0.993, 0.995).lo, bracketed_interval(fit, 0.993, 0.995).hi) == (0.991, 0.997)
    assert (bracketed_interval(fit, 0.95, 0.996).lo, bracketed_interval(fit, 0.95, 0.996).hi) == (0.95, 0.997)
    assert (bracketed_interval(fit, 0.993, 1.2).lo, bracketed_interval(fit, 0.993, 1.2).hi) == (0.991, 1.2)
    kept = bracketed_interval(fit, math.nan, math.nan)
    assert (kept.lo, kept.hi, kept.estimate) == (0.991, 0.997, 0.994)


def _ctx(claim_id, tier="fast"):
    from ibverify.claims import CheckContext, load_registry

    c = {c.id: c for c in load_registry()}[claim_id]
    return CheckContext(c, tier, c.params_for(tier))
