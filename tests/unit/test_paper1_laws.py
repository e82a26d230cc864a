"""Values of paper1_laws' log-domain helpers, including past the float64 underflow of the loss."""

import numpy as np

from ibverify.checks.paper1_laws import proxy_quantities, realized_weights


def _direct(Z, w):
    m = Z @ w
    s = 1 / (1 + np.exp(m))
    L = np.mean(np.log1p(np.exp(-m)))
    g = -(s @ Z) / len(Z)
    P = np.sqrt(((s[:, None] * Z) ** 2).sum(axis=0))  # P = diag(sqrt(Σ_i (σ_i z_i)²)), no 1/N
    return L, np.sqrt(g @ (g / P))


def test_proxy_quantities_equal_the_direct_formulas():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(6, 3))
    ws = rng.normal(size=(4, 3))
    Q = proxy_quantities(Z, ws)
    for k, w in enumerate(ws):
        L, G = _direct(Z, w)
        assert np.isclose(Q["L"][k], L, rtol=1e-12)
        assert np.isclose(Q["grad_norm"][k], G, rtol=1e-10)
        assert np.isclose(Q["ratio"][k], G / L, rtol=1e-10)
        assert np.isclose(Q["sq_ratio"][k], G * G / L, rtol=1e-10)
        assert np.isclose(Q["norm"][k], np.linalg.norm(w))


def test_proxy_ratio_is_exact_where_the_loss_underflows():
    """Margins 800 and 900: L ≈ e^{−800}/2 underflows, the ratio ‖∇L‖/L ≈ sqrt(N)·… does not."""
    Z = np.array([[800.0, 0.0], [0.0, 900.0]])
    w = np.array([1.0, 1.0])
    Q = proxy_quantities(Z, w[None] * 1.0)
    # σ_i = ℓ_i = e^{−m_i} to 1e−300: ‖∇L‖²_{P⁻¹} = (σ1·800 + σ2·900)/N² ≈ 800 e^{−800}/4, L ≈ e^{−800}/2.
    log_ratio = 0.5 * np.log(800) + 400
    assert np.isfinite(Q["ratio"][0]) and Q["ratio"][0] > 0
    assert np.isclose(np.log(Q["ratio"][0]), log_ratio, rtol=1e-9)
    assert np.isclose(np.log(Q["sq_ratio"][0]), np.log(800) - np.log(2), rtol=1e-9)


def test_realized_weights_recover_known_weights_without_overflow():
    """w1 − w0 = Σ_j c_j z_j with c_j = η σ_j κ̃_j / max_l σ_l a_l: the helper returns κ̃ of the kept samples,
    and a sample with σ_j ≈ e^{−900} (c_j ≈ 0) is dropped without an overflow."""
    Z = np.array([[1.0, 0.0, 0.0], [2.0, 1.0, 0.0], [1.0, 0.0, 900.0]])
    w0 = np.array([0.5, 0.2, 1.0])
    eta, kappa = 0.1, np.array([1.3, 0.7, 5.0])
    ls = -np.logaddexp(0.0, Z @ w0)
    la = np.log(np.abs(Z[:, 0]))
    top = (ls + la).max()
    c = eta * kappa * np.exp(ls - top)
    w1 = w0 + c @ Z
    with np.errstate(over="raise"):
        k = realized_weights(Z, w0, w1, eta)
    assert np.allclose(k, kappa[:2], rtol=1e-9)


# ------------------------------------------------------------------ the per-support-vector offset law (gr_offset_law)

from ibverify.checks import rules  # noqa: E402
from ibverify.checks.paper1_laws import (constant_spread, discriminating_gr, fresh_seeds,  # noqa: E402
                                         gr_offset_law, offset_law, predicted_offsets)
from ibverify.recipes import RunStore  # noqa: E402
from ibverify.claims import CheckContext, Claim  # noqa: E402
from ibverify.oracles import max_margin  # noqa: E402


def _ctx(params, tol, seed=0):
    cl = Claim(id="t", paper="", result="", status="law", statement="", check="", params=params,
               tolerances={k: {"value": v, "why": "test"} for k, v in tol.items()}, tiers={"fast": {}})
    return CheckContext(cl, "fast", params, seed=seed)


