"""A ×10 extension continues the shorter run instead of repeating its steps, bit-identically (engine.block `extend`,
recipes.RunStore.run)."""

import numpy as np
import pytest

from ibverify import models
from ibverify.data import netdata as datasets
from ibverify.engine import log_checkpoints, run
from ibverify.recipes import RunStore
from ibverify.optim import OptimizerSpec

MODEL = models.TwoLayer(5, 4, 2.0)
DATA = datasets.make_data("teacher", n=10, d=5, seed=3)
SPECS = {
    "muon-adam": dict(optimizer="muon-adam", lr_matrix=0.1, lr_vector=0.05, lr_decay=0.8, beta2=0.999),
    "muon": dict(optimizer="muon", lr_decay=0.8),
    "momentum-gd": dict(optimizer="momentum-gd"),
    "signum": dict(optimizer="signum"),
    "adam": dict(optimizer="adam", beta1=0.9, beta2=0.999),
}


def _go(spec, steps, data=DATA, **kw):
    # the check's checkpoints: 13 over the last three decades, so a ×10 run shares 9 of the shorter run's
    cps = log_checkpoints(steps, 13, max(1, steps // 1000))
    return run(data, spec, steps, model=MODEL, init_seed=4, checkpoints=cps, warn=False, **kw)


def _same(a, b):
    assert list(a.checkpoints) == list(b.checkpoints)
    for x, y in zip(a.thetas, b.thetas, strict=True):
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])
    for f in ("log_loss", "q_min", "align", "track", "adam_dev"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert a.underflow == b.underflow and a.diverged == b.diverged
    for k in ("w", "m", "v", "s", "diag"):
        np.testing.assert_array_equal(a.final_state[k], b.final_state[k])
    assert a.final_state["t"] == b.final_state["t"] == a.horizon


@pytest.mark.parametrize("name", sorted(SPECS))
def test_an_extended_run_equals_the_run_from_step_0(name):
    spec = OptimizerSpec.from_params(SPECS[name])
    short = _go(spec, 2_000)
    steps_seen = []
    longer = _go(spec, 20_000, extend=short, progress=lambda t, T: steps_seen.append(t))
    _same(longer, _go(spec, 20_000))
    assert min(steps_seen) > 2_000          # it did not repeat the shorter run's steps


def test_the_kept_polar_rotations_are_part_of_the_continued_state():
    """Muon's polar block (4×5) starts its Jacobi sweeps from the rotation kept from the previous step; that rotation
    travels in the final state's `s` (after the frames: flag 1, then the 4×4 rotation), so the extension above is
    bit-identical. Continuing with it forgotten (a cold start) gives the same run only to rounding, not bit for bit:
    a continuation that dropped it would fail that test."""
    spec = OptimizerSpec.from_params(SPECS["muon"])
    short, whole = _go(spec, 2_000), _go(spec, 20_000)
    s = short.final_state["s"]
    assert s[-17] == 1.0 and np.allclose(s[-16:].reshape(4, 4) @ s[-16:].reshape(4, 4).T, np.eye(4), atol=1e-14)
    short.final_state = {**short.final_state, "s": np.concatenate([s[:-17], np.zeros(17)])}
    cold = _go(spec, 20_000, extend=short)
    pairs = zip(cold.thetas, whole.thetas, strict=True)
    worst = max(np.abs(a[k] - b[k]).max() / np.abs(a[k]).max() for a, b in pairs for k in a)
    assert 0 < worst < 1e-9


def test_a_run_of_another_problem_is_not_continued():
    spec = OptimizerSpec.from_params(SPECS["momentum-gd"])
    other = datasets.make_data("teacher", n=10, d=5, seed=4)
    short = _go(spec, 2_000, data=other)
    steps_seen = []
    r = _go(spec, 20_000, extend=short, progress=lambda t, T: steps_seen.append(t))
    _same(r, _go(spec, 20_000))
    assert min(steps_seen) < 2_000          # from step 0


def test_a_run_without_the_records_it_passed_is_not_continued():
    spec = OptimizerSpec.from_params(SPECS["signum"])
    short = run(DATA, spec, 2_000, model=MODEL, init_seed=4, checkpoints=[2_000], warn=False)
    steps_seen = []
    r = _go(spec, 20_000, extend=short, progress=lambda t, T: steps_seen.append(t))
    _same(r, _go(spec, 20_000))
    assert min(steps_seen) < 2_000


def test_a_longer_run_is_not_continued_backwards():
    spec = OptimizerSpec.from_params(SPECS["signum"])
    r = _go(spec, 2_000, extend=_go(spec, 20_000))
    _same(r, _go(spec, 2_000))


def test_the_store_hands_the_longest_shorter_run_of_the_same_lineage(monkeypatch):
    from ibverify import recipes
    from ibverify.recipes import store as store_module

    monkeypatch.delenv("IBVERIFY_RUNS", raising=False)
    store, made = RunStore(), []

    def engine_run(*a, extend=None, **k):
        made.append((a[2], None if extend is None else extend.horizon))
        return run(*a, extend=extend, **k)

    monkeypatch.setattr(store_module, "engine_run", engine_run)
    base = {"optimizer": "signum", **SPECS["signum"], "dataset": "teacher", "n": 10, "d": 5, "start": 1,
            "checkpoints": 1}
    for steps in (100, 10_000, 1_000, 10_000):
        store.run(recipes.settings.network({**base, "steps": steps}, 4), warn=False)
    store.run(recipes.settings.network({**base, "steps": 100_000, "data_seed": 9}, 4), warn=False)  # another lineage
    store.run(recipes.settings.network({**base, "steps": 100_000}, 4), warn=False)
    assert made == [(100, None), (10_000, 100), (1_000, 100), (100_000, None), (100_000, 10_000)]
