"""The run store and its recipes: a run's identity is the content of every field of its recipe; a run is made once."""

import dataclasses

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.optim import OptimizerSpec
from ibverify.recipes import DataRecipe, ModelRecipe, Recipe, RunStore, settings

SPEC = OptimizerSpec.from_params({"optimizer": "signum", "lr_decay": 0.8})
BASE = Recipe(DataRecipe.generated("teacher", n=8, d=3, seed=1), SPEC, 100, model=ModelRecipe.of("two-layer", width=4),
              checkpoints=(10, 50, 100), init_seed=3)


def test_every_spec_field_enters_the_key():
    """Two recipes that differ in one field of the optimizer spec (each of to_json's fields) are two runs."""
    changed = {"batch_size": 2, "order": "reshuffle", "lr": 0.123, "lr_decay": 0.7, "beta1": 0.5, "beta2": 0.9,
               "eps": 1e-8, "bias_correction": True, "weight_decay": 0.01, "loss": "exponential", "seed": 9,
               "lr_matrix": 0.2, "lr_vector": 0.3}
    assert set(changed) | {"name"} == set(SPEC.to_json())
    keys = {BASE.key()}
    for name, value in changed.items():
        other = dataclasses.replace(SPEC, **{name: value})
        keys.add(BASE.replace(spec=other).key())
    keys.add(BASE.replace(spec=OptimizerSpec.from_params({"optimizer": "normalized-gd", "lr_decay": 0.8})).key())
    assert len(keys) == len(changed) + 2


def test_every_recipe_field_enters_the_key_and_the_horizon_only_the_key():
    variants = {
        "data seed": BASE.replace(data=DataRecipe.generated("teacher", n=8, d=3, seed=2)),
        "data size": BASE.replace(data=DataRecipe.generated("teacher", n=9, d=3, seed=1)),
        "data source": BASE.replace(data=DataRecipe.generated("linear", n=8, d=3, seed=1)),
        "model width": BASE.replace(model=ModelRecipe.of("two-layer", width=5)),
        "model kind": BASE.replace(model=ModelRecipe.of("deep", width=4)),
        "vector loop": BASE.replace(model=None),
        "init seed": BASE.replace(init_seed=4),
        "zero init": BASE.replace(init_seed=None),
        "init scale": BASE.replace(init_scale=0.25),
        "theta0": BASE.replace(theta0={"W": np.ones((4, 3)), "a": np.ones(4)}),
        "engine": BASE.replace(engine="reference"),
        "options": BASE.replace(options=(("log_frame", False),)),
    }
    keys = {name: r.key() for name, r in variants.items()}
    assert len(set(keys.values()) | {BASE.key()}) == len(variants) + 1
    assert len({r.lineage() for r in variants.values()} | {BASE.lineage()}) == len(variants) + 1
    longer = BASE.replace(steps=1000, checkpoints=(10, 100, 1000))
    fewer = BASE.replace(checkpoints=(50, 100))
    assert longer.key() != BASE.key() and fewer.key() != BASE.key()
    assert longer.lineage() == fewer.lineage() == BASE.lineage()


def test_arrays_are_known_by_their_bytes_and_a_file_by_its_sha256(tmp_path):
    Z = np.arange(6.0).reshape(3, 2)
    a, b = DataRecipe.of_arrays(Z), DataRecipe.of_arrays(Z.copy())
    assert a == b and a != DataRecipe.of_arrays(Z + 1e-15 * (Z == 5))
    f = tmp_path / "d.csv"
    f.write_text("x1,x2,y\n1,2,1\n-1,-3,-1\n")
    before = DataRecipe.file(f)
    f.write_text("x1,x2,y\n1,2,1\n-1,-4,-1\n")
    after = DataRecipe.file(f)
    assert before.digest != after.digest and before != after
    with pytest.raises(IbverifyError, match="changed since its recipe was made"):
        before.build()
    assert after.build().X[1, 1] == -4.0


def test_a_stored_run_is_made_once_per_store(monkeypatch):
    monkeypatch.delenv("IBVERIFY_RUNS", raising=False)
    made = []
    store = RunStore()
    for _ in range(3):
        assert store.get("kind", ("a",), lambda: made.append(1) or "run") == "run"
    assert made == [1]
    store.get("other-kind", ("a",), lambda: made.append(2))
    RunStore().get("kind", ("a",), lambda: made.append(3))                 # another store: made again
    assert made == [1, 2, 3] and RunStore.process() is RunStore.process()


def test_store_run_equals_the_engine_run_and_is_made_once(monkeypatch):
    monkeypatch.delenv("IBVERIFY_RUNS", raising=False)
    from ibverify.engine import run

    store = RunStore()
    r1 = store.run(BASE)
    assert store.run(BASE.replace()) is r1                                 # an equal recipe: the same run
    data = BASE.data.build()
    ref = run(data, SPEC, 100, model=BASE.model.build(data), init_seed=3, checkpoints=np.array([10, 50, 100]))
    assert np.array_equal(r1.checkpoints, ref.checkpoints)
    for k in ref.block_thetas[-1]:
        assert np.array_equal(r1.block_thetas[-1][k], ref.block_thetas[-1][k])
    vec = settings.vector(data.Z, OptimizerSpec.from_params({"optimizer": "inc-adam"}), 50, checkpoints=5)
    w = store.run(vec).ws[-1]
    assert np.array_equal(w, run(data.Z, vec.spec, 50, checkpoints=5).ws[-1])


def test_a_store_pickles_as_the_receiving_process_store_without_its_runs(monkeypatch):
    """A check context holding a store is pickled into Dask example tasks: the store must not travel with its runs
    (a store another thread fills cannot be pickled: 'dictionary changed size during iteration')."""
    import pickle

    monkeypatch.delenv("IBVERIFY_RUNS", raising=False)
    store = RunStore()
    store.run(BASE)
    blob = pickle.dumps({"store": store})
    assert len(blob) < 200 and pickle.loads(blob)["store"] is RunStore.process()


def test_checkpoint_paths_resume_only_an_existing_file(tmp_path):
    a = RunStore.checkpoint(tmp_path, "claim.x", b"run-a")
    assert a["resume"] is False and a["save_to"].startswith(str(tmp_path / "claim.x"))
    open(a["save_to"], "w").close()
    assert RunStore.checkpoint(tmp_path, "claim.x", b"run-a")["resume"] is True
    assert RunStore.checkpoint(tmp_path, "claim.x", b"run-b")["save_to"] != a["save_to"]
