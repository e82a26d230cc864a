"""The increments as a second estimate of the limit (issue 51 item 1): checks.bias.increments (θ(t) − θ(t/10) at
the run's checkpoints), stated_resolution (the finer estimate where the two agree within the coarser one's δ, the
coarser widened where they disagree, said so), judge_degree1 stating it with both estimates in --json, and the
rounding floor (a gap near 0 or below it floors δ at GAP_FLOOR, never 0). Constructed inputs, each branch and
boundary pinned by value."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ibverify.checks import bias, rules
from ibverify.checks.bias import Resolution, stated_resolution
from ibverify.report.bias import resolution_text, source_text

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


def test_an_unresolved_increment_states_the_iterate():
    it = Resolution(0.02, "extrapolated")
    s = stated_resolution(it, 0.03, Resolution(math.inf, "unresolved"), 0.01)
    assert (s.value, s.used, s.agree) == (0.02, "iterate", None)
    assert "increments unresolved" in s.describe()


def test_an_unresolved_iterate_is_not_rescued_by_the_increments():
    s = stated_resolution(Resolution(math.inf, "unresolved"), 0.06, E, 0.006)
    assert (s.value, s.used, s.agree) == (math.inf, "iterate", None)
    assert s.describe() == "unresolved; the increments alone allow 0.004, unconfirmed"


def test_the_finer_increment_is_used_where_its_gap_is_within_the_iterate_delta():
    """δ_inc 0.004 < δ_it 0.01 and the increment's gap 0.006 ≤ 0.01: agree, 0.004. (Compared with its own δ 0.004
    instead, 0.006 would disagree: the coarser one's δ is the test.)"""
    s = stated_resolution(Resolution(0.01, "measured"), 0.01, E, 0.006)
    assert (s.value, s.used, s.agree) == (0.004, "increment", True)
    assert s.to_json() == {"used": "increment", "agree": True, "iterate": 0.01, "iterate_method": "measured",
                           "iterate_gap": 0.01, "increment": 0.004, "increment_method": "extrapolated",
                           "increment_gap": 0.006}
    assert s.describe() == "to within 0.004 (extrapolated, from the increment; the other estimate 0.01 agrees)"


def test_agreement_boundary_is_the_coarser_delta_inclusive():
    it = Resolution(0.01, "extrapolated")
    at = stated_resolution(it, 0.02, E, 0.01)           # gap = δ_coarse: agree
    above = stated_resolution(it, 0.02, E, 0.0101)      # just above: disagree
    assert (at.value, at.used, at.agree) == (0.004, "increment", True)
    assert (above.value, above.used, above.agree) == (pytest.approx(0.0101), "both", False)
    assert above.describe().startswith("to within 0.0101: the estimates disagree (iterate δ 0.01, gap 0.02; "
                                       "increment δ 0.004, gap 0.0101)")


def test_disagreement_states_the_coarser_delta_when_it_is_the_larger():
    """Iterate finer (0.003, its gap 0.009) than the increment (0.008): its gap exceeds 0.008 → disagree, widened to
    the finer's gap 0.009; with its gap 0.005 it agrees and the iterate's 0.003 is stated."""
    inc = Resolution(0.008, "measured")
    bad = stated_resolution(Resolution(0.003, "extrapolated"), 0.009, inc, 0.008)
    good = stated_resolution(Resolution(0.003, "extrapolated"), 0.005, inc, 0.008)
    assert (bad.value, bad.used, bad.agree) == (0.009, "both", False)
    assert (good.value, good.used, good.agree) == (0.003, "iterate", True)


def test_a_tie_uses_the_iterate():
    s = stated_resolution(Resolution(0.005, "measured"), 0.005, Resolution(0.005, "measured"), 0.005)
    assert (s.value, s.used, s.agree) == (0.005, "iterate", True)


# ------------------------------------------------------------------------------------------ in judge_degree1

XI = X[X >= 1e3]


def _gd_like(lim_inc=0.003):
    """An iterate gap falling like 1/log t to 0.004 (δ ≈ the measured gap) and increments near 0.003."""
    it = 0.004 + 0.3 / np.log(X)
    inc = lim_inc + 0.05 * XI ** -0.5
    return it, inc


def test_judge_degree1_states_the_agreeing_increment_and_records_both():
    it, inc = _gd_like()
    scale = 5.0 * np.log(X)
    out = bias.judge_degree1(X, {"l2": it}, {"l2": scale}, {}, True, int(X[-1]), increments=(XI, {"l2": inc}))
    j = out["l2"]
    r_it = bias.resolution(X, it, floor=bias.GAP_FLOOR)
    r_inc = bias.resolution(XI, inc, bias.INCREMENT_STEP, bias.GAP_FLOOR)
    assert r_inc.method == "extrapolated" and r_inc.value < r_it.value and inc[-1] <= r_it.value
    assert j.resolution == r_inc.value
    est = j.to_json()["resolution_estimates"]
    assert (est["used"], est["agree"], est["iterate"], est["increment"]) == ("increment", True, r_it.value,
                                                                          r_inc.value)
    without = bias.judge_degree1(X, {"l2": it}, {"l2": scale}, {}, True, int(X[-1]))["l2"]
    assert without.resolution == r_it.value and without.estimates["used"] == "iterate"


