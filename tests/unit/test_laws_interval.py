"""checks.laws: a law's free parameter with its profile interval, and judge_interval's three answers (issue 45
item 4); checks.eps_switch's direction switch, reported beside the gradient switch."""

import math

import numpy as np
import pytest
from scipy import stats

from ibverify.checks import laws
from ibverify.checks.eps_switch import direction_law, direction_switch, margin_gaps
from ibverify.checks.laws import judge_interval
from ibverify.checks.rules import CONTRADICTED, INCONCLUSIVE, SUPPORTED
from ibverify.errors import IbverifyError


def _t_interval(b, resid, sxx, dof, level=0.95):
    half = stats.t.ppf(0.5 + level / 2, dof) * math.sqrt(resid @ resid / dof / sxx)
    return b - half, b + half


def test_common_slope_is_one_slope_with_one_intercept_per_group_and_its_t_interval():
    x1, x2 = np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 2.0, 4.0])
    e1, e2 = np.array([0.1, -0.2, 0.15, -0.05]), np.array([-0.1, 0.2, -0.1])
    y1, y2 = 5.0 - 1.2 * x1 + e1, -3.0 - 1.2 * x2 + e2      # the intercepts differ, the slope is shared
    fit = laws.common_slope([(x1, y1), (x2, y2)])
    xc = np.r_[x1 - x1.mean(), x2 - x2.mean()]
    yc = np.r_[y1 - y1.mean(), y2 - y2.mean()]
    b = xc @ yc / (xc @ xc)
    assert fit.estimate == pytest.approx(b, rel=1e-12)
    assert abs(fit.estimate + 1.2) < 0.15
    assert (fit.points, fit.dof) == (7, 4)              # 7 points − 2 intercepts − 1 slope
    lo, hi = _t_interval(b, yc - b * xc, xc @ xc, 4)
    assert (fit.lo, fit.hi) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))
    # a group with one distinct x carries no slope and is left out
    same = laws.common_slope([(x1, y1), (x2, y2), (np.array([7.0, 7.0]), np.array([0.0, 9.0]))])
    assert same.estimate == pytest.approx(fit.estimate, rel=1e-12) and same.dof == fit.dof


def test_origin_and_line_slopes_and_exact_data():
    x = np.array([1.0, 2.0, 3.0, 5.0])
    fit = laws.origin_slope(x, 0.5 * x + np.array([0.01, -0.02, 0.0, 0.01]))
    b = (x @ (0.5 * x + np.array([0.01, -0.02, 0.0, 0.01]))) / (x @ x)
    assert fit.estimate == pytest.approx(b) and fit.dof == 3 and fit.lo < b < fit.hi
    exact = laws.origin_slope(x, 0.5 * x)
    assert exact.estimate == pytest.approx(0.5) and exact.half_width == pytest.approx(0.0, abs=1e-12)
    line = laws.line_slope(x, 2.0 + 3.0 * x)
    assert line.estimate == pytest.approx(3.0) and line.dof == 2
    none = laws.line_slope([1.0, 1.0], [2.0, 3.0])       # no distinct x: no slope, no interval
    assert math.isnan(none.estimate) and (none.lo, none.hi) == (-math.inf, math.inf)


def test_judge_interval_each_answer():
    # contradicted: the interval misses the law's value, on either side
    assert judge_interval(1.05, 1.2, 1.0, 0.3).word == CONTRADICTED
    assert judge_interval(0.7, 0.95, 1.0, 0.3).word == CONTRADICTED
    # supported: contains it and excludes both alternatives 0.7 and 1.3
    d = judge_interval(0.95, 1.24, 1.0, 0.3)
    assert d.word == SUPPORTED and "0.7 and 1.3" in d.reason
    # inconclusive: contains it but reaches an alternative (either one, or exactly)
    assert judge_interval(0.95, 1.3, 1.0, 0.3).word == INCONCLUSIVE
    assert judge_interval(0.7, 1.1, 1.0, 0.3).word == INCONCLUSIVE
    assert judge_interval(0.72, 1.42, 1.3, 0.3).word == INCONCLUSIVE     # the law 1.3 on too few datasets
    assert judge_interval(0.95, 1.24, 1.3, 0.3).word == CONTRADICTED     # the law 1.3 on enough


