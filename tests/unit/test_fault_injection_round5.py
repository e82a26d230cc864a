"""Issue 45 item 6: faults that the round-5 fault injection found the default pytest let pass, each now caught here.

(a) a trend (rate or ratio) fitted over a single decade accepted: rules.window_fit refuses a curve that does not
    reach `decades` decades back (or has < 3 points there), and the rules that read a trend are undecided on it;
(b) a max-margin certificate with a loosened tolerance: a near-optimal but not optimal point (1 + 3e-7 times the
    optimum: feasible, its duality gap 3e-7, 3× the shipped CERT_RTOL) is rejected by oracles.base.certify and by the
    fallback oracle's second attempts; theory.certificate.verify likewise 3e-9 off (3× DEFAULT_TOL);
(c) rules.tally and its ≥ 2/3 callers (checks.bias.tally_geometry over datasets, checks.prop.decide over examples):
    one third supported never supports, two thirds exactly does, one contradicted dataset refutes.
Each test names the fault it catches; every one was injected by hand and seen to fail (the report of issue 45)."""

import math

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.checks import bias, rules
from ibverify.checks.prop import Example, decide
from ibverify.checks.rules import CONTRADICTED, INCONCLUSIVE, SET_ASIDE, SUPPORTED
from ibverify.oracles import fallback, maxmargin
from ibverify.oracles.base import CERT_RTOL, certify, residuals
from ibverify.theory import certificate

S, C, I, A = SUPPORTED, CONTRADICTED, INCONCLUSIVE, SET_ASIDE


# ------------------------------------------------------------------ (a) no trend read off one decade

def curve(lo_exp: float, hi_exp: float, n: int = 21):
    x = np.logspace(lo_exp, hi_exp, n)
    return x, 0.5 * (x / x[0]) ** -0.5   # a clean power-law fall, slope −0.5


def test_window_fit_needs_the_full_span_of_decades():
    """Fault: window_fit accepts a curve spanning fewer than `decades` decades (its span test dropped or shifted)."""
    x, y = curve(3.0, 5.0)                              # exactly two decades: fitted
    fit = rules.window_fit(x, y, 0.01, decades=2.0)
    assert fit is not None and fit.slope == pytest.approx(-0.5, abs=1e-9)
    x, y = curve(3.0 + math.log10(1.02), 5.0)          # 1.99 decades: refused
    assert rules.window_fit(x, y, 0.01, decades=2.0) is None
    x, y = curve(4.0, 5.0)                              # one decade, 21 points: refused at 2, fitted at 1
    assert rules.window_fit(x, y, 0.01, decades=2.0) is None
    assert rules.window_fit(x, y, 0.01, decades=1.0) is not None
    x, y = curve(3.0, 5.0, n=2)                         # two decades but two points: refused
    assert rules.window_fit(x, y, 0.01, decades=2.0) is None
    assert rules.window_fit(*curve(3.0, 5.0, n=3), 0.01, decades=2.0) is not None


def test_judge_gap_decides_nothing_over_one_decade():
    """Fault: judge_gap supports (or contradicts) a gap whose trend spans one decade."""
    x, y = curve(3.0, 5.0)
    assert rules.judge_gap(x, y, bound=0.1).word == S                 # within the bound and falling over 2 decades
    x, y = curve(4.0, 5.0)
    d = rules.judge_gap(x, y, bound=0.1)
    assert d.word == I and "fewer than 3 points over the last 2 decades" in d.reason
    flat = np.full(21, 0.5)
    assert rules.judge_gap(np.logspace(3, 5, 21), flat, bound=0.1).word == C   # a 2-decade plateau contradicts
    assert rules.judge_gap(np.logspace(4, 5, 21), flat, bound=0.1).word == I   # a 1-decade one does not


def test_judge_separation_reads_the_ratio_over_two_decades_never_one():
    """Fault: the own/rival ratio's fit in judge_separation accepted over a single decade. The own residual spans two
    decades; the ratio exists only over the last one (the rival is 0 before: no ratio there)."""
    x = np.logspace(3, 5, 21)
    own = 0.1 * (x / 1e3) ** -0.5
    rival = np.ones_like(x)
    word = rules.judge_separation(x, own, {"r": rival})[0].word
    assert word == S                                    # the ratio over two decades: supported
    rival[x < 1e4 * (1 - 1e-9)] = 0.0                  # the ratio over one decade only
    d, _ = rules.judge_separation(x, own, {"r": rival})
    assert d.word == I and "fewer than 3 separated points" in d.reason
    d, _ = rules.judge_separation(x, own, {"r": rival}, decades=1.0)
    assert d.word == S                                  # the same ratio is read when one decade is asked for


def test_judge_nondecreasing_needs_the_span():
    """Fault: judge_nondecreasing supports a monotone curve over less than `decades` decades."""
    assert rules.judge_nondecreasing(np.logspace(3, 5, 5), [1, 2, 3, 4, 5], 1e-9).word == S
    d = rules.judge_nondecreasing(np.logspace(4, 5, 5), [1, 2, 3, 4, 5], 1e-9)
    assert d.word == I and "decades" in d.reason


# ------------------------------------------------------------------ (b) the certificate at its shipped tolerance

Z = np.array([[2.0, 1.0, 0.5], [1.5, -0.5, 1.0], [1.0, 2.0, 0.3], [2.0, -0.5, 1.0]])   # separable, 4 × 3
# How far off the near-optimal points are, as numbers (not as multiples of the tolerance constants, which a loosened
# constant would carry along): 3× the shipped CERT_RTOL (1e-7) and DEFAULT_TOL (1e-9), inside 10× of them.
OFF_ORACLE, OFF_PADAM = 3e-7, 3e-9


