"""`ibverify bias`'s own choices (issue 36 item 4; runner.bias.conventions): `adam` is full-batch Adam on the linear
model (per-sample Adam is inc-adam or --batch-size 1), plain GD is judged at the constant step η = 1/β of Soudry et
al.'s theorem (and identifies ℓ2), --batch-size is the block models' cyclic mini-batches; each choice said on stderr."""

import json

import numpy as np
import pytest

from ibverify.checks import bias
from ibverify.cli import main
from ibverify.optim import OptimizerSpec
from ibverify.recipes import RunStore
from ibverify.runner.bias import conventions, identify_all


def run_cli(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _bias(capsys, *args):
    rc, out, err = run_cli(["bias", *args, "--tier", "smoke", "--datasets", "1", "--json", "-q"], capsys)
    assert rc == 0, err
    return json.loads(out), err


def test_adam_is_full_batch_on_the_linear_model_and_says_so(capsys):
    obj, err = _bias(capsys, "--optimizer", "adam", "--model", "linear")
    (m,) = obj["models"]
    n = int(m["evidence"]["l2"]["datasets"][0]["dataset"].split(",")[0][2:])
    assert m["spec"]["batch_size"] == n
    assert "note: adam: full-batch Adam" in err and "inc-adam" in err
    assert obj["conventions"] and "full-batch" in obj["conventions"][0]


def test_adam_with_a_batch_size_is_that_batch_and_no_note(capsys):
    obj, err = _bias(capsys, "--optimizer", "adam", "--model", "linear", "--batch-size", "1")
    assert obj["models"][0]["spec"]["batch_size"] == 1
    assert "note:" not in err and "conventions" not in obj


def test_the_choices_are_made_only_where_no_knob_was_given():
    adam, gd = OptimizerSpec.from_params({"optimizer": "adam"}), OptimizerSpec.from_params({"optimizer": "gd"})
    assert conventions(adam, {"batch_size": 2}) == (None, [])
    assert conventions(gd, {"lr": 0.1}) == (None, []) and conventions(gd, {"lr_decay": 0.5}) == (None, [])
    assert conventions(OptimizerSpec.from_params({"optimizer": "inc-adam"}), {}) == (None, [])
    assert conventions(OptimizerSpec.from_params({"optimizer": "gd", "loss": "exponential"}), {}) == (None, [])
    assert conventions(OptimizerSpec.from_params({"optimizer": "signum"}), {}) == (None, [])
    from ibverify.optim.adapters import to_spec
    from ibverify.optim.transforms import trace
    from ibverify.optim.userfile import UserOptimizer

    mine = to_spec(UserOptimizer("my-gd", "gd", vector=lambda s, xp: [trace(xp, 0.0)]))
    assert conventions(mine, {}) == (None, [])   # a user's optimizer: its own knobs, no choice made for it
    adjust, notes = conventions(gd, {})
    assert len(notes) == 1
    # η = 1/β with β = λ_max(ZᵀZ)/(4n), constant; the matrix model is left as it is
    store = RunStore()
    pr = bias.generated("linear", 0, 1, store=store)[0]
    Z = store.data(pr.data).Z
    sp = adjust("linear", pr, gd, store)
    assert sp.lr_decay == 0.0 and sp.lr == pytest.approx(4 * len(Z) / np.linalg.norm(Z, 2) ** 2, rel=1e-12)
    assert adjust("matrix", pr, gd, store) is gd


def test_gd_identifies_l2_at_its_theorems_step(capsys):
    obj, err = _bias(capsys, "--optimizer", "gd", "--model", "linear")
    (m,) = obj["models"]
    assert m["supported"] == ["l2"] and set(m["contradicted"]) == {"l1", "linf"}, m["evidence"]
    assert m["spec"]["lr_decay"] == 0.0 and "note: gd: constant step" in err


def test_the_constant_step_still_rejects_a_wrong_limit():
    """Control: the same rule (η = 1/β, constant) on precond-gd (GD's 1/log t rate, another limit): ℓ2 not supported."""
    gd = OptimizerSpec.from_params({"optimizer": "gd"})
    adjust, _ = conventions(gd, {})
    ctl = OptimizerSpec.from_params({"optimizer": "precond-gd"})
    (a,) = identify_all([ctl], tier="smoke", seed=0, datasets=1, models=["linear"], adjust=[adjust_any(adjust)])
    (m,) = a["models"]
    assert "l2" not in m["supported"] and "l2" in m["contradicted"] + m["inconclusive"], m["evidence"]["l2"]
    assert m["spec"]["lr_decay"] == 0.0


def adjust_any(adjust):
    """The gd rule applied to any spec (its name aside)."""
    from dataclasses import replace

    gd = OptimizerSpec.from_params({"optimizer": "gd"})

    def f(model, pr, sp, store):
        g = adjust(model, pr, gd, store)
        return replace(sp, lr=g.lr, lr_decay=g.lr_decay)
    return f


def test_batch_size_on_the_matrix_model_is_cyclic_mini_batches(capsys):
    store = RunStore()
    pr = bias.generated("matrix", 0, 1, store=store)[0]
    spec = OptimizerSpec.from_params({"optimizer": "signum", "batch_size": 3})
    full = OptimizerSpec.from_params({"optimizer": "signum"})
    hz = (2000, 2000)
    given = bias.judge_problem("matrix", pr, spec, "smoke", horizons=hz, store=store).results
    explicit = bias.judge_problem("matrix", pr, full, "smoke", batch=3, horizons=hz, store=store).results
    whole = bias.judge_problem("matrix", pr, full, "smoke", horizons=hz, store=store).results
    assert {g: j.value for g, j in given.items()} == {g: j.value for g, j in explicit.items()}
    assert any(abs(given[g].value - whole[g].value) > 1e-6 for g in given)
    obj, _ = _bias(capsys, "--optimizer", "signum", "--model", "matrix", "--batch-size", "3")
    assert obj["models"][0]["model"] == "matrix" and "not_judged" not in obj["models"][0]


def test_no_note_where_the_linear_model_does_not_run(capsys):
    obj, err = _bias(capsys, "--optimizer", "adam", "--model", "matrix")
    assert "note:" not in err and "conventions" not in obj


def test_shipped_plain_sgd_scales_its_constant_step_by_its_momentum():
    """torch.optim.SGD and optax.sgd: s = (1 − μ)/(1 − dampening), so that η = s/β acts as GD's 1/β; anything that
    is not plain SGD (weight decay, another optimizer) gets no scale."""
    torch = pytest.importorskip("torch")
    from ibverify.optim import torchadapt

    scale = torchadapt.heavy_ball_scale
    assert scale(torch.optim.SGD, {}) == 1.0
    assert scale(torch.optim.SGD, {"momentum": 0.9}) == pytest.approx(0.1, rel=1e-15)
    assert scale(torch.optim.SGD, {"momentum": 0.9, "dampening": 0.5}) == pytest.approx(0.2, rel=1e-15)
    assert scale(torch.optim.SGD, {"momentum": 0.9, "weight_decay": 1e-4}) is None
    assert scale(torch.optim.SGD, {"maximize": True}) is None
    assert scale(torch.optim.Adam, {}) is None


def test_optax_sgd_scale():
    optax = pytest.importorskip("optax")
    from ibverify.optim import optaxadapt

    assert optaxadapt.heavy_ball_scale(optax.sgd, {}) == 1.0
    assert optaxadapt.heavy_ball_scale(optax.sgd, {"momentum": 0.9}) == pytest.approx(0.1, rel=1e-15)
    assert optaxadapt.heavy_ball_scale(optax.adam, {}) is None
    from ibverify.optim.adapters import to_spec
    from ibverify.runner.bias import conventions

    adjust, notes = conventions(to_spec("optax:sgd:momentum=0.5", {}, what="--optimizer", probe=False), {})
    assert len(notes) == 1 and "0.5/β" in notes[0]


def test_shipped_sgd_gets_the_constant_step_unless_a_learning_rate_is_given():
    pytest.importorskip("torch")
    from ibverify.optim.adapters import to_spec

    sgd = to_spec("torch:SGD:momentum=0.9", {}, what="--optimizer", probe=False)   # as the command builds it
    adjust, notes = conventions(sgd, {})
    assert len(notes) == 1 and "0.1/β" in notes[0]
    store = RunStore()
    pr = bias.generated("linear", 0, 1, store=store)[0]
    Z = store.data(pr.data).Z
    sp = adjust("linear", pr, sgd, store)
    assert sp.lr_decay == 0.0 and sp.lr == pytest.approx(0.1 * 4 * len(Z) / np.linalg.norm(Z, 2) ** 2, rel=1e-12)
    assert conventions(sgd, {"lr": 0.1}) == (None, [])
    assert conventions(OptimizerSpec.from_params({"optimizer": "torch:SGD:momentum=0.9,lr=0.2"}), {}) == (None, [])
    assert conventions(OptimizerSpec.from_params({"optimizer": "torch:Adagrad"}), {}) == (None, [])
