"""prop.sequential (extend an undecided example ×10 up to a cap) and prop.decide (the claim-level tally)."""

import pytest

from ibverify.checks.prop import Example, decide, sequential
from ibverify.checks.rules import CONTRADICTED, INCONCLUSIVE, SET_ASIDE, SUPPORTED


def judged_at(decided_from: int | None, word: str = SUPPORTED):
    calls = []

    def at(T: int, final: bool) -> Example:
        calls.append((T, final))
        w = word if decided_from is not None and T >= decided_from else INCONCLUSIVE
        return Example(True, {"x": 1.0}, decision=w)

    return at, calls


def test_extends_by_ten_until_decided_and_records_the_horizon():
    at, calls = judged_at(10_000)
    ex = sequential(at, 100, 100_000)
    assert calls == [(100, False), (1000, False), (10_000, False)]
    assert ex.word == SUPPORTED and ex.decided_at == 10_000 and ex.figures["horizon"] == 10_000


def test_stops_at_the_cap_as_final_and_stays_inconclusive():
    at, calls = judged_at(None)
    ex = sequential(at, 100, 5000)
    assert calls == [(100, False), (1000, True)] and ex.word == INCONCLUSIVE and ex.decided_at is None


def test_a_contradiction_is_not_extended():
    at, calls = judged_at(100, CONTRADICTED)
    assert sequential(at, 100, 10**6).word == CONTRADICTED and calls == [(100, False)]


def test_no_cap_means_one_horizon():
    at, calls = judged_at(None)
    sequential(at, 300, None)
    assert calls == [(300, True)]


def test_decision_word_sets_ok_and_rejects_unknown_words():
    assert Example(True, {}, decision=CONTRADICTED).ok is False
    assert Example(False, {}).word == CONTRADICTED and Example(True, {}).word == SUPPORTED
    with pytest.raises(ValueError):
        Example(True, {}, decision="maybe")


def test_decide_needs_two_thirds_supported_by_default():
    ex = lambda w: Example(True, {}, decision=w)  # noqa: E731
    assert decide([ex(SUPPORTED)] * 4 + [ex(INCONCLUSIVE)] * 2)[0] is True          # 4 ≥ ⌈2·6/3⌉
    assert decide([ex(SUPPORTED)] * 3 + [ex(INCONCLUSIVE)] * 3)[0] is None
    assert decide([ex(SUPPORTED)] * 4 + [ex(SET_ASIDE)] * 2)[0] is True             # judged: 4, 2 of 6 set aside
    assert decide([ex(SUPPORTED)] * 3 + [ex(INCONCLUSIVE)] * 3, min_supported=3)[0] is True
    # too few examples inside the hypotheses (the rest set aside): cannot hold, inconclusive
    v, text, counts = decide([ex(SUPPORTED)] * 2, requested=6, set_aside=1)      # share 1 of 3: within the cap
    assert v is None and "only 2 of 6 examples inside" in text and counts[SET_ASIDE] == 1
    assert decide([ex(SUPPORTED)] * 3, requested=6, set_aside=1)[0] is True
    assert decide([ex(SUPPORTED), ex(CONTRADICTED)], requested=6, set_aside=9)[0] is False
    v, text, counts = decide([ex(SUPPORTED), ex(CONTRADICTED)])
    assert v is False and counts[CONTRADICTED] == 1 and "1 contradicted" in text


def test_decide_caps_the_set_aside_share_of_a_holding_claim():
    ex = lambda w: Example(True, {}, decision=w)  # noqa: E731
    # the cap alone (the judged count is not below half the requested): 3 of 8 drawn set aside > 1/3
    v, text, _ = decide([ex(SUPPORTED)] * 5 + [ex(SET_ASIDE)] * 3, requested=5)
    assert v is None and "3 of 8 drawn examples set aside" in text
    v, text, _ = decide([ex(SUPPORTED)] * 5 + [ex(SET_ASIDE)] * 3)         # also without a requested count
    assert v is None and "3 of 8 drawn examples set aside" in text
    assert decide([ex(SUPPORTED)] * 4 + [ex(SET_ASIDE)] * 2, requested=4)[0] is True    # 2 of 6: at the cap
    # the check's own set-aside examples count toward the share
    assert decide([ex(SUPPORTED)] * 4, requested=4, set_aside=2)[0] is True
    assert decide([ex(SUPPORTED)] * 4, requested=4, set_aside=3)[0] is None
    # a contradiction still decides whatever the share
    v, text, counts = decide([ex(SUPPORTED), ex(CONTRADICTED)], requested=2, set_aside=9)
    assert v is False and counts[CONTRADICTED] == 1 and "1 contradicted" in text


# ------------------------------------------------------------------ the linear direction decision, each half alone

import numpy as np  # noqa: E402

from ibverify.checks.per_sample import decide_direction  # noqa: E402
from ibverify.claims import CheckContext, load_registry  # noqa: E402

