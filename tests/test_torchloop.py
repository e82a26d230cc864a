"""runner.torchloop: a torch optimizer's linear-model run with the loop in torch equals the engine's reference run
(to rounding: the engine adds the torch step to its own float64 w), with the same checkpoints, diagnostics and error
line; `bias` makes torch runs there (ForeignStore) and every other run as RunStore does."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ibverify import IbverifyError  # noqa: E402
from ibverify.engine import run as engine_run  # noqa: E402
from ibverify.optim.adapters import to_spec  # noqa: E402
from ibverify.recipes import bias as recipes  # noqa: E402
from ibverify.checks import bias as checks_bias  # noqa: E402
from ibverify.runner import torchloop  # noqa: E402
from ibverify.runner.underflow import failed_step  # noqa: E402


def data(n=8, d=4, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    Z[:, 0] = np.abs(Z[:, 0]) + 0.5   # separable along e1
    return Z


@pytest.mark.parametrize("name, knobs", [
    ("torch:Adam:eps=0", {"lr": 0.01, "lr_decay": 0.5}),
    ("torch:SGD:momentum=0.9", {"lr": 0.1, "lr_decay": 0.0}),
    ("torch:Adagrad", {"lr": 0.1, "lr_decay": 0.0}),
    ("torch:SGD", {"lr": 0.5, "lr_decay": 0.0, "batch_size": 3, "order": "reshuffle"}),
])
def test_the_torch_loop_equals_the_engines_reference_run(name, knobs):
    spec = to_spec(name, knobs, probe=False)
    Z = data()
    ref = engine_run(Z, spec, 2000, checkpoints=20)
    mine = torchloop.run(Z, spec, 2000, 20)
    assert ref.engine == mine.engine == "reference" and mine.horizon == ref.horizon == 2000
    assert np.array_equal(mine.checkpoints, ref.checkpoints)
    scale = np.max(np.abs(ref.ws))
    assert scale > 0.5 and np.max(np.abs(mine.ws - ref.ws)) <= 1e-12 * scale
    assert mine.diagnostics == ref.diagnostics


def test_a_non_finite_iterate_is_the_engines_line():
    spec = to_spec("torch:SGD", {"lr": 1e308, "lr_decay": 0.0}, probe=False)
    with pytest.raises(IbverifyError, match="non-finite iterate by step") as e:
        torchloop.run(data() * 1e10, spec, 100, 5)
    assert failed_step(e.value) == 1


def test_only_torch_optimizers_are_eligible():
    assert torchloop.eligible(to_spec("torch:Adam", {}, probe=False))
    assert not torchloop.eligible(to_spec("adam", {}, probe=False))
    assert not torchloop.eligible(to_spec("signum", {}, probe=False))


def test_the_foreign_store_makes_torch_runs_in_the_loop_and_others_in_the_engine(monkeypatch):
    store = torchloop.ForeignStore()
    made = []
    real = torchloop.run
    monkeypatch.setattr(torchloop, "run", lambda *a, **k: made.append(a[1].name) or real(*a, **k))
    pr = checks_bias.generated("linear", 0, 1, store=store)[0]
    dr, n = pr.data, pr.n
    sgd = to_spec("torch:SGD:momentum=0.9", {"lr": 0.1, "lr_decay": 0.0}, probe=False).resolved(n)
    gd = to_spec("gd", {"lr": 0.1, "lr_decay": 0.0}, probe=False).resolved(n)
    a = store.run(recipes.run_recipe(dr, None, None, sgd, 500))
    b = store.run(recipes.run_recipe(dr, None, None, gd, 500))
    assert made == [sgd.name] and a.engine == "reference" and b.engine == "compiled"
    assert store.run(recipes.run_recipe(dr, None, None, sgd, 500)) is a and made == [sgd.name]   # made once
    ref = engine_run(store.data(dr).Z, sgd, 500, checkpoints=recipes.run_recipe(dr, None, None, sgd, 500).checkpoints)
    assert np.max(np.abs(a.ws - ref.ws)) <= 1e-12 * np.max(np.abs(ref.ws))
