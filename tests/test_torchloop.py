"""runner.torchloop: a torch optimizer's linear-model run with the loop in torch equals the engine's reference run
(to rounding: the engine adds the torch step to its own float64 w), with the same checkpoints, diagnostics and error
line; `bias` makes torch runs there (ForeignStore) and every other run as RunStore does."""

import warnings

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


@pytest.mark.parametrize("name, knobs", [
    ("torch:Adam:eps=0", {"lr": 0.01, "lr_decay": 0.5}),
    ("torch:SGD:momentum=0.9", {"lr": 0.1, "lr_decay": 0.0}),
    ("torch:Adagrad", {"lr": 0.1, "lr_decay": 0.0}),
    ("torch:SGD", {"lr": 0.5, "lr_decay": 0.3, "batch_size": 3, "order": "replacement"}),
])
def test_an_extension_continues_the_shorter_run_bit_identically(name, knobs):
    spec = to_spec(name, knobs, probe=False)
    Z = data()
    short = torchloop.run(Z, spec, 1000, recipes.checkpoints(1000))   # bias's checkpoints: 4 a decade, nested
    whole = torchloop.run(Z, spec, 10000, recipes.checkpoints(10000))
    longer = torchloop.run(Z, spec, 10000, recipes.checkpoints(10000), extend=short)
    assert longer.final_state["continued_from"] == 1000 and whole.final_state["continued_from"] == 0
    assert longer.final_state["t"] == 10000 and short.final_state["t"] == 1000
    assert np.array_equal(longer.checkpoints, whole.checkpoints)
    assert np.array_equal(longer.ws, whole.ws)                       # the same bits as from step 0
    assert longer.diagnostics == whole.diagnostics
    assert np.array_equal(short.ws, torchloop.run(Z, spec, 1000, recipes.checkpoints(1000)).ws)  # untouched


def test_an_extension_that_cannot_continue_starts_at_step_0(monkeypatch):
    spec = to_spec("torch:SGD:momentum=0.9", {"lr": 0.1, "lr_decay": 0.0}, probe=False)
    Z = data()
    cps = np.asarray(recipes.checkpoints(10000))
    short = torchloop.run(Z, spec, 1000, 7)   # its checkpoints are not those of the longer run below 1000
    assert torchloop._continue([short], short.final_state["identity"], cps, np.empty((len(cps), 1, 4))) is None
    other = torchloop.run(Z * 2, spec, 1000, recipes.checkpoints(1000))   # other data
    ok = torchloop.run(Z, spec, 1000, recipes.checkpoints(1000))
    assert torchloop._continue([other], ok.final_state["identity"], cps, np.empty((len(cps), 1, 4))) is None
    assert torchloop._continue([ok], ok.final_state["identity"], cps[:3], np.empty((3, 1, 4))) is None   # longer
    got = torchloop._continue([ok], ok.final_state["identity"], cps, np.empty((len(cps), 1, 4)))
    assert got is not None and got["j"] == int(np.sum(cps <= 1000)) and got["t"] == 1000
    for prev in (short, other):
        again = torchloop.run(Z, spec, 10000, cps, extend=prev)
        assert again.final_state["continued_from"] == 0
        assert np.array_equal(again.ws, torchloop.run(Z, spec, 10000, cps).ws)


def test_the_step_without_torchs_wrapper_is_the_same_bits_and_a_hook_keeps_the_wrapper():
    spec = to_spec("torch:Adam:eps=0", {"lr": 0.01, "lr_decay": 0.5}, probe=False)
    Z = data()
    fast = torchloop.run(Z, spec, 1500, 9)
    p = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([p], lr=0.1)
    assert torchloop._step_of(opt).__name__ == "<lambda>"
    seen = []
    from torch.optim.optimizer import register_optimizer_step_pre_hook
    h = register_optimizer_step_pre_hook(lambda *a: seen.append(1))
    try:
        assert torchloop._step_of(opt) == opt.step
        hooked = torchloop.run(Z, spec, 1500, 9)
    finally:
        h.remove()
    assert len(seen) == 1500 and np.array_equal(hooked.ws, fast.ws)
    own = opt.register_step_post_hook(lambda *a: None)
    assert torchloop._step_of(opt) == opt.step
    own.remove()


def test_a_non_finite_iterate_late_in_a_chunk_is_named_at_its_own_step():
    spec = to_spec("torch:SGD:maximize=True", {"lr": 1e305, "lr_decay": 0.0}, probe=False)   # ascends: |w| ~ t·lr
    with pytest.raises(IbverifyError, match="non-finite iterate by step") as e:
        torchloop.run(data(), spec, 3000, 5)
    with warnings.catch_warnings(), np.errstate(all="ignore"), \
            pytest.raises(IbverifyError, match="non-finite iterate by step") as ref:
        warnings.simplefilter("ignore")
        engine_run(data(), spec, 3000, checkpoints=5)
    assert failed_step(e.value) == failed_step(ref.value)
    assert torchloop.CHUNK < failed_step(e.value) < 2 * torchloop.CHUNK   # inside the second chunk (measured: 1480)
