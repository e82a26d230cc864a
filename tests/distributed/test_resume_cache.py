"""A killed `verify` resumes from its cache (ibverify.cache), for every check type.

- hypothesis-property checks (run_property: direction_converges, v_isotropic, gr_fixed_point): the run
  is interrupted right after example k (test hook, no timing); the re-run reuses examples 0..k from the
  cache, evaluates only the rest, and its row equals an uninterrupted run without cache;
- any other check: finished claims' rows are reused, the interrupted claim and the rest are re-run.
Claims run at a "full" tier made of small parameters (the full tier is where the cache is on by default).
"""

import copy
import json

import pytest

from ibverify import profiles
from ibverify.cache import RunCache, fingerprint
from ibverify.checks import prop
from ibverify.claims import load_registry
from ibverify.recipes.store import RunStore
from ibverify.runner.claim import run_claim
from ibverify.runner.verify import verify
from _isolation import CLAIMS

REGISTRY = {c.id: c for c in load_registry(CLAIMS)}  # at import: before any per-test isolation


class Interrupt(KeyboardInterrupt):
    """Stands for a kill: a BaseException, so run_claim does not turn it into an error row."""


def full_like(cid: str, **small) -> object:
    """The claim with a 'full' tier made of its smoke parameters and `small` overrides."""
    c = copy.deepcopy(REGISTRY[cid])
    c.tiers["full"] = {**c.tiers["smoke"], **small}
    return c


def comparable(row: dict) -> str:
    return json.dumps({k: row[k] for k in ("id", "verdict", "error", "outcome")}, sort_keys=True)


PROPERTY_CLAIMS = [  # (claim, small full-tier params): one per run_property check
    ("baek.gr-inc-adam-l2", {"examples": 3, "epochs": 100000, "n": [3, 4], "d": [3, 6]}),
    ("baek.gr-v-isotropic", {"examples": 4, "steps": 50}),
    ("baek.gr-fixed-point-l2", {"examples": 4, "symbolic_sizes": [[3, 3]]}),
]


@pytest.mark.parametrize("cid,small", PROPERTY_CLAIMS, ids=[c for c, _ in PROPERTY_CLAIMS])
def test_property_claim_resumes_after_interrupt_at_a_chosen_example(cid, small, tmp_path, monkeypatch):
    profiles.load("ci")
    claim = full_like(cid, **small)
    reference = run_claim(claim, "full")  # no cache
    n_examples = reference["outcome"]["examples"]
    assert n_examples >= 2, reference["outcome"]["figure"]
    stop_at = n_examples - 2

    def interrupt(index, fresh):
        if index == stop_at:
            raise Interrupt

    monkeypatch.setattr(prop, "after_example", interrupt)
    monkeypatch.setattr(RunStore, "_process", None)  # a fresh process: the reference's runs are not in memory
    with pytest.raises(Interrupt):
        run_claim(claim, "full", cache=tmp_path)
    [folder] = (tmp_path / cid).iterdir()
    assert RunCache(folder).stored_examples() == stop_at + 1  # runs added to the store are not a side effect
    assert not (folder / "row.json").exists()  # the claim did not finish

    calls = []
    monkeypatch.setattr(prop, "after_example", lambda index, fresh: calls.append((index, fresh)))
    resumed = run_claim(claim, "full", cache=tmp_path)
    assert calls[: stop_at + 1] == [(i, False) for i in range(stop_at + 1)]  # reused, not re-evaluated
    assert all(fresh for _, fresh in calls[stop_at + 1:]) and len(calls) > stop_at + 1
    assert comparable(resumed) == comparable(reference)


def test_stale_example_is_not_reused(tmp_path):
    """An entry is used only for the same index and the same drawn example (exact bytes)."""
    import numpy as np

    rc = RunCache(tmp_path)
    drawn = (np.array([1.0, 2.0]), 0.5)
    tag = "claim:0:check.<locals>.evaluate"
    first, second = rc.new_property(tag), rc.new_property(tag)
    assert first != second  # two properties of one check drawing the same examples never share entries
    rc.store_example(first, 0, drawn, "stored")
    assert rc.load_example(first, 0, drawn) == "stored"
    assert rc.load_example(second, 0, drawn) is None
    assert rc.load_example(first, 1, drawn) is None
    assert rc.load_example(first, 0, (np.array([1.0, np.nextafter(2.0, 3.0)]), 0.5)) is None
    assert fingerprint((np.array([1.0, 2.0]), 0.5)) == fingerprint(drawn)
    assert fingerprint(np.array([1.0, 2.0])) != fingerprint(np.array([[1.0, 2.0]]))


