"""The increments as a second estimate of the limit (issue 51 item 1): checks.bias.increments (θ(t) − θ(t/10) at
the run's checkpoints), stated_resolution (the finer δ where the two agree, the finer one's measured gap within the
coarser one's δ; the iterate's otherwise, raised to the increments' measured gap where their series does not fall),
judge_degree1 reading both series with PLATEAU_DROP and recording both in --json, the words saying which estimate
gave δ, and the rounding floor (a gap near 0 or below it floors
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
U = Resolution(math.inf, "plateau")        # increments not falling by PLATEAU_DROP over their last step


def test_no_increment_states_the_iterate():
    it = Resolution(0.02, "measured")
    s = stated_resolution(it, 0.02)
    assert (s.value, s.used, s.agree, s.raised) == (0.02, "iterate", None, False)
    assert s.to_json()["increment"] is None
    assert s.describe() == "to within 0.02 (iterate, measured)"


def test_unresolved_increments_below_the_iterate_delta_leave_it():
    """Increments unresolved with their measured gap 0.015 ≤ δ_it 0.02: the iterate's δ, not raised."""
    it = Resolution(0.02, "extrapolated")
    s = stated_resolution(it, 0.03, U, 0.015)
    assert (s.value, s.used, s.agree, s.raised) == (0.02, "iterate", None, False)
    assert s.describe() == "to within 0.02 (iterate, extrapolated)"
    nan = stated_resolution(it, 0.03, U, math.nan)      # no measured gap: nothing to raise to
    assert (nan.value, nan.raised) == (0.02, False)


def test_unresolved_increments_above_the_iterate_delta_raise_it_to_their_gap():
    """ℓp steepest descent's ℓ∞ gap at smoke: iterate δ 0.0761 (measured), increments not falling at 0.0890: the
    stated δ is 0.0890 (the certified gap was 0.0878). The boundary: a gap equal to δ_it is not above it."""
    it = Resolution(0.0761, "measured")
    s = stated_resolution(it, 0.0761, Resolution(math.inf, "unresolved"), 0.0890)
    assert (s.value, s.used, s.agree, s.raised) == (0.0890, "iterate", None, True)
    assert s.to_json()["raised"] is True and s.to_json()["iterate"] == 0.0761
    assert s.describe() == ("to within 0.089 (iterate, measured); the iterate's 0.0761 raised to the increments' "
                            "measured gap 0.089, their series not falling")
    at = stated_resolution(it, 0.0761, U, 0.0761)
    assert (at.value, at.raised) == (0.0761, False)


def test_an_unresolved_iterate_is_not_rescued_by_the_increments():
    s = stated_resolution(Resolution(math.inf, "plateau"), 0.06, E, 0.006)
    assert (s.value, s.used, s.agree, s.raised) == (math.inf, "iterate", None, False)
    assert s.describe() == "unresolved; the increments estimate 0.004, unconfirmed"
    up = stated_resolution(Resolution(math.inf, "unresolved"), 0.06, U, 0.5)
    assert (up.value, up.raised) == (math.inf, False)


def test_a_finer_agreeing_increment_is_reported_not_stated():
    """δ_inc 0.004 < δ_it 0.01 and the increments' gap 0.006 ≤ 0.01: they agree, yet the iterate's δ is stated (the
    finer-where-agreeing rule gave a false support on the power table's held-out draw); the increments' beside it."""
    s = stated_resolution(Resolution(0.01, "measured"), 0.01, E, 0.006)
    assert (s.value, s.used, s.agree, s.raised) == (0.01, "iterate", True, False)
    assert s.to_json() == {"used": "iterate", "agree": True, "raised": False, "iterate": 0.01,
                           "iterate_method": "measured", "iterate_gap": 0.01, "increment": 0.004,
                           "increment_method": "extrapolated", "increment_gap": 0.006}
    assert s.describe() == "to within 0.01 (iterate, measured); the increments estimate 0.004"


