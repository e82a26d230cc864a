"""`ibverify bias` answers worded as what is known (issue 53 item 1): supported (with δ), every geometry contradicted
("none of these"), undecided ("undecided at T: closest g, δ …; extend to …") and a bounded ‖θ‖ (weight decay), in
the answer's `outcome`, the text and the report page. Constructed judgements through checks.bias.answer_model's
`judge` hook, constructed norm series, and one real run whose norm weight decay holds."""

import math

import numpy as np
import pytest

from ibverify.checks import bias, rules
from ibverify.cli.bias import text
from ibverify.optim import OptimizerSpec
from ibverify.report.bias import bias_page, headline

X = [10.0 ** (3 + k / 4) for k in range(9)]   # checkpoints 1e3 … 1e5


def judged(word, value, horizon=100_000, resolution=0.02, **kw):
    return bias.Judged(word, f"{word} (constructed)", value, -0.5, horizon, "margin_gap",
                       (X, [value] * len(X)), resolution, **kw)


def problems(k=3):
    return [bias.Problem(f"set{i}", None, n=10) for i in range(k)]


def answer(per_dataset, model="linear", tier="smoke", spec=None, k=3):
    """answer_model on k constructed problems, dataset i judged as per_dataset(i) (a dict geometry → Judged);
    returns (the entry, the tags judged)."""
    seen = []

    def judge(m, pr, sp):
        seen.append(pr.tag)
        return bias.Judgement(sp, per_dataset(len(seen) - 1))
    return bias.answer_model(model, problems(k), spec or OptimizerSpec("signum"), tier, k, judge=judge), seen


def output(entry, optimizer="signum"):
    return {"optimizer": optimizer, "knobs": {}, "tier": "smoke", "seed": 0, "models": [entry], "skipped": {}}


# ---------------------------------------------------------------- the three outcomes of a judged model

def test_every_geometry_inconclusive_is_undecided_with_the_closest_geometry_and_where_to_extend():
    vals = {"l1": 0.3, "l2": 0.04, "linf": 0.12}
    entry, seen = answer(lambda i: {g: judged(rules.INCONCLUSIVE, v * (1 + i), resolution=v * (1 + i))
                                    for g, v in vals.items()})
    assert entry["outcome"] == "undecided" and entry["none_of_these"] and seen == ["set0", "set1", "set2"]
    u = entry["undecided"]
    assert u["closest"] == "l2" and u["horizon"] == 100_000
    assert u["value"] == pytest.approx(0.08)                        # median of 0.04, 0.08, 0.12
    assert u["resolution"] == pytest.approx(0.12)                   # the largest over the judged datasets
    assert u["extend_to"] == bias.HORIZONS["fast"]["linear"][1] and u["tier"] == "fast"
    line = text(output(entry)).splitlines()[1]
    assert line.startswith("  linear: undecided at T = 1e+05: closest l2, δ 12 %; extend to 1e+07 steps "
                           "(--tier fast)")
    assert "none of these" not in text(output(entry))


def test_undecided_at_the_fast_cap_extends_tenfold_beyond_the_tiers():
    T = bias.HORIZONS["fast"]["two-layer"][1]
    entry, _ = answer(lambda i: {"l2": judged(rules.INCONCLUSIVE, 0.3, T), "linf": judged(rules.INCONCLUSIVE, 0.2, T)},
                      model="two-layer", tier="fast")
    u = entry["undecided"]
    assert (u["closest"], u["extend_to"], u["tier"]) == ("linf", 10 * T, None)
    assert headline(entry) == ("undecided at T = 3e+06: closest linf, δ 0.02 (KKT residual); extend to 3e+07 steps "
                               "(beyond the fast tier)")


def test_a_contradicted_geometry_is_never_the_closest():
    entry, _ = answer(lambda i: {"l2": judged(rules.CONTRADICTED, 0.001), "linf": judged(rules.INCONCLUSIVE, 0.5)})
    assert entry["outcome"] == "undecided" and entry["undecided"]["closest"] == "linf"


def test_every_geometry_contradicted_is_none_of_these():
    entry, _ = answer(lambda i: {g: judged(rules.CONTRADICTED, 0.2) for g in ("l1", "l2", "linf")})
    assert entry["outcome"] == "contradicted" and "undecided" not in entry
    assert headline(entry) == "none of these (every geometry contradicted)"
    assert "  linear: none of these (every geometry contradicted) (on 3 datasets" in text(output(entry))


