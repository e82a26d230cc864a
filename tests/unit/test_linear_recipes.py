"""recipes.linear and the linear checks' runs through the run store: the same runs as the engine's direct calls,
and a resumable run's checkpoint file named by the recipe's whole content."""

from types import SimpleNamespace

import numpy as np

from ibverify.checks.per_sample import resumable, signum_curves
from ibverify.data import gr
from ibverify.engine import run
from ibverify.optim import OptimizerSpec
from ibverify.recipes import RunStore, settings
from ibverify.recipes.linear import checkpoint_identity, gr_data


def test_gr_data_is_the_generator_of_its_seed():
    Z = RunStore().data(gr_data(6, 4, 3)).Z
    np.testing.assert_array_equal(Z, gr(6, 4, np.random.default_rng(3)).Z)


def _ctx(tmp_path, on=True):
    return SimpleNamespace(params={"resumable": on}, cache=SimpleNamespace(folder=tmp_path),
                           claim=SimpleNamespace(id="claim.x"))


def test_resumable_runs_are_named_by_the_recipe_key_and_resume_bit_identically(tmp_path):
    Z = gr(6, 4, np.random.default_rng(0)).Z
    spec = OptimizerSpec.from_params({"optimizer": "inc-adam"}, beta1=0.5, beta2=0.9)
    rec = settings.vector(Z, spec, 2000, checkpoints=8)
    assert resumable(_ctx(tmp_path, on=False), rec) == {}
    io = resumable(_ctx(tmp_path), rec)
    assert io["resume"] is False and io["save_to"].startswith(str(tmp_path / "runs" / "claim.x"))
    # another horizon, other checkpoints or other data: another file (a resumed run is never another run's)
    others = [rec.replace(steps=3000), rec.replace(checkpoints=9), settings.vector(Z * 2.0, spec, 2000, checkpoints=8)]
    assert len({io["save_to"], *(resumable(_ctx(tmp_path), o)["save_to"] for o in others)}) == 4
    assert checkpoint_identity(rec) == rec.key().encode()
    first = RunStore().run(rec, **io)
    again = resumable(_ctx(tmp_path), rec)
    assert again["save_to"] == io["save_to"] and again["resume"] is True
    resumed = RunStore().run(rec, **again)
    direct = run(Z, spec, 2000, checkpoints=8)
    np.testing.assert_array_equal(first.ws, direct.ws)
    np.testing.assert_array_equal(resumed.ws, direct.ws)


def test_signum_curves_run_in_the_given_store():
    Z = gr(6, 4, np.random.default_rng(1)).Z
    store = RunStore()
    x, gap, sc = signum_curves(Z, {"optimizer": "signum"}, 2, 0.9, 500, store=store)
    assert len(store._memo) == 1
    x2, gap2, _ = signum_curves(Z, {"optimizer": "signum"}, 2, 0.9, 500)     # the process's store: the same run
    np.testing.assert_array_equal(gap, gap2)
    np.testing.assert_array_equal(x, x2)
