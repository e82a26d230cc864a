"""The wrong inputs of the controls of gronich.dual-norms, gronich.homogeneity and gronich.own-norm-wins, each on
constructed inputs, and each control's check against its claim's on the same draws: the Frobenius LMO/dual pair
offered as the spectral norm's (`judge`/`rival`), the output-bias model (`model = "output-bias"`) and a
preconditioned Signum run judged as an ℓ∞ optimizer (`runs` with `input_scale`)."""

from pathlib import Path

import cvxpy as cp
import numpy as np
import pytest

from ibverify import geometry as geo, models
from ibverify.blocks import inner
from ibverify.checks import gronich, gronich_ordering
from ibverify.claims import CheckContext, load_registry

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = {c.id: c for c in load_registry(ROOT / "claims")}


def ctx_of(cid: str, tier: str = "smoke", **over) -> CheckContext:
    c = CLAIMS[cid]
    return CheckContext(c, tier, {**c.params_for(tier), **over})


def spectral_sup(g: np.ndarray) -> float:
    """sup ⟨U, G⟩ over the spectral unit ball, by the conic solver."""
    U = cp.Variable(g.shape)
    prob = cp.Problem(cp.Maximize(cp.sum(cp.multiply(U, g))), [geo.Spectral().cvx_norm({"W": U}) <= 1])
    prob.solve(solver=cp.CLARABEL)
    return prob.value


# ---------------------------------------------------------------------------------------------- dual norms

def test_frobenius_pair_agrees_with_the_spectral_pair_on_rank_one_matrices():
    g = {"W": np.outer([1.0, -2.0, 0.5], [3.0, 1.0])}
    l2, sp = geo.get("l2"), geo.get("spectral")
    assert l2.dual_norm(g) == pytest.approx(sp.dual_norm(g), rel=1e-12)
    assert abs(inner(l2.lmo(g), g) + l2.dual_norm(g)) <= 1e-12 * l2.dual_norm(g)
    assert sp.norm(l2.lmo(g)) == pytest.approx(1.0, rel=1e-12)
    assert spectral_sup(g["W"]) == pytest.approx(l2.dual_norm(g), rel=1e-6)


def test_frobenius_pair_on_a_rank_two_matrix_passes_the_identity_and_fails_the_unit_norm_and_the_solver():
    g = {"W": np.diag([2.0, 1.0])}
    l2, sp = geo.get("l2"), geo.get("spectral")
    ds, u = l2.dual_norm(g), l2.lmo(g)
    assert ds == pytest.approx(np.sqrt(5.0), rel=1e-14)
    assert abs(inner(u, g) + ds) <= 1e-14 * ds                      # the LMO identity alone cannot refute it
    assert sp.norm(u) == pytest.approx(2 / np.sqrt(5.0), rel=1e-14)  # ‖LMO‖_sp = 0.894 ≠ 1
    assert spectral_sup(g["W"]) == pytest.approx(3.0, rel=1e-6)      # nuclear 3 ≠ Frobenius √5


def test_dual_norms_check_refutes_the_frobenius_pair_and_supports_the_spectral_one_on_the_same_draws():
    ctl = gronich.dual_norms(ctx_of("gronich.control.dual-norms-frobenius-pair"))
    assert ctl.holds is False and "‖LMO‖ = 1" in ctl.counterexample["failure"]
    assert ctl.figures["max_err_lmo_identity"] <= 1e-12 and ctl.figures["max_err_lmo_unit"] > 1e-3
    right = gronich.dual_norms(ctx_of("gronich.control.dual-norms-frobenius-pair", rival=None))
    assert right.holds is True and right.counterexample is None
    assert "spectral" in right.details and "offered" not in right.details


def test_dual_norms_check_without_judge_covers_every_geometry():
    out = gronich.dual_norms(ctx_of("gronich.dual-norms"))
    assert out.holds is True
    assert all(n in out.details for n in ("l2", "linf", "spectral", "msp", "hybrid"))


# ---------------------------------------------------------------------------------------------- homogeneity

def biased(model, theta, X, b):
    m = gronich.OutputBias(model)
    return m, m.join(theta, b)


def test_output_bias_two_layer_breaks_scaling_euler_and_the_first_block_by_exactly_the_bias():
    rng = np.random.default_rng(3)
    model = models.TwoLayer(3, 4, 2.0)
    theta, X = model.init(rng, 1.0), rng.standard_normal((5, 3))
    f0, b, alpha = model.outputs(theta, X), 0.25, 2.0
    m, th = biased(model, theta, X, b)
    assert m.out == "a" and th["a"].shape == (5,)
    f = m.outputs(th, X)
    np.testing.assert_allclose(f, f0 + b, rtol=1e-14)
    scaled = m.outputs({k: alpha * v for k, v in th.items()}, X)
    np.testing.assert_allclose(scaled - alpha ** 3 * f, (alpha - alpha ** 3) * b, atol=1e-12)
    J = m.jac(th, X)
    blk = {k: J[k].reshape(5, -1) @ th[k].ravel() for k in J}
    np.testing.assert_allclose(blk["a"], f, atol=1e-12)                 # linear in (a, b): degree 1 holds
    np.testing.assert_allclose(blk["W"], 2.0 * (f - b), atol=1e-12)     # degree q of W: q(f − b) ≠ q f
    np.testing.assert_allclose(blk["W"] + blk["a"], 3 * f - 2 * b, atol=1e-12)   # Euler: L f − (L − 1) b
    c = np.linspace(-1, 1, 5)
    v = m.vjp(th, X, c)
    for k in J:
        np.testing.assert_allclose(v[k].ravel(), J[k].reshape(5, -1).T @ c, atol=1e-12)