def test_a_support_is_stated_with_its_delta_and_a_network_says_what_delta_bounds():
    entry, _ = answer(lambda i: {"l2": judged(rules.SUPPORTED, 0.004, resolution=0.003),
                                 "linf": judged(rules.CONTRADICTED, 0.2)})
    assert entry["outcome"] == "supported" and headline(entry) == "l2 (to within 0.3 %)"
    net, _ = answer(lambda i: {"l2": judged(rules.SUPPORTED, 0.01, resolution=0.012),
                               "msp": judged(rules.CONTRADICTED, 0.5)}, model="two-layer")
    assert headline(net) == "l2 (KKT residual of the l2 margin problem within 0.012)"


def test_the_text_says_what_each_geometry_means_in_one_line():
    entry, _ = answer(lambda i: {g: judged(rules.CONTRADICTED, 0.2) for g in ("l2", "linf", "msp", "hybrid")},
                      model="two-layer")
    lines = text(output(entry)).splitlines()
    assert entry["meanings"] == {g: bias.MEANINGS[g] for g in ("l2", "linf", "msp", "hybrid")}
    for g in ("l2", "linf", "msp", "hybrid"):
        assert sum(ln == f"    {g} = {bias.MEANINGS[g]}" for ln in lines) == 1
    assert bias.MEANINGS["msp"].startswith("max spectral norm margin")
    assert "Muon–partner norm" in bias.MEANINGS["hybrid"] and "c = η_vector/η_matrix" in bias.MEANINGS["hybrid"]


def test_the_report_page_carries_each_outcome():
    und, _ = answer(lambda i: {"l2": judged(rules.INCONCLUSIVE, 0.05)})
    con, _ = answer(lambda i: {"l2": judged(rules.CONTRADICTED, 0.05)})
    answers = [output(und, "a"), output(con, "b")]
    prov = {"command": "ibverify bias", "ibverify": "0", "created": "now", "tier": "smoke", "seed": 0,
            "datasets": 3, "data": None, "ran_on": "this process", "versions": {}}
    page = bias_page(answers, prov, {})
    assert 'data-outcome="undecided"' in page and 'data-outcome="contradicted"' in page
    assert "linear: undecided at T = 1e+05: closest l2" in page
    assert "linear: none of these (every geometry contradicted)" in page


# ---------------------------------------------------------------- a bounded ‖θ‖

def test_bounded_norm_reads_a_plateau_and_not_a_growing_norm():
    x = np.array(X)
    flat = 3.0 - 1e-3 * (x[0] / x)                              # rises 0.03 % over the last decade
    b = bias.bounded_norm(x, flat)
    rise = (flat[-1] - (3.0 - 1e-3 * x[0] / 1e4)) / flat[-1]        # ‖θ‖ at T/10 = 1e4 is 3 − 1e-3·0.1
    assert b == {"norm": pytest.approx(flat[-1]), "rise": pytest.approx(rise), "from": 10_000, "to": 100_000}
    assert bias.bounded_norm(x, 5.0 - 0.1 * np.log10(x)) is not None   # shrinking: bounded too
    assert bias.bounded_norm(x, np.log(x)) is None                    # GD's log t: 20 % a decade
    assert bias.bounded_norm(x, 1 + 0.015 * np.log10(x)) is None      # just above BOUNDED_RISE (1.5 % a decade)
    assert bias.bounded_norm(x[-3:], flat[-3:]) is None               # less than a decade of checkpoints
    assert bias.bounded_norm(x, np.zeros(len(x))) is None             # θ = 0: nothing to read


def test_bounded_norm_reads_a_growth_dying_out():
    """The second branch: a rise of ≤ 5 % over the last decade that is below ¼ of the decade before's (a norm
    closing in on a bound) is bounded; the same rise at the same pace as before (a log, a power) is not."""
    x = np.array(X)
    k = np.log10(x) - 3                                               # 0, 0.25, …, 2 decades
    dying = 2.0 + 0.5 * (1 - 0.1 ** k)                                # rises 0.45, then 0.045 (×0.1)
    b = bias.bounded_norm(x, dying)
    assert b is not None and b["rise"] == pytest.approx(0.045 / 2.495)
    steady = 2.0 + 0.045 * k                                          # the same last rise, ×1: growing
    assert bias.bounded_norm(x, steady) is None
    fast = 2.0 + 0.15 * (1 - 0.1 ** k)                                # rising 0.7 %: the first branch
    assert bias.bounded_norm(x, fast) is not None
    big = 1.0 + 5.0 * (1 - 0.1 ** k)                                  # ×0.1, but 7.5 % over the last decade: growing
    assert bias.bounded_norm(x, big) is None


def two_decades(first, second):
    """A norm series over 1e3 … 1e5 rising by `first` over its first decade and `second` over its last (from 1)."""
    k = np.log10(np.array(X)) - 3
    return np.array(X), 1.0 + np.where(k <= 1, first * k, first + second * (k - 1))


