"""benchmarks/power.py (issue 33 item 1): the committed page is the render of the committed JSON, the JSON's thresholds
are rules.py's and its tolerances the claims', the table counts what it says, the change of variables that runs
precond-gd is precond-gd, and the done-when figures on the committed measurements."""

from __future__ import annotations

import importlib.util
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from ibverify.checks import rules
from ibverify.data.generators import gr
from ibverify.engine import run as engine_run
from ibverify.optim import OptimizerSpec
from ibverify.optim.transforms import precond_diagonal

ROOT = Path(__file__).resolve().parents[2]


def load_power():
    spec = importlib.util.spec_from_file_location("ibverify_power", ROOT / "benchmarks" / "power.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


P = load_power()
DATA = json.loads(P.JSON.read_text())


def test_page_is_the_render_of_the_json():
    assert P.PAGE.read_text() == P.render(DATA)
    assert P.main(["--check"]) == 0


def test_check_catches_a_doctored_page(tmp_path, capsys):
    page = tmp_path / "power.md"
    text = P.render(DATA)
    doctored = text.replace("| 0/", "| 1/", 1)
    assert doctored != text
    page.write_text(doctored)
    assert P.main(["--check", "--page", str(page)]) == 1
    assert "differs" in capsys.readouterr().err
    page.write_text(text)
    assert P.main(["--check", "--page", str(page)]) == 0


def test_recorded_thresholds_are_the_rules():
    """Changing a threshold of rules.py without regenerating the table fails here."""
    assert DATA["thresholds"] == P.thresholds()
    assert P.thresholds()["judge_invariant.rise"] == 2.0 and P.thresholds()["FLAT"] == rules.FLAT


@pytest.mark.parametrize(("claim", "tol"), [("soudry.gd-l2", "SOUDRY_TOL"), ("wang.adam-eps-l2", "SOUDRY_TOL"),
                                            ("baek.signum-any-batch-linf", "SIGNUM_TOL")])
def test_tolerances_are_the_claims(claim, tol):
    """The families judge with their claims' tolerances (and the JSON was measured with them)."""
    spec = tomllib.loads((ROOT / "claims" / f"{claim}.toml").read_text())
    mine = getattr(P, tol)
    for k, v in spec["tolerances"].items():
        assert mine[k] == v["value"], (claim, k)
    fam = "log-rate" if tol == "SOUDRY_TOL" else "ℓ∞ rate"
    assert DATA["tolerances"][fam] == mine


def test_wang_judges_the_approach_half_with_its_tolerance():
    spec = tomllib.loads((ROOT / "claims" / "wang.adam-eps-l2.toml").read_text())
    assert "approach" in spec["params"]["halves"]
    assert P.SOUDRY_TOL["approach_drop"] == spec["tolerances"]["approach_drop"]["value"]
    assert tuple(spec["params"]["halves"]) == P.SOUDRY_RULES["all_of: Wang (K, norm, approach)"]


@pytest.mark.parametrize("claim", ["gronich.signum-linf", "gronich.momentum-gd-l2"])
def test_network_settings_are_the_claims(claim):
    """The network KKT family runs each claim's optimizer at its settings and fast-tier horizon, with its guard and
    min_drop (and the JSON was measured with them)."""
    spec = tomllib.loads((ROOT / "claims" / f"{claim}.toml").read_text())
    p = spec["params"]
    mine = P.NET_RUNS[p["optimizer"]]
    assert {k: mine[k] for k in ("lr", "lr_decay", "beta1")} == {k: p[k] for k in ("lr", "lr_decay", "beta1")}
    assert mine["steps"] == spec["tiers"]["fast"]["steps"] and spec["tiers"]["fast"].get("extensions", 1) == 1
    for k in ("guard", "min_drop"):
        assert P.NET_TOL[k] == spec["tolerances"][k]["value"], k
    assert DATA["tolerances"]["network KKT"] == P.NET_TOL
    assert DATA["settings"]["network KKT"][p["optimizer"]] == mine


@pytest.mark.parametrize("claim", ["lyu-li.gd-smoothed-margin", "lyu-li.control.signum-smoothed-margin",
                                   "lyu-li.control.muon-smoothed-margin"])
def test_smoothed_margin_settings_are_the_claims(claim):
    spec = tomllib.loads((ROOT / "claims" / f"{claim}.toml").read_text())
    p = spec["params"]
    assert P.LYU_RUNS[p["optimizer"]] == {k: p[k] for k in ("lr", "lr_decay", "beta1") if k in p}
    assert P.LYU_TOL == {"monotone_rtol": spec["tolerances"]["monotone_rtol"]["value"], "decades": p["decades"],
                         "checkpoints_per_decade": p["checkpoints_per_decade"]}
    assert P.LYU_TIERS == {t: spec["tiers"][t]["steps"] for t in ("fast", "full")}
    assert DATA["tolerances"]["smoothed margin"] == P.LYU_TOL


def test_network_examples_are_fresh():
    """The claims draw data_seed and seed in [0, 10000] (strategies.network.network_example): none here."""
    exs = P.net_examples(8)
    assert all(ex["data_seed"] > 10_000 and ex["seed"] > 10_000 for ex in exs)
    assert all(16 <= ex["n"] <= 24 and 3 <= ex["d"] <= 5 and ex["width"] in (6, 8, 10) for ex in exs)
    assert {r["seed"] for r in DATA["runs"] if r["family"] in ("network KKT", "smoothed margin")} <= {
        ex["seed"] for ex in P.net_examples(100)}


def test_weighted_network_run_is_the_scaled_run_mapped_back():
    """The weighted run's iterates, mapped back (W = W'·diag(s)), give on the original inputs the outputs the scaled
    run gives on the scaled inputs; the first layer differs from the plain run's (a different preconditioner)."""
    from ibverify.blocks import flatten
    ex = {"dataset": "teacher", "n": 16, "d": 3, "width": 6, "data_seed": 20001, "seed": 20001}
    r, model, data = P.net_run(ex, "signum", 300, weighted=True)
    plain, _, _ = P.net_run(ex, "signum", 300, weighted=False)
    s = P.coordinate_scale(3, P.INPUT_SCALE)
    np.testing.assert_allclose(s, [10 ** -0.5, 1.0, 10 ** 0.5])
    from ibverify.recipes import DataRecipe, RunStore
    from ibverify.recipes.settings import network as network_recipe
    rec = network_recipe(P.net_cfg(ex, "signum", 300), 20001)
    raw = RunStore.process().run(rec.replace(data=DataRecipe.of_arrays(data.X * s, data.y, name="scaled")), warn=False)
    th = r.thetas[-1]
    np.testing.assert_allclose(model.outputs(th, data.X), model.outputs(raw.thetas[-1], data.X * s), rtol=1e-12)
    assert np.max(np.abs(flatten(th) - flatten(plain.thetas[-1]))) > 1e-3


def test_tiers_are_the_claims():
    soudry = tomllib.loads((ROOT / "claims" / "soudry.gd-l2.toml").read_text())["tiers"]
    assert P.SOUDRY_TIERS == {t: (soudry[t]["steps"], soudry[t].get("extensions", 1)) for t in ("fast", "full")}
    signum = tomllib.loads((ROOT / "claims" / "baek.signum-any-batch-linf.toml").read_text())["tiers"]
    assert P.SIGNUM_TIERS == {t: (signum[t]["base_steps"], signum[t]["extensions"]) for t in ("fast", "full")}


def run_row(kind, decision, rule="r", tier="full", cap=10):
    return {"family": "f", "rule": rule, "tier": tier, "kind": kind, "cap": cap, "decision": decision}


def test_tabulate_counts_false_support_and_contradiction():
    runs = [run_row(P.WRONG, rules.SUPPORTED), run_row(P.WRONG, rules.CONTRADICTED),
            run_row(P.WRONG, rules.INCONCLUSIVE, cap=100), run_row(P.SLOW, rules.CONTRADICTED),
            run_row(P.SLOW, rules.SUPPORTED), run_row(P.RIGHT, rules.SUPPORTED), run_row(P.WRONG_FAST, rules.SUPPORTED)]
    t = {r["kind"]: r for r in P.tabulate(runs)}
    assert (t[P.WRONG]["n"], t[P.WRONG]["false_support"], t[P.WRONG]["false_contradiction"]) == (3, 1, None)
    assert t[P.WRONG]["caps"] == [10, 100] and t[P.WRONG][rules.INCONCLUSIVE] == 1
    assert (t[P.SLOW]["false_contradiction"], t[P.SLOW]["false_support"]) == (1, None)
    assert t[P.RIGHT]["false_contradiction"] == 0 and t[P.WRONG_FAST]["false_support"] == 1
    dw = P.done_when(P.tabulate(runs))
    assert dw == {"false_support": 2, "max_false_contradiction": 0.5}
    assert P.done_when(P.tabulate(runs), tier="fast") == {"false_support": 0, "max_false_contradiction": 0.0}


def test_a_consequence_half_has_no_false_support():
    """‖w‖ → ∞ holds on every run of the table: its support on a wrong-direction run is no false support."""
    rule = P.CONSEQUENCES[0]
    t = P.tabulate([run_row(P.WRONG, rules.SUPPORTED, rule=rule), run_row(P.WRONG, rules.CONTRADICTED, rule=rule)])
    assert t[0]["false_support"] is None and t[0]["false_contradiction"] == 1


def test_precond_change_of_variables_is_precond_gd():
    """w ← w − η D ∇L run as GD on Z D^(1/2) (compiled) equals the table's precond-gd row (reference engine)."""
    Z = gr(5, 4, np.random.default_rng(3)).Z
    cps = np.array([10, 100, 1000])
    ref = engine_run(Z, OptimizerSpec.from_params({"optimizer": "precond-gd"}, lr=0.7, lr_decay=0.0), 1000,
                     checkpoints=cps)
    got_cps, got = P.precond_run(Z, 0.7, precond_diagonal(4), 1000, [cps])
    assert np.array_equal(got_cps, cps)
    assert np.max(np.abs(got - ref.ws)) <= 1e-12 * np.max(np.abs(ref.ws))


def test_precond_signum_change_of_variables():
    """w ← w − η D sign(m) is Signum on Z D with w = D v: one hand-written step of each agrees."""
    Z = gr(4, 3, np.random.default_rng(4)).Z
    D = precond_diagonal(3)
    spec = P.signum_spec("signum", 4, 0.0, 4)
    _, vs = P.run_union(Z * D, spec, 3, [np.array([1, 2, 3])])
    w = np.zeros(3)
    for t in range(1, 4):
        g = -(Z * (1.0 / (1.0 + np.exp(Z @ w)))[:, None]).mean(axis=0)
        w = w - spec.lr * t ** (-spec.lr_decay) * D * np.sign(g)
    np.testing.assert_allclose(vs[-1] * D, w, rtol=1e-12, atol=1e-15)


def test_no_claim_decision_supports_a_wrong_limit():
    """Issue 33's done-when as the lead decided it: on every wrong-limit run of the committed table, at every tier,
    the decision that decides a verdict (the all_of of a claim's halves, judge_rate_invariant, the network rules,
    judge_nondecreasing) is not supported."""
    assert P.claim_false_supports(DATA["runs"]) == []
    judged = [r for r in DATA["runs"] if r["rule"] in P.CLAIM_LEVEL and r["kind"] in P.WRONG_KINDS]
    assert {r["rule"] for r in judged} == set(P.CLAIM_LEVEL)   # every decision met wrong limits
    assert P.done_when(P.tabulate(DATA["runs"]), tier="largest")["max_false_contradiction"] <= 0.05


def test_every_half_alone_supporting_a_wrong_limit_is_withheld():
    """A half judged alone may support a wrong limit (reported on the page), but then another half of the same claim
    is not supported on that run and the claim's decision is not supported."""
    w = P.withheld(DATA["runs"])
    assert {(x["claim"], x["half"]) for x in w} == {(c, h) for c, hs in P.CLAIM_HALVES.items() for h in hs}
    for x in w:
        assert x["withheld"] == x["supports"], x
        for c in x["cases"]:
            assert c["claim_decision"] != rules.SUPPORTED and c["withheld_by"], (x["half"], c)
    # Wang's norm half (a consequence) supports every same-speed wrong limit alone: the table must show it withheld
    norm = [x for x in w if x["half"] == P.CONSEQUENCES[0] and x["claim"].startswith("all_of: Wang")]
    assert norm and all(x["supports"] > 0 for x in norm)


def wl(rule, decision, seed=1, run="a", kind=None, tier="full"):
    return {"family": "f", "rule": rule, "tier": tier, "seed": seed, "run": run, "kind": kind or P.WRONG,
            "cap": 10, "decision": decision}


def test_withheld_and_claim_false_supports_on_constructed_runs():
    """A half that supports a wrong-limit run alone is withheld only when the claim's decision is not supported AND
    another of its halves is not supported there; a supported claim decision on a wrong limit is a false support."""
    claim = "all_of: Wang (K, norm, approach)"
    K, norm, appr = P.CLAIM_HALVES[claim]
    S, C, I = rules.SUPPORTED, rules.CONTRADICTED, rules.INCONCLUSIVE
    runs = [wl(norm, S), wl(K, I), wl(appr, C), wl(claim, C),                 # run a: withheld by K and approach
            wl(norm, S, run="b"), wl(K, S, run="b"), wl(appr, S, run="b"), wl(claim, S, run="b"),   # b: not
            wl(norm, S, run="c", kind=P.RIGHT), wl(claim, S, run="c", kind=P.RIGHT)]               # right: ignored
    x = next(x for x in P.withheld(runs) if x["claim"] == claim and x["half"] == norm)
    assert (x["supports"], x["withheld"]) == (2, 1)
    assert x["cases"][0]["withheld_by"] == [K, appr] and x["cases"][1]["withheld_by"] == []
    bad = P.claim_false_supports(runs)
    assert [(r["rule"], r["run"]) for r in bad] == [(claim, "b")]
    assert P.claim_false_supports([wl(claim, S, kind=P.WRONG_GEOM)]) != []
    assert P.claim_false_supports([wl(claim, I), wl(claim, S, kind=P.SLOW)]) == []


def test_lyu_li_controls_do_not_hold_on_the_committed_table():
    """Lyu–Li's check decides no limit: its controls' verdicts over the fresh examples (rules.tally) must not hold,
    GD's must, at both tiers."""
    v = P.lyu_li_verdicts(DATA["runs"])
    assert set(v) == {(o, t) for o in P.LYU_RUNS for t in P.LYU_TIERS}
    for (opt, _), (holds, _) in v.items():
        assert holds is (True if opt == "gd" else False), (opt, v)


def test_lyu_li_verdicts_on_constructed_runs():
    S, C, A = rules.SUPPORTED, rules.CONTRADICTED, rules.SET_ASIDE
    runs = [dict(wl(P.LYU_RULE, w, run=o), seed=k) for k, (o, w) in enumerate(
        [("gd", S), ("gd", S), ("gd", A), ("gd", A), ("signum", S), ("signum", S), ("signum", C),
         ("muon", S), ("muon", S), ("muon", S)])]
    v = P.lyu_li_verdicts(runs)
    assert v[("gd", "full")][0] is None          # 2 of 4 set aside: above the cap SET_ASIDE_SHARE_MAX
    assert v[("signum", "full")][0] is False     # one contradicted example refutes
    assert v[("muon", "full")][0] is True        # a control supported on every example would hold: the test fails


def test_done_when_largest_tier_takes_the_fast_tier_where_no_full_one_exists():
    runs = [dict(run_row(P.WRONG, rules.SUPPORTED, tier="fast"), family="net"),
            dict(run_row(P.WRONG, rules.SUPPORTED, tier="fast"), family="lin"),
            dict(run_row(P.WRONG, rules.CONTRADICTED, tier="full"), family="lin")]
    assert P.done_when(P.tabulate(runs), tier="largest")["false_support"] == 1
    assert P.done_when(P.tabulate(runs))["false_support"] == 0


def test_done_when_of_the_claims_decisions_on_the_committed_table():
    """The same figures for the decisions the claims make (all_of over their halves, judge_rate_invariant)."""
    table = P.tabulate(DATA["runs"])
    assert P.done_when(table, only=P.CLAIM_LEVEL) == {"false_support": 0, "max_false_contradiction": 0.0}
    assert {r["rule"] for r in table} >= set(P.CLAIM_LEVEL)
    assert all(r["n"] >= 6 for r in table if r["rule"] in P.CLAIM_LEVEL)


def test_bad_datasets_count_exits_2(capsys):
    assert P.main(["--datasets", "0", "--json", "/nonexistent/x.json"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_ci_runs_the_check():
    ci = (ROOT / ".ci" / "run").read_text()
    assert any(line.split("#")[0].split() == ["python3", "benchmarks/power.py", "--check"] for line in ci.splitlines())


# ----------------------------------------------------------------------------------------- linear bias (issue 45)

BL = P.BL


def bl_row(decision, true_gap, resolution=None, tier="fast", optimizer="precond-gd-k2", geometry="l2",
           horizon=1_000_000, dataset="d1"):
    return {"optimizer": optimizer, "kind": "near miss", "limit": "‖P^(−1/2)w‖₂", "dataset": dataset,
            "source": "generated", "n": 10, "d": 6, "tier": tier, "geometry": geometry, "decision": decision,
            "measured_gap": 0.02, "slope": -0.1, "horizon": horizon, "resolution": resolution, "true_gap": true_gap,
            "face_width": None, "reason": "r"}


def bl_section(rows) -> dict:
    settings = {"data_seed": 1, "gauss_seed0": 2, "gauss_shape": [14, 8], "generated": 1, "gaussians": 0,
                "kappas": [2.0], "ps": [1.5], "truth_tol": BL.TRUTH_TOL, "cert_rtol": BL.CERT_RTOL,
                "face_eps": BL.FACE_EPS, "face_tol": BL.FACE_TOL,
                "horizons": {"smoke": [100_000, 100_000], "fast": [1_000_000, 10_000_000]}}
    limits = [{"optimizer": "precond-gd-k2", "dataset": "d1", "geometry": "‖P^(−1/2)w‖₂, κ = 2",
               "certificate": {"duality_gap": 1e-12}, "face_width": None,
               "true_gap": {"l1": 0.2, "l2": 0.03, "linf": 0.3}}]
    return {"rows": rows, "limits": limits, "cpu_minutes": 1.0, "commit": "abc1234", "date": "2026-12-04",
            "settings": settings}


def test_bias_linear_render_counts_a_support_beyond_its_resolution():
    """A support whose true gap exceeds its stated δ (+ TRUTH_TOL) is false and fails the done-when line; one
    within δ, a contradicted geometry and an unstated δ (= 0) with a gap within TRUTH_TOL are not."""
    S, C = rules.SUPPORTED, rules.CONTRADICTED
    rows = [bl_row(S, 0.08, 0.05), bl_row(S, 0.04, 0.05, dataset="d2"), bl_row(C, 0.5, 0.05, geometry="l1"),
            bl_row(S, 2e-5, None, tier="smoke"), bl_row(S, 5e-6, None, tier="smoke", dataset="d2")]
    data = {"bias_linear": {"baseline": bl_section(rows), "current": None}}
    assert BL.done(data) == 2
    text = "\n".join(BL.render(data))
    assert "resolution: **2** (need 0; fast: 1 of 2 supports; smoke: 1 of 2 supports)" in text
    assert "| precond-gd-k2 | d1 | fast | ℓ2 | 0.02 | 1e6 | 0.05 | 0.08 |" in text
    assert "| precond-gd-k2 | d1 | smoke | ℓ2 | 0.02 | 1e6 | 0 | 2e-05 |" in text
    assert "resolution reached, fast tier: median δ 0.05, worst 0.05 over 2 supports" in text
    assert "resolution reached, smoke tier: none stated" in text
    # within TRUTH_TOL of δ: not false
    rows[0]["true_gap"] = 0.05 + 0.5 * BL.TRUTH_TOL
    assert BL.done(data) == 1
    rows[3]["true_gap"] = 0.9 * BL.TRUTH_TOL
    assert BL.done(data) == 0
    assert "resolution: **0** (need 0;" in "\n".join(BL.render(data))


def test_bias_linear_current_measurement_replaces_the_baseline_in_the_done_when_line():
    S = rules.SUPPORTED
    base = bl_section([bl_row(S, 0.03, None)])
    cur = bl_section([bl_row(S, 0.03, 0.04)])
    data = {"bias_linear": {"baseline": base, "current": cur}}
    assert BL.done(data) == 0
    text = "\n".join(BL.render(data))
    assert "baseline before the resolution (commit abc1234, every support δ = 0): 1 false supports (fast: 1 of 1" \
           in text
    data["bias_linear"]["current"] = None
    assert BL.done(data) == 1


def test_bias_linear_summary_and_figure_points():
    S, I = rules.SUPPORTED, rules.INCONCLUSIVE
    rows = [bl_row(S, 0.001, 0.01), bl_row(S, 0.03, 0.02, dataset="d2", horizon=10_000_000),
            bl_row(S, 0.05, 0.04, dataset="d3", optimizer="steepest-lp1.5"), bl_row(I, 0.5, 0.3, dataset="d4"),
            bl_row(S, 0.0, None, optimizer="gd")]
    s = BL.summary(rows)["fast"]
    assert (s["supports"], s["stated"], s["resolution_median"], s["resolution_worst"]) == (4, 3, 0.02, 0.04)
    assert [r["dataset"] for r in s["false"]] == ["d2", "d3"]
    pts = BL.figure_points(bl_section(rows))
    assert pts["precond GD"] == {"resolution": [(1_000_000, 0.01), (10_000_000, 0.02)],
                                 "true_gap": [(1_000_000, 0.001, False), (10_000_000, 0.03, True)]}
    assert pts["ℓp steepest descent"]["true_gap"] == [(1_000_000, 0.05, True)]
    assert pts["controls"] == {"resolution": [], "true_gap": [(1_000_000, 0.0, False)]}
    assert set(pts) == {"precond GD", "ℓp steepest descent", "controls"}


def test_bias_linear_figure_is_reproducible(tmp_path):
    sec = bl_section([bl_row(rules.SUPPORTED, 0.03, 0.02)])
    a, b = BL.figure(sec, tmp_path / "a.svg").read_text(), BL.figure(sec, tmp_path / "b.svg").read_text()
    assert a == b and "<dc:date>" not in a


R2 = 2 ** -0.5
# (Z, w, α, the condition that fails): ℓ2 on Z = I (optimum (1, 1)/√2, α = (½, ½)), each point failing one condition
# only (a third sample on the margin, or off it, lets α be negative or unnormalized with no duality gap)
CERT_CASES = [
    (np.eye(2), np.array([1.1, 1.1]) * R2, np.array([0.5 + 0.458258 / 2, 0.5 - 0.458258 / 2]),
     "primal_infeasibility"),
    (np.array([[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]]), np.array([R2, R2]), np.array([0.6, 0.45, -0.05]),
     "dual_negativity"),
    (np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]]), np.array([R2, R2]), np.array([0.3, 0.3, 0.1]),
     "dual_normalization"),
    (np.eye(2), np.array([0.8, 0.6]), np.array([0.5, 0.5]), "duality_gap"),
]


