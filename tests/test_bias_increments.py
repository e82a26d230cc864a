"""The increments as a second estimate of the limit (issue 51 item 1): checks.bias.increments (θ(t) − θ(t/10) at
the run's checkpoints), stated_resolution (the iterate's δ stated, always; the increments' δ beside it as a point
estimate, with whether its measured gap lies within the iterate's δ), judge_degree1 recording both in --json, the
words and the power table's count of the increments' misses, and the rounding floor (a gap near 0 or below it floors
δ at GAP_FLOOR, never 0). Constructed inputs, each branch and boundary pinned by value."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ibverify.checks import bias, rules
from ibverify.checks.bias import Resolution, stated_resolution
from ibverify.report.bias import estimate_text, increment_misses, resolution_text

X = np.array(bias.recipes.checkpoints(100_000), float)   # 1e2 … 1e5, 4 a decade


# ------------------------------------------------------------------------------------------ increments

def test_increments_pair_each_checkpoint_with_the_one_a_decade_before():
    x = [int(s) for s in X]
    thetas = [np.array([float(s), 2.0 * s]) for s in x]
    xi, du = bias.increments(x, thetas)
    assert bias.INCREMENT_LAG == 4
    assert xi == x[4:]                                   # 1e3 … 1e5: two decades
    for t, u, i in zip(xi, du, range(4, len(x)), strict=True):
        assert u == pytest.approx([x[i] - x[i - 4], 2.0 * (x[i] - x[i - 4])])
        assert t / x[i - 4] == pytest.approx(10, rel=2e-3)   # whole steps: 1778 → 17783


def test_increments_need_a_decade_between_the_pair():
    """Checkpoints twice as dense (8 a decade): the checkpoint 4 places back is half a decade back: no increment."""
    x = [int(round(10 ** (2 + k / 8))) for k in range(25)]
    assert bias.increments(x, [np.zeros(2)] * len(x)) == ([], [])
    assert bias.increments(x, [np.zeros(2)] * len(x), lag=8)[0] == x[8:]
    # the boundary: a ratio up to 10^1.1 (12.59) is a decade, beyond it not; likewise down to 10^0.9 (7.94)
    pairs = {b: bias.increments([100, b], [np.zeros(1)] * 2, lag=1)[0] for b in (1258, 1260, 795, 793)}
    assert pairs == {1258: [1258], 1260: [], 795: [795], 793: []}


def test_increments_of_block_parameters_subtract_block_by_block():
    x = [1, 10]
    th = [{"W": np.ones((2, 2)), "u": np.zeros(2)}, {"W": 3 * np.ones((2, 2)), "u": np.ones(2)}]
    _, du = bias.increments(x, th, lag=1)
    assert du[0]["W"].tolist() == [[2.0, 2.0], [2.0, 2.0]] and du[0]["u"].tolist() == [1.0, 1.0]


def test_the_increment_cancels_the_offset_of_a_log_growing_run():
    """θ(t) = ŵ log t + ρ: the iterate's direction is off ŵ by ρ/log t, the increment θ(t) − θ(t/10) is ŵ·log 10."""
    w, rho = np.array([1.0, 0.0]), np.array([0.0, 3.0])
    th = [w * math.log(s) + rho for s in X]
    _, du = bias.increments(X, th)
    for u in du:
        assert u[1] == 0.0 and u[0] == pytest.approx(math.log(10), rel=1e-3)


# ------------------------------------------------------------------------------------------ the stated δ

E = Resolution(0.004, "extrapolated")      # an increment's δ below its measured gap 0.006


def test_no_increment_states_the_iterate():
    it = Resolution(0.02, "measured")
    s = stated_resolution(it, 0.02)
    assert (s.value, s.used, s.agree) == (0.02, "iterate", None)
    assert s.to_json()["increment"] is None
    assert s.describe() == "to within 0.02 (measured)"


def test_an_unresolved_increment_states_the_iterate():
    it = Resolution(0.02, "extrapolated")
    s = stated_resolution(it, 0.03, Resolution(math.inf, "unresolved"), 0.01)
    assert (s.value, s.used, s.agree) == (0.02, "iterate", None)
    assert s.describe() == "to within 0.02 (extrapolated)"


def test_an_unresolved_iterate_is_not_rescued_by_the_increments():
    s = stated_resolution(Resolution(math.inf, "unresolved"), 0.06, E, 0.006)
    assert (s.value, s.used, s.agree) == (math.inf, "iterate", None)
    assert s.describe() == ("unresolved; the increments estimate 0.004 (a point estimate, not a bound), "
                            "unconfirmed")