@pytest.mark.parametrize("first, second, bounded", [
    (0.2, 0.048, True),     # rise 3.8 %, ×0.24: dying out (AdamW at λ = 1 measured 4 %, ×0.19)
    (0.1, 0.03, False),     # rise 2.7 %, ×0.3: not yet ¼
    (0.5, 0.06, True),      # rise 3.8 %, ×0.12
    (1.0, 0.12, False),     # ×0.12 but rise 5.7 % > 5 %: growing
    (0.008, 0.008, True),   # rise 0.79 % at a steady pace: the 1 % branch alone
    (0.012, 0.012, False),  # rise 1.2 % at a steady pace: growing
])
def test_bounded_norm_thresholds(first, second, bounded):
    x, s = two_decades(first, second)
    rise = second / (1 + first + second)
    slowing = second < bias.SLOWING * first
    assert (rise <= bias.BOUNDED_RISE or (rise <= bias.SLOWING_RISE and slowing)) == bounded
    assert (bias.bounded_norm(x, s) is not None) == bounded


def test_judge_degree1_sets_every_geometry_aside_when_the_norm_is_bounded():
    x = np.array(X)
    gaps = {"l2": 0.3 * (x / x[0]) ** -0.5, "linf": np.full(len(x), 0.2)}
    flat = {g: np.full(len(x), 2.0) for g in gaps}
    out = bias.judge_degree1(x, gaps, flat, {}, False, int(x[-1]))
    assert {j.word for j in out.values()} == {rules.SET_ASIDE}
    assert all(j.bounded["rise"] == 0.0 and "‖θ‖ stopped growing" in j.reason for j in out.values())
    grows = bias.judge_degree1(x, gaps, {g: np.log(x) for g in gaps}, {}, False, int(x[-1]))
    assert grows["l2"].word == rules.SUPPORTED and grows["l2"].bounded is None


def test_judge_network_sets_a_bounded_net_aside_at_its_first_horizon():
    """The two-layer net: AdamW at λ = 1 with a constant step 0.01 holds ‖θ‖ (it falls over 100–1000 steps); every
    geometry is set aside at the first horizon (1e3, not extended to 1e4) with the reading and the units alive. At
    λ = 0 the same run is judged."""
    from ibverify.recipes import DataRecipe

    data = DataRecipe.generated("teacher", n=20, d=4, seed=3)
    pr = bias.from_file("two-layer", data, "teacher", width=6, seed=0)

    def judged_net(**kn):
        spec = bias.resolved_spec(OptimizerSpec("adamw", lr=0.01, lr_decay=0.0, **kn), "two-layer", 20)
        return bias.judge_dataset("two-layer", pr, spec, "smoke", horizons=(1000, 10_000))
    out = judged_net(weight_decay=1.0)
    assert sorted(out) == ["hybrid", "l2", "linf", "msp"]
    for j in out.values():
        assert j.word == rules.SET_ASIDE and j.horizon == 1000 and j.units == (6, 6)
        assert j.bounded["rise"] < 0 and (j.bounded["from"], j.bounded["to"]) == (100, 1000)
        assert j.reason.startswith(f"‖θ‖ stopped growing: it fell {100 * abs(j.bounded['rise']):.2g} % over steps")
    free = judged_net(weight_decay=0.0)
    assert all(j.bounded is None and j.word != rules.SET_ASIDE for j in free.values())


def test_units_alive_counts_units_positive_on_some_sample():
    W = np.array([[1.0, 0.0], [-1.0, -1.0], [0.0, 1.0], [-1.0, 0.0]])
    X = np.array([[1.0, -2.0], [2.0, -1.0]])                        # units 0, 1 positive somewhere; 2, 3 never
    assert bias.units_alive({"W": W, "a": np.ones(4)}, X) == (2, 4)
    assert bias.units_alive({"W": W, "a": np.ones(4)}, -X) == (3, 4)    # units 1, 2 and 3 now, unit 0 not
    assert bias.units_alive({"w": np.ones(2)}, X) is None


def test_the_api_reports_each_models_outcome():
    from ibverify.api import BiasResult

    und, _ = answer(lambda i: {"l2": judged(rules.INCONCLUSIVE, 0.05)})
    con, _ = answer(lambda i: {"l2": judged(rules.CONTRADICTED, 0.05)}, model="matrix")
    out = {**output(und), "models": [und, con]}
    r = BiasResult("signum", {}, "smoke", 0, out["models"], out)
    assert r.outcome() == {"linear": "undecided", "matrix": "contradicted"}
    assert r.supported() == {"linear": [], "matrix": []}


