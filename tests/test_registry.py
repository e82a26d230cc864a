"""The registry against the spec's catalogue: every id present, statuses carried over, controls
present, every tolerance explained, every Adam claim pins its convention, every check loadable."""

import re
from pathlib import Path

import pytest

from ibverify.claims import load_registry

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT.parent / "shared" / "spec" / "CLAIMS.md"
CLAIMS = {c.id: c for c in load_registry(ROOT / "claims")}


def catalogue_rows():
    if not CATALOGUE.exists():
        pytest.skip("spec catalogue (../shared/spec/CLAIMS.md) not present")
    return re.findall(r"^\| `([a-z0-9.-]+)` \| ([a-z]+)", CATALOGUE.read_text(), re.M)


def test_every_catalogue_id_is_registered_with_its_status():
    missing = [i for i, _ in catalogue_rows() if i not in CLAIMS]
    assert not missing, f"not registered: {missing}"
    for cid, status in catalogue_rows():
        assert CLAIMS[cid].status == status, (cid, CLAIMS[cid].status, status)


def test_every_paper_claim_has_a_registered_control():
    for c in CLAIMS.values():
        for ctl in c.controls:
            assert ctl in CLAIMS and CLAIMS[ctl].status == "control", (c.id, ctl)


@pytest.mark.parametrize("cid", sorted(CLAIMS))
def test_claim_record(cid):
    c = CLAIMS[cid]
    c.function()  # check is importable
    assert c.tiers, "a claim must run in at least one tier"
    for name, t in c.tolerances.items():
        assert isinstance(t, dict) and t.get("why"), f"tolerance {name} needs a one-line reason"
    if "adam" in (c.params.get("optimizer") or "") or "adam" in c.id and c.params.get("optimizer"):
        assert {"eps", "bias_correction"} <= set(c.convention), "Adam claims pin ε and bias correction"