@pytest.mark.parametrize(("Z", "w", "alpha", "bad"), CERT_CASES)
def test_bias_linear_certificate_conditions_each_on_its_own(Z, w, alpha, bad):
    """Each optimality condition of a limit's certificate fails alone on a constructed point, and `certified` names
    it; the optimum itself passes."""
    l2 = np.linalg.norm
    ok = BL.certified(BL.certificate(np.eye(2), np.array([R2, R2]), np.array([0.5, 0.5]), l2, l2), "ok")
    assert max(v for k, v in ok.items() if k != "gamma") <= 1e-15 and ok["gamma"] == pytest.approx(R2)
    cert = BL.certificate(Z, w, alpha, l2, l2)
    assert cert[bad] > 10 * BL.CERT_RTOL
    assert all(v <= BL.CERT_RTOL for k, v in cert.items() if k not in (bad, "gamma")), cert
    with pytest.raises(P.BL.IbverifyError, match=bad):
        BL.certified(cert, "x")


def test_bias_linear_certificate_refuses_a_nonpositive_margin():
    cert = BL.certificate(np.eye(2), np.array([1.0, 0.0]), np.array([0.5, 0.5]), np.linalg.norm, np.linalg.norm)
    assert cert["nonpositive_margin"] == np.inf
    with pytest.raises(P.BL.IbverifyError, match="nonpositive_margin"):
        BL.certified(cert, "x")