def test_judge_interval_allowance():
    # the interval need only meet the band [θ0 − a, θ0 + a]
    assert judge_interval(0.9996, 0.9999, 1.0, 0.1).word == CONTRADICTED
    assert judge_interval(0.9996, 0.9999, 1.0, 0.1, 0.002).word == SUPPORTED
    assert judge_interval(0.9970, 0.9979, 1.0, 0.1, 0.002).word == CONTRADICTED
    # allowance = resolution: the interval must lie inside the band
    assert judge_interval(0.93, 0.99, 1.0, 0.1, 0.1).word == SUPPORTED
    assert judge_interval(0.88, 0.92, 1.0, 0.1, 0.1).word == INCONCLUSIVE
    assert judge_interval(0.85, 0.89, 1.0, 0.1, 0.1).word == CONTRADICTED
    # an allowance beyond the resolution admits the alternatives: nothing is supported
    assert judge_interval(0.99, 1.01, 1.0, 0.1, 0.2).word == INCONCLUSIVE
    assert judge_interval(math.nan, math.nan, 1.0, 0.1).word == INCONCLUSIVE
    with pytest.raises(IbverifyError):
        judge_interval(0.9, 1.1, 1.0, 0.0)
    with pytest.raises(IbverifyError):
        judge_interval(0.9, 1.1, 1.0, 0.1, -0.01)


def test_law_row_carries_the_fit():
    fit = laws.Fit(1.1, 0.95, 1.25, 18, 11)
    row = laws.law_row("p", fit, 1.0, 0.3, judge_interval(fit.lo, fit.hi, 1.0, 0.3), "t", scope="6 datasets")
    assert row[laws.LAW_KEY] == "p" and row["interval"] == [0.95, 1.25] and row["decision"] == SUPPORTED
    assert row["alternatives excluded"] == [pytest.approx(0.7), pytest.approx(1.3)] and row["dof"] == 11


class _Opt:
    def __init__(self, margin):
        self.margin = margin


def test_margin_gaps_are_one_minus_normalized_margin_over_the_max_margin():
    Z = np.array([[1.0, 0.0], [0.5, 1.0]])
    ws = np.array([[0.0, 0.0], [2.0, 1.0], [1.0, 1.0]])
    g = margin_gaps(Z, ws, {"linf": _Opt(0.8), "l2": _Opt(0.5)})
    assert math.isnan(g["linf"][0]) and math.isnan(g["l2"][0])
    # w = (2, 1): min margin 2 (both samples), ‖w‖∞ = 2, ‖w‖2 = √5
    assert g["linf"][1] == pytest.approx(1 - 1.0 / 0.8)
    assert g["l2"][1] == pytest.approx(1 - 2 / math.sqrt(5) / 0.5)
    assert g["linf"][2] == pytest.approx(1 - 1.0 / 0.8) and g["l2"][2] == pytest.approx(1 - 1 / math.sqrt(2) / 0.5)


def test_direction_switch_is_the_crossing_of_the_gap_curves():
    x = [10, 20, 30, 40]
    t, why = direction_switch(x, [0.1, 0.1, 0.1, 0.1], [0.4, 0.2, 0.05, 0.0])   # ℓ2 gap 0.2 → 0.05 crosses 0.1
    assert why == "seen" and t == pytest.approx(20 + 10 * 0.1 / 0.15)
    # ℓ2 ahead at first, then behind, then crosses again: the crossing after it was above counts
    t2, _ = direction_switch(x, [0.1, 0.1, 0.1, 0.1], [0.05, 0.3, 0.2, 0.0])
    assert t2 == pytest.approx(30 + 10 * 0.1 / 0.2)
    none, why = direction_switch(x, [0.1] * 4, [0.0] * 4)
    assert none is None and "never above" in why
    late, why = direction_switch(x, [0.1] * 4, [0.5, 0.4, 0.3, 0.2])
    assert late is None and "still above" in why and "40" in why


def test_direction_law_fits_or_says_no_dependence():
    eps = [1e-3, 1e-4, 1e-5, 1e-6]
    lx = [math.log(1 / e) for e in eps]
    grows = direction_law(eps, [1000 + 500 * v + d for v, d in zip(lx, [3, -2, 1, -2], strict=True)])
    assert grows["slope"] == pytest.approx(500, rel=0.01) and grows["interval"][0] > 0
    assert "steps per unit of ln(1/ε)" in grows["finding"]
    flat = direction_law(eps, [1481.0, 1483.0, 1480.0, 1482.0])
    assert "no ε-dependence" in flat["finding"] and flat["interval"][0] < 0 < flat["interval"][1]
    few = direction_law(eps, [100.0, None, None, 300.0])
    assert few["slope"] is None and "seen at 2 of 4" in few["finding"]
