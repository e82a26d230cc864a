"""recipes.paper1 and the paper-1 checks' data through the run store: the same data, labels and runs as the
generators and the engine give directly (the checks' rows are bit-identical to the pre-recipe code)."""

import numpy as np

from ibverify.checks import proxy
from ibverify.checks.paper1_laws import discriminating_gr
from ibverify.claims import CheckContext, Claim
from ibverify.data import gaussian as gaussian_data, gr, shifted_diagonal
from ibverify.engine import run
from ibverify.recipes import DataRecipe, RunStore
from ibverify.recipes.paper1 import first_gr, gaussian, listed_run, spec_of, steps_of
from ibverify.strategies.linear import discrimination


def _ctx(params):
    cl = Claim(id="t", paper="", result="", status="beyond", statement="", check="", params=params,
               tolerances={}, tiers={"fast": {}})
    c = CheckContext(cl, "fast", params)
    c.store = RunStore()
    return c


def test_gr_draw_is_the_kth_successive_draw_of_its_seed():
    rng = np.random.default_rng(7)
    draws = [gr(5, 4, rng).Z for _ in range(3)]
    for k, Z in enumerate(draws):
        assert np.array_equal(DataRecipe.generated("gr-draw", n=5, d=4, seed=7, draw=k).build().Z, Z)


def test_discriminating_gr_is_the_first_discriminating_draw():
    store = RunStore()
    rng = np.random.default_rng(5)
    while True:
        Z = gr(10, 8, rng).Z
        if discrimination(Z).ok():
            break
    rec = discriminating_gr(10, 8, 5, store)
    assert np.array_equal(store.data(rec).Z, Z)
    assert first_gr(10, 8, 5, lambda Z: True, store) == DataRecipe.generated("gr-draw", n=10, d=8, seed=5, draw=0)


def test_proxy_datasets_labels_and_data_are_the_generators():
    out = proxy.datasets(_ctx({"dataset": "shifted-diagonal", "a": [1.0, 2.0, 3.0], "deltas": [0.1, 0.5]}))
    assert [x[0] for x in out] == [f"shifted-diagonal a=[1.0, 2.0, 3.0] δ={dl}" for dl in (0.1, 0.5)]
    assert np.array_equal(out[1][2], shifted_diagonal([1.0, 2.0, 3.0], 0.5).Z)
    out = proxy.datasets(_ctx({"dataset": "gaussian", "n": 6, "d": 9, "data_seeds": [3]}))
    assert out[0][0] == "gaussian N=6 d=9 seed=3" and out[0][1] == gaussian(6, 9, 3)
    assert np.array_equal(out[0][2], gaussian_data(6, 9, np.random.default_rng(3)).Z)


def test_listed_run_equals_the_engine_run():
    r = {"optimizer": "adam", "batch_size": 2, "order": "reshuffle", "epochs": 30}
    assert steps_of(r, 6) == 90 and steps_of({"steps": 5}, 6) == 5
    data = gaussian(6, 9, 3)
    store = RunStore()
    out = store.run(listed_run(data, r, 6, seed=4, checkpoints=5))
    ref = run(store.data(data).Z, spec_of(r, 4), 90, checkpoints=5)
    assert np.array_equal(out.ws, ref.ws) and np.array_equal(out.checkpoints, ref.checkpoints)