def _problem(Z):
    from ibverify.checks import bias
    from ibverify.oracles import max_margin
    return bias.Problem("t", None, optima={g: (None, max_margin(Z, g).margin) for g in ("l1", "l2", "linf")})


def test_bias_linear_true_limits_on_one_sample():
    """On one sample z the limits are known in closed form: the P^(−1/2)-weighted ℓ2 direction ∝ P z (ℓ2 gap
    1 − z·Pz/(‖Pz‖‖z‖)), the ℓp one ∝ sign(z)|z|^(q−1) (Hölder), the rotated ℓ∞ one Q sign(Qᵀz), the ℓ2 one z."""
    z = np.array([1.0, 0.5, -0.25])
    Z = z[None, :]
    pr = _problem(Z)
    by = {m["optimizer"]: m for m in BL.members()}
    P2 = BL.PRECOND.diagonal(3, 2.0)
    lim = BL.true_limit(by["precond-gd-k2"], Z)
    np.testing.assert_allclose(lim["w"] / np.linalg.norm(lim["w"]), P2 * z / np.linalg.norm(P2 * z), atol=1e-7)
    want = 1 - z @ (P2 * z) / (np.linalg.norm(P2 * z) * np.linalg.norm(z))
    assert BL.true_gaps(pr, Z, lim["w"])["l2"] == pytest.approx(want, abs=1e-7) and want > 0.01
    q = 3.0
    lim = BL.true_limit(by["steepest-lp1.5"], Z)
    h = np.sign(z) * np.abs(z) ** (q - 1)
    np.testing.assert_allclose(lim["w"], h / np.linalg.norm(h, 1.5), atol=1e-5)
    lim = BL.true_limit(by["rotated-signum"], Z)
    Q = BL.ROT.rotation(3)
    np.testing.assert_allclose(Q.T @ Q, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(lim["w"], Q @ np.sign(Q.T @ z), atol=1e-6)
    assert lim["face_width"] < BL.FACE_TOL
    lim = BL.true_limit(by["gd"], Z)
    assert BL.true_gaps(pr, Z, lim["w"])["l2"] <= 1e-9


def test_bias_linear_face_width_tells_a_face_from_a_vertex():
    """ℓ∞ max margin of z = (1, 0): w1 = 1, any w2 ∈ [−1, 1] (a face of width 2); of z = (1, 1): the vertex (1, 1)."""
    assert BL.face_width(np.array([[1.0, 0.0]]), 1.0) == pytest.approx(2.0, abs=1e-9)
    assert BL.face_width(np.array([[1.0, 1.0]]), 2.0) <= 1e-8


@pytest.mark.parametrize(("name", "steps"), [("precond-gd-k1.02", 3000), ("precond-gd-k2", 3000),
                                           ("precond-gd-k10", 3000), ("steepest-lp1.5", 3000), ("steepest-lp3", 3000),
                                           ("steepest-lp5", 3000), ("steepest-lp20", 1000), ("rotated-signum", 3000)])
def test_bias_linear_store_runs_each_file_as_its_reference_run(name, steps):
    """PowerStore makes a user file's run (the recipe bias asks for) by its compiled equivalent: equal to the file's
    own float64 reference run to rounding. p = 20 at 1000 steps: its map |g_k|^(1/19) turns a gradient component
    that is 0 in one implementation and 1e-16 in the other into a step of 0.14 of a unit step (measured: equal to
    4e-16 up to step 1687 on this set, 2e-4 apart at 3000): rounding amplified, not another map."""
    from ibverify.recipes import DataRecipe
    from ibverify.recipes import bias as recipes
    m = next(m for m in BL.members() if m["optimizer"] == name)
    Z = gr(7, 5, np.random.default_rng(11)).Z
    spec = BL.spec_for(m, Z)
    rec = recipes.run_recipe(DataRecipe.of_arrays(Z), None, None, spec.resolved(7), steps)
    got = BL.PowerStore().run(rec)
    ref = engine_run(Z, spec.resolved(7), steps, checkpoints=np.asarray(rec.checkpoints), engine="reference")
    assert got.engine == "compiled" and ref.engine == "reference"
    assert np.max(np.abs(got.ws - ref.ws)) <= 1e-10 * np.max(np.abs(ref.ws))


def test_bias_linear_store_leaves_other_runs_to_the_engine():
    from ibverify.recipes import DataRecipe
    from ibverify.recipes import bias as recipes
    Z = gr(5, 4, np.random.default_rng(2)).Z
    spec = OptimizerSpec.from_params({"optimizer": "steepest-l3"}).resolved(5)
    r = BL.PowerStore().run(recipes.run_recipe(DataRecipe.of_arrays(Z), None, None, spec, 100))
    assert r.engine == "reference"


def test_bias_linear_gd_step_is_bias_convention():
    """gd and precond-gd run at the constant step bias gives gd (runner.bias.conventions: η = 1/β, lr_decay 0)."""
    from ibverify.checks import bias
    from ibverify.recipes import DataRecipe, RunStore
    from ibverify.runner.bias import conventions
    Z = gr(6, 4, np.random.default_rng(5)).Z
    adjust, _ = conventions(OptimizerSpec.from_params({"optimizer": "gd"}), {})
    store = RunStore()
    pr = bias.Problem("t", DataRecipe.of_arrays(Z), n=6)
    want = adjust("linear", pr, OptimizerSpec.from_params({"optimizer": "gd"}), store)
    for m in BL.members():
        sp = BL.spec_for(m, Z)
        if m["optimizer"] == "gd" or m["optimizer"].startswith("precond-gd-k"):
            assert (sp.lr, sp.lr_decay) == pytest.approx((want.lr, want.lr_decay), rel=1e-12)
        else:
            r = sp.resolved(6)
            assert (r.lr, r.lr_decay) == (0.1, 0.5), m["optimizer"]   # the row's / file's defaults


def test_bias_linear_datasets_are_fresh_and_gaussian_sets_separable():
    from ibverify.recipes import RunStore
    assert BL.DATA_SEED != 0   # bias's default draws are not this table's
    (src, pr), = BL.gaussian_problems(1, RunStore())
    assert src == "gaussian" and pr.n == BL.GAUSS_SHAPE[0] and min(pr.optima[g][1] for g in pr.optima) > 0


def test_bias_linear_committed_measurements_are_this_module_s_settings():
    """Changing the family (κ, p, data seeds, tolerances, horizons) without regenerating power.json fails here; the
    baseline predates the resolution (no support states one) and the current measurement states one on every
    support (checks.bias: a support needs a finite resolution)."""
    sec = DATA["bias_linear"]
    for part in (sec["baseline"], sec["current"]):   # the baseline: issue 45's members, a subset of today's
        st = part["settings"]
        now = part is sec["current"]
        assert (st["data_seed"], st["gauss_seed0"], st["gauss_shape"]) == (
            BL.DATA_SEED, BL.GAUSS_SEED0, list(BL.GAUSS_SHAPE))
        assert (st["kappas"], st["ps"]) == (list(BL.KAPPAS), list(BL.PS)) if now else (
            set(st["kappas"]) <= set(BL.KAPPAS) and set(st["ps"]) <= set(BL.PS))
        assert (st["truth_tol"], st["cert_rtol"], st["face_eps"], st["face_tol"]) == (
            BL.TRUTH_TOL, BL.CERT_RTOL, BL.FACE_EPS, BL.FACE_TOL)
        names = {r["optimizer"] for r in part["rows"]}
        assert names == {m["optimizer"] for m in BL.members()} if now else names <= {
            m["optimizer"] for m in BL.members()}
        assert all(max(x["certificate"].values()) <= BL.CERT_RTOL for x in part["limits"])
        assert all(x["face_width"] is None or x["face_width"] < BL.FACE_TOL for x in part["limits"])
    from ibverify.checks import bias
    assert sec["current"]["settings"]["horizons"] == {t: list(bias.HORIZONS[t]["linear"]) for t in BL.TIERS}
    sup = [r for r in sec["baseline"]["rows"] if r["decision"] == rules.SUPPORTED]
    assert sup and all(r["resolution"] is None for r in sup)
    sup = [r for r in sec["current"]["rows"] if r["decision"] == rules.SUPPORTED]
    assert sup and all(r["resolution"] is not None and r["resolution"] >= 0 for r in sup)


# ----------------------------------------------------------------------------------------- two estimates (issue 51)

def est_row(decision, true_gap, stated, iterate, increment, optimizer="precond-gd-k1.5", geometry="l2",
            tier="fast", dataset="d1", kind="near miss"):
    r = bl_row(decision, true_gap, stated, tier=tier, optimizer=optimizer, geometry=geometry, dataset=dataset)
    r["kind"] = kind
    r["estimates"] = {"used": "increment", "agree": True, "iterate": iterate, "increment": increment}
    return r


def test_estimate_families_and_aims():
    assert BL.estimate_family("precond-gd-k1.02") == ("precond GD", 5e-3)
    assert BL.estimate_family("gd") == ("GD", 5e-3)
    assert BL.estimate_family("steepest-lp20") == ("ℓp steepest descent", 1e-4)
    assert BL.estimate_family("rotated-signum") == ("rotated Signum", 1e-4)
    assert BL.estimate_family("nsd-l2") == BL.estimate_family("signum") == ("normalized GD, Signum", 1e-4)
    assert {BL.estimate_family(m["optimizer"])[0] for m in BL.members()} == {
        "precond GD", "GD", "ℓp steepest descent", "rotated Signum", "normalized GD, Signum"}


def test_below_certified_counts_every_geometry_and_each_estimate():
    """A finite δ under the certified gap by more than TRUTH_TOL counts in any geometry and decision; at TRUTH_TOL
    it does not; an unresolved δ (None) never does."""
    C = rules.CONTRADICTED
    r = est_row(C, 0.10, 0.08, 0.2, 0.05, geometry="l1")
    assert [BL.below_certified(r, w) for w in BL.ESTIMATES] == [True, False, True]
    r2 = est_row(C, 0.08 + 0.5 * BL.TRUTH_TOL, 0.08, None, 0.08 + 2 * BL.TRUTH_TOL)
    assert [BL.below_certified(r2, w) for w in BL.ESTIMATES] == [False, False, False]
    assert BL.delta_of({"resolution": 0.1}, "increment") is None   # a row from before the estimates


def test_estimate_table_per_family_and_tier():
    """Two datasets of precond GD κ 1.5 at fast: the nearest geometry (ℓ2) carries the medians; ℓ1's δ below its
    gap counts (every geometry); a near miss whose gap exceeds its stated δ and is not supported is told apart."""
    S, C, I = rules.SUPPORTED, rules.CONTRADICTED, rules.INCONCLUSIVE
    rows = [est_row(S, 0.001, 0.004, 0.03, 0.004),
            est_row(C, 0.20, 0.15, 0.25, 0.15, geometry="l1"),             # below: stated and increment
            est_row(I, 0.006, 0.002, 0.02, 0.002, dataset="d2"),           # nearest, gap > δ, not supported
            est_row(C, 0.30, 0.31, 0.32, 0.31, geometry="l1", dataset="d2"),
            est_row(S, 0.0, 0.02, 0.02, None, optimizer="gd", kind="control")]
    tab = {(o["family"], o["tier"]): o for o in BL.estimate_table(bl_section(rows))}
    p = tab[("precond GD", "fast")]
    assert (p["rows"], p["supports"], p["false"], p["nearest"]) == (4, 1, 0, 2)
    assert p["below"] == {"stated": 2, "iterate": 0, "increment": 2}
    assert (p["iterate_median"], p["iterate_worst"]) == (pytest.approx(0.025), 0.03)
    assert (p["increment_median"], p["increment_worst"]) == (pytest.approx(0.003), 0.004)
    assert (p["exceeds"], p["told_apart"]) == (1, 1)
    assert p["aim_ratio"] == pytest.approx(0.003 / 5e-3)
    g = tab[("GD", "fast")]
    assert (g["increment_stated"], g["increment_median"], g["exceeds"]) == (0, None, 0)   # a control: not counted
    assert BL.below_count({"bias_linear": {"baseline": bl_section(rows), "current": None}}) == 2
    text = "\n".join(BL.estimate_lines(bl_section(rows)))
    assert ("| precond GD | fast | 4 | 1 | 0 | 2 / 0 / 2 | 0.025, 0.03 (2 of 2) | 0.003, 0.004 (2 of 2) | "
            "0.003, 0.004 (2 of 2) | 0.005: met | 1 of 1 |") in text
    rows[0]["resolution"] = rows[2]["resolution"] = 0.02                # median 0.02 = 4× the aim
    assert "| 0.005: ×4 over |" in "\n".join(BL.estimate_lines(bl_section(rows)))


def test_estimate_table_is_empty_without_estimates():
    sec = bl_section([bl_row(rules.SUPPORTED, 0.03, 0.04)])
    assert BL.estimate_table(sec) == [] and BL.estimate_lines(sec) == []
    assert "finite δ below the certified gap" not in "\n".join(
        BL.render({"bias_linear": {"baseline": sec, "current": None}}))


# ----------------------------------------------------------------------------------------- rules replayed (issue 51)

XS = [int(round(10 ** (2 + k / 4))) for k in range(13)]   # 1e2 … 1e5, 4 a decade
XI = XS[4:]


def series(gaps, inc_gaps):
    return {"steps": XS, "gaps": list(gaps), "inc_steps": XI, "inc_gaps": list(inc_gaps)}


def _power(c, lim, s):
    return [lim + c * x ** s for x in XS]


def test_replayed_reads_each_rule_on_the_recorded_series():
    """A power-law iterate gap (falls 68 % a decade) and increments stuck at 0.05 (no δ: not falling): "iterate"
    states the iterate's δ, "raised" and "stated" raise it to 0.05; increments falling faster and lower than the
    iterate: "stated" states theirs, "raised" the iterate's; a row without series keeps its recorded δ."""
    from ibverify.checks import bias
    it = _power(0.3, 0.004, -0.5)
    r = bl_row(rules.SUPPORTED, 0.01)
    r["series"] = series(it, [0.05] * len(XI))
    d_it = bias.resolution(XS, it, 1.0, bias.GAP_FLOOR, bias.PLATEAU_DROP).value
    assert d_it < 0.05
    assert BL.replayed(r, 0.1, "iterate") == d_it
    assert BL.replayed(r, 0.1, "raised") == BL.replayed(r, 0.1, "finer") == 0.05
    inc = [0.002 + 0.3 * x ** -0.5 for x in XI]
    r["series"] = series(it, inc)
    d_inc = bias.resolution(XI, inc, bias.INCREMENT_STEP, bias.GAP_FLOOR, bias.PLATEAU_DROP).value
    assert d_inc < d_it and inc[-1] <= d_it
    assert (BL.replayed(r, 0.1, "raised"), BL.replayed(r, 0.1, "finer")) == (d_it, d_inc)
    with pytest.raises(ValueError, match="unknown rule"):
        BL.replayed(r, 0.1, "stated")
    flat = bl_row(rules.SUPPORTED, 0.01)
    flat["series"] = series([0.1] * 9 + [0.096, 0.094, 0.093, 0.092], inc)   # 8 % over the last decade
    assert BL.replayed(flat, 0.1, "finer") is None and BL.replayed(flat, 0.05, "iterate") is not None
    assert BL.replayed(bl_row(rules.SUPPORTED, 0.01, 0.02), 0.1, "raised") == 0.02


def test_replay_table_counts_per_rule():
    """A support whose plateau has no δ under a rule is not a support there; a δ below the certified gap counts in
    every geometry; the fast medians read the nearest geometry's finite δ."""
    S, C = rules.SUPPORTED, rules.CONTRADICTED
    sup = bl_row(S, 0.0, 0.02)
    sup["series"] = series(_power(0.3, 0.004, -0.5), [0.002 + 0.3 * x ** -0.5 for x in XI])
    low = bl_row(C, 0.2, 0.15, geometry="l1")
    low["series"] = series([0.3] * 8 + [0.2, 0.195, 0.19, 0.185, 0.18], [0.3] * len(XI))   # 10 % a decade
    rules_ = (("a", 0.0, "iterate"), ("b", 0.15, "iterate"))
    a, b = BL.replay_table(bl_section([sup, low]), rules_)
    assert (a["false"], a["below"], a["supports"], a["finite"], a["nearest"]) == (0, 1, 1, 1, 1)
    assert a["median"] == {"precond GD": pytest.approx(BL.replayed(sup, 0.0, "iterate"))}
    assert (b["below"], b["supports"]) == (0, 1)     # the 10 % fall is a plateau at 15 %: no δ, not below
    lines = BL.replay_lines(bl_section([sup, low]))
    assert any(line.startswith("| iterate, plateau < 10 %, raised (bias's rule) | 0 | ") for line in lines)
    assert BL.replay_lines(bl_section([bl_row(S, 0.0, 0.02)])) == []


def test_the_committed_table_is_bias_rule_on_its_recorded_series():
    """Every current row records its gap series, and its stated δ is checks.bias's rule replayed on them (the table
    was made with the rule the answers use); on it, 0 false supports and 0 finite δ below the certified gap."""
    cur = DATA["bias_linear"]["current"]
    assert all(r.get("series") for r in cur["rows"])
    assert all(BL.replayed(r, 0.1, "raised") == r["resolution"] for r in cur["rows"])
    assert BL.done(DATA) == 0 and BL.below_count(DATA) == 0
    mine = [o for o in BL.replay_table(cur) if o["rule"].endswith("(bias's rule)")]
    assert len(mine) == 1 and (mine[0]["false"], mine[0]["below"]) == (0, 0)
    # the held-out draw: bias's rule has no false support there, the finer-agreeing candidate has (why not stated)
    held = {o["rule"]: o for o in BL.replay_table(DATA["bias_linear"]["held_out"])}
    assert held["iterate, plateau < 10 %, raised (bias's rule)"]["false"] == 0
    assert held["finer agreeing, plateau < 10 %, raised"]["false"] >= 1


def test_the_held_out_draw_is_measured_on_its_own_seeds_and_the_module_seeds_restored(monkeypatch):
    seen = []
    monkeypatch.setattr(BL, "measure", lambda g, n, say=print: seen.append((BL.DATA_SEED, BL.GAUSS_SEED0, g, n)) or {})
    kept = BL.DATA_SEED, BL.GAUSS_SEED0
    BL.measure_held_out()
    assert seen == [(BL.HELD_OUT["data_seed"], BL.HELD_OUT["gauss_seed0"], BL.HELD_OUT["generated"],
                     BL.HELD_OUT["gaussians"])]
    assert (BL.DATA_SEED, BL.GAUSS_SEED0) == kept and kept != (BL.HELD_OUT["data_seed"], BL.HELD_OUT["gauss_seed0"])


def test_the_held_out_section_is_rendered_with_its_draw():
    assert BL.held_out_lines(None) == []
    sec = {"settings": {"generated": 3, "gaussians": 2, "data_seed": 8181, "gauss_seed0": 81000}, "rows": [{}] * 7,
           "date": "2026-12-08", "commit": "abc1234", "cpu_minutes": 5.9}
    text = "\n".join(BL.held_out_lines(sec))
    assert "### Held out" in text
    assert "3 generated datasets (data seed 8181) and 2 Gaussian sets (seeds from 81000)" in text
    assert "7 rows, measured 2026-12-08 at commit abc1234 (5.9 CPU-min" in text