def test_fresh_seeds_are_new_draws_at_every_seed_and_disjoint_across_seeds():
    seeds = [fresh_seeds(_ctx({"data_seeds": [100, 101], "fresh_stride": 2}, {}, seed=s)) for s in range(8)]
    assert seeds[0] == [100, 101] and seeds[3] == [106, 107]
    assert len({x for s in seeds for x in s}) == 16
    assert fresh_seeds(_ctx({"data_seeds": [5]}, {}, seed=4)) == [5]   # no stride: the listed seeds


def _thresholds(C, ms=(12, 6, 4, 3, 2), width=1.1, censored=None):
    """Brackets [C_m/√width, C_m·√width] around the given constants, as bisect_threshold reports them."""
    return [{"m": m, "C_lo": c / width ** 0.5, "C_hi": c * width ** 0.5,
             "censored": (censored or {}).get(m, "")} for m, c in zip(ms, C, strict=True)]


def test_constant_spread_decides_each_way():
    """1 − β_c = 0.4/m: C = m(1 − β_c) is one constant (supported at q = 1, within ×3) while C·m spreads ×6
    (contradicted at q = 2); brackets wider than the band leave it undecided; an open (censored) bracket never
    supports."""
    exact = _thresholds([0.4] * 5)
    assert constant_spread(exact, 1.0, 3.0)["decision"].word == rules.SUPPORTED
    wrong = constant_spread(exact, 2.0, 3.0)
    assert wrong["decision"].word == rules.CONTRADICTED and abs(wrong["mid"] - 6.0) < 1e-9
    assert constant_spread(_thresholds([0.4] * 5, width=4.0), 1.0, 3.0)["decision"].word == rules.INCONCLUSIVE
    assert constant_spread(_thresholds([0.4, 0.4, 0.4, 0.4, 3.0]), 1.0, 3.0)["decision"].word == rules.CONTRADICTED
    open_ = constant_spread(_thresholds([0.4] * 5, censored={2: "above"}), 1.0, 3.0)
    assert open_["most"] == np.inf and open_["decision"].word == rules.INCONCLUSIVE


def test_reversed_law_counts_the_lags_backwards():
    """predicted_offsets(order="reversed") is offset_law on the relabelled data j → N−1−j: at small β2 each offset's
    slope in ln(1/β2) is (N − k_j)/2 instead of k_j/2 (same undamped j0: it depends on λ_j a_j only)."""
    Z = RunStore.process().data(discriminating_gr(10, 8, 5)).Z
    mm = max_margin(Z, "l2")
    j0, a = predicted_offsets(Z, mm.support, mm.duals, 1e-4, "reversed", exact=False)
    _, b = predicted_offsets(Z, mm.support, mm.duals, 1e-6, "reversed", exact=False)
    assert j0 == 3 and np.allclose((b - a) / np.log(100), [0.0, 4.5, 2.5], atol=1e-12)


def test_offset_law_values_on_data_seed_5():
    """Support vectors 3, 4, 8; j0 = 3 (largest λ_j a_j); lags 0, 1, 5: the spread grows like (5/2)·ln(1/β2), not
    (N−1)/2 = 4.5. Offsets measured on 1e6-step runs (β2 = 0.01: 2.217, 9.577; β2 = 1e−3: 3.368, 15.334)."""
    Z = RunStore.process().data(discriminating_gr(10, 8, 5)).Z
    mm = max_margin(Z, "l2")
    assert mm.support.tolist() == [3, 4, 8]
    for b2, want in ((0.01, [0.0, 2.214, 9.575]), (1e-3, [0.0, 3.365, 15.332])):
        j0, off = offset_law(Z, mm.support, mm.duals, b2)
        j0c, closed = offset_law(Z, mm.support, mm.duals, b2, exact=False)
        assert j0 == j0c == 3
        assert np.allclose(off, want, atol=2e-3) and np.allclose(closed, off, atol=1e-9)
    # slope of the offsets in ln(1/β2) is exactly lag/2
    _, a = offset_law(Z, mm.support, mm.duals, 1e-4, exact=False)
    _, b = offset_law(Z, mm.support, mm.duals, 1e-6, exact=False)
    assert np.allclose((b - a) / np.log(100), [0.0, 0.5, 2.5], atol=1e-12)


