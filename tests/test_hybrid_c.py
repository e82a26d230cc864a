"""Issue 51 item 5: `bias` judges a Muon–partner pair in the hybrid geometry max{c‖W‖_msp, ‖u‖_∞} at the c its
learning rates and its library's shape adjustment imply (optim.hybridc), per run from the model's block shapes, and
states it; where the matrix blocks' c differ it does not judge the hybrid at all.

The derivation, from the norm's LMO (geometry.hybrid: (−polar(G)/c, −sign(g))): a step η·LMO moves the vectors η and
the matrices η/c, so a pair moving W by η_t·a(A, B)·polar(G) and u by η_t·sign(g) is steepest descent at
c = 1/a(A, B) — for torch's default a = √max(1, A/B), c = 1/√max(1, A/B), not √max(1, A/B) (the step tests below
hold the shipped steps to η_t·LMO at the implied c, and refute the reciprocal)."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from ibverify import geometry as geo
from ibverify.checks import bias
from ibverify.optim import OptimizerSpec, hybridc
from ibverify.optim.adapters import to_spec
from ibverify.optim.hybridc import ImpliedC, implied, single
from ibverify.optim.logframe import Scaled
from ibverify.optim.optimizers import make_optimizer
from ibverify.report.bias import hybrid_c_lines

TORCH_PAIR = "torch:Muon:weight_decay=0+Adam:eps=0"
NET = {"W": (8, 5), "a": (8,)}   # the two-layer net's blocks: W (m × d), a (m)


def _c(name, shapes, knobs=None):
    return implied(bias.resolved_spec(to_spec(name, knobs or {}), "two-layer", 20), shapes)


# ------------------------------------------------------------------------------------------ one c from the blocks

def test_single_is_the_blocks_common_c_and_none_where_they_differ():
    got = single({"W1": ((3, 2), 0.5), "W2": ((6, 4), 0.5)}, "rule", "note")
    assert got.value == 0.5 and "W1 (3×2): c = 0.5" in got.source and got.source.endswith("; note")
    near = single({"W1": ((3, 2), 0.5), "W2": ((6, 4), 0.5 * (1 + 1e-13))}, "rule")
    assert near.value == 0.5                                              # within SAME: one c
    off = single({"W1": ((3, 2), 0.5), "W2": ((6, 4), 0.5 * (1 + 1e-9))}, "rule")
    assert off.value is None and "different c" in off.source and "W2 (6×4)" in off.source
    assert single({}, "rule").value is None


# ------------------------------------------------------------------------------------------ torch's rules

@pytest.mark.parametrize("shape", [(4, 5), (5, 5), (1, 9)])
def test_torch_original_gives_c_1_where_a_le_b(shape):
    pytest.importorskip("torch")
    got = _c(TORCH_PAIR, {"W": shape, "a": (shape[0],)})
    assert got.value == 1.0 and "'original'" in got.source and "steepest descent" in got.source


@pytest.mark.parametrize("shape", [(8, 5), (10, 3), (4, 2)])
def test_torch_original_gives_1_over_sqrt_a_over_b_where_a_gt_b(shape):
    pytest.importorskip("torch")
    A, B = shape
    got = _c(TORCH_PAIR, {"W": shape, "a": (A,)})
    assert got.value == pytest.approx(1 / math.sqrt(A / B), rel=1e-15)
    assert f"W ({A}×{B}): c = {1 / math.sqrt(A / B):.4g}" in got.source


@pytest.mark.parametrize("shape", [(8, 5), (5, 8), (3, 3)])
def test_torch_match_rms_adamw_gives_1_over_0_2_sqrt_max(shape):
    pytest.importorskip("torch")
    got = _c("torch:Muon:weight_decay=0,adjust_lr_fn='match_rms_adamw'+Adam:eps=0", {"W": shape, "a": (shape[0],)})
    assert got.value == pytest.approx(1 / (0.2 * math.sqrt(max(shape))), rel=1e-15)
    assert "'match_rms_adamw'" in got.source and "0.2·√max(A, B)" in got.source


def test_torch_mixed_shapes_are_refused_with_each_blocks_c():
    pytest.importorskip("torch")
    got = _c(TORCH_PAIR, {"W": (8, 5), "V": (5, 8), "a": (8,)})
    assert got.value is None
    assert "W (8×5): c = 0.7906" in got.source and "V (5×8): c = 1" in got.source and "not judged" in got.source
    same = _c(TORCH_PAIR, {"W": (8, 4), "V": (6, 3), "a": (8,)})   # both A/B = 2: one c
    assert same.value == pytest.approx(1 / math.sqrt(2), rel=1e-15)


def test_torch_partner_not_adam_at_eps_0_keeps_the_lr_ratio_and_says_it_is_no_steepest_descent():
    pytest.importorskip("torch")
    sgd = _c("torch:Muon:weight_decay=0+SGD:momentum=0.9", NET)
    adam = _c("torch:Muon:weight_decay=0+Adam", NET)   # torch's default ε = 1e-8
    for got in (sgd, adam):
        assert got.value == pytest.approx(math.sqrt(5 / 8), rel=1e-15) and "no steepest descent" in got.source
    assert "SGD partner" in sgd.source and "ε = 1e-08" in adam.source


# ------------------------------------------------------------------------------------------ optax's rule

@pytest.mark.parametrize("shape, c", [((8, 5), 1.0), ((5, 5), 1.0), ((4, 5), math.sqrt(4 / 5)),
                                      ((2, 8), 0.5)])   # optax reads (A, B) as (fan_in, fan_out)
def test_optax_width_rule(shape, c):
    pytest.importorskip("optax")
    got = _c("optax:contrib.muon:eps=0", {"W": shape, "a": (shape[0],)})
    assert got.value == pytest.approx(c, rel=1e-15) and "√max(1, fan_out/fan_in)" in got.source


def test_optax_consistent_rms_rule_and_its_refusals():
    pytest.importorskip("optax")
    rms = _c("optax:contrib.muon:eps=0,consistent_rms=0.2", {"W": (8, 5), "a": (8,)})
    assert rms.value == pytest.approx(1 / (0.2 * math.sqrt(8)), rel=1e-15)
    adaptive = _c("optax:contrib.muon:eps=0,adaptive=True", NET)
    assert adaptive.value is None and "adaptive=True" in adaptive.source
    mixed = _c("optax:contrib.muon:eps=0", {"W": (8, 5), "V": (5, 8), "a": (8,)})
    assert mixed.value is None and "different c" in mixed.source
    eps = _c("optax:contrib.muon", NET)
    assert eps.value == 1.0 and "no steepest descent" in eps.source


def test_optax_adam_learning_rate_gives_the_ratio_at_a_constant_step_and_none_under_a_decaying_one():
    pytest.importorskip("optax")
    const = _c("optax:contrib.muon:eps=0,adam_learning_rate=0.02", {"W": (4, 5), "a": (4,)},
               {"lr": 0.1, "lr_decay": 0.0})
    assert const.value == pytest.approx(0.2 / math.sqrt(5 / 4), rel=1e-15) and "0.02/0.1" in const.source
    decaying = _c("optax:contrib.muon:eps=0,adam_learning_rate=0.02", NET, {"lr": 0.1, "lr_decay": 0.5})
    assert decaying.value is None and "moves with t" in decaying.source


# ------------------------------------------------------------------------------------------ the other optimizers

def test_table_hybrids_give_lr_vector_over_lr_matrix_as_their_run_geometry_and_others_c_1():
    spec = bias.resolved_spec(OptimizerSpec("muon-adam", lr_matrix=0.2, lr_vector=0.05), "two-layer", 20)
    got = implied(spec, NET)
    opt = make_optimizer(spec, params={"W": np.zeros((8, 5)), "a": np.zeros(8)}, L=3.0, warn=False)
    assert got.value == 0.25 == opt.geometry.c and "lr_vector/lr_matrix = 0.05/0.2" in got.source
    for name in ("adam", "gd"):
        other = implied(bias.resolved_spec(OptimizerSpec(name), "two-layer", 20), NET)
        assert other.value == 1.0 and "none implied" in other.source


def test_library_optimizers_that_are_no_muon_pair_give_c_1():
    for name, lib in (("torch:Adam:eps=0", "torch"), ("optax:adam:eps=0", "optax")):
        pytest.importorskip(lib)
        got = _c(name, NET)
        assert got.value == 1.0 and "none implied" in got.source


# ------------------------------------------------------------------------------------------ the derivation, measured

CUBIC = "ns_float64=True,ns_coefficients=(1.5,-0.5,0.0),ns_steps=60"   # torch's NS in float64 → exactly UVᵀ


def _lmo_steps(spec, shape, seed=0):
    """(each step of spec's block chain from 0 under one constant gradient, η_t, the gradient) on W of `shape`."""
    rng = np.random.default_rng(seed)
    A, B = shape
    G = rng.standard_normal(shape)
    ga = rng.standard_normal(A) + np.sign(rng.standard_normal(A)) * 0.5
    theta = {"W": np.zeros(shape), "a": np.zeros(A)}
    opt = make_optimizer(spec, params=theta, L=2.0, warn=False)
    opt.init(theta)
    out = []
    for t in range(1, 4):
        new = opt.step(theta, Scaled({"W": G, "a": ga}, 0.0))
        out.append(({k: new[k] - theta[k] for k in theta}, 0.1 * t ** -0.5))
        theta = new
    return out, {"W": G, "a": ga}


def _is_lmo_step(steps, g, c) -> bool:
    L = geo.Hybrid(c).lmo(g)
    return all(all(np.abs(d[k] - eta * L[k]).max() <= 1e-10 * np.abs(eta * L[k]).max() for k in d)
               for d, eta in steps)


@pytest.mark.parametrize("shape", [(4, 2), (2, 4), (6, 6)])
def test_torch_pair_steps_are_eta_times_the_hybrid_lmo_at_the_implied_c(shape):
    """Each step of torch:Muon+Adam:eps=0 (float64 cubic NS: the exact polar factor) is η_t·LMO of the hybrid at
    implied c; for a tall W not at c = 1, nor at the reciprocal √max(1, A/B)."""
    pytest.importorskip("torch")
    spec = to_spec(f"torch:Muon:weight_decay=0,nesterov=False,{CUBIC}+Adam:eps=0", {"lr": 0.1, "lr_decay": 0.5})
    steps, g = _lmo_steps(spec, shape)
    c = implied(spec, {"W": shape, "a": (shape[0],)}).value
    assert _is_lmo_step(steps, g, c)
    adjust = math.sqrt(max(1.0, shape[0] / shape[1]))
    if adjust > 1:
        assert not _is_lmo_step(steps, g, 1.0) and not _is_lmo_step(steps, g, adjust)


@pytest.mark.parametrize("shape", [(2, 4), (4, 2)])
def test_optax_muon_steps_are_eta_times_the_hybrid_lmo_at_the_implied_c(shape):
    """optax.contrib.muon with the cubic iteration (60 steps: the polar factor): η_t·LMO at optax's c."""
    pytest.importorskip("optax")
    spec = to_spec("optax:contrib.muon:eps=0,nesterov=False,ns_coeffs=(1.5,-0.5,0.0),ns_steps=60",
                   {"lr": 0.1, "lr_decay": 0.5})
    steps, g = _lmo_steps(spec, shape)
    c = implied(spec, {"W": shape, "a": (shape[0],)}).value
    assert c == pytest.approx(1 / math.sqrt(max(1.0, shape[1] / shape[0])), rel=1e-15)
    assert _is_lmo_step(steps, g, c)
    if c < 1:
        assert not _is_lmo_step(steps, g, 1.0)


# ------------------------------------------------------------------------------------------ judged and stated

class _Stop(Exception):
    pass


def _judge_network_scores(monkeypatch, found: ImpliedC | None = None):
    """What judge_network hands gronich_score.score (c, geometries) for a constructed growing run of the torch pair
    on a two-layer net of 3 units on 2 inputs (W 3 × 2: c = 1/√1.5), with hybridc.implied replaced by `found`."""
    pytest.importorskip("torch")
    from ibverify.recipes import DataRecipe, ModelRecipe, RunStore

    X = np.array([[1.0, 0.2], [0.3, 1.0], [-1.0, 0.1], [-0.2, -1.0]])
    pr = bias.Problem("t", DataRecipe.of_arrays(X, np.array([1.0, 1.0, -1.0, -1.0])),
                      ModelRecipe.of("two-layer", width=3), 0, n=4)
    base = {"W": np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]), "a": np.array([1.0, 1.0, -1.0])}
    steps = [int(10 ** (3 + k / 4)) for k in range(9)]

    class Store(RunStore):
        def run(self, recipe, **io):
            return SimpleNamespace(q_min=[1.0] * 9, checkpoints=steps,
                                   thetas=[{k: v * math.log(t) for k, v in base.items()} for t in steps])

    seen = {}

    def score(r, model, D, c, decades, geometries=None, points=5):
        seen.update(c=c, geometries=geometries)
        raise _Stop

    monkeypatch.setattr(bias.S, "score", score)
    if found is not None:
        monkeypatch.setattr(hybridc, "implied", lambda spec, shapes: found)
    spec = bias.resolved_spec(to_spec(TORCH_PAIR), "two-layer", 4)
    with pytest.raises(_Stop):
        bias.judge_network(pr, spec, 1000, final=False, store=Store())
    return seen