@pytest.mark.parametrize("norm", ["linf", "l1", "l2"])
def test_certify_rejects_a_near_optimal_point(norm):
    """Fault: oracles.base.certify's CERT_RTOL (or the rtol it is called with) loosened 10×."""
    r = maxmargin.max_margin(Z, norm)
    w = r.direction / r.margin                          # (P): min ‖w‖ s.t. Zw ≥ 1, with its norm-form duals
    lam = r.duals
    assert max(certify(Z, w, lam, norm).values()) <= CERT_RTOL / 100   # the optimum itself: far inside
    near = w * (1 + OFF_ORACLE)                        # feasible, its norm 3e-7 (relative) above the optimum
    res = residuals(Z, near, lam, norm)
    assert 1e-7 < res["duality_gap"] <= 1e-6
    with pytest.raises(IbverifyError, match="certificate failed: duality_gap"):
        certify(Z, near, lam, norm)
    certify(Z, near, lam, norm, rtol=1e-6)             # 10× looser would accept it


@pytest.mark.parametrize("norm", ["linf", "l1"])
def test_the_fallback_refuses_a_near_optimal_second_answer(norm, monkeypatch):
    """Fault: oracles.fallback.second_attempts certifies its answers with a loosened tolerance. Every attempt's
    solver is made to return the optimum scaled by 1 + 3e-7 (feasible, not optimal): refused; the optimum
    itself: accepted (ℓ2 is left out: its active-set polish recomputes the exact optimum from any such point)."""
    s = float(np.abs(Z).max())
    w, lam, _ = fallback.second_attempts(Z, Z / s, s, norm, IbverifyError("first"))
    monkeypatch.setattr(fallback, "solve_primal", lambda *a, **k: (w.copy(), lam.copy()))
    assert fallback.second_attempts(Z, Z / s, s, norm, IbverifyError("first"))[2]["duality_gap"] <= CERT_RTOL
    monkeypatch.setattr(fallback, "solve_primal", lambda *a, **k: (w * (1 + OFF_ORACLE), lam.copy()))
    with pytest.raises(IbverifyError, match="not certified by any solver.*duality_gap"):
        fallback.second_attempts(Z, Z / s, s, norm, IbverifyError("first"))


def test_the_p_adam_certificate_rejects_a_near_optimal_point_at_its_default_tolerance():
    """Fault: theory.certificate.DEFAULT_TOL loosened 10×. min ½‖w‖² s.t. w ≥ 1 (Z = I, M = I): w = λ = (1, 1);
    λ off by 3e-9 breaks stationarity by that much."""
    Z2, m, w = np.eye(2), np.ones(2), np.ones(2)
    assert certificate.verify(Z2, m, w, np.ones(2)).kkt == 0.0
    lam = np.array([1.0 + OFF_PADAM, 1.0])
    cert = certificate.residuals(Z2, m, w, lam)
    assert 1e-9 < cert.stationarity <= 1e-8
    with pytest.raises(IbverifyError, match="KKT certificate failed"):
        certificate.verify(Z2, m, w, lam)
    certificate.verify(Z2, m, w, lam, tol=1e-8)        # 10× looser would accept it


# ------------------------------------------------------------------ (c) tally: two thirds, and one contradiction

def test_rules_tally_counts_exactly():
    """Fault: rules.tally supports below min_supported, or lets a contradiction pass."""
    assert rules.tally([S, I, I], 2)[0] is None                 # 1 of 3 with 2 needed
    assert rules.tally([S, S, I], 2)[0] is True                 # exactly the need
    assert rules.tally([S] * 3 + [I] * 3, 4)[0] is None         # one short
    assert rules.tally([S] * 4 + [I] * 2, 4)[0] is True
    assert rules.tally([S] * 5 + [C], 4)[0] is False            # any contradicted refutes, however many support
    assert rules.tally([C, I, I], 1)[0] is False


@pytest.mark.parametrize("words, want", [
    ([S, I, I], I),               # one third of the datasets: never supported
    ([S, S, I], S),               # two thirds exactly
    ([S, S, I, I, I, I], I),      # one third of six
    ([S, S, S, I, I, I], I),      # half: below two thirds
    ([S, S, S, S, I, I], S),      # 4 of 6 = ⌈2·6/3⌉: the boundary exactly
    ([S, S, S, I], S), ([S, S, I, I], I),   # ⌈2·4/3⌉ = 3
    ([S, S, S, S, S, C], C),      # one contradicted dataset refutes
    ([S, C, I], C),
    ([S, S, A], S),               # set aside: not among the datasets judged (2 of 2)
    ([S, I, A], I),               # 1 of 2 judged
])
def test_tally_geometry_needs_two_thirds_of_the_datasets(words, want):
    """Fault: checks.bias.tally_geometry (the per-geometry tally over datasets) supporting with one third."""
    assert bias.tally_geometry(words) == want


@pytest.mark.parametrize("n_supported, n_other, holds", [
    (1, 2, None), (2, 1, True), (2, 4, None), (3, 3, None), (4, 2, True), (6, 3, True), (5, 4, None)])
def test_prop_decide_needs_two_thirds_of_the_examples(n_supported, n_other, holds):
    """Fault: checks.prop.decide's default ⌈2/3⌉ share lowered (e.g. to a third)."""
    ex = [Example(True, {}, decision=S)] * n_supported + [Example(True, {}, decision=I)] * n_other
    assert decide(ex)[0] is holds
    assert decide(ex + [Example(False, {}, decision=C)])[0] is False