def test_a_finer_agreeing_increment_is_reported_beside_the_iterate_bound_not_stated():
    """δ_inc 0.004 < δ_it 0.01 and the increment's gap 0.006 ≤ 0.01: they agree, yet the stated δ stays 0.01 (the
    increments' δ is a point estimate: stating it gave a false support in the power table)."""
    s = stated_resolution(Resolution(0.01, "measured"), 0.01, E, 0.006)
    assert (s.value, s.used, s.agree) == (0.01, "iterate", True)
    assert s.to_json() == {"used": "iterate", "agree": True, "iterate": 0.01, "iterate_method": "measured",
                           "iterate_gap": 0.01, "increment": 0.004, "increment_method": "extrapolated",
                           "increment_gap": 0.006}
    assert s.describe() == ("to within 0.01 (measured); the increments estimate 0.004 (a point estimate, "
                            "not a bound)")


def test_agreement_boundary_is_the_iterate_delta_inclusive():
    it = Resolution(0.01, "extrapolated")
    at = stated_resolution(it, 0.02, E, 0.01)           # gap = δ_it: agree
    above = stated_resolution(it, 0.02, E, 0.0101)      # just above: disagree
    assert (at.value, at.used, at.agree) == (0.01, "iterate", True)
    assert (above.value, above.used, above.agree) == (0.01, "iterate", False)
    assert above.describe() == ("to within 0.01 (extrapolated); the increments estimate 0.004 but their measured "
                                "gap 0.0101 lies beyond the bound: the estimates disagree")


def test_a_coarser_increment_leaves_the_iterate_bound_as_it_is():
    """Iterate finer (0.003) than the increment (0.008): still 0.003, whatever the increment's gap."""
    inc = Resolution(0.008, "measured")
    bad = stated_resolution(Resolution(0.003, "extrapolated"), 0.009, inc, 0.008)
    good = stated_resolution(Resolution(0.003, "extrapolated"), 0.005, inc, 0.002)
    assert (bad.value, bad.used, bad.agree) == (0.003, "iterate", False)
    assert (good.value, good.used, good.agree) == (0.003, "iterate", True)


# ------------------------------------------------------------------------------------------ in judge_degree1

XI = X[X >= 1e3]


def _gd_like(lim_inc=0.003):
    """An iterate gap falling like 1/log t to 0.004 (δ ≈ the measured gap) and increments near 0.003."""
    it = 0.004 + 0.3 / np.log(X)
    inc = lim_inc + 0.05 * XI ** -0.5
    return it, inc


def test_judge_degree1_states_the_iterate_and_records_both():
    it, inc = _gd_like()
    scale = 5.0 * np.log(X)
    out = bias.judge_degree1(X, {"l2": it}, {"l2": scale}, {}, True, int(X[-1]), increments=(XI, {"l2": inc}))
    j = out["l2"]
    r_it = bias.resolution(X, it, floor=bias.GAP_FLOOR)
    r_inc = bias.resolution(XI, inc, bias.INCREMENT_STEP, bias.GAP_FLOOR)
    assert r_inc.method == "extrapolated" and r_inc.value < r_it.value and inc[-1] <= r_it.value
    assert j.resolution == r_it.value
    est = j.to_json()["resolution_estimates"]
    assert (est["used"], est["agree"], est["iterate"], est["increment"]) == ("iterate", True, r_it.value,
                                                                          r_inc.value)
    without = bias.judge_degree1(X, {"l2": it}, {"l2": scale}, {}, True, int(X[-1]))["l2"]
    assert without.resolution == r_it.value and without.estimates["used"] == "iterate"


def test_judge_degree1_records_a_disagreement_and_keeps_the_iterate_bound():
    """Increments extrapolating below the iterate's δ while their own gap at T is 1.2 δ_it: disagree; δ_it stated."""
    it, _ = _gd_like()
    d_it = bias.resolution(X, it, floor=bias.GAP_FLOOR).value
    inc = 1.2 * d_it * (XI / XI[-1]) ** -0.5
    assert bias.resolution(XI, inc, bias.INCREMENT_STEP, bias.GAP_FLOOR).value < d_it < inc[-1]
    out = bias.judge_degree1(X, {"l2": it}, {"l2": 5.0 * np.log(X)}, {}, True, int(X[-1]),
                             increments=(XI, {"l2": inc}))
    assert out["l2"].estimates["agree"] is False
    assert out["l2"].resolution == d_it