def test_judge_network_scores_the_hybrid_at_the_implied_c(monkeypatch):
    seen = _judge_network_scores(monkeypatch)
    assert seen["c"] == pytest.approx(1 / math.sqrt(1.5), rel=1e-15)
    assert seen["geometries"] == ["l2", "linf", "msp", "hybrid"]


def test_judge_network_leaves_the_hybrid_out_where_no_c_exists(monkeypatch):
    seen = _judge_network_scores(monkeypatch, ImpliedC(None, "blocks differ"))
    assert seen["geometries"] == ["l2", "linf", "msp"] and seen["c"] == 1.0


def test_the_answer_states_each_datasets_c_and_the_text_groups_them():
    """runner.bias.with_hybrid_c on the datasets judged (by tag), the text lines grouped by (c, source); a model
    without matrix and vector blocks gets none."""
    pytest.importorskip("torch")
    from ibverify.recipes import DataRecipe, ModelRecipe, RunStore
    from ibverify.runner.bias import with_hybrid_c

    prs = [bias.Problem(f"d{d}m{m}", DataRecipe.generated("teacher", n=16, d=d, seed=1),
                        ModelRecipe.of("two-layer", width=m), 0, n=16) for d, m in ((5, 8), (4, 8), (5, 10))]
    entry = {"model": "two-layer", "evidence": {"l2": {"datasets": [{"dataset": p.tag} for p in prs[:2]]}}}
    lin = {"model": "linear", "evidence": {"l2": {"datasets": [{"dataset": "x"}]}}}
    out = with_hybrid_c({"models": [entry, lin]}, lambda m, pr: to_spec(TORCH_PAIR),
                        lambda m: SimpleNamespace(seen=prs if m == "two-layer" else
                                                  [bias.Problem("x", None, n=10)]), RunStore())
    rows = out["models"][0]["hybrid_c"]
    assert [r["dataset"] for r in rows] == ["d5m8", "d4m8"]
    assert [r["c"] for r in rows] == pytest.approx([math.sqrt(5 / 8), math.sqrt(4 / 8)], rel=1e-15)
    assert "hybrid_c" not in out["models"][1]
    lines = hybrid_c_lines(out["models"][0])
    assert len(lines) == 2 and lines[0].startswith("hybrid judged at c = 0.7906 on d5m8 (torch's Muon")
    same = hybrid_c_lines({"hybrid_c": [{"dataset": "a", "c": 0.5, "source": "s"},
                                        {"dataset": "b", "c": 0.5, "source": "s"},
                                        {"dataset": "c", "c": None, "source": "why"}]})
    assert same == ["hybrid judged at c = 0.5 on a, b (s)", "hybrid not judged on c: why"]


def test_the_text_and_the_report_page_state_the_c_and_a_refusal():
    from ibverify.cli.bias import text
    from ibverify.report.bias import bias_page

    model = {"model": "two-layer", "supported": [], "contradicted": [], "inconclusive": [], "datasets": 2,
             "evidence": {}, "cpu_seconds": 1.0, "spec": {},
             "hybrid_c": [{"dataset": "s1", "c": 0.6123724356957945, "source": "torch's rule"},
                          {"dataset": "s2", "c": None, "source": "the blocks' c differ"}]}
    answer = {"optimizer": "torch:Muon+Adam", "knobs": {}, "tier": "smoke", "seed": 0, "models": [model],
              "skipped": {}}
    lines = text(answer).splitlines()
    assert "    hybrid judged at c = 0.6124 on s1 (torch's rule)" in lines
    assert "    hybrid not judged on s2: the blocks' c differ" in lines
    page = bias_page([answer], {"versions": {}, "tier": "smoke", "seed": 0}, {})
    assert '<p class="hybrid-c">hybrid judged at c = 0.6124 on s1 (torch&#39;s rule)</p>' in page
    assert '<p class="hybrid-c">hybrid not judged on s2: the blocks&#39; c differ</p>' in page
