"""The cross-geometry judgement, the max-margin certificate (each condition on its own), the degree-1
matrix+vector model, and the direction criterion with its provably moving control."""

import math

import numpy as np
import pytest
from hypothesis import given, settings

from ibverify import IbverifyError
from ibverify.checks import gronich_dynamics as D
from ibverify.checks import gronich_score as S
from ibverify.checks.rules import CONTRADICTED, INCONCLUSIVE, SET_ASIDE, SUPPORTED, rate_fit
from ibverify.data import netdata as datasets
from ibverify.oracles import kkt
from ibverify import models
from ibverify import geometry as G
from ibverify.strategies.network import separable_linear
from ibverify.recipes.settings import degree_one_problem

STEPS = [1000, 3162, 10000, 31623, 100000]   # two decades, five checkpoints


def scores(own_curve, others):
    sc = S.Scores(STEPS)
    sc.residual = {"linf": list(own_curve), **{g: list(v) if np.ndim(v) else [v] * 5 for g, v in others.items()}}
    sc.signature = {g: [0.01] * 5 for g in sc.residual}
    return sc


FALLING = [0.6, 0.45, 0.33, 0.25, 0.19]


def test_both_halves_hold():
    j = S.judge(scores(FALLING, {"l2": 0.5, "msp": 0.7}), "linf")
    assert j.decision == SUPPORTED and j.ok and j.figures["residual_ratio"] == pytest.approx(0.38)


def test_ratio_half_alone_contradicts():
    # the own residual falls, but ℓ2's falls as fast and stays below: another geometry at or below, ratio flat
    l2 = [v * 0.9 for v in FALLING]
    j = S.judge(scores(FALLING, {"l2": l2, "msp": 0.7}), "linf", final=False)
    assert j.decision == CONTRADICTED and "at or below" in j.reasons[0] and j.figures["residual_falling"] == 1.0


def test_own_trend_half_alone_contradicts_at_the_cap():
    # separated (ratio 0.6 < 1, so the ratio half alone would not contradict), but nothing moves: the own residual
    # is a stable plateau and so is the ratio
    own = [0.3, 0.3, 0.299, 0.3, 0.299]
    flat = [0.5, 0.5, 0.501, 0.5, 0.5]
    assert S.judge(scores(own, {"l2": flat}), "linf", final=True).decision == CONTRADICTED
    j = S.judge(scores(own, {"l2": flat}), "linf", final=False)      # before the cap: extend, not decide
    assert j.decision == INCONCLUSIVE and "to be extended" in j.reasons[0]


def test_a_plateau_while_the_rivals_recede_or_a_bending_residual_is_not_contradicted():
    own = [0.3, 0.3, 0.299, 0.3, 0.299]
    rising = [0.5, 0.6, 0.7, 0.8, 0.9]                                # the ratio falls: the run still moves
    assert S.judge(scores(own, {"l2": rising}), "linf", final=True).decision == INCONCLUSIVE
    saddle = [0.3, 0.301, 0.3, 0.24, 0.18]                            # flat, then falling: a bend, not a law
    assert S.judge(scores(saddle, {"l2": 0.5}), "linf", final=True).decision != CONTRADICTED


def test_a_ratio_above_one_that_falls_is_inconclusive_not_contradicted():
    own = [0.9, 0.7, 0.5, 0.36, 0.26]
    j = S.judge(scores(own, {"l2": [0.5, 0.42, 0.36, 0.31, 0.25]}), "linf")
    assert j.figures["residual_ratio"] > 1 and j.decision == INCONCLUSIVE


def test_guard_alone_keeps_a_ratio_near_one_undecided():
    own = [0.6, 0.45, 0.33, 0.25, 0.19]
    others = {"l2": [0.7, 0.58, 0.47, 0.38, 0.3]}           # ratio 0.86 → 0.63, falling
    assert S.judge(scores(own, others), "linf").decision == SUPPORTED
    assert S.judge(scores(own, others), "linf", guard=2.0).decision == INCONCLUSIVE


