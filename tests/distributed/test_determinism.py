"""A claim's draws depend on (claim id, seed) only, not on which modules happen to be imported.

Hypothesis draws literals found in every local module in sys.modules ("local constants"); a claim run
after other claims, under pytest or in a Dask worker saw a different pool and drew different examples.
ibverify.runner.claim.run_claim pins the pool to empty while a check runs."""

import contextlib
import json
import sys

from hypothesis.internal.conjecture import providers as P

from ibverify import profiles
from ibverify.runner import claim as V
from ibverify.claims import load_registry
from _isolation import CLAIMS as REGISTRY_DIR

CLAIMS = {c.id: c for c in load_registry(REGISTRY_DIR)}  # at import: before any per-test isolation


def outcome(cid: str) -> str:
    return json.dumps(V.run_claim(CLAIMS[cid], "smoke")["outcome"], sort_keys=True)


def test_imported_modules_do_not_change_a_claims_draws(tmp_path, monkeypatch):
    saved = list(V._pins)
    if saved[0]:  # tests/conftest.py pins the pool around every test: lift that here, run_claim must pin
        monkeypatch.setattr(P, "_get_local_constants", saved[1])
        V._pins[0] = 0
        P.CONSTANTS_CACHE.cache.clear()
    try:
        profiles.load("ci")
        before = {cid: outcome(cid) for cid in ("gronich.homogeneity", "baek.gr-v-isotropic")}
        consts = "\n".join(f"C{i} = ({0.1 + i * 0.0371!r}, {i * 7 + 1}, {-(i * 13 + 2)})" for i in range(300))
        (tmp_path / "ibv_many_constants.py").write_text(consts + "\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        import ibv_many_constants  # noqa: F401  (a local module full of literals hypothesis would use)

        for cid, text in before.items():
            assert outcome(cid) == text, cid
        monkeypatch.setattr(V, "hypothesis_without_local_constants", contextlib.nullcontext)
        unpinned = [outcome(cid) != text for cid, text in before.items()]
        assert any(unpinned), "the test module's constants should change unpinned draws (test too weak)"
    finally:
        sys.modules.pop("ibv_many_constants", None)
        V._pins[:] = saved
        P.CONSTANTS_CACHE.cache.clear()


def test_workers_silence_what_the_ibverify_process_silences():
    import warnings

    from ibverify.optim.logframe import ScheduleWarning
    from ibverify.runner.distributed import quiet_warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_warnings()
        warnings.warn("schedule outside LR-MSD", ScheduleWarning, stacklevel=1)
        warnings.warn("overflow", RuntimeWarning, stacklevel=1)
        warnings.warn("kept", DeprecationWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["kept"]
