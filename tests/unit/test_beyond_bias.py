"""checks.beyond_bias.geometry_law without training: checks.bias's per-dataset judgement is stubbed, so these test
the law's own logic (issue 22 point 4):

    expect "to"   the geometry's decisions tallied as they are (rules.tally: ≥ 2/3 supported, none contradicted)
    expect "not"  supported ↔ contradicted swapped, inconclusive and set aside kept (a control of "to")
    tolerances    a claim's documented tolerance that is not checks.bias's own number raises
and the shipped claim files of the law keep their pairing (a control runs the opposite law on the same datasets).
"""

from pathlib import Path

import pytest

from ibverify import IbverifyError
from ibverify.checks import beyond_bias as B
from ibverify.checks import bias, rules
from ibverify.claims import CheckContext, load_claim

CLAIMS = Path(__file__).resolve().parents[2] / "claims"
S, C, I, A = rules.SUPPORTED, rules.CONTRADICTED, rules.INCONCLUSIVE, rules.SET_ASIDE


class _Pr:
    def __init__(self, i):
        self.tag = f"ds{i}"
        self.n = 10


def _ctx(words, monkeypatch, expect="to", tolerances=None):
    it = iter(words)
    monkeypatch.setattr(bias, "generated", lambda model, seed, k, store=None: [_Pr(i) for i in range(k)])
    monkeypatch.setattr(bias, "resolved_spec", lambda spec, model, n: spec)

    def judge(model, pr, spec, tier, batch=None, horizons=None, store=None):
        w = next(it)
        return {g: bias.Judged(w if g == "spectral" else C, "stub", 0.1, -0.5, horizons[1], "margin_gap",
                               ([1, 10, 100], [0.3, 0.2, 0.1])) for g in ("l2", "spectral")}

    monkeypatch.setattr(bias, "judge_dataset", judge)
    claim = load_claim(CLAIMS / "gronich.beyond.muon-ns5-geometry.toml")
    if tolerances is not None:
        claim.tolerances = tolerances
    params = {**claim.params_for("fast"), "dataset_count": len(words), "expect": expect}
    return CheckContext(claim, "fast", params, 0)


@pytest.mark.parametrize("words, expect, holds, undecided", [
    ([S, S, I], "to", True, False),       # 2 of 3 supported, none contradicted
    ([S, I, I], "to", None, True),        # too few supported
    ([S, S, C], "to", False, False),      # one contradicted refutes
    ([C, C, I], "not", True, False),      # the opposite law: contradicted datasets support it
    ([S, C, C], "not", False, False),     # a supported dataset refutes "not"
    ([A, S, S], "to", True, False),       # set aside counts toward neither side
])
def test_tally_of_the_law(words, expect, holds, undecided, monkeypatch):
    out = B.geometry_law(_ctx(words, monkeypatch, expect))
    assert bool(out.inconclusive) == undecided
    if holds is not None:
        assert out.holds is holds
    assert out.series and out.examples == len(words)


@pytest.mark.parametrize("words, judged", [([I, S, C, S], 3), ([S, S, I], 3), ([C, S], 1)])
def test_until_contradicted_stops_at_the_first_contradicting_dataset(words, judged, monkeypatch):
    """A control's smoke tier draws datasets only until one contradicts the law (that alone refutes it); the verdict
    equals the one over every dataset."""
    full = B.geometry_law(_ctx(words, monkeypatch))
    ctx = _ctx(words, monkeypatch)
    ctx.params["until_contradicted"] = True
    short = B.geometry_law(ctx)
    assert short.examples == judged and (short.holds, bool(short.inconclusive)) == (full.holds, bool(full.inconclusive))


def test_law_word():
    assert [B.law_word(w, "not") for w in (S, C, I, A)] == [C, S, I, A]
    assert [B.law_word(w, "to") for w in (S, C, I, A)] == [S, C, I, A]
    with pytest.raises(IbverifyError):
        B.law_word(S, "maybe")


def test_tolerance_must_be_the_rules_own(monkeypatch):
    ctx = _ctx([S], monkeypatch, tolerances={"bound": {"value": 0.05, "why": "tuned"}})
    with pytest.raises(IbverifyError, match="tolerance bound"):
        B.geometry_law(ctx)


@pytest.mark.parametrize("claim, control", [
    ("gronich.beyond.muon-ns5-geometry", "gronich.control.muon-polar-not-spectral"),
    ("gronich.beyond.per-sample-adam-net", "gronich.control.full-batch-adam-net-not-linf"),
])
def test_controls_run_the_opposite_law_on_the_same_datasets(claim, control):
    a, b = load_claim(CLAIMS / f"{claim}.toml"), load_claim(CLAIMS / f"{control}.toml")
    assert control in a.controls and b.status == "control"
    assert {a.params["expect"], b.params["expect"]} == {"to", "not"}
    assert a.params["geometry"] == b.params["geometry"] and a.params["model"] == b.params["model"]
    assert b.tiers and set(b.tiers) <= set(a.tiers)
    for tier in b.tiers:
        pa, pb = a.params_for(tier), b.params_for(tier)
        if tier == "smoke":   # a control must decide at smoke (refuted), the claim may stay undecided there: the
            assert all(pb[k] >= pa[k] for k in ("dataset_count", "first", "cap"))   # same draws, maybe more, longer
        else:
            assert (pa["dataset_count"], pa["first"], pa["cap"]) == (pb["dataset_count"], pb["first"], pb["cap"])