def test_too_few_checkpoints_is_inconclusive():
    sc = scores(FALLING, {"l2": 0.5})
    sc.steps, sc.residual = sc.steps[-2:], {g: v[-2:] for g, v in sc.residual.items()}
    sc.signature = {g: v[-2:] for g, v in sc.signature.items()}
    assert S.judge(sc, "linf").decision == INCONCLUSIVE


def test_signature_bound_at_the_bound_tier():
    sc = scores(FALLING, {"l2": 0.5})
    sc.signature["linf"] = [0.3, 0.25, 0.2, 0.15, 0.1]
    assert S.judge(sc, "linf").decision == SUPPORTED                            # fast tier: reported only
    bad = S.judge(sc, "linf", signature_max=0.05)
    assert bad.decision == INCONCLUSIVE and "signature 0.1 > 0.05" in bad.reasons[0]


def test_rate_reports_crossing_and_flat():
    x = [1e4, 1e5, 1e6]
    r = rate_fit(x, [0.4, 0.2, 0.1], 0.05, 2.0)
    assert r.crossing == pytest.approx(1e7, rel=1e-6) and r.slope == pytest.approx(-math.log10(2))
    flat = rate_fit(x, [0.4, 0.4 * (1 - 1e-6), 0.4 * (1 - 2e-6)], 1e-3, 2.0)   # crossing beyond float range
    assert flat.crossing is None


# ------------------------------------------------------------------ certificate, each condition on its own

LIN = models.Linear(2)
X2, Y2 = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, 1.0])


def test_certificate_holds_at_the_linf_optimum():
    c = kkt.certify(G.Linf(), LIN, X2, Y2, {"w": np.array([1.0, 1.0])}, np.array([0.5, 0.5]))
    assert c.ok and c.lower == pytest.approx(1.0) and c.upper == pytest.approx(1.0)


def test_primal_infeasibility_alone():
    c = kkt.certify(G.Linf(), LIN, X2, Y2, {"w": np.array([1.0, 0.5])}, np.array([0.5, 0.5]))
    assert not c.primal_feasible and c.dual_feasible and c.gap_closed and c.primal_violation == pytest.approx(0.5)


def test_dual_infeasibility_alone():
    c = kkt.certify(G.Linf(), LIN, X2, Y2, {"w": np.array([1.2, 1.2])}, np.array([0.6, 0.6]))
    assert c.primal_feasible and not c.dual_feasible and c.gap_closed and c.dual_violation == pytest.approx(0.2)
    neg = kkt.certify(G.Linf(), LIN, X2, Y2, {"w": np.array([1.0, 1.0])}, np.array([1.1, -0.1]))
    assert not neg.dual_feasible


def test_duality_gap_alone():
    c = kkt.certify(G.Linf(), LIN, X2, Y2, {"w": np.array([2.0, 2.0])}, np.array([0.5, 0.5]))
    assert c.primal_feasible and c.dual_feasible and not c.gap_closed and c.gap == pytest.approx(0.5)


def test_l2_certificate_hand_value():
    _, c = kkt.certified_max_margin(G.L2(), LIN, X2, Y2)
    assert c.ok and c.upper == pytest.approx(1 / math.sqrt(2), rel=1e-7)


@settings(max_examples=5, deadline=None)
@given(separable_linear())
def test_certified_bounds_bracket_every_direction(data):
    m = models.Linear(data.X.shape[1])
    for geo in (G.L2(), G.Linf()):
        _, c = kkt.certified_max_margin(geo, m, data.X, data.y)
        assert c.ok and c.upper - c.lower <= 1e-5 * c.upper
        w = {"w": np.linalg.lstsq(data.X, data.y, rcond=None)[0]}     # any direction's margin ≤ γ*
        assert geo.margin(m, w, data.X, data.y) <= c.upper * (1 + 1e-9)