def test_agreement_boundary_is_the_coarser_delta_inclusive():
    it = Resolution(0.01, "extrapolated")
    at = stated_resolution(it, 0.02, E, 0.01)           # the finer one's gap = δ_it: agree
    above = stated_resolution(it, 0.02, E, 0.0101)      # just above: disagree, the iterate's δ stated
    assert (at.value, at.used, at.agree) == (0.01, "iterate", True)
    assert (above.value, above.used, above.agree) == (0.01, "iterate", False)
    assert above.describe() == ("to within 0.01 (iterate, extrapolated); the increments estimate 0.004: the "
                                "estimates disagree")
    nan = stated_resolution(it, 0.02, E, math.nan)      # no measured gap of the increments: not agreeing
    assert (nan.value, nan.used, nan.agree) == (0.01, "iterate", False)


def test_a_coarser_increment_leaves_the_iterate_delta():
    """Iterate finer (0.003) than the increments (0.008): 0.003 stated; they agree when the iterate's gap ≤ 0.008.
    Equal δ: the iterate's (the increments are stated only where strictly finer)."""
    inc = Resolution(0.008, "measured")
    bad = stated_resolution(Resolution(0.003, "extrapolated"), 0.009, inc, 0.002)
    good = stated_resolution(Resolution(0.003, "extrapolated"), 0.008, inc, 0.002)
    assert (bad.value, bad.used, bad.agree) == (0.003, "iterate", False)
    assert (good.value, good.used, good.agree) == (0.003, "iterate", True)
    tie = stated_resolution(Resolution(0.008, "measured"), 0.008, inc, 0.001)
    assert (tie.value, tie.used, tie.agree) == (0.008, "iterate", True)


# ------------------------------------------------------------------------------------------ in judge_degree1

XI = X[X >= 1e3]


def _gd_like(lim_inc=0.003):
    """An iterate gap falling like 1/log t to 0.004 (18 % over its last decade) and increments falling to lim_inc
    (31 % over their last half-decade at lim_inc 0.003: not a plateau)."""
    it = 0.004 + 0.3 / np.log(X)
    inc = lim_inc + 0.5 * XI ** -0.5
    return it, inc


def test_judge_degree1_states_the_iterate_and_records_both():
    it, inc = _gd_like()
    scale = 5.0 * np.log(X)
    out = bias.judge_degree1(X, {"l2": it}, {"l2": scale}, {}, True, int(X[-1]), increments=(XI, {"l2": inc}))
    j = out["l2"]
    r_it = bias.resolution(X, it, floor=bias.GAP_FLOOR, min_drop=bias.PLATEAU_DROP)
    r_inc = bias.resolution(XI, inc, bias.INCREMENT_STEP, bias.GAP_FLOOR, bias.PLATEAU_DROP)
    assert r_inc.method == "extrapolated" and r_inc.value < r_it.value and inc[-1] <= r_it.value
    assert j.resolution == r_it.value
    est = j.to_json()["resolution_estimates"]
    assert (est["used"], est["agree"], est["iterate"], est["increment"]) == ("iterate", True, r_it.value,
                                                                          r_inc.value)
    assert j.increment_curve == ([int(s) for s in XI], inc.tolist())
    without = bias.judge_degree1(X, {"l2": it}, {"l2": scale}, {}, True, int(X[-1]))["l2"]
    assert without.resolution == r_it.value and without.estimates["used"] == "iterate"
    assert without.increment_curve is None


def test_judge_degree1_reads_both_series_with_the_plateau_drop():
    """Increments falling 7 % over their last half-decade (15 % a decade): a plateau at their step, so unresolved, and
    their gap below δ_it leaves the iterate's δ; the same series read at min_drop 0 extrapolates below 0.003."""
    it, _ = _gd_like()
    inc = 0.003 * (XI / XI[-1]) ** -0.065
    r0 = bias.resolution(XI, inc, bias.INCREMENT_STEP, bias.GAP_FLOOR)
    assert r0.method == "extrapolated" and r0.value < 0.003
    out = bias.judge_degree1(X, {"l2": it}, {"l2": 5.0 * np.log(X)}, {}, True, int(X[-1]),
                             increments=(XI, {"l2": inc}))
    e = out["l2"].estimates
    assert (e["used"], e["increment"], e["increment_method"]) == ("iterate", None, "plateau")
    assert out["l2"].resolution == bias.resolution(X, it, floor=bias.GAP_FLOOR).value


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
    held = {"bias_linear": {**POWER["bias_linear"], "held_out": {"rows": [
        {"true_gap": 0.0034, "estimates": {"increment": 0.0030}},   # the held-out draw's rows count too
        {"true_gap": 0.2, "estimates": {"increment": 0.3}}]}}}
    assert increment_misses(held) == (2, 5)
    mine = increment_misses()   # the package's table: the held-out draw has the increments' false support
    assert mine is not None and 1 <= mine[0] < mine[1]