def test_offset_law_equilibrium_weights_are_the_duals():
    """At the exact equilibrium the per-epoch step coefficients σ_j/√v_j (σ_j = e^{−m_j}) are ∝ λ_j, at any β2."""
    Z = RunStore.process().data(discriminating_gr(10, 8, 6)).Z
    mm = max_margin(Z, "l2")
    sv, n, a = mm.support, 10, np.abs(Z[:, 0])
    for b2 in (0.5, 0.05):
        j0, off = offset_law(Z, sv, mm.duals, b2)
        m = off + 7.0  # any common shift
        u = a[sv] * np.exp(-m)
        v = np.array([sum(b2 ** ((j - l) % n) * u[q] ** 2 for q, l in enumerate(sv)) for j in sv])
        c = np.exp(-m) / np.sqrt(v)
        assert np.allclose(c / c.sum(), mm.duals[sv] / mm.duals[sv].sum(), rtol=1e-9)


def test_gr_offset_law_supports_the_right_run_and_contradicts_a_reordered_one():
    """The law with its own cyclic order: supported (error ≤ 0.03 and falling); the same data run in reversed cyclic
    order (a wrong run for the law: other undamped support vector, other lags): the error is a plateau of O(1),
    contradicted at the horizon. The one-formula law's slope 4.5 fails on this dataset (measured 2.5)."""
    base = {"n": 10, "d": 8, "lr_decay": 0.3, "eps": 0.0, "bias_correction": False, "data_seeds": [5],
            "beta2s": [0.3, 0.1], "steps": 300000}
    tol = {"offset_max": 0.03, "slope_tol": 0.1}
    good = gr_offset_law(_ctx(base, tol))
    runs = [r for r in good.table if "Δ slope in ln(1/β2), measured" in r]   # the law's fit row comes first
    assert [r["decision"] for r in good.table] == [rules.SUPPORTED] * 3 and len(runs) == 2 and good.holds is True
    assert good.figures["max_offset_error"] < 0.03
    assert abs(runs[0]["Δ slope in ln(1/β2), measured"] - 2.5) < 0.05 and not runs[0]["(N−1)/2 agrees"]
    bad = gr_offset_law(_ctx({**base, "cycle": list(range(9, -1, -1))}, tol))
    bad_runs = [r for r in bad.table if "Δ slope in ln(1/β2), measured" in r]
    assert [r["decision"] for r in bad_runs] == [rules.CONTRADICTED] * 2 and bad.holds is False
    assert bad.figures["max_offset_error"] > 0.5
    wrong = gr_offset_law(_ctx({**base, "law_order": "reversed"}, tol))   # the control's wrong law, the right run
    wrong_runs = [r for r in wrong.table if "Δ slope in ln(1/β2), measured" in r]
    assert [r["decision"] for r in wrong_runs] == [rules.CONTRADICTED] * 2 and wrong.holds is False
    assert wrong.figures["max_offset_error"] > 0.5


# ------------------------------------------------------------------ Prop 4.3 (proxy_prop43)

from ibverify.checks import paper1_laws as P  # noqa: E402
from ibverify.checks.paper1_laws import decade_sums, prop43_decision, proxy_prop43  # noqa: E402

_P43 = {"loss_bound": 1e-6, "inv_norm_bound": 0.1, "sum_bound": 1e-6}
_P43_TOL = {"max_loss": 1e-6, "max_inv_norm": 0.1, "max_decade_sum": 1e-6}


def test_decade_sums_of_power_laws():
    """f = t^−2 on log-spaced checkpoints: Σ_{T/10<t≤T} ≈ ∫_{T/10}^{T} t^−2 dt = 9/T (power-law segments are exact);
    f = 1: the decade holds 0.9·T steps."""
    x = np.unique(np.round(np.logspace(0, 5, 51)))  # 1e4 and 1e5 are checkpoints
    xs, D = decade_sums(x, x ** -2.0)
    k = np.flatnonzero(xs == 1e5)[0]
    assert np.isclose(D[k], 9e-5, rtol=0.02)
    xs, D = decade_sums(x, np.ones_like(x))
    assert np.isclose(D[k], 0.9e5, rtol=0.01)


def _curves():
    x = np.logspace(1, 5, 41)
    return x, np.exp(-np.sqrt(x)), 0.3 * np.sqrt(x), x, np.exp(-np.sqrt(x) / 2)