def test_certified_max_margin_rejects_nonlinear_models():
    with pytest.raises(IbverifyError):
        kkt.certified_max_margin(G.L2(), models.TwoLayer(2, 2), X2, Y2)


def test_fenchel_residual_zero_at_optimum_positive_off():
    d = datasets.linear_separable(12, 4, seed=3)
    m = models.Linear(4)
    th, _ = kkt.certified_max_margin(G.Linf(), m, d.X, d.y)
    assert kkt.fenchel_residual(G.Linf(), m, th, d.X, d.y) < 1e-3
    th2, _ = kkt.certified_max_margin(G.L2(), m, d.X, d.y)
    assert kkt.fenchel_residual(G.Linf(), m, th2, d.X, d.y) > 0.05       # the ℓ2 optimum is not ℓ∞-KKT here
    assert kkt.fenchel_residual(G.L2(), m, th2, d.X, d.y) < 1e-2     # √(solver accuracy): the residual is a root


# ------------------------------------------------------------------ degree-1 matrix + vector model

def test_matrix_vector_model_is_the_flat_linear_model():
    rng = np.random.default_rng(0)
    m = models.MatrixVectorLinear(2, 3, 4)
    th = m.init(rng, 1.0)
    X = rng.standard_normal((5, 10))
    flat = np.concatenate([th["W"].ravel(), th["u"]])
    np.testing.assert_allclose(m.outputs(th, X), X @ flat, rtol=1e-13)
    np.testing.assert_allclose(m.outputs({k: 2.5 * v for k, v in th.items()}, X), 2.5 * X @ flat, rtol=1e-13)
    c = rng.standard_normal(5)
    J, v = m.jac(th, X), m.vjp(th, X, c)
    for k in th:
        np.testing.assert_allclose(v[k].ravel(), J[k].reshape(5, -1).T @ c, rtol=1e-12)
    assert m.L == 1.0 and set(m.blocks) == {"W", "u"}


def test_hybrid_optimum_differs_from_msp_on_matrix_vector_data():
    ex = {"kind": "matrix-vector", "n": 14, "data_seed": 5, "p": 3, "r": 3, "k": 4}
    data, model = degree_one_problem(ex)
    d = data.build()
    m = model.build(d)
    H = G.Hybrid(1.0)
    th_h, ch = kkt.certified_max_margin(H, m, d.X, d.y)
    th_m, _ = kkt.certified_max_margin(G.MaxSpectral(), m, d.X, d.y)
    assert ch.ok and H.margin(m, th_m, d.X, d.y) < ch.upper * (1 - 1e-3)


# ------------------------------------------------------------------ direction criterion and its control

def test_spiral_keeps_turning_and_is_contradicted():
    traj = D.spiral(10**6, omega=0.5)
    ts, d = S.direction_increments(traj.checkpoints, traj.thetas)
    expect = 1 - math.cos(0.5 * math.log(10))
    assert ts[0] == 10**4 and ts[-1] == 10**6 and d == pytest.approx([expect] * len(d), rel=1e-2)
    dec, _, _ = S.judge_direction(traj.checkpoints, traj.thetas, 0.1, 0.05, final=True)
    assert dec.word == CONTRADICTED
    slow = D.spiral(10**6, omega=0.02)   # δ ≈ 1e-3 ≤ dir_max: only the trend half can refute it
    dec, _, ds = S.judge_direction(slow.checkpoints, slow.thetas, 0.1, 0.05, final=True)
    assert max(ds) < 0.1 and dec.word == CONTRADICTED
    assert S.judge_direction(slow.checkpoints, slow.thetas, 0.1, 0.05, final=False)[0].word == INCONCLUSIVE


def _ray(bump: float = 0.0):
    # θ_t = t·u + √t·v: the angle to the limit u decays like t^{-1/2}; `bump` adds an excursion at t = 10^4.25
    u, v = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    steps = [int(x) for x in np.logspace(3, 6, 13)]
    th = [{"w": t * u + math.sqrt(t) * v + (bump * t * v if i == 5 else 0)} for i, t in enumerate(steps)]
    return D.Trajectory(steps, th)


