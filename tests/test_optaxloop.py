"""runner.optaxloop: an optax optimizer's linear-model run, many steps per jitted call, equals the engine's per-step
reference run (≤ 1e-12 relative, the same checkpoints, diagnostics and error lines), the steps it leaves to the
per-step path (subnormal gradients, set-aside coordinates, a non-finite iterate) included; a ×10 extension continues
the shorter run bit-identically; `bias`'s store makes optax runs there."""

from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("optax")

from ibverify import IbverifyError  # noqa: E402
from ibverify.engine import run as engine_run  # noqa: E402
from ibverify.optim.adapters import to_spec  # noqa: E402
from ibverify.recipes import bias as recipes  # noqa: E402
from ibverify.recipes.recipe import DataRecipe  # noqa: E402
from ibverify.runner import optaxloop, torchloop  # noqa: E402


def data(n=8, d=4, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    Z[:, 0] = np.abs(Z[:, 0]) + 0.5   # separable along e1
    return Z


def spec_of(name, **knobs):
    return replace(to_spec(name, {}, probe=False), **knobs)


def same_run(mine, ref, tol=1e-12):
    assert ref.engine == mine.engine == "reference" and mine.horizon == ref.horizon
    assert np.array_equal(mine.checkpoints, ref.checkpoints)
    scale = np.max(np.abs(ref.ws), axis=1, keepdims=True)   # relative to each checkpoint's iterate
    assert np.all(np.isfinite(mine.ws)) and np.all(np.abs(mine.ws - ref.ws) <= tol * scale)
    assert mine.diagnostics == ref.diagnostics


@pytest.mark.parametrize("name, knobs", [
    ("optax:lion", {"lr": 0.01, "lr_decay": 0.5}),
    ("optax:adam:eps=0", {"lr": 0.01, "lr_decay": 0.5}),
    ("optax:sgd:momentum=0.9", {"lr": 0.1, "lr_decay": 0.0, "loss": "exponential"}),
    ("optax:adagrad", {"lr": 0.1, "lr_decay": 0.0, "batch_size": 3, "order": "reshuffle"}),
    ("optax:adamw:eps=0.001,weight_decay=0.01", {"lr": 0.05, "lr_decay": 0.3, "batch_size": 2,
                                                  "order": "replacement"}),
])
def test_the_optax_loop_equals_the_engines_reference_run(name, knobs):
    spec = spec_of(name, **knobs)
    Z = data()
    ref = engine_run(Z, spec, 3000, checkpoints=20, engine="reference")
    mine = optaxloop.run(Z, spec, 3000, 20)
    same_run(mine, ref)
    assert np.max(np.abs(ref.ws)) > 0.5
    assert mine.final_state["per_step"] == 0   # every step made in the loop


def subnormal_band():
    """Exponential loss, one SGD step to margins ≈ 720 (e^{−720} ≈ 1e-313: subnormal): from step 2 on numpy's
    gradient is subnormal and not 0, and the step lr·g is flushed to 0 in optax's jitted update: w stalls."""
    Z = np.column_stack([np.ones(6), np.linspace(-0.01, 0.01, 6)])
    return Z, spec_of("optax:sgd", lr=720.0, lr_decay=0.0, loss="exponential")


def test_subnormal_gradients_are_left_to_the_per_step_path():
    Z, spec = subnormal_band()
    ref = engine_run(Z, spec, 300, checkpoints=10, engine="reference")
    mine = optaxloop.run(Z, spec, 300, 10)
    same_run(mine, ref)
    assert 709 < np.min(Z @ ref.ws[-1]) < 745 and ref.diagnostics["stalled_steps"] == 299
    assert mine.final_state["per_step"] == 299


def test_without_the_subnormal_rule_the_loop_would_differ(monkeypatch):
    """The rule decides: switched off, the loop sees a zero gradient where numpy sees a subnormal one (no stall)."""
    Z, spec = subnormal_band()
    monkeypatch.setattr(optaxloop, "SUBNORMAL_LOG", -1e9)
    monkeypatch.setattr(optaxloop, "_LOOPS", {})
    loose = optaxloop.run(Z, spec, 300, 10)
    assert loose.final_state["per_step"] == 0 and loose.diagnostics["stalled_steps"] == 0


def test_a_zero_column_is_set_aside_as_the_engine_does():
    """Adam at ε = 0 makes 0/0 in a column zero in every sample: set_aside keeps it at 0, in the loop too."""
    Z = data()
    Z[:, 2] = 0.0
    spec = spec_of("optax:adam:eps=0", lr=0.01, lr_decay=0.5)
    ref = engine_run(Z, spec, 1000, checkpoints=10, engine="reference")
    mine = optaxloop.run(Z, spec, 1000, 10)
    same_run(mine, ref)
    assert np.all(mine.ws[:, 2] == 0) and mine.final_state["per_step"] == 0


def test_a_column_seen_late_is_the_engines_error_line():
    """Per-sample Adam at ε = 0: a column zero in the first samples only is moved (0/0) while set aside, then seen:
    set_aside's error line, with the step of the first 0/0."""
    Z = data()
    Z[:4, 2] = 0.0
    spec = spec_of("optax:adam:eps=0", lr=0.01, lr_decay=0.5, batch_size=1)
    with pytest.raises(IbverifyError) as ref:
        engine_run(Z, spec, 100, checkpoints=5, engine="reference")
    with pytest.raises(IbverifyError) as mine:
        optaxloop.run(Z, spec, 100, 5)
    assert "non-finite iterate by step 1: 0/0 in coordinate 2" in str(ref.value)
    assert str(mine.value) == str(ref.value)


def test_a_non_finite_iterate_is_the_engines_line():
    spec = spec_of("optax:sgd", lr=1e308, lr_decay=0.0)
    with pytest.raises(IbverifyError) as ref:
        engine_run(data() * 1e10, spec, 100, checkpoints=5, engine="reference")
    with pytest.raises(IbverifyError) as mine:
        optaxloop.run(data() * 1e10, spec, 100, 5)
    assert "non-finite iterate by step 1 (overflow" in str(ref.value) and str(mine.value) == str(ref.value)


def test_stalled_steps_are_counted_in_the_loop_as_the_engine_counts_them():
    """One SGD step to margins ≈ 600: then the step lr·g ≈ 1e-258 is far below w's resolution, while g is not 0."""
    Z = np.column_stack([np.ones(6), np.linspace(0.001, 0.01, 6)])
    spec = spec_of("optax:sgd", lr=600.0, lr_decay=0.0, loss="exponential")
    ref = engine_run(Z, spec, 1500, checkpoints=10, engine="reference")
    mine = optaxloop.run(Z, spec, 1500, 10)
    same_run(mine, ref)
    assert ref.diagnostics == {"stalled_steps": 1499, "stalled_streak": 1499, "frozen": True}
    assert mine.final_state["per_step"] == 0


def test_a_first_step_that_leaves_w_at_0_is_not_a_stall():
    """A step size flushed to 0: w never moves; step 1 has no earlier w to compare with (the engine's count)."""
    spec = spec_of("optax:sgd", lr=1e-310, lr_decay=0.0)
    ref = engine_run(data(), spec, 50, checkpoints=5, engine="reference")
    mine = optaxloop.run(data(), spec, 50, 5)
    assert np.all(ref.ws == 0) and np.all(mine.ws == 0)
    assert mine.diagnostics == ref.diagnostics and ref.diagnostics["stalled_steps"] == 49


@pytest.mark.parametrize("name, knobs", [("optax:lion", {}), ("optax:adam:eps=0", {}),
                                         ("optax:sgd", {"batch_size": 3, "order": "reshuffle"})])
def test_an_extension_continues_the_shorter_run_bit_identically(name, knobs):
    Z, spec = data(), spec_of(name, lr=0.01, lr_decay=0.5, **knobs)
    short = optaxloop.run(Z, spec, 3000, np.asarray(recipes.checkpoints(3000)))
    long = optaxloop.run(Z, spec, 30000, np.asarray(recipes.checkpoints(30000)))
    more = optaxloop.run(Z, spec, 30000, np.asarray(recipes.checkpoints(30000)), extend=short)
    assert more.final_state["continued_from"] == 3000 and long.final_state["continued_from"] == 0
    assert np.array_equal(more.ws, long.ws) and more.diagnostics == long.diagnostics


def test_an_extension_of_another_problem_starts_at_step_0():
    spec = spec_of("optax:lion", lr=0.01, lr_decay=0.5)
    short = optaxloop.run(data(seed=1), spec, 300, np.asarray(recipes.checkpoints(300)))
    other = optaxloop.run(data(), spec, 3000, np.asarray(recipes.checkpoints(3000)), extend=short)
    assert other.final_state["continued_from"] == 0
    assert np.array_equal(other.ws, optaxloop.run(data(), spec, 3000, np.asarray(recipes.checkpoints(3000))).ws)


def test_only_optax_optimizers_are_eligible():
    assert optaxloop.eligible(to_spec("optax:adam", {}, probe=False))
    assert not optaxloop.eligible(to_spec("adam", {}, probe=False))
    assert not optaxloop.eligible(replace(to_spec("optax:adam", {}, probe=False), loss="squared"))


def test_the_foreign_store_makes_optax_runs_in_the_loop_and_continues_them():
    store = torchloop.ForeignStore()
    spec = spec_of("optax:lion", lr=0.01, lr_decay=0.5)
    d = DataRecipe.of_arrays(data())
    short = store.run(recipes.run_recipe(d, None, None, spec, 1000))
    long = store.run(recipes.run_recipe(d, None, None, spec, 10000))
    assert short.final_state["continued_from"] == 0 and long.final_state["continued_from"] == 1000
    ref = engine_run(data(), spec, 10000, checkpoints=np.asarray(recipes.checkpoints(10000)), engine="reference")
    same_run(long, ref)


def test_an_update_the_loop_cannot_run_is_the_per_step_paths_error_line():
    """A float32 update: the loop refuses it at trace time (Unfit) and the store makes the run the engine's way,
    whose error line names it."""
    import functools

    import jax
    import jax.numpy as jnp
    import optax

    def f32(learning_rate):
        base = optax.sgd(learning_rate)

        def update(g, state, params=None):
            u, state = base.update(g, state, params)
            return jax.tree_util.tree_map(lambda x: x.astype(jnp.float32), u), state
        return optax.GradientTransformation(base.init, update)

    spec = to_spec(functools.partial(f32), {}, probe=False)
    assert optaxloop.eligible(spec)
    with pytest.raises(optaxloop.Unfit, match="float32"):
        optaxloop.run(data(), spec, 100, 5)
    with pytest.raises(IbverifyError, match="its update is float32, not float64"):
        torchloop.ForeignStore().run(recipes.run_recipe(DataRecipe.of_arrays(data()), None, None, spec, 100))