def test_prop43_each_half_decides_alone():
    x, L, norm, xs, D = _curves()
    dec, parts = prop43_decision(x, L, norm, xs, D, **_P43)
    assert dec.word == rules.SUPPORTED and all(d.word == rules.SUPPORTED for d in parts.values())
    plateau = 0.3 + 0 * x
    for name, args in (("L → 0", (x, plateau, norm, xs, D)), ("‖w‖ → ∞", (x, L, 1 / plateau, xs, D)),
                       ("Σ η‖∇L‖²_P⁻¹ < ∞", (x, L, norm, xs, 0.1 * np.sqrt(xs)))):  # ascent: sums grow like √T
        dec, parts = prop43_decision(*args, **_P43)
        assert dec.word == rules.CONTRADICTED
        assert [k for k, d in parts.items() if d.word == rules.CONTRADICTED] == [name]
        assert ("consequences of L → 0, checked: " in dec.reason) and dec.reason.index(name) > (
            dec.reason.index("consequences") if name in P.CONSEQUENCES_43 else -1)
    # a series still above its bound but falling: not decided, and never contradicted before the final horizon
    dec, parts = prop43_decision(x, L, norm, xs, 1e-3 * xs ** -0.2, **_P43)
    assert dec.word == rules.INCONCLUSIVE and parts["Σ η‖∇L‖²_P⁻¹ < ∞"].fit.crossing > 1e5
    assert prop43_decision(x, plateau, norm, xs, D, final=False, **_P43)[0].word == rules.INCONCLUSIVE


def test_proxy_prop43_supports_separable_and_contradicts_a_non_separable_run():
    """Gaussian N = 10, d = 50 (separable): supported, ‖∇L‖²_P⁻¹/L → 0.773 (a data constant, within the derived bound).
    A wrong run not used to set the rule: Gaussian N = 20, d = 3, data seed 1 (not separable): L settles at 0.666 and
    ‖w‖ at 0.72, contradicted."""
    good = proxy_prop43(_ctx({"n": 10, "d": 50, "lr_decay": 0.5, "data_seeds": [1], "steps": 100000,
                              "checkpoints": 200}, _P43_TOL))
    assert good.holds and not good.inconclusive and good.decisions[rules.SUPPORTED] == 1
    assert np.isclose(good.table[0]["sq_ratio"], 0.773, atol=2e-3) and good.figures["max_bound_ratio"] <= 1
    bad = proxy_prop43(_ctx({"n": 20, "d": 3, "lr_decay": 0.5, "data_seeds": [1], "steps": 30000,
                             "checkpoints": 120}, _P43_TOL))
    assert bad.holds is False and bad.decisions[rules.CONTRADICTED] == 1
    assert bad.table[0]["L → 0"] == rules.CONTRADICTED and np.isclose(bad.figures["max_L"], 0.666, atol=2e-3)


# ------------------------------------------------------------------ Cor 3.2 (cor32_weights)

from ibverify.checks.paper1_laws import cor32_decision, cor32_rows, weight_bounds  # noqa: E402
from ibverify.data import gr  # noqa: E402


def _rows(kmin, kmax, lag, lag1=0.0):
    return [{"epoch": e, "kmin": kmin, "kmax": kmax, "rho": 3.0, "lag": lag, "lag1": lag1, "decay": 0.5}
            for e in (1e4, 1e5)]


