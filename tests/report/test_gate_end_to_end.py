"""The regression gate on real claims: break one on purpose (swap Signum for GD), compare must fail naming it."""

import copy

import pytest

from ibverify.claims import load_registry, select
from ibverify.report import compare, load_results, write_results

CLAIM = "baek.signum-any-batch-linf"


def test_breaking_a_claim_fails_the_gate_with_its_name(tmp_path):
    registry = {c.id: c for c in load_registry()}
    if CLAIM not in registry:
        pytest.skip(f"{CLAIM} is not in the registry")
    from ibverify.runner.verify import verify

    baseline = verify([registry[CLAIM]], "smoke")
    assert baseline["claims"][0]["verdict"] == "holds"
    broken = copy.deepcopy(registry[CLAIM])
    broken.params["optimizer"] = "gd"  # the wrong implicit bias (ℓ2, not ℓ∞): the check must notice
    current = verify(select([broken], None, "smoke"), "smoke")
    res = compare(load_results(write_results(baseline, tmp_path / "baseline.json")),
                  load_results(write_results(current, tmp_path / "results.json")))
    assert not res.ok
    assert any(line.startswith(f"FAIL   {CLAIM}: verdict holds → ") for line in res.lines), res.lines
    assert any(line.startswith(f"WARN   {CLAIM}: stale baseline") for line in res.lines), res.lines
