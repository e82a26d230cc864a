"""oracles.fallback (issue 35 item 2): each branch on constructed inputs. A first solve that is not certified is
tried again and accepted only under the same certificate; a refusal says "not linearly separable" only with a dual
witness; the min-norm ℓ∞ bound is a weak-duality bound, never above the true minimum."""

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.oracles import fallback, maxmargin
from ibverify.oracles.base import Memo, certify
from ibverify.theory import linf_set

Z = np.array([[2.0, 1.0, 0.5], [1.5, -0.5, 1.0], [1.0, 2.0, 0.3], [2.0, -0.5, 1.0]])   # separable, 4 × 3


@pytest.mark.parametrize("norm", ["l2", "linf", "l1"])
def test_second_attempts_give_the_certified_optimum(norm):
    ref = maxmargin.max_margin(Z, norm)
    s = np.abs(Z).max()
    w, lam, cert = fallback.second_attempts(Z, Z / s, s, norm, IbverifyError("first failed"))
    assert cert["solver"].startswith(("highs", "clarabel-strict"))
    certify(Z, w / s, lam / s, norm)                       # in the original units
    nw = np.linalg.norm(w, {"l2": 2, "linf": np.inf, "l1": 1}[norm])
    assert abs(s / nw - ref.margin) <= 1e-7 * ref.margin


def test_max_margin_falls_back_when_the_first_solve_is_not_certified(monkeypatch):
    ref = maxmargin.max_margin(Z, "l2")

    def inaccurate(*a, **k):
        raise IbverifyError("l2 max-margin solve ended with status 'optimal_inaccurate'")

    monkeypatch.setattr(maxmargin, "_SOLVED", Memo())
    monkeypatch.setattr(maxmargin, "_solve_primal", inaccurate)
    r = maxmargin.max_margin(Z, "l2")
    assert r.certificate["solver"] != "clarabel" and abs(r.margin - ref.margin) <= 1e-7 * ref.margin
    np.testing.assert_allclose(r.direction, ref.direction, atol=1e-6)
    assert list(r.support) == list(ref.support)


def test_an_uncertified_second_answer_is_refused(monkeypatch):
    s = np.abs(Z).max()
    w, lam, _ = fallback.second_attempts(Z, Z / s, s, "linf", IbverifyError("x"))
    monkeypatch.setattr(fallback, "solve_primal", lambda *a, **k: (0.99 * w, lam))   # infeasible primal
    with pytest.raises(IbverifyError, match="not certified by any solver.*certificate failed"):
        fallback.second_attempts(Z, Z / s, s, "linf", IbverifyError("first"))


def test_the_refusal_names_non_separable_data_only_with_a_witness(monkeypatch):
    bad = np.array([[1.0, 0.0], [-1.0, 0.0]])
    with pytest.raises(IbverifyError, match="not linearly separable: dual witness"):
        fallback.second_attempts(bad, bad, 1.0, "l2", IbverifyError("first"))
    with pytest.raises(IbverifyError, match="not linearly separable: dual witness"):
        maxmargin.max_margin(bad, "l1")
    monkeypatch.setattr(fallback, "ATTEMPTS", ())        # separable, nothing certified: no witness, no such word
    with pytest.raises(IbverifyError, match="l2 max margin not certified by any solver") as e:
        fallback.second_attempts(Z, Z, 1.0, "l2", IbverifyError("first"))
    assert "separable" not in str(e.value)


def test_polish_recovers_the_exact_l2_solution():
    Zs = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])   # ŵ = (1, 1), support {0, 1}, λ_qp = (1, 1)
    rough_w, rough_lam = np.array([1.0 + 1e-5, 1.0 - 1e-5]), np.array([0.7, 0.7, 1e-9]) / np.sqrt(2)
    (w, lam), *_ = fallback.polished_l2(Zs, rough_w, rough_lam)
    np.testing.assert_allclose(w, [1.0, 1.0], rtol=1e-14)
    np.testing.assert_allclose(lam, np.array([1.0, 1.0, 0.0]) / np.sqrt(2), rtol=1e-12, atol=1e-15)
    assert max(certify(Zs, w, lam, "l2").values()) < 1e-14


def _h_brute(a):
    v = np.linspace(-1, 1, 200001)
    return np.array([np.min(0.5 * v * v - ai * v) for ai in a])


def test_dual_value_is_weak_duality_with_both_branches_of_h():
    Zs = np.array([[1.0, 0.2], [0.5, 1.0]])
    g = 0.4
    for mu in (np.array([0.1, 0.2]), np.array([3.0, 0.5]), np.array([-1.0, 0.5])):   # |a| < 1, |a| > 1, μ < 0
        m = np.maximum(mu, 0)
        expect = g * m.sum() + _h_brute(Zs.T @ m).sum()
        assert abs(fallback.dual_value(Zs, g, mu) - expect) < 1e-9
    import cvxpy as cp
    v = cp.Variable(2)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(v)), [Zs @ v >= g, cp.abs(v) <= 1])
    prob.solve(solver=cp.CLARABEL)
    rng = np.random.default_rng(0)
    for _ in range(50):                                  # any μ ≥ 0: never above the minimum
        assert fallback.dual_value(Zs, g, rng.exponential(size=2)) <= prob.value + 1e-12
    bound = fallback.min_norm_lower_bound(Zs, g)         # and tight at the solver's multipliers
    assert bound <= np.sqrt(2 * prob.value) * (1 + 1e-12) and bound >= np.sqrt(2 * prob.value) * (1 - 1e-6)


def test_max_cos_bound_uses_the_proved_bound_when_the_qp_fails(monkeypatch):
    li = maxmargin.max_margin(Z, "linf")
    u = np.array([1.0, 0.2, 0.3])
    calls = []
    monkeypatch.setattr(linf_set, "min_norm_lower_bound", lambda Zs, g: calls.append(g) or 10.0 * len(calls))
    linf_set.max_cos_bound(Z, u, li.margin)
    assert calls == []                                    # the QP solved: its value, no fallback

    class Failing:
        def __init__(self, *a, **k):
            pass

        def solve(self, *a, **k):
            raise linf_set.cp.error.SolverError("Solver 'CLARABEL' failed")

    monkeypatch.setattr(linf_set.cp, "Problem", Failing)
    first, second = linf_set.max_cos_bound(Z, u, li.margin), linf_set.max_cos_bound(Z, u, li.margin)
    assert len(calls) == 2 and 0 < second < 1
    assert first == pytest.approx(2 * second, rel=1e-12)   # the fallback's divisor (10, then 20) is the one used