def test_rounding_floors_delta_and_never_states_zero():
    """Gaps at ~1e-12 or below 0 (rounding around a certified optimum) state δ = GAP_FLOOR, never 0."""
    assert bias.GAP_FLOOR == 1e-7
    fast = 0.3 * X ** -2.0                               # reaches ~3e-11 at the horizon
    neg = np.r_[0.3 * XI[:-1] ** -2.0, -2e-13]
    out = bias.judge_degree1(X, {"l2": fast}, {"l2": 5.0 * np.log(X)}, {}, True, int(X[-1]),
                             increments=(XI, {"l2": neg}))
    j = out["l2"]
    assert j.word == rules.SUPPORTED
    assert j.resolution == 1e-7 and j.estimates["iterate_method"] == "floor"
    assert j.estimates["increment_method"] == "floor" and j.estimates["increment"] == 1e-7


# ------------------------------------------------------------------------------------------ the words

POWER = {"bias_linear": {"current": {"settings": {"truth_tol": 1e-5}, "rows": [
    {"true_gap": 0.01, "estimates": {"increment": 0.009}},          # below by 1e-3: a miss
    {"true_gap": 0.01, "estimates": {"increment": 0.01 - 5e-6}},   # below by less than the tolerance: not
    {"true_gap": 0.01, "estimates": {"increment": 0.02}},
    {"true_gap": 0.5, "estimates": {"increment": None}},            # unresolved: not counted
    {"true_gap": 0.5, "estimates": None}]}}}


def _model(est, res=0.004):
    return {"model": "linear", "evidence": {"l2": {"resolution": res, "increment_estimate": est}}}


def test_the_power_table_counts_the_increments_below_the_certified_gap():
    assert increment_misses(POWER) == (1, 3)
    assert increment_misses({"bias_linear": {"baseline": POWER["bias_linear"]["current"]}}) == (1, 3)
    assert increment_misses({"runs": []}) is None
    mine = increment_misses()   # the package's table: its count, read from its rows
    assert mine is not None and 0 < mine[0] < mine[1]


def test_the_answer_states_the_bound_then_the_increments_estimate():
    assert estimate_text(None, POWER) == ""
    assert estimate_text({"value": None, "disagree": 0, "datasets": 2}, POWER) == (
        " (iterate; the increments unresolved)")
    assert estimate_text({"value": 0.0012, "disagree": 0, "datasets": 2}, POWER) == (
        " (iterate); the increments estimate 0.12 % (a point estimate, not a bound: in the power table it fell "
        "below the certified gap 1 time in 3)")
    assert estimate_text({"value": 0.0012, "disagree": 1, "datasets": 3}, POWER).endswith(
        "in 3); their measured gap exceeds the iterate's δ on 1 of 3 datasets: the estimates disagree")
    assert estimate_text({"value": 0.0012, "disagree": 0, "datasets": 1}, {"runs": []}) == (
        " (iterate); the increments estimate 0.12 % (a point estimate, not a bound)")
    assert resolution_text(_model({"value": 0.001, "disagree": 0, "datasets": 1}), "l2", POWER) == (
        "to within 0.4 % (iterate); the increments estimate 0.1 % (a point estimate, not a bound: in the power "
        "table it fell below the certified gap 1 time in 3)")


def test_increment_estimate_reads_the_datasets_model_resolution_reads():
    def j(word, inc, agree):
        return bias.Judged(word, "", 0.01, -0.5, 100, "margin_gap", resolution=0.01,
                           estimates={"used": "iterate", "increment": inc, "agree": agree})
    per = [j(rules.SUPPORTED, 0.002, True), j(rules.SUPPORTED, 0.003, False), j(rules.INCONCLUSIVE, 0.5, True)]
    assert bias.increment_estimate(per) == {"value": 0.003, "disagree": 1, "datasets": 2}
    unres = [j(rules.SUPPORTED, 0.002, True), j(rules.SUPPORTED, None, None)]
    assert bias.increment_estimate(unres) == {"value": None, "disagree": 0, "datasets": 2}
    none_sup = [j(rules.INCONCLUSIVE, 0.04, None), j(rules.SET_ASIDE, 0.001, False)]
    assert bias.increment_estimate(none_sup) == {"value": 0.04, "disagree": 0, "datasets": 1}
    assert bias.increment_estimate([bias.Judged(rules.SUPPORTED, "", 0.1, 0.0, 1, "residual")]) is None