def test_the_answer_says_which_estimate_gave_delta():
    assert estimate_text(None, POWER) == ""
    inc = {"used": "increment", "increments": 2, "value": 0.0012, "iterate": 0.0031, "disagree": 0, "raised": 0,
           "datasets": 2}
    assert estimate_text(inc, POWER) == " (increments, agreeing with the iterate's bound; the iterate alone 0.31 %)"
    assert estimate_text({**inc, "iterate": None}, POWER) == " (increments, agreeing with the iterate's bound)"
    both = {**inc, "used": "both", "increments": 1}
    assert estimate_text(both, POWER) == (" (increments on 1 of 2 datasets, agreeing with the iterate's bound there, "
                                          "the iterate's on the rest; the iterate alone 0.31 %)")
    it = {**inc, "used": "iterate", "increments": 0}
    assert estimate_text(it, POWER) == (
        " (iterate); the increments estimate 0.12 % (a point estimate, not a bound: in the power table it fell "
        "below the certified gap 1 time in 3)")
    assert estimate_text({**it, "datasets": 1}, {"runs": []}) == (
        " (iterate); the increments estimate 0.12 % (a point estimate, not a bound)")
    assert estimate_text({**it, "value": None}, POWER) == " (iterate; the increments unresolved)"
    assert estimate_text({**it, "disagree": 1, "datasets": 3}, POWER).endswith(
        "in 3); the estimates disagree on 1 of 3 datasets (the iterate's δ stated there)")
    assert estimate_text({**it, "value": None, "raised": 1, "datasets": 1}, POWER) == (
        " (iterate; the increments unresolved); the iterate's δ raised to the increments' measured gap on 1 of 1 "
        "dataset (their series not falling)")
    assert resolution_text(_model(inc, 0.0012), "l2", POWER) == (
        "to within 0.12 % (increments, agreeing with the iterate's bound; the iterate alone 0.31 %)")
    assert resolution_text(_model(it), "l2", POWER) == (
        "to within 0.4 % (iterate); the increments estimate 0.12 % (a point estimate, not a bound: in the power "
        "table it fell below the certified gap 1 time in 3)")


def test_increment_estimate_reads_the_datasets_model_resolution_reads():
    def j(word, inc, agree, used="iterate", it=0.01, raised=False):
        return bias.Judged(word, "", 0.01, -0.5, 100, "margin_gap", resolution=0.01,
                           estimates={"used": used, "increment": inc, "agree": agree, "iterate": it,
                                      "raised": raised})
    per = [j(rules.SUPPORTED, 0.002, True, "increment"), j(rules.SUPPORTED, 0.003, False, it=0.02),
           j(rules.INCONCLUSIVE, 0.5, True, it=0.9)]
    assert bias.increment_estimate(per) == {"used": "both", "increments": 1, "value": 0.003, "iterate": 0.02,
                                            "disagree": 1, "raised": 0, "datasets": 2}
    every = [j(rules.SUPPORTED, 0.002, True, "increment"), j(rules.SUPPORTED, 0.001, True, "increment")]
    assert bias.increment_estimate(every)["used"] == "increment"
    unres = [j(rules.SUPPORTED, 0.002, True), j(rules.SUPPORTED, None, None, it=None, raised=True)]
    assert bias.increment_estimate(unres) == {"used": "iterate", "increments": 0, "value": None, "iterate": None,
                                              "disagree": 0, "raised": 1, "datasets": 2}
    none_sup = [j(rules.INCONCLUSIVE, 0.04, None), j(rules.SET_ASIDE, 0.001, False)]
    assert bias.increment_estimate(none_sup) == {"used": "iterate", "increments": 0, "value": 0.04, "iterate": 0.01,
                                                 "disagree": 0, "raised": 0, "datasets": 1}
    assert bias.increment_estimate([bias.Judged(rules.SUPPORTED, "", 0.1, 0.0, 1, "residual")]) is None
