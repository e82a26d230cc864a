"""The registry against the spec's catalogue: every id present, statuses carried over, controls
present, every tolerance explained, every Adam claim pins its convention, every check loadable."""

from pathlib import Path

import pytest

from ibverify.claims import load_registry

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = {c.id: c for c in load_registry(ROOT / "claims")}

# The project specification's claim catalogue (not part of this repository):
# its (id, status) rows, copied here so that the test depends on no file outside the repository.
SPEC_CATALOGUE = (
    ("baek.epoch-map-det", "paper"),
    ("baek.epoch-map-inc", "paper"),
    ("baek.proxy-limit", "paper"),
    ("baek.gr-v-isotropic", "derived"),
    ("baek.gr-inc-adam-l2", "paper"),
    ("zhang.det-adam-linf", "paper"),
    ("baek.proxy-fixed-point", "paper"),
    ("baek.inc-adam-near-proxy", "reconstructed"),
    ("baek.gr-fixed-point-l2", "paper"),
    ("baek.shifted-diagonal-linf", "reconstructed"),
    ("baek.signum-any-batch-linf", "paper"),
    ("baek.batch-size-drift", "paper"),
    ("baek.control.gr-inc-adam-linf", "control"),
    ("baek.control.gr-det-adam-l2", "control"),
    ("baek.control.signum-no-momentum", "control"),
    ("baek.beyond.reshuffling", "beyond"),
    ("baek.beyond.beta2-gap", "beyond"),
    ("gronich.homogeneity", "paper"),
    ("gronich.dual-norms", "derived"),
    ("gronich.nsd-kkt", "paper"),
    ("gronich.momentum-gd-l2", "paper"),
    ("gronich.signum-linf", "paper"),
    ("gronich.muon-msp", "paper"),
    ("gronich.adam-linf", "paper"),
    ("gronich.muon-signum-hybrid", "paper"),
    ("gronich.muon-adam-hybrid", "paper"),
    ("gronich.approx-steepest", "paper"),
    ("gronich.momentum-tracks-gradient", "paper"),
    ("gronich.own-norm-wins", "reconstructed"),
    ("gronich.directional-convergence", "reconstructed"),
    ("gronich.control.gd-linf", "control"),
    ("gronich.control.slow-decay", "beyond"),
    ("gronich.beyond.newton-schulz", "beyond"),
    ("gronich.beyond.relu", "beyond"),
)


def test_every_catalogue_id_is_registered_with_its_status():
    assert len(SPEC_CATALOGUE) == 34
    missing = [i for i, _ in SPEC_CATALOGUE if i not in CLAIMS]
    assert not missing, f"not registered: {missing}"
    for cid, status in SPEC_CATALOGUE:
        assert CLAIMS[cid].status == status, (cid, CLAIMS[cid].status, status)


def test_every_paper_claim_has_a_registered_control():
    for c in CLAIMS.values():
        for ctl in c.controls:
            assert ctl in CLAIMS and CLAIMS[ctl].status == "control", (c.id, ctl)


def test_every_claim_that_must_hold_has_a_control():
    """The house rule: a check is worth the wrong answer it rejects, so every claim expected to hold names at least
    one control (a wrong optimizer, geometry or data through the same check) that is expected refuted."""
    bare = [c.id for c in CLAIMS.values() if c.expect == "holds" and not c.controls]
    assert not bare, f"claims expected to hold without a control: {bare}"
    for c in CLAIMS.values():
        if c.expect == "holds":
            assert any(CLAIMS[k].expect == "refuted" for k in c.controls), c.id


@pytest.mark.parametrize("cid", sorted(CLAIMS))
def test_claim_record(cid):
    c = CLAIMS[cid]
    c.function()  # check is importable
    assert c.tiers, "a claim must run in at least one tier"
    for name, t in c.tolerances.items():
        assert isinstance(t, dict) and t.get("why"), f"tolerance {name} needs a one-line reason"
    if "adam" in (c.params.get("optimizer") or "") or "adam" in c.id and c.params.get("optimizer"):
        assert {"eps", "bias_correction"} <= set(c.convention), "Adam claims pin ε and bias correction"


def test_select_by_prefix_keeps_only_claims_of_the_tier_and_exact_ids_must_have_it():
    from ibverify import IbverifyError
    from ibverify.claims import select

    full_only = [c for c in CLAIMS.values() if "fast" not in c.tiers and c.id.startswith("gronich.")]
    assert full_only, "the registry has gronich claims that run at the full tier only"
    chosen = select(list(CLAIMS.values()), ["gronich."], "fast")
    assert chosen and all(c.id.startswith("gronich.") and "fast" in c.tiers for c in chosen)
    assert len(chosen) == sum(c.id.startswith("gronich.") and "fast" in c.tiers for c in CLAIMS.values())
    with pytest.raises(IbverifyError, match="no 'fast' tier"):
        select(list(CLAIMS.values()), [full_only[0].id], "fast")


