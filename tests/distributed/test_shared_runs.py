"""cache.shared_value: a value two processes need is computed once, keyed exactly, and only with a store."""

import multiprocessing as mp
import os
from pathlib import Path

import numpy as np

from ibverify import cache
from ibverify.runner.distributed import shared_runs
from _hang_guard import HANG_GUARD_S
from _isolation import CLAIMS
from shared_value_child import count_and_value


def test_two_processes_compute_a_shared_value_once(tmp_path):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    counter = tmp_path / "count"
    ps = [ctx.Process(target=count_and_value, args=(str(tmp_path / "runs"), str(counter), 2.0, q)) for _ in range(2)]
    for p in ps:
        p.start()
    values = [q.get(timeout=HANG_GUARD_S) for _ in ps]
    for p in ps:
        p.join(timeout=HANG_GUARD_S)
    assert values == [[0.0, 2.0, 4.0]] * 2
    assert counter.read_text() == "x"  # the second process waited for the first one's value


def test_shared_value_is_keyed_and_off_without_a_store(tmp_path, monkeypatch):
    calls = []

    def compute(v):
        return lambda: calls.append(v) or v

    monkeypatch.delenv(cache.RUNS_ENV, raising=False)
    assert cache.shared_value("t", 1, compute(1)) == 1 and cache.shared_value("t", 1, compute(1)) == 1
    assert calls == [1, 1]  # no store: computed each time
    monkeypatch.setenv(cache.RUNS_ENV, str(tmp_path))
    calls.clear()
    assert [cache.shared_value("t", k, compute(k)) for k in (1, 2, 1, 2)] == [1, 2, 1, 2]
    assert calls == [1, 2]
    assert cache.shared_value("u", 1, compute(7)) == 7  # another kind is another value
    monkeypatch.setattr(cache, "code_hash", lambda: "other code")
    assert cache.shared_value("t", 1, compute(9)) == 9  # other code: recomputed


def test_a_value_that_cannot_be_pickled_is_returned_and_kept_out_of_the_store(tmp_path, monkeypatch):
    class Local:   # a local class (as a library optimizer's step wrapper): pickle refuses it
        pass

    monkeypatch.setenv(cache.RUNS_ENV, str(tmp_path))
    calls = []
    value = cache.shared_value("t", "local", lambda: calls.append(1) or Local())
    assert isinstance(value, Local) and calls == [1]
    assert not list((tmp_path / "t").glob("*.pkl"))   # nothing half-written for another process to read
    assert isinstance(cache.shared_value("t", "local", lambda: calls.append(1) or Local()), Local) and calls == [1, 1]


def test_shared_runs_sets_the_store_and_removes_a_temporary_one(tmp_path, monkeypatch):
    monkeypatch.delenv(cache.RUNS_ENV, raising=False)
    with shared_runs(None) as folder:
        assert os.environ[cache.RUNS_ENV] == folder
        cache.shared_value("t", 1, lambda: 1)
        assert os.path.isdir(folder)
    assert not os.path.exists(folder) and cache.RUNS_ENV not in os.environ
    with shared_runs(str(tmp_path)) as folder:
        cache.shared_value("t", 1, lambda: 1)
    assert folder == str(tmp_path / "runs") and any((tmp_path / "runs" / "t").glob("*.pkl"))


def test_network_runs_go_through_the_store(tmp_path, monkeypatch):
    """get_run trains once per (configuration, seed) across processes: a second process (simulated by a fresh
    run store) reads the stored run, equal to the trained one."""
    from types import SimpleNamespace

    from ibverify.checks import gronich
    from ibverify.recipes import RunStore
    from ibverify.recipes import store as store_module

    monkeypatch.setenv(cache.RUNS_ENV, str(tmp_path))
    cfg = {"model": "two-layer", "n": 8, "d": 3, "width": 4, "optimizer": "signum", "steps": 200, "lr_decay": 0.8}
    r1 = gronich.get_run(SimpleNamespace(store=RunStore()), cfg, 3, warn=False)[0]
    trained = []
    monkeypatch.setattr(store_module, "engine_run",
                        lambda *a, **k: trained.append(1) or SimpleNamespace(optimizer=None, horizon=0))
    r2 = gronich.get_run(SimpleNamespace(store=RunStore()), cfg, 3, warn=False)[0]
    assert trained == [] and r2.checkpoints == r1.checkpoints
    assert all(np.array_equal(a[k], b[k]) for a, b in zip(r1.thetas, r2.thetas, strict=True) for k in a)
    gronich.get_run(SimpleNamespace(store=RunStore()), cfg, 4, warn=False)  # another seed: not stored, it trains
    assert trained == [1]


def test_pytest_workers_share_one_run_store_while_claim_items_run(monkeypatch):
    """The pytest plugin: the xdist controller gives every worker the same session folder; a worker's claim items
    run under runner.distributed.shared_runs(folder), i.e. $IBVERIFY_RUNS = folder/runs, kept by the worker (set
    and restored around each item) and removed with the folder when the session ends."""
    from types import SimpleNamespace

    from ibverify import pytest_plugin as P

    config = SimpleNamespace()
    nodes = [SimpleNamespace(config=config, workerinput={}) for _ in range(2)]
    for node in nodes:
        P.pytest_configure_node(node)
    folder = nodes[0].workerinput[P._RUNS_KEY]
    assert folder == nodes[1].workerinput[P._RUNS_KEY] and Path(folder).is_dir()
    monkeypatch.setenv(cache.RUNS_ENV, "/somewhere/else")
    with shared_runs(folder) as runs:
        assert os.environ[cache.RUNS_ENV] == runs == os.path.join(folder, "runs")
        cache.shared_value("t", 1, lambda: 7.0)
    assert os.environ[cache.RUNS_ENV] == "/somewhere/else"
    assert list(Path(folder, "runs").rglob("*.pkl"))              # kept for the other worker
    P.pytest_unconfigure(config)
    assert not Path(folder).exists()


def test_verify_in_this_process_keeps_shared_runs_in_the_resume_cache(tmp_path, monkeypatch):
    """`verify` with workers = 1 and a resume cache runs its claims with $IBVERIFY_RUNS = <cache>/runs, as the Dask
    path does (shared_runs), and restores it after; without a cache it leaves $IBVERIFY_RUNS as it was."""
    from ibverify.claims import load_registry
    from ibverify.runner import verify as V
    from ibverify.runner.claim import claim_row

    claim = next(c for c in load_registry(CLAIMS) if "full" in c.tiers)
    seen = []

    def fake_run_claim(c, tier, seed, progress, cache_root, on_example):
        seen.append(os.environ.get(cache.RUNS_ENV))
        cache.shared_value("t", 1, lambda: 7.0)
        return claim_row(c, tier, seed, None, "fake", 0.0)

    monkeypatch.setattr(V, "run_claim", fake_run_claim)
    monkeypatch.setenv(cache.RUNS_ENV, "/somewhere/else")
    V.verify([claim], "full", cache=tmp_path)
    assert seen == [str((tmp_path / "runs").resolve())] and os.environ[cache.RUNS_ENV] == "/somewhere/else"
    assert list((tmp_path / "runs" / "t").glob("*.pkl"))
    V.verify([claim], "full", cache=None)
    assert seen[1] == "/somewhere/else"