def test_a_converging_ray_is_supported_and_closeness_alone_withholds_support():
    traj = _ray()
    dec, ts, d = S.judge_direction(traj.checkpoints, traj.thetas, 0.1, 0.05, final=True)
    assert dec.word == SUPPORTED and d[-1] < 0.2 * d[0]
    tight = S.judge_direction(traj.checkpoints, traj.thetas, d[-1] / 2, 0.05, final=True)[0]
    assert tight.word == INCONCLUSIVE and "on track" in tight.reason


def test_an_excursion_in_the_middle_does_not_decide_but_one_at_the_horizon_does_not_support():
    traj = _ray(bump=0.3)       # the sup-envelope forgets a bump once later increments are smaller
    assert S.judge_direction(traj.checkpoints, traj.thetas, 0.1, 0.05, final=True)[0].word == SUPPORTED
    assert S.envelope([1, 3, 2, 0.5]) == [3, 3, 2, 0.5]


def test_scores_use_each_geometrys_own_signature():
    from ibverify.engine import Run

    m = models.TwoLayer(2, 2, 2.0)
    # ‖W‖_F²/2 = ‖a‖²/1 = 1 (ℓ2-balanced); max|W| = 1 but max|a| = 1/√2 (ℓ∞ not saturated in a)
    th = {"W": np.array([[1.0, 0.0], [0.0, 1.0]]), "a": np.array([1.0 / math.sqrt(2), 1.0 / math.sqrt(2)])}
    X, y = np.array([[1.0, 0.2], [0.2, 1.0]]), np.array([1.0, 1.0])
    run = Run(None, "reference", [10, 100], 100, block_thetas=[th, th], records={"q_min": [1.0, 1.0]})
    sc = S.score(run, m, type("D", (), {"X": X, "y": y})(), 1.0, 1.0)
    assert set(sc.residual) == {"l2", "linf", "msp", "hybrid"}
    assert sc.signature["l2"][-1] == pytest.approx(0.0, abs=1e-12)
    assert sc.signature["linf"][-1] == pytest.approx(1 - 1 / math.sqrt(2))
    assert sc.signature["msp"][-1] == pytest.approx(0.0, abs=1e-12)     # ‖W‖_sp = 1 = ‖a‖_2
    assert sc.signature["hybrid"][-1] == pytest.approx(math.sqrt(2) - 1)   # ‖W‖_msp/‖a‖_∞ − 1
    assert sc.move == pytest.approx(0.0, abs=1e-15)                       # the same direction


def test_scores_report_how_far_the_direction_moved():
    from ibverify.engine import Run

    m = models.TwoLayer(2, 2, 2.0)
    th = {"W": np.array([[1.0, 0.0], [0.0, 1.0]]), "a": np.array([1.0, 0.0])}
    turned = {"W": np.array([[3.0, 0.0], [0.0, -3.0]]), "a": 3 * th["a"]}   # cos = (1 − 1 + 1)/3; same outputs
    X, y = np.array([[1.0, 0.2], [0.2, 1.0]]), np.array([1.0, 1.0])
    run = Run(None, "reference", [1, 10, 100], 100, block_thetas=[turned, th, turned],
              records={"q_min": [-1.0, 1.0, 1.0]})
    sc = S.score(run, m, type("D", (), {"X": X, "y": y})(), 1.0, 2.0, geometries=["l2"])
    assert sc.steps == [10, 100] and sc.move == pytest.approx(2 / 3)    # from the first separated checkpoint


