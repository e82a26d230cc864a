"""The four must-hold gronich claims that had no control now each have one: the claim's own check, tolerances, tiers
and draws, expected refuted, differing only in the keys that feed it the wrong input (listed here)."""

from pathlib import Path

import pytest

from ibverify.claims import load_registry

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = {c.id: c for c in load_registry(ROOT / "claims")}
CONTROLS = {
    "gronich.dual-norms": ("gronich.control.dual-norms-frobenius-pair", {"judge", "rival"}),
    "gronich.homogeneity": ("gronich.control.homogeneity-output-bias", {"model"}),
    "gronich.momentum-tracks-gradient": ("gronich.control.momentum-tracks-slow-decay", {"run_overrides"}),
    "gronich.own-norm-wins": ("gronich.control.own-norm-precond-signum", {"optimizers", "runs"}),
}


@pytest.mark.parametrize("cid", sorted(CONTROLS))
def test_control_is_the_claims_check_on_one_wrong_input(cid):
    claim, (ctl_id, own) = CLAIMS[cid], CONTROLS[cid]
    ctl = CLAIMS[ctl_id]
    assert ctl_id in claim.controls and ctl.status == "control" and ctl.check == claim.check
    assert ctl.expect_verdict == ""   # expected refuted, not merely kept from support
    assert {k: v["value"] for k, v in ctl.tolerances.items()} == {k: v["value"] for k, v in claim.tolerances.items()}
    assert set(ctl.tiers) == set(claim.tiers) and ctl.convention == claim.convention
    for tier in claim.tiers:
        p, q = claim.params_for(tier), ctl.params_for(tier)
        assert {k for k in set(p) | set(q) if p.get(k) != q.get(k)} <= own, (cid, tier)


def test_slow_decay_control_changes_only_the_schedule_exponent_to_below_one_minus_one_over_L():
    claim, ctl = CLAIMS["gronich.momentum-tracks-gradient"], CLAIMS["gronich.control.momentum-tracks-slow-decay"]
    assert ctl.params["families"] == claim.params["families"]
    for tier in claim.tiers:
        p, q = claim.params_for(tier)["run_overrides"], ctl.params_for(tier)["run_overrides"]
        assert {k: v for k, v in p.items() if k != "lr_decay"} == {k: v for k, v in q.items() if k != "lr_decay"}
        assert p["lr_decay"] > 2 / 3 >= q["lr_decay"] > 0.5   # L = 3: LR-MSD needs p > 1 − 1/L


def test_own_norm_control_preconditions_one_optimizer_of_the_claims():
    claim, ctl = CLAIMS["gronich.own-norm-wins"], CLAIMS["gronich.control.own-norm-precond-signum"]
    runs = ctl.params["runs"]
    assert [r["optimizer"] for r in runs] == claim.params["optimizers"]
    assert [r for r in runs if len(r) > 1] == [{"optimizer": "signum", "input_scale": 1.0}]