def test_output_bias_linear_model_is_homogeneous_an_intercept():
    rng = np.random.default_rng(4)
    model = models.Linear(3)
    theta, X = model.init(rng, 1.0), rng.standard_normal((4, 3))
    m, th = biased(model, theta, X, 0.5)
    f = m.outputs(th, X)
    np.testing.assert_allclose(m.outputs({k: 3.0 * v for k, v in th.items()}, X), 3.0 * f, rtol=1e-13)
    J = m.jac(th, X)
    np.testing.assert_allclose(J["w"].reshape(4, -1) @ th["w"], f, rtol=1e-13)


def test_output_bias_of_a_deep_linear_model_goes_to_its_last_layer():
    model = models.DeepLinear(3, (2, 2))
    theta = model.init(np.random.default_rng(5), 1.0)
    m, th = biased(model, theta, np.ones((2, 3)), 0.1)
    assert m.out == "W3" and th["W3"].shape == (3,) and m.split(th)[0]["W3"].shape == (1, 2)


def test_homogeneity_check_refutes_the_output_bias_models_and_holds_without_the_bias():
    ctl = gronich.homogeneity(ctx_of("gronich.control.homogeneity-output-bias"))
    assert ctl.holds is False and ctl.counterexample is not None
    f = ctl.figures
    assert 1e-9 < f["max_rel_err_block_euler"] < 1e-5 and f["max_rel_err_jac_vs_vjp"] <= 1e-12
    right = gronich.homogeneity(ctx_of("gronich.control.homogeneity-output-bias", model=None))
    assert right.holds is True and max(right.figures.values()) <= 1e-12


# ---------------------------------------------------------------------------------------------- own-norm ordering

def test_run_labels_and_the_compared_runs():
    assert gronich_ordering.label({"optimizer": "signum", "input_scale": 1.0}) == "signum[input_scale=1]"
    assert gronich_ordering.label({"optimizer": "muon"}) == "muon"
    parent = ctx_of("gronich.own-norm-wins")
    assert gronich_ordering.compared(parent) == [{"optimizer": o} for o in ("momentum-gd", "signum", "adam", "muon")]
    ctl = ctx_of("gronich.control.own-norm-precond-signum")
    assert {"optimizer": "signum", "input_scale": 1.0} in gronich_ordering.compared(ctl)


def test_ordering_judges_a_preconditioned_run_in_its_optimizers_own_norm(monkeypatch):
    """Constructed margins: the preconditioned Signum counts as an ℓ∞ run, so an ℓ∞ margin below MomentumGD's fails
    the ℓ∞ cell only; above every other-norm run it holds."""
    runs = [{"optimizer": "momentum-gd"}, {"optimizer": "signum", "input_scale": 1.0}, {"optimizer": "muon"}]
    table = {"momentum-gd": {"l2": 2.0, "linf": 0.5, "msp": 0.2},
             "muon": {"l2": 1.0, "linf": 0.6, "msp": 0.3}}
    for sig_linf, holds in ((0.4, False), (0.7, True)):
        table["signum"] = {"l2": 0.1, "linf": sig_linf, "msp": 0.01}
        monkeypatch.setattr(gronich_ordering, "margins", lambda ctx, d, run, seed: table[run["optimizer"]])
        rows, _ = gronich_ordering.ordering_table(ctx_of("gronich.control.own-norm-precond-signum"),
                                                  [{"dataset": "teacher"}], runs)
        by_norm = {r["norm"]: r for r in rows}
        assert by_norm["linf"]["ordering_holds"] is holds
        assert by_norm["linf"]["winner"] == ("muon" if not holds else "signum[input_scale=1]")
        assert by_norm["l2"]["ordering_holds"] and by_norm["msp"]["ordering_holds"]


def test_own_norm_margins_of_a_weighted_run_are_the_weighted_runs(monkeypatch):
    """`input_scale` sends the run to gronich_nets.weighted_run with the run's own config (not to get_run)."""
    seen = {}

    def fake(kind):
        def run(ctx, cfg, seed, *amp):
            seen[kind] = (cfg, amp)
            raise StopIteration
        return run

    monkeypatch.setattr(gronich_ordering, "weighted_run", fake("weighted"))
    monkeypatch.setattr(gronich_ordering, "get_run", fake("plain"))
    ctx = ctx_of("gronich.control.own-norm-precond-signum")
    for run in ({"optimizer": "signum", "input_scale": 1.0}, {"optimizer": "signum"}):
        with pytest.raises(StopIteration):
            gronich_ordering.margins(ctx, {"dataset": "teacher", "n": 60, "d": 10}, run, 0)
    cfg, amp = seen["weighted"]
    assert amp == (1.0,) and "input_scale" not in cfg and "runs" not in cfg
    assert cfg["optimizer"] == "signum" and cfg["lr"] == 0.1 and cfg["n"] == 60
    assert seen["plain"][1] == () and seen["plain"][0]["optimizer"] == "signum"
