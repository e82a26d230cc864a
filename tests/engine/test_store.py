"""The run store: a run's identity is its settings, its resolved spec and θ0's seed; a stored run is made once."""

from ibverify.engine.store import RUN_KEYS, RunStore
from ibverify.optim import OptimizerSpec


def test_identity_is_settings_spec_and_seed():
    cfg = {"model": "two-layer", "n": 8, "steps": 100, "judge": "l2", "examples": 6}
    spec = OptimizerSpec.from_params({"optimizer": "signum", "lr_decay": 0.8})
    k = RunStore.key(cfg, spec, 3)
    assert k == RunStore.key({**cfg, "judge": "linf", "examples": 2}, spec, 3)      # not run settings: same run
    assert k != RunStore.key({**cfg, "steps": 200}, spec, 3)
    assert k != RunStore.key(cfg, OptimizerSpec.from_params({"optimizer": "signum", "lr_decay": 0.7}), 3)
    assert k != RunStore.key(cfg, spec, 4)
    assert {"dataset", "model", "steps", "init_scale", "data_seed"} <= set(RUN_KEYS)


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


def test_checkpoint_paths_resume_only_an_existing_file(tmp_path):
    a = RunStore.checkpoint(tmp_path, "claim.x", b"run-a")
    assert a["resume"] is False and a["save_to"].startswith(str(tmp_path / "claim.x"))
    open(a["save_to"], "w").close()
    assert RunStore.checkpoint(tmp_path, "claim.x", b"run-a")["resume"] is True
    assert RunStore.checkpoint(tmp_path, "claim.x", b"run-b")["save_to"] != a["save_to"]