def test_control_examples_come_from_the_controlled_claim():
    from ibverify.checks.gronich_nets import family_ctx
    from ibverify.claims import CheckContext, load_registry

    reg = {c.id: c for c in load_registry()}
    ctl = reg["gronich.control.muon-linf"]
    ctx = CheckContext(ctl, "fast", ctl.params_for("fast"), 3)
    assert family_ctx(ctx).claim.id == "gronich.muon-msp" and family_ctx(ctx).seed == 3
    assert ctl.params_for("fast")["steps"] == reg["gronich.muon-msp"].params_for("fast")["steps"]


@pytest.mark.parametrize("claim_id,own,rival", [("gronich.muon-msp-deep", "msp", "l2"),
                                                ("gronich.momentum-gd-l2-deep", "l2", "msp")])
def test_deep_net_runs_separate_muon_from_momentum_gd(claim_id, own, rival):
    """The deep claims train the three-layer net (two hidden matrices), and on it the cross-geometry rule tells
    Muon (max-spectral) and MomentumGD (ℓ2) apart at 3e4 steps: each holds in its own geometry, not the other's."""
    from ibverify.checks.gronich_nets import run_example
    from ibverify.claims import CheckContext, load_registry

    claim = {c.id: c for c in load_registry()}[claim_id]
    ctx = CheckContext(claim, "full", {**claim.params_for("full"), "steps": 30_000}, 0)
    ex = {"dataset": "teacher", "n": 20, "d": 4, "width": 8, "data_seed": 100, "seed": 0}
    r, model, data, opt = run_example(ctx, ex)
    assert isinstance(model, models.DeepReLU) and list(model.blocks) == ["W1", "W2", "a"]
    assert model.blocks["W2"] == (8, 8) and model.L == pytest.approx(1 + 1.25 + 1.25 ** 2)
    sc = S.score(r, model, data, 1.0)
    mine = S.judge(sc, own)
    other = S.judge(sc, rival)
    assert mine.decision == SUPPORTED, mine.reasons
    assert other.decision == CONTRADICTED and other.figures["residual_ratio"] > 1.5


# ------------------------------------------------------------------ the plateau half against a slow approach

PLATEAU_OWN, PLATEAU_RIVAL = [0.3, 0.3, 0.299, 0.3, 0.299], [0.5, 0.5, 0.501, 0.5, 0.5]
APPROACH = [0.14, 0.125, 0.112, 0.1, 0.089]     # t^-0.1: a run nearing a KKT point slowly (seed-5 finding)


def test_a_plateau_contradicts_only_when_no_certified_kkt_point_is_approached():
    def judged(evidence):
        return S.judge(scores(PLATEAU_OWN, {"l2": PLATEAU_RIVAL}), "linf", final=True, approach=evidence)
    j = judged(lambda: (APPROACH, "a certified point"))
    assert j.decision == INCONCLUSIVE and "approaches a certified point" in j.reasons[0]
    assert "reaches 0.05" in j.reasons[0]
    j = judged(lambda: ([0.1, 0.1, 0.0999, 0.1, 0.1], "a certified point"))    # at a fixed distance: not approached
    assert j.decision == CONTRADICTED and "not approached" in j.reasons[0]
    j = judged(lambda: None)                                                    # no certified KKT point found
    assert j.decision == CONTRADICTED and "no certified KKT point" in j.reasons[0]
    j = judged(lambda: ([0.14, 0.1, 0.1, 0.1, 0.1], "a certified point"))      # fell once, flat for the last decade
    assert j.decision == CONTRADICTED


def test_the_approach_is_asked_for_only_where_a_plateau_would_contradict():
    def boom():
        raise AssertionError("approach evidence computed where it cannot change the decision")
    assert S.judge(scores(FALLING, {"l2": 0.5, "msp": 0.7}), "linf", approach=boom).decision == SUPPORTED
    before_cap = S.judge(scores(PLATEAU_OWN, {"l2": PLATEAU_RIVAL}), "linf", final=False, approach=boom)
    assert before_cap.decision == INCONCLUSIVE
    below = S.judge(scores(FALLING, {"l2": [v * 0.9 for v in FALLING]}), "linf", final=True, approach=boom)
    assert below.decision == CONTRADICTED      # a rival geometry below: contradicted whatever the approach


