"""Issue 33 item 2: every classical ℓ2 claim judged at GD's rate 1/log t has a same-speed wrong-limit control — the same
check, tolerances, horizons and data draws, run with diagonally preconditioned GD (`precond-gd`, whose limit is another
direction reached at the same rate) on the data where that limit is measurably not ŵ2 (precond_cos_max ≤ 0.9). A
sign-like control (‖w‖ ∝ t, K ×100 per decade) is refuted by any half of any rule and does not count."""

from pathlib import Path

import pytest

from ibverify.claims import load_registry

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = {c.id: c for c in load_registry(ROOT / "claims")}
FAMILIES = ("soudry.gd-l2", "nacson.sgd-replacement-l2", "nacson.sgd-reshuffle-l2", "wang.adam-eps-l2",
            "ji-telgarsky.gd-alignment")
# what the data draws, the step and the judgement depend on; the optimizer's own knobs (Adam's β draws and the ε-scaled
# step of wang.adam-eps-l2, which is GD's step η = u·2/β once √v ≪ ε) are the optimizer's, not the judgement's
SAME = ("dataset", "n", "d", "slack_min", "dual_min", "rate_min", "lr_fraction", "smoothness", "batch_size", "order",
        "full_batch", "halves", "geometry", "decades", "checkpoints_per_decade", "steps", "examples", "extensions")
OWN = {"wang.adam-eps-l2": ("lr_eps", "beta2_range", "beta1_max")}


def same_speed_control(claim):
    found = [CLAIMS[c] for c in claim.controls if CLAIMS[c].params.get("optimizer") == "precond-gd"]
    assert len(found) == 1, f"{claim.id}: one precond-gd control among {claim.controls}"
    return found[0]


@pytest.mark.parametrize("cid", FAMILIES)
def test_each_family_has_a_same_speed_wrong_limit_control_judged_as_the_claim(cid):
    claim = CLAIMS[cid]
    ctl = same_speed_control(claim)
    assert ctl.status == "control" and ctl.check == claim.check
    assert 0 < ctl.params["precond_cos_max"] <= 0.9
    assert {k: v["value"] for k, v in ctl.tolerances.items()} == {k: v["value"] for k, v in claim.tolerances.items()}
    for tier in claim.tiers:
        p, q = claim.params_for(tier), ctl.params_for(tier)
        for k in SAME:
            assert p.get(k) == q.get(k), (cid, tier, k)
        assert p.get("lr_decay", 0.0) == q.get("lr_decay", 0.0) == 0.0   # the claims' constant step
        assert not set(OWN.get(cid, ())) & set(q)


# paper 1 (Thm 3.3, Thm 5.1): the claim's own check, tolerances, horizons and data draws; the control differs only in
# its own keys (the wrong limit's data or optimizer), listed here
PAPER1 = {"baek.gr-inc-adam-l2": ("baek.control.gr-inc-adam-l2-scaled",
                                  {"coordinate_scale", "limit_gap", "refuted_by"}),
          "baek.signum-any-batch-linf": ("baek.control.signum-weighted-linf", {"optimizer", "weighted_gap_min"})}


@pytest.mark.parametrize("cid", sorted(PAPER1))
def test_paper1_families_have_a_same_speed_wrong_limit_control_judged_as_the_claim(cid):
    claim, (ctl_id, own) = CLAIMS[cid], PAPER1[cid]
    ctl = CLAIMS[ctl_id]
    assert ctl_id in claim.controls and ctl.status == "control" and ctl.check == claim.check
    assert ctl.expect_verdict == ""   # expected refuted, not merely kept from support
    assert {k: v["value"] for k, v in ctl.tolerances.items()} == {k: v["value"] for k, v in claim.tolerances.items()}
    assert set(ctl.tiers) == set(claim.tiers)
    for tier in claim.tiers:
        p, q = claim.params_for(tier), ctl.params_for(tier)
        # the smoke tier of a control may draw more examples (a decisive draw), never fewer than the claim's
        extra = {"examples"} if tier == "smoke" and q.get("examples", 1) > p.get("examples", 1) else set()
        assert {k for k in set(p) | set(q) if p.get(k) != q.get(k)} == own | extra, (cid, tier)
    if "refuted_by" in own:   # Thm 3.3's: the K half alone must refute (closeness holds on every example)
        assert ctl.params["refuted_by"] == "trend"


# the network KKT claims (checks.gronich_nets.network_kkt): the claim's optimizer, its compiled kernel and speed, on
# inputs scaled per coordinate and mapped back (a fixed diagonal preconditioner, gronich_nets.weighted_run), judged in
# the claim's geometry on the claim's own draws (examples_from)
NETWORK = {"gronich.momentum-gd-l2": "gronich.control.momentum-gd-weighted-l2",
           "gronich.signum-linf": "gronich.control.signum-weighted-linf",
           "gronich.adam-linf": "gronich.control.adam-weighted-linf",
           "gronich.muon-msp": "gronich.control.muon-weighted-msp",
           "gronich.degree1.momentum-gd-l2": "gronich.control.degree1-momentum-gd-weighted-l2",
           "gronich.degree1.signum-linf": "gronich.control.degree1-signum-weighted-linf",
           "gronich.degree1.adam-linf": "gronich.control.degree1-adam-weighted-linf"}
DEGREE_ONE = "ibverify.checks.gronich_linear:linear_certified"   # draws its own examples (no examples_from)


@pytest.mark.parametrize("cid", sorted(NETWORK))
def test_network_kkt_families_have_a_same_speed_wrong_limit_control_judged_as_the_claim(cid):
    claim, ctl = CLAIMS[cid], CLAIMS[NETWORK[cid]]
    assert ctl.id in claim.controls and ctl.status == "control" and ctl.check == claim.check
    own = {"input_scale"} if claim.check == DEGREE_ONE else {"input_scale", "examples_from"}
    assert ctl.expect_verdict == "" and ctl.params["input_scale"] > 0
    assert claim.check == DEGREE_ONE or ctl.params["examples_from"] == cid
    assert {k: v["value"] for k, v in ctl.tolerances.items()} == {k: v["value"] for k, v in claim.tolerances.items()}
    assert ctl.convention == claim.convention and set(ctl.tiers) == set(claim.tiers)
    for tier in claim.tiers:
        p, q = claim.params_for(tier), ctl.params_for(tier)
        # the smoke tier of a control may draw more examples (a decisive draw), never fewer than the claim's
        extra = {"examples"} if tier == "smoke" and q.get("examples", 1) > p.get("examples", 1) else set()
        assert {k for k in set(p) | set(q) if p.get(k) != q.get(k)} == own | extra, (cid, tier)