def test_other_checks_resume_at_claim_granularity(tmp_path):
    """verify() over claims of other check types, killed after the first claim finished: the re-run
    reuses that row (not re-run) and runs the rest; the result equals an uninterrupted run."""
    profiles.load("ci")
    claims = [full_like("gronich.dual-norms"), full_like("baek.proxy-scale-invariance"),
              full_like("gronich.homogeneity")]
    reference = verify(claims, "full")

    def die_after_first(row):
        raise Interrupt

    with pytest.raises(Interrupt):
        verify(claims, "full", cache=tmp_path, on_done=die_after_first)
    reused, ran = [], []
    resumed = verify(claims, "full", cache=tmp_path, on_start=lambda c: ran.append(c.id),
                     on_reused=lambda r: reused.append(r["id"]))
    assert reused == ["gronich.dual-norms"] and ran == ["baek.proxy-scale-invariance", "gronich.homogeneity"]
    for a, b in zip(reference["claims"], resumed["claims"], strict=True):
        ta = (a["outcome"] or {}).get("table")
        if ta:  # proxy-scale-invariance reports timings in its table
            for r in [*ta, *b["outcome"]["table"]]:
                r.pop("seconds", None)
        assert comparable(a) == comparable(b)
    again = []
    verify(claims, "full", cache=tmp_path, on_start=lambda c: again.append(c.id))
    assert again == []  # everything finished: nothing re-runs


def test_a_run_store_filling_up_is_not_a_side_effect_but_a_list_of_evidence_is():
    """state_fingerprint counts a content memo (the run store) by its type: a run added to it changes nothing a
    check sees. Evidence appended to a list of the check's closure does count."""
    from ibverify.cache import state_fingerprint

    store, evidence = RunStore(), []

    def evaluate(x):
        store.get("value", x, lambda: 2 * x)
        return len(evidence)

    def collect(x):
        evidence.append(x)

    before = state_fingerprint(evaluate, 1)
    assert store.get("value", 1, lambda: 2) == 2 and state_fingerprint(evaluate, 1) == before
    before = state_fingerprint(collect, 1)
    collect(1)
    assert state_fingerprint(collect, 1) != before


def test_error_rows_are_not_cached(tmp_path):
    rc = RunCache(tmp_path)
    rc.store_row({"id": "x", "verdict": "error"})
    assert rc.load_row() is None
    rc.store_row({"id": "x", "verdict": "holds"})
    assert rc.load_row() == {"id": "x", "verdict": "holds"}


def test_evaluations_with_side_effects_are_never_replayed_from_the_cache(tmp_path, monkeypatch):
    """A check whose evaluate also appends to a list of the check (for some examples): only the
    examples whose evaluation had no such effect are stored; the resumed outcome equals the
    uninterrupted one (nothing collected on the side is lost)."""
    from pathlib import Path

    from ibverify.claims import Claim

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent))
    profiles.load("ci")
    claim = Claim(id="test.impure-property", paper="-", result="-", status="paper", statement="-",
                  check="kill_once:impure_property", tiers={"full": {"examples": 8}})
    reference = run_claim(claim, "full")
    collected = int(reference["outcome"]["figures"]["collected"])
    assert 0 < collected < 8

    def interrupt(index, fresh):
        if index == 5:
            raise Interrupt

    monkeypatch.setattr(prop, "after_example", interrupt)
    with pytest.raises(Interrupt):
        run_claim(claim, "full", cache=tmp_path)
    [folder] = (tmp_path / claim.id).iterdir()
    stored = RunCache(folder).stored_examples()
    assert 0 < stored < 6  # the examples with a side effect were not stored
    calls = []
    monkeypatch.setattr(prop, "after_example", lambda index, fresh: calls.append(fresh))
    resumed = run_claim(claim, "full", cache=tmp_path)
    assert calls.count(False) == stored
    assert comparable(resumed) == comparable(reference)