X = np.logspace(2, 6, 17)


def _ctx(claim_id):
    c = {c.id: c for c in load_registry()}[claim_id]
    return CheckContext(c, "fast", c.params_for("fast"))


def test_invariant_criterion_supports_a_settled_K_with_growing_w():
    w2 = X ** 1.4                                    # ‖w‖² grows ×25 per decade
    gap = 3.0 / w2                                   # K = gap·‖w‖² = 3, settled; gap 1.2e-8 at the horizon
    d, close, trend = decide_direction(X, gap, w2, 1e-3, "invariant", 1.0, _ctx("baek.gr-inc-adam-l2"), True)
    assert d.word == SUPPORTED and close and trend


def test_invariant_trend_half_alone_contradicts_a_rising_K_within_tolerance():
    w2 = X ** 1.4
    gap = np.full_like(X, 5e-4)                      # within cos 0.999, but K = gap·‖w‖² rises ×25 per decade
    d, close, trend = decide_direction(X, gap, w2, 1e-3, "invariant", 1.0, _ctx("baek.gr-inc-adam-l2"), False)
    assert close and not trend and d.word == CONTRADICTED


def test_invariant_closeness_half_alone_keeps_a_settled_K_undecided():
    w2 = X ** 1.4
    gap = 3e6 / w2                                   # K settled, but the gap at the horizon is 1.2e-2 > 1e-3
    d, close, trend = decide_direction(X, gap, w2, 1e-3, "invariant", 1.0, _ctx("baek.gr-inc-adam-l2"), True)
    assert trend and not close and d.word == INCONCLUSIVE and "on track" in d.reason


def test_a_frozen_run_is_contradicted_only_at_the_cap():
    w2 = np.full_like(X, 4.0)
    gap = np.full_like(X, 1e-4)
    ctx = _ctx("baek.gr-inc-adam-l2")
    assert decide_direction(X, gap, w2, 1e-3, "invariant", 1.0, ctx, True)[0].word == CONTRADICTED
    assert decide_direction(X, gap, w2, 1e-3, "invariant", 1.0, ctx, False)[0].word == INCONCLUSIVE


def test_falling_criterion_is_judge_gap():
    ctx = _ctx("zhang.det-adam-linf")
    assert decide_direction(X, 0.1 * X ** -0.5, X, 3e-2, "falling", 1.0, ctx, True)[0].word == SUPPORTED
    assert decide_direction(X, np.full_like(X, 0.2), X, 3e-2, "falling", 1.0, ctx, True)[0].word == CONTRADICTED
    assert decide_direction(X, 100 * X ** -0.5, X, 3e-2, "falling", 1.0, ctx, True)[0].word == INCONCLUSIVE


# ------------------------------------------------------------------ sequential_from: start at another tier's horizon

from ibverify.checks.prop import first_on_grid  # noqa: E402
import dataclasses  # noqa: E402

from ibverify import IbverifyError  # noqa: E402


def test_first_on_grid_starts_on_the_tiers_grid_at_or_above_first():
    assert first_on_grid(10**7, 10**6) == 10**6
    assert first_on_grid(10**7, 3 * 10**5) == 10**6          # the smallest steps/10^k that is ≥ first
    assert first_on_grid(10**7, 10**5) == 10**5
    assert first_on_grid(43478, 4347.8) == 4347              # an example's own steps (steps / u): floor
    assert first_on_grid(10**7, None) == 10**7 and first_on_grid(10**5, 10**6) == 10**5


def test_sequential_from_first_visits_only_the_undecided_horizons():
    seen = []

    def undecided(T, final):
        seen.append((T, final))
        return Example(True, {}, decision=INCONCLUSIVE)
    sequential(undecided, 10**7, 10**7, first=10**5)
    assert seen == [(10**5, False), (10**6, False), (10**7, True)]
    seen.clear()

    def decides(T, final):
        seen.append((T, final))
        return Example(True, {}, decision=SUPPORTED)
    e = sequential(decides, 10**7, 10**8, first=10**6)
    assert seen == [(10**6, False)] and e.decided_at == 10**6


def test_params_for_turns_sequential_from_into_a_first_horizon():
    from ibverify.claims import load_registry
    c = {c.id: c for c in load_registry()}["soudry.gd-l2"]
    c = dataclasses.replace(c, tiers={"fast": {"steps": 10**4}, "full": {"steps": 10**6, "sequential_from": "fast"}})
    p = c.params_for("full")
    assert p["first_horizon"] == 10**4 and p["steps"] == 10**6 and "sequential_from" not in p
    assert "first_horizon" not in c.params_for("fast")
    c = dataclasses.replace(c, params={k: v for k, v in c.params.items() if k != "steps"},
                            tiers={"fast": {}, "full": {"steps": 10**6, "sequential_from": "fast"}})
    with pytest.raises(IbverifyError, match="no horizon"):
        c.params_for("full")