def test_a_bounded_dataset_stops_the_model_at_once_and_names_the_setting():
    held = {"norm": 2.0, "rise": 1e-4, "from": 10_000, "to": 100_000}
    spec = OptimizerSpec("adamw", weight_decay=0.1)
    entry, seen = answer(lambda i: {g: judged(rules.SET_ASIDE, math.nan, bounded=held) for g in ("l2", "linf")},
                         spec=spec)
    assert seen == ["set0"]                                        # told after the first dataset, no other drawn
    assert entry["outcome"] == "bounded-norm" and entry["supported"] == []
    assert entry["bounded_norm"] == {**held, "dataset": "set0", "settings": ["weight_decay = 0.1"]}
    out = text(output(entry, "adamw"))
    assert "  linear: ‖θ‖ bounded: not judged against margin limits (on 1 dataset" in out
    assert ("    ‖θ‖ stopped growing on set0: it rose 0.01 % over steps 1e+04–1e+05 (‖θ‖₂ = 2); held by "
            "weight_decay = 0.1 (a margin-maximizing run needs ‖θ‖ → ∞: set it to 0)") in out
    assert "none of these" not in out and "supported " not in out
    prov = {"command": "ibverify bias", "ibverify": "0", "created": "now", "tier": "smoke", "seed": 0,
            "datasets": 3, "data": None, "ran_on": "this process", "versions": {}}
    page = bias_page([output(entry, "adamw")], prov, {})
    assert 'data-outcome="bounded-norm"' in page and "‖θ‖ stopped growing on set0: it rose 0.01 %" in page


def test_a_growing_run_with_weight_decay_is_judged_and_the_setting_noted():
    entry, seen = answer(lambda i: {"l2": judged(rules.INCONCLUSIVE, 0.05)},
                         spec=OptimizerSpec("adamw", weight_decay=0.01))
    assert entry["outcome"] == "undecided" and len(seen) == 3 and entry["bounding_settings"] == ["weight_decay = 0.01"]
    assert ("    note: weight_decay = 0.01 bounds ‖θ‖ in the limit (it still grew at this horizon): the margin limits "
            "judged here assume ‖θ‖ → ∞, which needs it off") in text(output(entry, "adamw")).splitlines()
    plain, _ = answer(lambda i: {"l2": judged(rules.INCONCLUSIVE, 0.05)})
    assert "bounding_settings" not in plain and "note:" not in text(output(plain))


def test_bounding_settings_walk_every_part_of_a_spec():
    assert bias.bounding_settings({"name": "adamw", "weight_decay": 0.01, "lr_decay": 0.5}) == ["weight_decay = 0.01"]
    assert bias.bounding_settings({"weight_decay": 0.0, "lr_decay": 0.5}) == []
    nested = {"hyperparameters": {"muon": {"weight_decay": 0.1, "nesterov": True},
                                  "partner": {"weight_decay": 0, "decoupled_weight_decay": True}}}
    assert bias.bounding_settings(nested) == ["hyperparameters.muon.weight_decay = 0.1"]
    assert bias.bounding_settings({"lr_decay": 1.5}) == ["lr_decay = 1.5 > 1 (Σ η_t converges)"]
    assert bias.bounding_settings({"wd": 0.2, "lr_decay": None}) == ["wd = 0.2"]


def test_a_weight_decayed_run_is_told_bounded_before_the_cap():
    """A real run: AdamW at λ = 1 on a generated linear dataset (its ‖θ‖₂ rises 4 % over 1e4–1e5, ×0.19 the decade
    before's). Undecided at 1e4, it is extended once and told bounded at 1e5, not run on to the cap (1e6), and no
    second dataset is drawn; at λ = 0 the same run is judged as usual."""
    entry = bias.answer_model("linear", bias.draws("linear", 0), OptimizerSpec("adamw", weight_decay=1.0), "smoke", 3,
                              horizons=(10_000, 1_000_000))
    assert entry["outcome"] == "bounded-norm" and entry["datasets"] == 1
    b = entry["bounded_norm"]
    assert b["to"] == 100_000 and b["rise"] <= bias.SLOWING_RISE and b["settings"] == ["weight_decay = 1"]
    assert all(d["horizon"] == 100_000 for ev in entry["evidence"].values() for d in ev["datasets"])
    free = bias.answer_model("linear", bias.draws("linear", 0), OptimizerSpec("adamw", weight_decay=0.0), "smoke",
                             1, horizons=(10_000, 10_000))
    assert free["outcome"] != "bounded-norm"                          # λ = 0: ‖θ‖ grows, judged as usual
