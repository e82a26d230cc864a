"""`ibverify bias` (ibverify.checks.bias, ibverify.cli.bias): the geometry an optimizer prefers, judged by the
project's three-valued rules on discriminating data. Values, not shapes: each optimizer must get its known answer
at the smoke tier, a swapped oracle must change the answer, and the rule's halves decide as documented."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.checks import bias, rules
from ibverify.checks import gronich_score as S
from ibverify.cli import main
from ibverify.optim import OptimizerSpec


def answer(name: str, model: str, tier: str = "smoke", **knobs) -> dict:
    out = bias.identify(OptimizerSpec.from_params(knobs, name=name), tier=tier, seed=0, datasets=3, models=[model])
    (m,) = out["models"]
    assert m["model"] == model and m["datasets"] == 3
    return m


def test_normalized_gd_prefers_l2_on_the_linear_model():
    m = answer("nsd-l2", "linear")
    assert m["supported"] == ["l2"]
    assert set(m["contradicted"]) == {"l1", "linf"}
    assert m["evidence"]["l2"]["datasets"][0]["margin_gap"] <= bias.BOUND
    assert not m["none_of_these"]


def test_constant_step_gd_prefers_l2_through_the_rate_invariant():
    """Soudry et al. 2018: the ℓ2 gap of GD falls like 1/log t, i.e. like 1/‖w‖: supported by the rate invariant
    (gap·‖w‖ settled), never by the 1 % bound, which it cannot reach at the smoke horizon."""
    m = answer("gd", "linear", lr=1.0, lr_decay=0.0)
    assert m["supported"] == ["l2"]
    assert set(m["contradicted"]) == {"l1", "linf"}
    gaps = [d["margin_gap"] for d in m["evidence"]["l2"]["datasets"]]
    assert max(gaps) > bias.BOUND


def test_signum_prefers_linf_on_the_linear_model():
    m = answer("signum", "linear")
    assert m["supported"] == ["linf"]
    assert set(m["contradicted"]) == {"l1", "l2"}


def test_deterministic_adam_prefers_linf_on_the_linear_model():
    """Full-batch Adam's ℓ∞ gap is still ≈ 6 % at the smoke horizon (1e5 steps): the fast tier's 1e6 (≈ 2 CPU s)."""
    m = answer("det-adam", "linear", tier="fast")
    assert m["supported"] == ["linf"]
    assert set(m["contradicted"]) == {"l1", "l2"}


def test_spectral_descent_prefers_spectral_on_the_matrix_model():
    m = answer("nsd-spectral", "matrix")
    assert m["supported"] == ["spectral"]
    assert set(m["contradicted"]) == {"l2", "linf"}


def test_momentum_gd_prefers_l2_on_the_two_layer_net():
    m = answer("momentum-gd", "two-layer")
    assert m["supported"] == ["l2"]
    assert set(m["contradicted"]) == {"linf", "msp", "hybrid"}


@pytest.mark.parametrize("name, own", [("steepest-l1", "l1"), ("lion", "linf")])
def test_optimizers_no_claim_uses_get_their_known_geometry(name, own):
    """Issue 22 point 2, on optimizers none of the claims use: steepest descent in ℓ1 (greedy coordinate descent)
    → ℓ1 (Gunasekar et al. 2018); Lion without weight decay → ℓ∞ (a sign method)."""
    m = answer(name, "linear")
    assert m["supported"] == [own] and set(m["contradicted"]) == {"l1", "l2", "linf"} - {own}


def test_adagrad_is_given_no_geometry():
    """Diagonal Adagrad's limit depends on the initialization and the step size (Gunasekar et al. 2018): the tool
    must not claim a geometry for it."""
    m = answer("adagrad", "linear")
    assert m["supported"] == [] and m["none_of_these"]
    assert set(m["contradicted"]) | set(m["inconclusive"]) == {"l1", "l2", "linf"}


def test_a_swapped_oracle_changes_the_answer(monkeypatch):
    """The answer follows the oracle judged: with the ℓ2 and ℓ∞ oracles swapped under their names, normalized GD's
    limit is reported under the name that now holds the ℓ2 oracle, so the right answer above would fail."""
    monkeypatch.setattr(bias, "LINEAR_NORMS", {"l1": "l1", "l2": "linf", "linf": "l2"})
    m = answer("nsd-l2", "linear")
    assert m["supported"] == ["linf"] and "l2" in m["contradicted"]


def test_geometry_rules_on_curves():
    """judge_degree1: a gap falling like t^−0.5 to ≤ 1 % supports; a flat one contradicts at the largest horizon
    (not before it); a gap ∝ 1/‖θ‖ (gradient descent's 1/log t) supports through the rate invariant; a geometry
    whose optimum is > BOUND short is contradicted when another is supported."""
    x = np.array([10.0 ** (2 + k / 4) for k in range(13)])
    fast, flat = 0.3 * (x / x[0]) ** -0.5, np.full(13, 0.2)
    norm = np.log(x)
    slow = 0.2 / norm
    scale = {"a": norm, "b": norm, "c": norm}
    out = bias.judge_degree1(x, {"a": fast, "b": flat, "c": slow}, scale, {("b", "a"): 0.1}, True, int(x[-1]))
    assert out["a"].word == rules.SUPPORTED
    assert out["b"].word == rules.CONTRADICTED
    assert out["c"].word == rules.SUPPORTED and "1/‖θ‖" in out["c"].reason
    early = bias.judge_degree1(x, {"b": flat}, {"b": norm}, {}, False, int(x[-1]))
    assert early["b"].word == rules.INCONCLUSIVE
    rival = bias.judge_degree1(x, {"a": fast, "b": 0.5 * fast + 0.05}, scale, {("b", "a"): 0.1}, True, int(x[-1]))
    assert rival["b"].word == rules.CONTRADICTED and "goes to the certified a optimum" in rival["b"].reason


def test_generated_data_discriminate():
    for model in ("linear", "matrix"):
        for pr in bias.generated(model, 0, 3):
            assert pr.discrimination >= bias.DISCRIMINATES
            assert len(pr.offsets) == 6


def test_models_follow_the_table():
    models, skipped = bias.models_for("gd")                   # a block row too (reference only), skipped by bias
    assert models == ["linear"] and set(skipped) == {"matrix", "two-layer"}
    assert bias.models_for("signum")[0] == ["linear", "matrix", "two-layer"]
    models, skipped = bias.models_for("nsd-spectral")
    assert models == ["matrix"] and "two-layer" in skipped
    models, skipped = bias.models_for("muon-signum")
    assert models == ["two-layer"] and "matrix" in skipped
    with pytest.raises(IbverifyError):
        bias.identify(OptimizerSpec("gd"), tier="smoke", models=["matrix"])


def run_cli(args, capsys):
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_is_one_object_with_the_documented_names(capsys):
    rc, out, err = run_cli(["bias", "--optimizer", "nsd-spectral", "--tier", "smoke", "--json", "-q",
                            "--lr", "0.3"], capsys)
    assert rc == 0, err
    obj = json.loads(out)
    assert obj["optimizer"] == "nsd-spectral" and obj["knobs"] == {"lr": 0.3}
    (m,) = obj["models"]
    assert m["model"] == "matrix" and m["datasets"] == 3
    assert m["supported"] == ["spectral"]
    named = m["supported"] + m["contradicted"] + m["inconclusive"]
    assert sorted(named) == sorted(m["evidence"]) == ["l2", "linf", "spectral"]
    assert set(named) <= set(bias.GEOMETRIES)
    assert "two-layer" in obj["skipped"]
    ev = m["evidence"]["spectral"]   # a support states its resolution: the largest over its supported datasets
    sup = [d for d in ev["datasets"] if d["decision"] == "supported"]
    assert ev["resolution"] == max(d["resolution"] for d in sup)
    assert all(0 <= d["resolution"] <= d["margin_gap"] for d in sup)


def test_text_answer_and_user_data(tmp_path, capsys):
    from ibverify.data import netdata

    D = netdata.linear_separable(12, 8, seed=3)
    path = tmp_path / "d.npz"
    np.savez(path, X=D.X, y=D.y)
    rc, out, err = run_cli(["bias", "--optimizer", "signum", "--tier", "smoke", "--data", str(path),
                            "--model", "linear", "-q"], capsys)
    assert rc == 0, err
    assert re.search(r"linear: linf \(to within [0-9.e-]+ % \(iterate(; the increments unresolved)?\)"
                     r"(; the increments estimate .*?)?\) \(on 1 dataset", out), out
    assert "supported    linf" in out and "contradicted l2" in out


@pytest.mark.parametrize("args, text", [
    (["--optimizer", "nope"], "unknown optimizer"),
    (["--optimizer", "gd", "--lr-decay", "3"], "lr decay"),
    (["--optimizer", "gd", "--data", "/nonexistent.csv"], "not found"),
    (["--optimizer", "nsd-spectral", "--batch-size", "0"], "batch size must be"),
    (["--optimizer", "gd", "--datasets", "0"], "--datasets"),
    (["--optimizer", "gd", "--model", "matrix"], "runs none of matrix"),
])
def test_bad_input_is_one_line_and_exit_2(args, text, capsys):
    rc, out, err = run_cli(["bias", *args, "--tier", "smoke", "-q"], capsys)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and text in err


def test_help_never_imports_numpy():
    code = ("import sys\nfrom ibverify.cli import build_parser\n"
            "try:\n    build_parser().parse_args(['bias', '--help'])\nexcept SystemExit:\n    pass\n"
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"


def test_inert_samples_counts_samples_with_every_unit_dead_and_nothing_else():
    """A sample is inert when f = 0 there with a zero gradient (every unit dead on it); f = 0 through a = 0 with live
    units is not inert (∂f/∂a ≠ 0)."""
    from ibverify import models

    model = models.TwoLayer(2, 3, 2.0)
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [-1.0, -1.0]])
    W = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])           # dead only on the last two samples
    theta = {"W": W, "a": np.array([1.0, -0.5, 2.0])}
    assert S.inert_samples(model, theta, X) == 2
    assert S.inert_samples(model, {"W": -np.abs(W) - 5.0, "a": theta["a"]}, np.abs(X)) == 4   # every one
    assert S.inert_samples(model, {"W": W, "a": np.zeros(3)}, X) == 2   # f = 0 on all, live units on two


def test_a_run_with_a_live_open_sample_is_extended_and_one_held_by_inert_samples_is_set_aside():
    """judge_network sets a non-separated run aside before the cap when inert samples alone hold its margin (every
    sample with y·f ≤ 0 inert; all of them: the loss gradient is exactly 0); with a live sample at y·f ≤ 0 it is
    undecided (extended), and the reason says which."""
    from types import SimpleNamespace

    from ibverify.recipes import DataRecipe, ModelRecipe, RunStore

    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [-1.0, -1.0]])
    W = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    pr = bias.Problem("t", DataRecipe.of_arrays(X, np.ones(4)), ModelRecipe.of("two-layer", width=3), 0, n=4)

    class Store(RunStore):   # the run store hands out a run that ends at θ (the data and model are built as usual)
        def run(self, recipe, **io):
            assert recipe.model == pr.model and recipe.init_seed == 0 and recipe.steps == 1000
            return self.fake

    store = Store()
    for theta, word, text in (({"W": W, "a": np.array([1.0, -0.5, 2.0])}, rules.INCONCLUSIVE, "on 2 of 4 samples"),
                              ({"W": W, "a": np.array([1.0, 0.5, 2.0])}, rules.SET_ASIDE, "on 2 of 4 samples"),
                              ({"W": np.zeros((3, 2)), "a": np.ones(3)}, rules.SET_ASIDE, "every unit dead")):
        store.fake = SimpleNamespace(q_min=[0.0], thetas=[theta])
        out = bias.judge_network(pr, None, 1000, final=False, store=store)
        assert {j.word for j in out.values()} == {word}
        assert all(text in j.reason for j in out.values())