def test_cor32_decision_each_edge_decides_alone():
    lo, hi, slack, lag_max = 1.0, 2.0, 0.05, 0.5
    assert cor32_decision(_rows(1.2, 1.5, 0.3), lo, hi, slack, lag_max).word == rules.SUPPORTED
    # lower edge with a small lag: no lag explains κ̃ = 0.8 (the lag-aware edge is √(1 − 0.01)·0.95 = 0.945)
    assert cor32_decision(_rows(0.8, 1.5, 0.01), lo, hi, slack, lag_max).word == rules.CONTRADICTED
    # upper edge alone: 2.3 > 2·1.05/(1 − 0.05)
    assert cor32_decision(_rows(1.2, 2.3, 0.1, 0.05), lo, hi, slack, lag_max).word == rules.CONTRADICTED
    # the same upper excess with a momentum lag ℓ1 = 0.2 (edge 2.1/0.8 = 2.6): not decided
    assert cor32_decision(_rows(1.2, 2.3, 0.4, 0.2), lo, hi, slack, lag_max).word == rules.INCONCLUSIVE
    # a large lag leaves a deficit undecided, with the horizon that would decide it: 1e5·(0.7/0.0975)² epochs
    d = cor32_decision(_rows(0.2, 0.3, 0.7), lo, hi, slack, lag_max)
    assert d.word == rules.INCONCLUSIVE and "5.2e+06 epochs" in d.reason
    # within the lag-aware edge (√(1 − 0.3)·0.95 = 0.795 ≤ 0.85): on track
    assert cor32_decision(_rows(0.85, 1.0, 0.3), lo, hi, slack, lag_max).word == rules.INCONCLUSIVE
    # a negative weight: no lag of positive moments makes one, whatever ℓ
    assert cor32_decision(_rows(-0.1, 1.0, 0.9), lo, hi, slack, lag_max).word == rules.CONTRADICTED
    assert cor32_decision(_rows(-0.01, 1.0, 0.9), lo, hi, slack, lag_max).word == rules.INCONCLUSIVE  # within slack


_COR = {"eps": 0.0, "bias_correction": False, "lr_decay": 0.5}


def test_cor32_lag_is_a_horizon_effect_not_a_contradiction():
    """Inc-Adam, GR N = 3, d = 19 (rng 0), β2 = 0.999: at 1e4 epochs κ̃ = 0.28 < 1 while the lag ℓ = 0.85 (its memory
    part: v still holds the first gradients; the drift part 2ρη/(1 − β2) is 0.74): inconclusive; at 1e6 epochs
    κ̃ = 1.086 ≥ 1 with ℓ = 0.33. Deeper in the start-up freeze the margins stand still (ρ ≈ 0), so only the memory part
    sees the lag: β2 = 0.99946, N = 7 (rng 1018), 1e3 epochs: κ̃ ≈ 5e−6, inconclusive, not contradicted."""
    Z = gr(3, 19, np.random.default_rng(0)).Z
    lo, hi = weight_bounds(3, 0.999)
    short = cor32_rows(Z, {**_COR, "optimizer": "inc-adam", "epochs": 10000}, 0.0, 0.999, 0.1)
    d = cor32_decision(short, lo, hi, 0.05, 0.5)
    assert d.word == rules.INCONCLUSIVE and np.isclose(short[-1]["kmin"], 0.2815, atol=1e-3)
    assert np.isclose(short[-1]["lag"], 0.851, atol=5e-3)
    long = cor32_rows(Z, {**_COR, "optimizer": "inc-adam", "epochs": 1000000}, 0.0, 0.999, 0.1)
    assert np.isclose(long[-1]["kmin"], 1.086, atol=1e-3) and long[-1]["lag"] < 0.34
    assert cor32_decision(long, lo, hi, 0.05, 0.5).word != rules.CONTRADICTED
    Z = gr(7, 16, np.random.default_rng(1018)).Z
    frozen = cor32_rows(Z, {**_COR, "optimizer": "inc-adam", "epochs": 1000}, 0.0, 0.99946, 0.1)
    assert frozen[-1]["kmax"] < 1e-4 and abs(frozen[-1]["rho"]) < 1e-3 and frozen[-1]["lag"] > 0.99
    assert cor32_decision(frozen, *weight_bounds(7, 0.99946), 0.05, 0.5).word == rules.INCONCLUSIVE


def test_cor32_det_adam_is_contradicted_by_evidence_not_lag():
    """Wrong runs not used to set the rule: Det-Adam on GR data (rng 2): (β1, β2) = (0, 0.9): κ̃ down to 0.10 with
    ℓ = 0.06; (0.5, 0.99): κ̃ ≤ 0.43 with ℓ = 0.40: both leave the lag-aware sandwich: contradicted."""
    Z = gr(3, 19, np.random.default_rng(2)).Z
    for b1, b2 in ((0.0, 0.9), (0.5, 0.99)):
        rows = cor32_rows(Z, {**_COR, "optimizer": "det-adam", "epochs": 100000}, b1, b2, 0.1)
        d = cor32_decision(rows, *weight_bounds(3, b2), 0.05, 0.5)
        assert d.word == rules.CONTRADICTED and rows[-1]["lag"] <= 0.5, d.reason
