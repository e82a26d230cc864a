"""runner.foreignblock: a torch or optax optimizer's block-model run made by `bias`'s store is the engine's reference
run bit for bit, and a ×10 extension continues it from its last state (θ, the optimizer's own state, the step),
bit-identical to one long run; what cannot be continued starts at step 0."""

import pickle
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ibverify.engine import run as engine_run  # noqa: E402
from ibverify.optim.adapters import to_spec  # noqa: E402
from ibverify.recipes import bias as recipes  # noqa: E402
from ibverify.recipes.recipe import DataRecipe, ModelRecipe  # noqa: E402
from ibverify.runner import foreignblock  # noqa: E402
from ibverify.runner.torchloop import ForeignStore  # noqa: E402

MUON = "torch:Muon:weight_decay=0+Adam:eps=0"


def problem(seed=0, n=10, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1.0, -1.0)
    X[:, 0] += 0.5 * y   # separable
    return DataRecipe.of_arrays(X, y), ModelRecipe.of("two-layer", width=4)


def spec_of(name, **knobs):
    return replace(to_spec(name, {}, probe=False), **knobs)


def recipe(spec, T, seed=0, batch=None):
    """bias's recipe, but for its checkpoints: 10, 50, 100, 200, 500, … up to T (nested, so a shorter run holds
    every checkpoint a longer one passes while it runs)."""
    data, model = problem(seed)
    cps = tuple(c for c in (10, 50, 100, 200, 500, 1000, 2000) if c <= T)
    return replace(recipes.run_recipe(data, model, 3, spec, T, batch), checkpoints=cps)


def same(a, b):
    assert list(a.checkpoints) == list(b.checkpoints) and a.horizon == b.horizon
    assert all(np.array_equal(x[k], y[k]) for x, y in zip(a.block_thetas, b.block_thetas, strict=True) for k in x)
    assert all(np.array_equal(a.records[k], b.records[k], equal_nan=True) for k in a.records)
    assert a.diagnostics == b.diagnostics


@pytest.mark.parametrize("name, batch", [(MUON, None), ("torch:Adam:eps=0", None), ("torch:SGD:momentum=0.9", 3),
                                         ("optax:lion", None)])
def test_the_store_makes_the_engines_reference_run(name, batch):
    spec = spec_of(name, lr=0.05, lr_decay=0.5)
    rec = recipe(spec, 200, batch=batch)
    store = ForeignStore()
    D, model = store.data(rec.data), store.model(rec)
    ref = engine_run((D.X, D.y), spec, 200, model=model, init_seed=3, init_scale=rec.init_scale,
                     checkpoints=np.asarray(rec.checkpoints), engine="reference", warn=False,
                     **({} if batch is None else {"batch": batch}))
    mine = store.run(rec, warn=False)
    assert isinstance(mine.final_state, foreignblock.Live) and mine.continued_from == 0
    same(mine, ref)
    assert max(np.abs(v).max() for v in mine.block_thetas[-1].values()) > 0.1


@pytest.mark.parametrize("name", [MUON, "optax:adam:eps=0"])
def test_an_extension_continues_bit_identically(name):
    spec = spec_of(name, lr=0.05, lr_decay=0.5)
    store = ForeignStore()
    short = store.run(recipe(spec, 100), warn=False)
    long = store.run(recipe(spec, 500), warn=False)
    alone = ForeignStore().run(recipe(spec, 500), warn=False)
    assert short.continued_from == 0 and long.continued_from == 100 and alone.continued_from == 0
    same(long, alone)


def test_a_state_is_taken_once_and_another_problems_run_is_not_continued():
    spec = spec_of("torch:Adam:eps=0", lr=0.05, lr_decay=0.5)
    store = ForeignStore()
    short = store.run(recipe(spec, 100), warn=False)
    data, model = problem(1)
    other = foreignblock.run(store.data(data).X, store.data(data).y, spec, 500, store.model(recipe(spec, 500, 1)),
                             init_seed=3, checkpoints=np.asarray(recipe(spec, 500).checkpoints), warn=False,
                             lineage=recipe(spec, 500, 1).lineage(), extend=short)
    assert other.continued_from == 0 and not short.final_state.taken
    long = store.run(recipe(spec, 500), warn=False)
    assert long.continued_from == 100 and short.final_state.taken
    rec = recipe(spec, 500)
    D = store.data(rec.data)
    again = foreignblock.run(D.X, D.y, spec, 500, store.model(rec), init_seed=3,
                             checkpoints=np.asarray(rec.checkpoints), warn=False, lineage=rec.lineage(), extend=short)
    assert again.continued_from == 0
    same(again, long)


def test_a_pickled_run_keeps_no_live_state():
    spec = spec_of("torch:Adam:eps=0", lr=0.05, lr_decay=0.5)
    short = ForeignStore().run(recipe(spec, 100), warn=False)
    assert pickle.loads(pickle.dumps(short.final_state)).taken


def test_only_torch_and_optax_block_chains_are_eligible():
    assert foreignblock.eligible(to_spec(MUON, {}, probe=False))
    assert foreignblock.eligible(to_spec("optax:adam", {}, probe=False))
    assert not foreignblock.eligible(to_spec("adam", {}, probe=False))


def test_the_bare_torch_step_is_torchs_step_bit_for_bit_and_a_hook_keeps_the_wrapper():
    """torchblock.bare_step skips torch's step wrapper only while no step hook is registered: the same run with a
    global hook (the wrapper kept) has the same bits."""
    from torch.optim import optimizer as topt

    from ibverify.optim import torchblock, torchmuon

    spec = spec_of(MUON, lr=0.05, lr_decay=0.5)
    bare = ForeignStore().run(recipe(spec, 200), warn=False)
    handle = topt.register_optimizer_step_pre_hook(lambda o, args, kwargs: None)
    try:
        p = torch.zeros(3, 2, dtype=torch.float64, requires_grad=True)
        part = torchmuon.MuonPartition([p, torch.zeros(3, dtype=torch.float64, requires_grad=True)], lr=0.1,
                                       partner="Adam")
        assert torchblock.bare_step(part) == part.step
        wrapped = ForeignStore().run(recipe(spec, 200), warn=False)
    finally:
        handle.remove()
    assert torchblock.bare_step(part) != part.step
    same(bare, wrapped)