def test_approaching_needs_a_trend_over_two_decades():
    from ibverify.checks.rules import approaching
    assert approaching(STEPS, APPROACH)
    assert not approaching(STEPS, [0.1] * 5)
    assert not approaching(STEPS[-2:], APPROACH[-2:])                 # two points are never a trend
    assert approaching(STEPS, [0.2, 0.1, 0.05, 1e-3, 0.0])            # reached


def test_local_kkt_finds_the_unique_l2_max_margin_of_a_linear_model_and_certifies_it():
    d = datasets.linear_separable(14, 4, seed=5)
    m = models.Linear(4)
    opt, _ = kkt.certified_max_margin(G.L2(), m, d.X, d.y)
    start = {k: v + 0.3 * np.random.default_rng(1).standard_normal(v.shape) for k, v in opt.items()}
    if np.min(d.y * m.outputs(start, d.X)) <= 0:
        start = opt
    K = kkt.local_kkt(G.L2(), m, start, d.X, d.y)
    assert K.certified(1e-5) and np.min(d.y * m.outputs(K.theta, d.X)) == pytest.approx(1.0, abs=1e-9)
    u = np.ravel(K.theta["w"]) / np.linalg.norm(K.theta["w"])
    v = np.ravel(opt["w"]) / np.linalg.norm(opt["w"])
    assert u @ v > 1 - 1e-8 and K.margin == pytest.approx(G.L2().margin(m, opt, d.X, d.y), rel=1e-6)


def separated_start():
    """A small two-layer net and teacher data, and a θ that separates them (normalized GD on the hinge part)."""
    d = datasets.teacher_two_layer(12, 3, seed=2)
    m = models.TwoLayer(3, 4)
    th = m.init(np.random.default_rng(3), 1.0)
    for _ in range(4000):
        q = d.y * m.outputs(th, d.X)
        if q.min() > 0:
            break
        grad = m.vjp(th, d.X, -d.y * (q < 0.5))
        nrm = np.sqrt(sum(np.sum(v * v) for v in grad.values()))
        th = {k: th[k] - 0.05 * grad[k] / nrm for k in th}
    assert np.min(d.y * m.outputs(th, d.X)) > 0
    return d, m, th


@pytest.mark.parametrize("geom", ["l2", "linf"])
def test_local_kkt_on_a_network_is_certified_and_improves_the_margin(geom):
    d, m, th = separated_start()
    g = G.get(geom)
    K = kkt.local_kkt(g, m, th, d.X, d.y)
    assert K.certified(1e-4) and kkt.fenchel_residual(g, m, K.theta, d.X, d.y) <= 1e-4
    assert K.margin >= g.margin(m, th, d.X, d.y) * (1 - 1e-9)
    assert kkt.fenchel_residual(g, m, th, d.X, d.y) > 1e-3      # the start was not KKT: the point is found, not given


def test_approach_evidence_falls_along_a_path_into_a_kkt_point_and_not_along_a_fixed_direction():
    d, m, th0 = separated_start()
    K = kkt.local_kkt(G.L2(), m, th0, d.X, d.y)

    class Run:
        def __init__(self, thetas):
            self.checkpoints, self.thetas = STEPS, thetas
    sc = S.Scores(STEPS)
    path = [{k: K.theta[k] + (t / STEPS[0]) ** -0.3 * (th0[k] - K.theta[k]) * 0.5 for k in K.theta} for t in STEPS]
    gap, what = S.approach(Run(path), m, d, sc, "l2")()
    assert "certified ℓ2 KKT point" in what and gap[-1] < gap[0] and rules_approaching(gap)
    fixed = S.approach(Run([th0] * 5), m, d, sc, "l2")()
    assert fixed is not None and not rules_approaching(fixed[0]) and min(fixed[0]) > 1e-3