def test_verdict_words_from_outcomes_three_valued():
    from ibverify.claims import verdict
    from ibverify.evidence import Outcome

    reg = {c.id: c for c in load_registry()}
    paper, control = reg["baek.gr-inc-adam-l2"], reg["baek.control.gr-det-adam-l2"]
    out = lambda holds, why="": Outcome(holds=holds, figure="", inconclusive=why)  # noqa: E731
    assert [verdict(paper, out(True)), verdict(paper, out(False)), verdict(paper, out(False, "not yet"))] == [
        "holds", "does not hold", "inconclusive"]
    assert [verdict(control, out(False)), verdict(control, out(True)), verdict(control, out(False, "x"))] == [
        "refuted", "not refuted", "inconclusive"]
    assert verdict(paper, None) == "error" and verdict(paper, out(None)) == "error"


def test_expect_verdict_is_only_inconclusive_and_only_for_controls(tmp_path):
    from ibverify import IbverifyError
    from ibverify.claims import load_claim

    reg = {c.id: c for c in load_registry()}
    assert reg["baek.control.gr-inc-adam-l2-early"].expect == "inconclusive"
    assert reg["baek.control.gr-det-adam-l2"].expect == "refuted"
    base = Path(reg["baek.control.gr-inc-adam-l2-early"].path).read_text()
    for bad in (base.replace('expect_verdict = "inconclusive"', 'expect_verdict = "holds"'),
                base.replace('status = "control"', 'status = "paper"')):
        f = tmp_path / "baek.control.gr-inc-adam-l2-early.toml"
        f.write_text(bad)
        with pytest.raises(IbverifyError, match="expect_verdict"):
            load_claim(f)


def test_family_is_the_claim_file_beside_the_claim_else_the_registrys(tmp_path):
    """CheckContext.family: another claim's parameters for this tier, from the claim's own folder first (a user's
    claims folder may hold its own copy), else the default registry; an unknown id is one IbverifyError."""
    import dataclasses

    from ibverify import IbverifyError
    from ibverify.claims import CheckContext, load_claim

    me = CLAIMS["gronich.control.adam-l2"]
    ctx = CheckContext(claim=me, tier="fast", params=me.params_for("fast"))
    fam = ctx.family("gronich.adam-linf", steps=7)
    assert fam.claim.id == "gronich.adam-linf" and fam.params["steps"] == 7
    assert fam.params["optimizer"] == "adam" and fam.tier == "fast"
    text = (ROOT / "claims" / "gronich.adam-linf.toml").read_text()
    text = text.replace('optimizer = "adam"', 'optimizer = "signum"')
    (tmp_path / "gronich.adam-linf.toml").write_text(text)
    ctl = (ROOT / "claims" / "gronich.control.adam-l2.toml").read_text()
    (tmp_path / "gronich.control.adam-l2.toml").write_text(ctl)
    mine = load_claim(tmp_path / "gronich.control.adam-l2.toml")
    assert CheckContext(claim=mine, tier="fast", params={}).family("gronich.adam-linf").params["optimizer"] == "signum"
    assert CheckContext(claim=mine, tier="fast", params={}).family("gronich.muon-msp").params["optimizer"] == "muon"
    with pytest.raises(IbverifyError, match="unknown family claim"):
        ctx.family("gronich.no-such-claim")
    reg = {"gronich.adam-linf": dataclasses.replace(CLAIMS["gronich.adam-linf"], params={"optimizer": "lion"})}
    assert dataclasses.replace(ctx, registry=reg).family("gronich.adam-linf").params["optimizer"] == "lion"


def test_every_law_is_a_prediction_with_a_tracked_tolerance_a_control_and_fresh_data():
    """A law (status "law") is judged from a tolerance `<name>_max|_min` whose `figure` compare tracks, on fresh draws
    per seed (fresh_stride), with a control of the same check; a paper-1 finding says why it is not a law."""
    laws = [c for c in CLAIMS.values() if c.status == "law"]
    assert {"baek.beyond.gr-offset-law", "baek.beyond.signum-plateau-law",
            "baek.beyond.batch-metric-prediction"} <= {c.id for c in laws}
    for c in laws:
        tracked = [n for n, t in c.tolerances.items() if n.endswith(("_max", "_min")) and t.get("figure")]
        assert tracked, f"{c.id}: a law needs a tolerance <name>_max/_min with a tracked figure"
        assert int(c.params.get("fresh_stride", 0)) >= len(c.params_for("fast")["data_seeds"]), (
            f"{c.id}: a law is judged on fresh, disjoint draws at every seed")
        assert c.controls and all(CLAIMS[k].check == c.check and CLAIMS[k].status == "control" for k in c.controls)
    for c in CLAIMS.values():
        if c.id.startswith("baek.beyond.") and c.status == "beyond":
            assert "A finding, not a law" in c.statement, f"{c.id}: a finding says why it cannot be a prediction"
