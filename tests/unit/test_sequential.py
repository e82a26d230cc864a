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
    assert decide([ex(SUPPORTED)] * 2 + [ex(SET_ASIDE)] * 4)[0] is True             # judged: 2
    assert decide([ex(SUPPORTED)] * 3 + [ex(INCONCLUSIVE)] * 3, min_supported=3)[0] is True
    v, text, counts = decide([ex(SUPPORTED), ex(CONTRADICTED)])
    assert v is False and counts[CONTRADICTED] == 1 and "1 contradicted" in text
