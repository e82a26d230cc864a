"""A ×10 extension continues the shorter run instead of repeating its steps, bit-identically (engine.block `extend`,
engine.store.RunStore.extended)."""

import numpy as np
import pytest

from ibverify import models
from ibverify.data import netdata as datasets
from ibverify.engine import log_checkpoints, run
from ibverify.engine.store import RunStore
from ibverify.optim import OptimizerSpec

MODEL = models.TwoLayer(5, 4, 2.0)
DATA = datasets.make_data("teacher", n=10, d=5, seed=3)
SPECS = {
    "muon-adam": dict(optimizer="muon-adam", lr_matrix=0.1, lr_vector=0.05, lr_decay=0.8, beta2=0.999),
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


def test_the_store_hands_the_longest_shorter_run_of_the_same_lineage():
    store, made = RunStore(), []
    spec = OptimizerSpec.from_params(SPECS["signum"])

    def make(cfg):
        def f(prev):
            made.append((cfg["steps"], None if prev is None else prev.horizon))
            return run(DATA, spec, cfg["steps"], model=MODEL, init_seed=4, checkpoints=[cfg["steps"]], warn=False,
                       extend=prev)
        return f

    def get(cfg):
        return store.extended("network-run", RunStore.key(cfg, spec, 4), RunStore.lineage(cfg, spec, 4), cfg["steps"],
                              make(cfg))

    base = {"dataset": "teacher", "n": 10, "d": 5, "start": 1, "checkpoints": 1}
    for steps in (100, 10_000, 1_000, 10_000):
        get({**base, "steps": steps})
    get({**base, "steps": 100_000, "data_seed": 9})      # another lineage: nothing to continue
    get({**base, "steps": 100_000})
    assert made == [(100, None), (10_000, 100), (1_000, 100), (100_000, None), (100_000, 10_000)]
