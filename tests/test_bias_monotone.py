"""δ is a bound on every geometry (issue 51 item 2): checks.bias.resolution gives no extrapolated δ to a gap series
that is not monotone over the decades it reads: one that has dipped and risen (or still rises) over its last decade
is unresolved; one that rose before its last decade and then fell to its horizon states the measured value widened
by the largest rise. Each branch and boundary on constructed series, pinned by value."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ibverify.checks import bias, rules

X = np.array(bias.recipes.checkpoints(100_000), float)   # 1e2 … 1e5, 4 a decade


def _through(points, x=X):
    """A series through (step, value) points, log-linear between them (constant outside)."""
    s, v = np.array(points, float).T
    return np.interp(np.log(x), np.log(s), v)


def test_the_issue_series_is_not_stated_on_track():
    """ℓ1.5 steepest descent in the ℓ1 geometry: 0.0770 (1e4), 0.0602 (3.2e4), 0.0608 (1e5) toward a true 0.0653:
    the dip and rise in the last decade leave δ unresolved (it was 0.0608, below the truth)."""
    y = _through([(100, 0.2), (1e4, 0.0770), (31623, 0.0602), (1e5, 0.0608)])
    r = bias.resolution(X, y)
    assert (r.method, r.value) == ("unresolved", math.inf)
    assert r.estimates == (pytest.approx(0.0602), pytest.approx(0.0608))


def test_the_issue_series_one_decade_on_is_unresolved():
    x = np.array(bias.recipes.checkpoints(1_000_000), float)
    y = _through([(1e3, 0.2), (1e4, 0.0770), (31623, 0.0602), (1e5, 0.0608), (1e6, 0.0633)], x)
    assert bias.resolution(x, y).value == math.inf


def test_a_rise_before_the_last_decade_widens_the_measured_gap_by_the_rise():
    """Dipped to 0.05 at 1e3, rose to 0.07 by 1e4 (+0.02), then fell to 0.04 at 1e5: δ = 0.04 + 0.02."""
    y = _through([(100, 0.2), (1e3, 0.05), (1e4, 0.07), (1e5, 0.04)])
    r = bias.resolution(X, y)
    assert (r.method, r.value) == ("widened", pytest.approx(0.06))
    assert r.estimates == (pytest.approx(0.04), pytest.approx(0.02))


def test_the_last_decade_boundary_is_one_decade():
    """The last decade is [T/10, T]: a minimum at T/10 itself (1e4) that the series then falls from is before any
    rise inside it (widened); a minimum inside it (5.6e4) that the horizon sits above is unresolved; the same
    minimum one checkpoint before T/10 (5623) is outside it, and the last decade falls (widened)."""
    y = _through([(100, 0.2), (5623, 0.05), (1e4, 0.06), (1e5, 0.03)])
    r = bias.resolution(X, y)
    assert (r.method, r.value) == ("widened", pytest.approx(0.04))
    z = _through([(100, 0.2), (1e4, 0.06), (56234, 0.03), (1e5, 0.031)])
    assert bias.resolution(X, z).value == math.inf
    w = _through([(100, 0.2), (5623, 0.03), (1e4, 0.04), (1e5, 0.035)])
    r = bias.resolution(X, w)
    assert (r.method, r.value) == ("widened", pytest.approx(0.045))


def test_a_rise_outside_the_three_decades_read_is_not_counted():
    """A rise at steps < T/1000 is outside the window: the three decades read fall monotonically and extrapolate."""
    x = np.r_[[10.0, 30.0], X]
    y = np.r_[[0.5, 0.9], 0.004 + 0.3 * X ** -0.5]
    assert bias.resolution(x, y).method == "extrapolated"
    assert bias.resolution(x, y).value == pytest.approx(bias.resolution(X, y[2:]).value, rel=1e-12)


def test_a_rise_at_the_floor_is_rounding_not_a_rise():
    """Rises ≤ floor (the series' rounding) keep it monotone; the first one above the floor does not."""
    y = 0.004 + 0.3 * X ** -0.5
    tiny = y.copy()
    tiny[5] = tiny[4] + 0.9 * rules.FLOOR   # a rise of 0.9e-12 ≤ floor: still monotone
    assert bias.resolution(X, tiny).method == "extrapolated"
    big = y.copy()
    big[5] = big[4] + 1e-9                   # a rise above the floor before the last decade: widened
    r = bias.resolution(X, big)
    assert (r.method, r.value) == ("widened", pytest.approx(y[-1] + 1e-9 + (big[4] - big[4]), rel=1e-12))
    assert bias.resolution(X, big, floor=1e-8).method == "extrapolated"   # the caller's floor decides


def test_a_horizon_above_its_last_decade_minimum_by_the_floor_only_is_not_rising():
    y = 0.004 + 0.3 * X ** -0.5
    y[4] = y[3] + 1e-6                       # a rise before the last decade
    flat_end = y.copy()
    flat_end[-1] = flat_end[-2] + 0.5 * rules.FLOOR   # above the last decade's minimum by half the floor
    assert bias.resolution(X, flat_end).method == "widened"
    up = y.copy()
    up[-1] = up[-2] + 1e-6                   # by more: rising at the horizon
    assert bias.resolution(X, up).value == math.inf


def test_largest_rise_is_the_largest_upward_excursion():
    assert bias.largest_rise([0.5, 0.2, 0.4, 0.1, 0.35]) == pytest.approx(0.25)
    assert bias.largest_rise([0.5, 0.4, 0.3]) == 0.0
    assert bias.largest_rise([0.1]) == 0.0
    assert bias.largest_rise([0.1, 0.3, 0.2, 0.5]) == pytest.approx(0.4)   # from the minimum before, not the last dip


def test_the_increments_step_reads_half_decades():
    """step = 1/2: the four checkpoints T/10^1.5, T/10, T/10^0.5, T; a power law extrapolates at its rate per step."""
    x = X[X >= 1e3]
    lim = 0.004
    y = lim + 0.3 * x ** -0.5
    r = bias.resolution(x, y, step=0.5)
    assert r.method == "extrapolated"
    T = x[-1]
    read = [lim + 0.3 * (T / 10 ** (k / 2)) ** -0.5 for k in (3, 2, 1, 0)]
    assert r.estimates == tuple(pytest.approx(v, rel=1e-5) for v in read)   # checkpoints are whole steps
    assert lim < r.value < y[-1]
    a, b, c, e = r.estimates
    assert r.value == pytest.approx(_tail(e, e - c, (c - b) / (b - a)), rel=1e-12)
    assert bias.resolution(x, y).method == "measured"     # the iterate's step (3 decades) cannot read two


def _tail(e, d3, rate):
    r = bias.RATE_SAFETY * rate
    return e + d3 * r / (1 - r)


# ------------------------------------------------------------------------------------------ plateaus (min_drop)

def test_a_plateau_has_no_delta_at_the_boundary_of_min_drop():
    """A gap falling monotonically by 9 % over its last decade is a plateau at min_drop 0.1 (no δ: it may approach its
    limit from below); by exactly 10 % it is not (y(T) = 0.9·y(T/10) is a fall of min_drop); min_drop 0 (the
    default) reads the 9 % series as before."""
    def falling_by(f):
        return _through([(100, 0.2), (1e3, 0.15), (1e4, 0.1), (1e5, 0.1 * (1 - f))])
    r = bias.resolution(X, falling_by(0.09), min_drop=0.1)
    assert (r.method, r.value) == ("plateau", math.inf)
    assert r.estimates == (pytest.approx(0.1), pytest.approx(0.091))
    at = bias.resolution(X, falling_by(0.1), min_drop=0.1)   # decrements 0.05, 0.05, 0.01: not extrapolated
    assert (at.method, at.value) == ("measured", pytest.approx(0.09, rel=1e-12))
    assert bias.resolution(X, falling_by(0.09)).method == "measured"


def test_the_plateau_is_read_over_the_last_step():
    """At step 1/2 (the increments) the last step is half a decade: a series falling 15 % a decade (7.8 % a
    half-decade) is a plateau there, and not at step 1."""
    x = X[X >= 1e3]
    y = 0.003 * (x / x[-1]) ** -0.0706
    assert 1 - y[-1] / np.interp(np.log(x[-1] / 10), np.log(x), y) == pytest.approx(0.15, abs=2e-3)
    assert bias.resolution(x, y, 0.5, min_drop=0.1).method == "plateau"
    assert bias.resolution(x, y, 1.0, min_drop=0.1).method != "plateau"


def test_a_widened_series_on_a_plateau_has_no_delta():
    """A rise before the last decade, then a fall of 4 % over it: widened at min_drop 0, a plateau at 0.1."""
    y = _through([(100, 0.2), (1e3, 0.05), (1e4, 0.07), (1e5, 0.0672)])
    assert bias.resolution(X, y).method == "widened"
    r = bias.resolution(X, y, min_drop=0.1)
    assert (r.method, r.value) == ("plateau", math.inf)


def test_the_floor_is_never_a_plateau():
    y = np.full(len(X), 5e-8)
    assert bias.resolution(X, y, floor=1e-7, min_drop=0.1).method == "floor"


def test_the_power_tables_false_support_series_is_a_plateau():
    """The increments of ℓ1.8 steepest descent in ℓ2 at the fast tier (power table, Gaussian-free set n=16, d=9):
    0.000962 at 1e6 after 0.000972 at 10^5.75, 6.6 % under the half-decade before; the certified gap is 0.000975.
    Read with PLATEAU_DROP it has no δ (it was 0.000962, "measured")."""
    x = [10000, 17783, 31623, 56234, 100000, 177828, 316228, 562341, 1000000]
    y = [0.01175035011129244, 0.007266161975378438, 0.004291925416575415, 0.002525817576799927,
         0.0016241732289353772, 0.0012102572057780536, 0.0010297619143335712, 0.0009715505391451051,
         0.0009620161280310402]
    assert bias.resolution(x, y, bias.INCREMENT_STEP, bias.GAP_FLOOR).value == pytest.approx(0.000962, rel=1e-3)
    r = bias.resolution(x, y, bias.INCREMENT_STEP, bias.GAP_FLOOR, bias.PLATEAU_DROP)
    assert (r.method, r.value) == ("plateau", math.inf)
    assert bias.PLATEAU_DROP == bias.SLOW_DROP == 0.1