def test_judge_degree1_widens_where_the_estimates_disagree():
    """Increments extrapolating below the iterate's δ while their own gap at T is 1.2 δ_it: disagree, widened."""
    it, _ = _gd_like()
    d_it = bias.resolution(X, it, floor=bias.GAP_FLOOR).value
    inc = 1.2 * d_it * (XI / XI[-1]) ** -0.5
    assert bias.resolution(XI, inc, bias.INCREMENT_STEP, bias.GAP_FLOOR).value < d_it < inc[-1]
    out = bias.judge_degree1(X, {"l2": it}, {"l2": 5.0 * np.log(X)}, {}, True, int(X[-1]),
                             increments=(XI, {"l2": inc}))
    assert out["l2"].estimates["agree"] is False
    assert out["l2"].resolution == pytest.approx(1.2 * d_it, rel=1e-12)


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

def _model(src, res=0.004):
    return {"model": "linear", "evidence": {"l2": {"resolution": res, "resolution_sources": src}}}


def test_the_answer_says_which_estimate_and_any_disagreement():
    assert source_text(None) == ""
    assert source_text({"iterate": 0, "increment": 3, "both": 0, "datasets": 3}) == " (increments)"
    assert source_text({"iterate": 1, "increment": 2, "both": 0, "datasets": 3}) == " (increments and iterate)"
    assert source_text({"iterate": 0, "increment": 2, "both": 1, "datasets": 3}) == (
        " (increments) — the estimates disagree on 1 of 3 datasets (the coarser δ widened)")
    assert resolution_text(_model({"iterate": 0, "increment": 1, "both": 0, "datasets": 1}), "l2") == (
        "to within 0.4 % (increments)")


def test_resolution_sources_count_the_datasets_model_resolution_reads():
    def j(word, used):
        return bias.Judged(word, "", 0.01, -0.5, 100, "margin_gap", resolution=0.01,
                           estimates={"used": used})
    per = [j(rules.SUPPORTED, "increment"), j(rules.SUPPORTED, "both"), j(rules.INCONCLUSIVE, "iterate")]
    assert bias.resolution_sources(per) == {"iterate": 0, "increment": 1, "both": 1, "datasets": 2}
    none_sup = [j(rules.INCONCLUSIVE, "iterate"), j(rules.SET_ASIDE, "increment")]
    assert bias.resolution_sources(none_sup) == {"iterate": 1, "increment": 0, "both": 0, "datasets": 1}
    assert bias.resolution_sources([bias.Judged(rules.SUPPORTED, "", 0.1, 0.0, 1, "residual")]) is None


# ------------------------------------------------------------------------------------------ the runs' increments

@pytest.mark.parametrize("model", ["linear", "matrix"])
def test_runs_return_the_increments_gap_series(model):
    """run_linear / run_matrix hand judge_degree1 the increments' gaps: at the checkpoints from T/100 on, each the
    margin gap of θ(t) − θ(t/10) itself (recomputed here from the stored run)."""
    from ibverify import geometry as geo
    from ibverify.optim import OptimizerSpec
    from ibverify.recipes import RunStore

    store = RunStore()
    pr = bias.generated(model, 0, 1, store=store)[0]
    spec = bias.resolved_spec(OptimizerSpec.from_params({"optimizer": "nsd-l2"}), model, pr.n)
    T = 1000
    if model == "linear":
        x, gaps, _, _, (xi, inc) = bias.run_linear(pr, spec, T, store=store)
        r = store.run(bias.recipes.run_recipe(pr.data, None, None, spec, T))
        Z = store.data(pr.data).Z
        u = np.asarray(r.ws[-1]) - np.asarray(r.ws[-5])
        want = {g: 1.0 - bias.linear_margin(Z, u, g) / pr.optima[g][1] for g in pr.optima}
    else:
        x, gaps, _, _, (xi, inc) = bias.run_matrix(pr, spec, T, store=store)
        rec = bias.recipes.run_recipe(pr.data, pr.model, None, spec, T)
        r, D, model_ = store.run(rec, warn=False), store.data(pr.data), store.model(rec)
        u = {k: r.thetas[-1][k] - r.thetas[-5][k] for k in r.thetas[-1]}
        want = {g: 1.0 - geo.get(bias.MATRIX_GEOMETRIES[g]).margin(model_, u, D.X, D.y) / pr.optima[g][1]
                for g in pr.optima}
    assert list(xi) == [int(s) for s in x[4:]] and len(xi) == 9
    for g in pr.optima:
        assert inc[g][-1] == pytest.approx(want[g], rel=1e-12, abs=1e-15)
        assert inc[g][-1] != pytest.approx(gaps[g][-1], rel=1e-6)   # another direction than the iterate's