def rules_approaching(gap):
    from ibverify.checks.rules import approaching
    return approaching(STEPS, gap)


def test_a_set_aside_example_says_how_many_samples_hold_its_margin_at_zero(monkeypatch):
    """An example never separated is set aside (never support), and the evidence counts its inert samples (f = 0 with
    a zero gradient: every unit dead on them), which is what keeps its margin at exactly 0."""
    from types import SimpleNamespace

    from ibverify.checks import gronich_nets
    from ibverify.checks.prop import set_aside_cap
    from ibverify.claims import CheckContext, load_registry

    model = models.TwoLayer(2, 3, 2.0)
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [-1.0, -1.0]])
    data = SimpleNamespace(X=X, y=np.array([1.0, 1.0, -1.0, -1.0]))
    theta = {"W": np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]), "a": np.array([1.0, -0.5, 2.0])}
    fake = SimpleNamespace(q_min=[0.0], thetas=[theta])
    calls = []
    monkeypatch.setattr(gronich_nets, "run_example",
                        lambda ctx, ex, steps=None: calls.append(ex) or (fake, model, data, None))
    claim = {c.id: c for c in load_registry()}["gronich.momentum-gd-l2"]
    params = {**claim.params_for("smoke"), "steps": 100_000, "extensions": 0, "examples": 3}
    out = gronich_nets.network_kkt(CheckContext(claim, "smoke", params, 0))
    assert not out.holds and out.inconclusive and out.decisions["supported"] == 0
    cap = set_aside_cap(3)
    assert out.decisions["set aside"] == cap and len(calls) == cap   # a bounded number of draws, all counted
    assert "(at T = 1e+05: 2 of 4 samples inert: f = 0 with a zero gradient, every unit dead on them)" in out.details


# y = (+1, +1, −1, −1); units 1–3 dead on samples 3 and 4 (inert); sample 2 has f = −0.5 + 0.5 = 0 through live units
_X4 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [-1.0, -1.0]])
_W3 = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])


@pytest.mark.parametrize("a,y,word", [
    ([1.0, 0.5, 2.0], [1, 1, -1, -1], SET_ASIDE),        # open samples 3, 4: both inert
    ([1.0, -0.5, 2.0], [1, 1, -1, -1], INCONCLUSIVE),    # sample 2 open (y·f = 0) and live
    ([1.0, 0.5, -4.0], [1, 1, -1, -1], INCONCLUSIVE),    # sample 2 open with y·f = −0.5 < 0, live
    ([1.0, 0.5, 2.0], [1, 1, 1, 1], SET_ASIDE),          # y of the inert samples flipped: still y·f = 0
])
def test_unseparated_sets_aside_early_only_a_run_held_by_inert_samples(a, y, word):
    """gronich_score.unseparated: before the cap, set aside exactly when every sample with y·f ≤ 0 is inert; at the
    cap always; the inert count is returned either way."""
    model = models.TwoLayer(2, 3, 2.0)
    theta = {"W": _W3, "a": np.array(a)}
    assert S.unseparated(model, theta, _X4, np.array(y, float), final=False) == (word, 2)
    assert S.unseparated(model, theta, _X4, np.array(y, float), final=True) == (SET_ASIDE, 2)


def test_unseparated_without_an_open_sample_is_not_held():
    """Called on a run whose margin is positive by the model's own outputs (its q_min said otherwise), nothing holds
    it: not set aside before the cap."""
    model = models.TwoLayer(2, 3, 2.0)
    theta = {"W": _W3, "a": np.array([1.0, 0.5, 2.0])}
    X, y = _X4[:2], np.ones(2)
    assert S.unseparated(model, theta, X, y, final=False) == (INCONCLUSIVE, 0)


@pytest.mark.parametrize("a,horizons", [([1.0, 0.5, 2.0], [100_000]), ([1.0, -0.5, 2.0], [100_000, 1_000_000])])
def test_a_run_held_by_inert_samples_is_set_aside_at_its_first_horizon(monkeypatch, a, horizons):
    """network_kkt's wiring: an example whose margin inert samples alone hold at 0 is set aside at the tier's horizon
    (one run); one with a live open sample is extended ×10 to the cap first."""
    from types import SimpleNamespace

    from ibverify.checks import gronich_nets
    from ibverify.claims import CheckContext, load_registry

    model = models.TwoLayer(2, 3, 2.0)
    data = SimpleNamespace(X=_X4, y=np.array([1.0, 1.0, -1.0, -1.0]))
    fake = SimpleNamespace(q_min=[0.0], thetas=[{"W": _W3, "a": np.array(a)}])
    calls = []
    monkeypatch.setattr(gronich_nets, "run_example",
                        lambda ctx, ex, steps=None: calls.append((ex["seed"], steps)) or (fake, model, data, None))
    claim = {c.id: c for c in load_registry()}["gronich.momentum-gd-l2"]
    params = {**claim.params_for("smoke"), "steps": 100_000, "extensions": 1, "examples": 1}
    out = gronich_nets.network_kkt(CheckContext(claim, "smoke", params, 0))
    assert out.decisions["set aside"] >= 1 and out.decisions["supported"] == 0
    first = calls[0][0]
    assert [t for s, t in calls if s == first] == horizons
    assert f"(at T = {horizons[-1]:.2g}: 2 of 4 samples inert" in out.details


def test_runs_set_aside_are_counted_once_across_families(monkeypatch):
    """family_runs tallies each family on its own: the set-aside count is the number of runs set aside (each listed),
    not a running total re-counted per family (it read 11 for 3 runs before)."""
    from ibverify.checks import gronich_dynamics as GD
    from ibverify.claims import CheckContext, load_registry

    outside = lambda ex: ex["data_seed"] == 0                      # noqa: E731
    monkeypatch.setattr(GD, "separated_run",
                        lambda fctx, ex, steps=None, final=True: SET_ASIDE if outside(ex) else ("run", ex))
    drawn = []

    def judge_run(r, ex, final):
        drawn.append(ex)
        return SUPPORTED, [], {"delta_T": 0.01}, {}

    claim = {c.id: c for c in load_registry()}["gronich.approx-steepest"]
    fams = ["gronich.momentum-gd-l2", "gronich.signum-linf", "gronich.muon-msp"]
    ctx = CheckContext(claim, "smoke", {**claim.params_for("smoke"), "families": fams, "extensions": 0}, 0)
    out = GD.family_runs(ctx, judge_run, "δ", "delta_T", 0.1)
    listed = out.details.split("set aside")[-1].count("gronich.")
    assert out.figures["set_aside"] == out.decisions["set aside"] == listed >= 3    # data0 first in every family
    assert out.decisions["supported"] == len(drawn) >= 3


# ------------------------------------------------------------------ R_max ≤ 1: evidence or a consequence

def test_r_max_is_a_consequence_only_where_it_holds_by_construction():
    from ibverify.checks.gronich_dynamics import r_max_by_construction
    from ibverify.optim.spec import OptimizerSpec
    spec = lambda name, **k: OptimizerSpec.from_params({"optimizer": name, **k})  # noqa: E731
    assert "normalized" in r_max_by_construction(spec("signum"), None)
    assert "normalized" in r_max_by_construction(spec("muon"), None)
    assert "Cauchy" in r_max_by_construction(spec("adam", beta1=0.9, beta2=0.9), None)
    assert r_max_by_construction(spec("adam", beta1=0.9, beta2=0.999), None) == ""        # evidence: can exceed 1
    assert r_max_by_construction(spec("muon-adam", beta1=0.9, beta2=0.999), None) == ""   # the hybrid's Adam part
    assert "Cauchy" in r_max_by_construction(spec("muon-adam", beta1=0.99, beta2=0.99), None)
    assert r_max_by_construction(spec("signum"), "l2") == ""                              # another norm: evidence
