"""Paper 1's open laws, measured: laws (status "law": a prediction with a tolerance, judged on fresh data per seed,
`fresh_seeds`) and findings (status "beyond").

    gr_offset_law     law: Thm 3.3 at finite β2, the per-support-vector margin offsets (offset_law) within tolerance
                      `offset_max`, and its free parameter, the rate κ per cyclic lag (law 1), by its profile interval
                      (checks.laws: within the offsets' allowance of 1, excluding 1 ± `slope_tol`); also
                      the invariant K = (1 − cos(w, ŵ2))·‖w‖² at the horizon (reported, not
                      predicted), the transient length and the spread Δ of the support margins.
    signum_plateau_law  law: Thm 5.1's β0(m), per dataset and m = N/b the threshold β_c(m) by bisection with the
                      claim's invariant rule (gap·‖w‖∞ settled = converging, a plateau = not); the law
                      1 − β_c(m) = C(data)/m^q (q = `law_exponent`) judged per dataset by the spread of C over m
                      (tolerance `c_spread_max`), and the exponent p of 1 − β_c ∝ m^(−p), one for every dataset, by
                      its profile interval (checks.laws: containing q, excluding q ± `slope_tol`).
    batch_metric_prediction  law: reshuffled mini-batch Adam at batch size b → the fixed point of T with Kim et al.'s
                      M_{N,b}, judged per b by rules.judge_gap on 1 − cos (tolerance `cos_gap_max`).
    fixed_point_multiplicity  finding: Algorithm 3 from many starts.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from ..errors import IbverifyError
from ..claims import CheckContext
from ..strategies import linear as S
from ..strategies.linear import discrimination
from ..recipes import DataRecipe, RunStore, store_of
from ..recipes.paper1 import first_gr, gaussian, listed_run
from ..recipes.settings import vector
from ..evidence import Outcome, Series, beta_text
from ..jsonio import plain
from ..losses import log_loss_terms, logsumexp
from ..optim import OptimizerSpec
from ..oracles import max_margin
from ..theory import fixed_point
from .laws import Fit, common_slope, judge_interval, law_row, origin_slope
from .per_sample import beta2_strategy, signum_curves, signum_decision, signum_horizon, signum_tolerances
from .prop import Example, decide, record_horizons, run_property, sequential
from .rules import (CONTRADICTED, INCONCLUSIVE, SUPPORTED, Decision, judge_gap, settled, tally,
                    value_before)


def fresh_seeds(ctx: CheckContext) -> list[int]:
    """The data seeds of this verification: each of `data_seeds` shifted by fresh_stride·(verify seed), so a law is
    judged at every seed on new draws, none of those it was derived from (fresh_stride 0: the listed seeds)."""
    stride = int(ctx.params.get("fresh_stride", 0))
    return [int(s) + stride * int(ctx.seed) for s in ctx.params["data_seeds"]]


def discriminating_gr(n: int, d: int, seed: int, store: RunStore | None = None) -> DataRecipe:
    """The first GR dataset (n, d) drawn from default_rng(seed) on which ℓ2 and ℓ∞ differ measurably
    (strategies.linear.discrimination), as a data recipe (its Z: `store.data(recipe).Z`)."""
    return first_gr(n, d, seed, lambda Z: discrimination(Z).ok(), store)


def transient_end(x: np.ndarray, K: np.ndarray, tol: float) -> float:
    """First checkpoint after which K stays within a relative `tol` of its final value."""
    off = np.abs(K / K[-1] - 1.0) > tol
    idx = np.flatnonzero(off)
    return float(x[0] if not len(idx) else x[min(idx[-1] + 1, len(x) - 1)])


def offset_law(Z: np.ndarray, support, duals, beta2: float, exact: bool = True) -> tuple[int, np.ndarray]:
    """Thm 3.3's limit at finite β2, per support vector: the margin offsets m_j − m_{j0} (j ∈ `support`, in its
    order) that Inc-Adam (β1 = 0, cyclic order 0, 1, …, N−1, no bias correction) builds on GR data, and j0.

    Derivation [derived]. Late in the run σ_j = σ(−z_j·w) ≈ e^{−m_j}, the non-support samples' gradients vanish
    relative to the support vectors', and η_t → 0 freezes w over an epoch. Step of sample j: w += η σ_j z_j/√v with
    the scalar v = (1 − β2)/(1 − β2^N) Σ_{k<N} β2^k u²_{j−k} (cyclic indices, u_l = σ_l a_l, a_l = |z_l[0]|). Direction
    → ŵ2 = Σ λ_j z_j/‖·‖ forces the per-epoch coefficients c_j = σ_j/√v_j ∝ λ_j (the ℓ2 duals): the weight
    equilibrium. In log weights x_j = ln u_j, the equilibrium c_j/c_{j0} = λ_j/λ_{j0} with c_j = e^{x_j}/(a_j √(Σ_k
    β2^k e^{2x_{j−k}})) (exact=True: solved as it stands, wrap-around and β2^N terms included).
    Small β2 (exact=False, closed form): the undamped support vector j0 = argmax_j λ_j a_j sees a v made of its own
    gradient; every other one, at cyclic lag k_j = (j − j0) mod N after it, has u_j = u_{j0} β2^{k_j/2} e^{y_j}, so
    that the support vectors from j0 to j (in cyclic order) all weigh O(1) in v_j. With ρ_p = λ_j a_j/(λ_{j0} a_{j0})
    < 1 for the p-th support vector after j0 (p = 1, 2, …), S_p = Π_{i≤p} (1 − ρ_i²)^{−1} and e^{2y} = ρ_p² S_p:
        m_j − m_{j0} = ((j − j0) mod N)/2 · ln(1/β2) + ln(a_j/a_{j0}) − ½ ln(ρ_p² S_p)     (error O(β2^{gap}) → 0)
    so the largest spread grows like (max_j k_j / 2)·ln(1/β2): (N − 1)/2 only when a support vector sits just
    before j0 in the cycle."""
    n = Z.shape[0]
    sv = np.asarray(support, dtype=np.int64)
    a = np.abs(Z[:, 0])
    q = np.asarray(duals, float)[sv] * a[sv]
    p0 = int(np.argmax(q))
    j0 = int(sv[p0])
    lag = (sv - j0) % n
    off = np.zeros(len(sv))
    S = 1.0
    for p in np.argsort(lag):
        if p == p0:
            continue
        rho = q[p] / q[p0]
        S /= 1.0 - rho ** 2
        off[p] = lag[p] / 2 * np.log(1 / beta2) + np.log(a[sv[p]] / a[j0]) - 0.5 * np.log(rho ** 2 * S)
    if not exact or len(sv) < 2:
        return j0, off
    from scipy.optimize import fsolve

    others = [p for p in range(len(sv)) if p != p0]
    lam = np.asarray(duals, float)[sv]
    powers = beta2 ** ((sv[:, None] - sv[None, :]) % n)  # β2^{(j − j') mod N}

    def residual(y):
        x = np.zeros(len(sv))
        x[others] = y
        logc = x - np.log(a[sv]) - 0.5 * np.log(powers @ np.exp(2 * x))
        return (logc[others] - logc[p0]) - np.log(lam[others] / lam[p0])

    x0 = np.log(a[sv] / a[j0]) - off  # x_j − x_{j0} = ln(a_j/a_{j0}) − (m_j − m_{j0})
    y = fsolve(residual, x0[others], xtol=1e-13, full_output=True)[0]  # full_output: no warning
    if not np.max(np.abs(residual(y))) <= 1e-9:  # not solved: no prediction
        return j0, np.full(len(sv), np.nan)
    x = np.zeros(len(sv))
    x[others] = y
    return j0, np.log(a[sv] / a[j0]) - x


def predicted_offsets(Z: np.ndarray, support, duals, beta2: float, order: str = "cyclic",
                      exact: bool = True) -> tuple[int, np.ndarray]:
    """offset_law for a run in the cyclic order 0, 1, …, N−1; order "reversed": the law applied as if the cycle ran
    N−1, …, 0 (every cyclic lag k_j counted backwards, N − k_j: a wrong law, the control's)."""
    if order == "cyclic":
        return offset_law(Z, support, duals, beta2, exact)
    if order != "reversed":
        raise IbverifyError(f"law_order must be 'cyclic' or 'reversed', got {order!r}")
    n = Z.shape[0]
    j0, off = offset_law(Z[::-1], n - 1 - np.asarray(support), np.asarray(duals)[::-1], beta2, exact)
    return n - 1 - j0, off


def gr_offset_law(ctx: CheckContext) -> Outcome:
    """Per data seed and β2 (β1 = 0): K = (1 − cos(w, ŵ2))·‖w‖² at the horizon (settled over the last decade,
    the transient's end), the support-margin offsets m_j − m_{j0} against offset_law (exact equilibrium; the small-β2
    closed form at β2 ≤ `small_beta2`), judged by rules.judge_gap on max_j |measured − predicted| (bound: tolerance
    `offset_max`, the last decade; an undecided (dataset, β2) is extended ×10 at most `extensions` times; every one
    must be supported), on the data seeds `fresh_seeds`; `law_order` "reversed": the wrong law of the control
    (predicted_offsets). Also judged: the rate κ of the offsets per cyclic lag in units of ½·ln(1/β2) (law 1), fitted
    through 0 over every support vector j ≠ j0, β2 and dataset (laws.origin_slope), whose 95 % profile interval must
    meet 1 within the allowance the offset tolerance admits in κ (offset_max·Σ|x|/Σx²) and exclude 1 ± `slope_tol`
    (laws.judge_interval); the fit is the table's first row. Reported: per dataset the fitted slope of the spread
    Δ = max − min of the support margins in ln(1/β2) against (N−1)/2 (the second round's one-formula law) and against
    the law's own slope (relative, `slope_tol`)."""
    p = ctx.params
    n, d = int(p["n"]), int(p["d"])
    tol, stol, small = ctx.tol("offset_max"), ctx.tol("slope_tol"), float(p.get("small_beta2", 0.3))
    order = str(p.get("law_order", "cyclic"))
    seeds = fresh_seeds(ctx)
    rows, series, words, laws = [], [], [], []
    kx, ky = [], []   # the lag rate κ's fit: offset − (law − κ-part) = κ·(k_j/2)·ln(1/β2) over every support vector
    store = store_of(ctx)
    for seed in seeds:
        data = discriminating_gr(n, d, int(seed), store)
        Z = store.data(data).Z
        # `cycle`: run the samples in another cyclic order than the law assumes (a wrong run for the law; tests)
        data_run = Z[np.asarray(p["cycle"], dtype=np.int64)] if p.get("cycle") else data
        l2 = max_margin(Z, "l2")
        sv = l2.support
        spreads, preds = [], []
        for b2 in p["beta2s"]:
            ctx.progress(f"seed {seed}, β2 = {b2}")
            spec = OptimizerSpec.from_params(p, name="inc-adam", beta1=0.0, beta2=float(b2))
            j0, pred = predicted_offsets(Z, sv, l2.duals, float(b2), order)
            _, closed = predicted_offsets(Z, sv, l2.duals, float(b2), order, exact=False)
            T, cap, k = int(p["steps"]), int(p["steps"]) * 10 ** int(p.get("extensions", 0)), 0
            while True:   # an undecided (dataset, β2) is extended ×10 up to the tier's cap (as prop.sequential)
                r = store.run(vector(data_run, spec, T, checkpoints=int(p.get("checkpoints", 25)) + 4 * k))
                marg = r.ws @ Z[sv].T
                meas = marg - marg[:, [int(np.flatnonzero(sv == j0)[0])]]
                err = np.abs(meas - pred).max(axis=1)
                dec = (judge_gap(r.checkpoints, err, tol, decades=1.0, final=T * 10 > cap)
                       if np.all(np.isfinite(pred))
                       else Decision(INCONCLUSIVE, "the weight equilibrium was not solved (no prediction)"))
                if dec.word != INCONCLUSIVE or T * 10 > cap or not np.all(np.isfinite(pred)):
                    break
                T, k = T * 10, k + 1
            if np.all(np.isfinite(pred)):
                lag = ((sv - j0) if order == "cyclic" else (j0 - sv)) % n   # the lags the law (or its control) uses
                x = lag / 2 * np.log(1 / float(b2))
                kx += x[lag > 0].tolist()
                ky += (meas[-1] - pred + x)[lag > 0].tolist()
            nw2 = np.sum(r.ws * r.ws, axis=1)
            gap = 1 - r.ws @ l2.direction / np.sqrt(nw2)
            K = gap * nw2
            words.append(dec.word)
            delta = float(np.ptp(marg[-1]))
            spreads.append(delta)
            preds.append(float(np.ptp(np.r_[pred, 0.0])))
            old = (n - 1) / 2 * np.log(1 / float(b2))
            rows.append({"data seed": int(seed), "support vectors": sv.tolist(), "undamped j0": j0,
                         "cyclic lags (j − j0) mod N": ((sv - j0) % n).tolist(), "beta2": float(b2),
                         "K": float(K[-1]),
                         "K settled (last decade, 10%)": settled(r.checkpoints, K, 1.0, p.get("settle_tol", 0.1)),
                         "transient ends at step": transient_end(r.checkpoints, K, p.get("settle_tol", 0.1)),
                         "offsets m_j − m_j0 measured": [round(float(v), 4) for v in meas[-1]],
                         "offsets predicted (equilibrium)": [round(float(v), 4) for v in pred],
                         "offsets predicted (small-β2 closed form)": [round(float(v), 4) for v in closed],
                         "max |measured − predicted|": float(err[-1]),
                         "max |measured − closed form|": float(np.abs(meas[-1] - closed).max()),
                         "closed form judged (β2 ≤ small_beta2)": bool(b2 <= small),
                         "decision": dec.word, "reason": dec.reason, "steps": int(T),
                         "Δ (support margin spread)": delta, "((N−1)/2)·ln(1/β2)": old,
                         "Δ/ln(1/β2)": delta / np.log(1 / float(b2)), "K/Δ²": float(K[-1]) / max(delta, 1e-300) ** 2,
                         "1 − cos at horizon": float(gap[-1])})
            series.append(Series(f"seed {seed}, β2 = {b2:g}", r.checkpoints.tolist(), np.maximum(err, 1e-18).tolist(),
                                 ylabel="max_j |offset − law|", group="per-support-vector offset law"))
            if seed == seeds[0]:
                series.append(Series(f"β2 = {b2:g}", r.checkpoints.tolist(), np.maximum(K, 1e-18).tolist(),
                                     ylabel="K = (1 − cos)·‖w‖²", group="invariant K by β2"))
        lb = np.log(1 / np.asarray(p["beta2s"], float))
        fit = lb >= np.log(1 / small) - 1e-12
        if fit.sum() >= 2:
            s_meas = float(np.polyfit(lb[fit], np.asarray(spreads)[fit], 1)[0])
            s_law = float(np.polyfit(lb[fit], np.asarray(preds)[fit], 1)[0])
        else:
            s_meas = s_law = float("nan")
        laws.append({"data seed": int(seed), "Δ slope in ln(1/β2), measured": s_meas, "law slope": s_law,
                     "(N−1)/2": (n - 1) / 2, "law slope agrees": bool(abs(s_meas / s_law - 1) <= stol),
                     "(N−1)/2 agrees": bool(abs(s_meas / ((n - 1) / 2) - 1) <= stol)})
        for row in rows[-len(spreads):]:
            row.update({k: v for k, v in laws[-1].items() if k != "data seed"})
    first = [r for r in rows if r["data seed"] == seeds[0]]
    series.append(Series("K at the horizon", [r["beta2"] for r in first], [r["K"] for r in first], xlabel="β2",
                         ylabel="K", group="K(β2)"))
    lb = np.log([1 / r["beta2"] for r in rows])
    Ks = np.array([r["K"] for r in rows])
    ok = Ks > 0
    slope = float(np.polyfit(np.log(lb[ok]), np.log(Ks[ok]), 1)[0]) if ok.sum() >= 2 else float("nan")
    offsets_hold, text = tally(words, len(words))
    kappa = origin_slope(kx, ky)
    # the offsets' own tolerance admits |Δκ| ≤ offset_max·Σ|x|/Σx² (every offset off by offset_max, one sign)
    allow = float(tol * np.sum(np.abs(kx)) / np.sum(np.square(kx))) if kx else math.inf
    rate_dec = judge_interval(kappa.lo, kappa.hi, 1.0, stol, allow)
    law = law_row("κ: the offsets' rate in units of ½·ln(1/β2) per cyclic lag", kappa, 1.0, stol, rate_dec,
                  "least squares through 0 of m_j − m_j0 − (law − (k_j/2)·ln(1/β2)) on (k_j/2)·ln(1/β2) over every "
                  f"support vector j ≠ j0, β2 and dataset at the horizon, t profile interval at {kappa.level:.0%}; "
                  "allowance: what the offset tolerance admits in κ", allowance=allow,
                  scope=f"{kappa.points} offsets on {len(seeds)} datasets")
    holds = (False if offsets_hold is False or rate_dec.word == CONTRADICTED else
             None if offsets_hold is None or rate_dec.word == INCONCLUSIVE else True)
    rate = f"κ = {kappa.estimate:.5g} ∈ [{kappa.lo:.5g}, {kappa.hi:.5g}] ({rate_dec.word}: {rate_dec.reason})"
    why = "; ".join(x for x in ((f"offsets: {text}" if offsets_hold is None else ""),
                                (rate if rate_dec.word == INCONCLUSIVE else "")) if x)
    worst = max(r["max |measured − predicted|"] for r in rows)
    small_rows = [r["max |measured − closed form|"] for r in rows if r["closed form judged (β2 ≤ small_beta2)"]]
    fig = (f"per-support-vector offset law{' (reversed lags: the wrong law)' if order == 'reversed' else ''} on data "
           f"seeds {', '.join(map(str, seeds))}: max |measured − predicted| = {worst:.3g} (tolerance {tol:g}; {text}); "
           f"lag rate {rate}"
           + (f", closed form at β2 ≤ {small:g}: {max(small_rows):.3g}" if small_rows else "")
           + "; Δ slope in ln(1/β2): " + ", ".join(
               f"seed {w['data seed']}: {w['Δ slope in ln(1/β2), measured']:.3g} (law {w['law slope']:.3g}, "
               f"(N−1)/2 = {w['(N−1)/2']:g} {'agrees' if w['(N−1)/2 agrees'] else 'FAILS'})" for w in laws)
           + "; K(β2) = " + ", ".join(f"{r['beta2']:g}: {r['K']:.3g}" for r in first))
    figures = {"max_offset_error": worst, "kappa": kappa.estimate, "kappa_lo": kappa.lo, "kappa_hi": kappa.hi,
               "kappa_allowance": allow,
               "K_loglog_slope_in_ln_inv_beta2": slope,
               **{f"K_beta2_{r['beta2']:g}": r["K"] for r in first},
               **{f"delta_slope_data{k}": w["Δ slope in ln(1/β2), measured"] for k, w in enumerate(laws)}}
    if small_rows:
        figures["max_closed_form_error"] = max(small_rows)
    return Outcome(holds=holds, figure=fig, figures=figures, series=series, table=plain([law] + rows),
                   inconclusive=why if holds is None else "",
                   examples=len(rows), decisions={w: words.count(w) for w in set(words)},
                   details="a law beyond the paper: the per-support-vector margin offsets of Thm 3.3's limit at finite "
                           "β2 (offset_law), judged on fresh data; its free parameter, the rate κ per cyclic lag "
                           f"(law 1): {rate}, resolution ±{stol:g} (excludes κ = {1 - stol:g} and {1 + stol:g} when "
                           "supported); K is reported, not predicted; the one-formula Δ = ((N−1)/2)·ln(1/β2) + c is "
                           "reported against the measured slope")


def signum_converges(Z: np.ndarray, p: dict, tol: dict, b: int, beta: float) -> dict:
    """One Signum run at batch size b and momentum β, judged by the claim's rule (per_sample.signum_decision, no
    closeness bound: converging = the gap falls and gap·‖w‖∞ has settled; not = a plateau, or gap·‖w‖∞ rising ≥
    inv_rise× per decade over 2 decades), extended ×10 while inconclusive at most `extensions` times."""
    base = signum_horizon(p["base_steps"], beta)
    cap = base * 10 ** int(p.get("extensions", 0))
    T = base
    while True:
        final = T * 10 > cap
        x, gap, sc = signum_curves(Z, p, b, beta, T)
        dec = signum_decision(x, gap, sc, math.inf, tol, final)
        if dec.word != INCONCLUSIVE or final:
            inv = gap * sc
            return {"word": dec.word, "steps": T, "gap": float(gap[-1]), "inv": float(inv[-1]),
                    "inv ×/decade": float(inv[-1] / value_before(x, inv, 1.0)), "why": dec.reason}
        T *= 10


def bisect_threshold(classify, m: float, c_lo: float, c_hi: float, steps: int) -> dict:
    """β_c at m batches per epoch by bisection in log C, C = m(1 − β) ∈ [c_lo, min(c_hi, m)] (β ≥ 0): classify(β)
    → True (converging) or False (a plateau; an undecided run counts here, so β_c is then an upper estimate).
    Assumes converging at c_lo and not at c_hi (the threshold is sharp, third round of measurements); an end is run only
    when every bisection step went the other way, and the result is then marked censored at that end. Returns the
    bracket C ∈ [lo, hi] (1 − β_c = C/m), censored ('' | 'below' | 'above') and the runs."""
    lo, hi = float(c_lo), min(float(c_hi), float(m))
    runs = []

    def test(c: float) -> bool:
        beta = 1.0 - c / m
        ok = classify(beta)
        runs.append((beta, ok))
        return ok

    for _ in range(int(steps)):
        mid = math.sqrt(lo * hi)
        if test(mid):
            lo = mid
        else:
            hi = mid
    censored = ""
    if lo == float(c_lo) and not test(lo):
        censored = "below"  # even 1 − β = c_lo/m does not converge: β_c > 1 − c_lo/m
    elif hi == min(float(c_hi), float(m)) and test(hi):
        censored = "above"  # converging at the largest C tried: β_c ≤ 1 − hi/m
    return {"lo": lo, "hi": hi, "censored": censored, "runs": runs}


def slope_range(lx: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[float, float]:
    """The least-squares slope of (lx, ly) over every ly with lo ≤ ly ≤ hi (its extremes are at vertices of the box)."""
    slopes = [np.polyfit(lx, np.where(bits, hi, lo), 1)[0]
              for bits in itertools.product((False, True), repeat=len(lx))]
    return float(min(slopes)), float(max(slopes))


def pooled_slope_range(groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """The least-squares slope of y = a_g + b·x, one intercept per group (laws.common_slope), over every y with
    lo ≤ y ≤ hi (groups: (x, lo, hi); the groups with < 2 distinct x drop out, as in common_slope). The slope is
    linear in y, b = Σ w_i y_i with w_i = (x_i − x̄_g)/Sxx, so its extremes take lo where w_i > 0 and hi where
    w_i < 0 (or the reverse). (nan, nan) when no group has 2 distinct x."""
    xs, los, his = [], [], []
    for x, lo, hi in groups:
        x = np.asarray(x, float)
        if len(np.unique(x)) >= 2:
            xs.append(x - x.mean())
            los.append(np.asarray(lo, float))
            his.append(np.asarray(hi, float))
    if not xs:
        return math.nan, math.nan
    x, lo, hi = np.concatenate(xs), np.concatenate(los), np.concatenate(his)
    w = x / float(x @ x)
    return float(np.where(w > 0, w * lo, w * hi).sum()), float(np.where(w > 0, w * hi, w * lo).sum())


def bracketed_interval(fit: Fit, slope_lo: float, slope_hi: float) -> Fit:
    """The exponent's interval that accounts for the bisection brackets: the profile interval of the fit on the
    brackets' midpoints joined to the range of slopes the brackets allow (pooled_slope_range). The midpoints' residuals
    carry the brackets' scatter; what they miss is a bias common to every bracket, which a noiseless exact law shows
    (its midpoint interval can exclude the true exponent, e.g. [0.991, 0.997] against 1) and which the bracket range
    bounds: the true thresholds lie inside their brackets, so their slope lies inside that range."""
    if not (math.isfinite(slope_lo) and math.isfinite(slope_hi)):
        return fit
    return Fit(fit.estimate, min(fit.lo, slope_lo), max(fit.hi, slope_hi), fit.points, fit.dof, fit.level)


def constant_spread(pts: list[dict], q: float, band: float) -> dict:
    """The law 1 − β_c(m) = C/m^q on one dataset's thresholds (pts: m, the bracket C_lo ≤ m(1 − β_c) ≤ C_hi, censored
    '' | 'below' (C ≤ C_lo = c_lo: open below) | 'above' (C ≥ C_hi: open above)): the law's constant
    C_q(m) = m^(q−1)·m(1 − β_c) must be one number per dataset within a factor `band` over every m. Its spread
    max_m C_q / min_m C_q lies between `least` (the brackets' most favourable ends, ≥ 1) and `most` (their least
    favourable ends; ∞ where a bracket is open); `mid` is the spread of the brackets' geometric midpoints (an open
    bracket: its finite end). SUPPORTED when most ≤ band, CONTRADICTED when least > band, else INCONCLUSIVE (the
    brackets are too wide to tell)."""
    lo = np.array([q_["C_lo"] * q_["m"] ** (q - 1) if q_["censored"] != "below" else 0.0 for q_ in pts])
    hi = np.array([q_["C_hi"] * q_["m"] ** (q - 1) if q_["censored"] != "above" else math.inf for q_ in pts])
    mid = np.array([math.sqrt(q_["C_lo"] * q_["C_hi"]) * q_["m"] ** (q - 1) if not q_["censored"] else
                    (q_["C_lo"] if q_["censored"] == "below" else q_["C_hi"]) * q_["m"] ** (q - 1) for q_ in pts])
    least = max(1.0, float(lo.max() / hi.min()))
    most = float(hi.max() / lo.min()) if lo.min() > 0 else math.inf
    spread = float(mid.max() / mid.min())
    if most <= band:
        ms = ", ".join(f"{x['m']:g}" for x in pts)
        dec = Decision(SUPPORTED, f"C·m^{q - 1:g} spread ≤ {most:.3g} ≤ {band:g} over m = {ms}")
    elif least > band:
        dec = Decision(CONTRADICTED, f"C·m^{q - 1:g} spread ≥ {least:.3g} > {band:g} even at the brackets' "
                                     "most favourable ends")
    else:
        dec = Decision(INCONCLUSIVE, f"C·m^{q - 1:g} spread between {least:.3g} and {most:.3g} (band {band:g}): "
                                     "the brackets are too wide to tell")
    return {"decision": dec, "least": least, "most": most, "mid": spread,
            "C": [float(v) for v in mid]}


def signum_plateau_law(ctx: CheckContext) -> Outcome:
    """Thm 5.1's β0(m), measured: per discriminating GR dataset (n, d, data seed from fresh_seeds) and batch size b
    (m = n/b), the threshold β_c(m) by bisection (bisect_threshold) in C = m(1 − β) with the claim's invariant
    criterion (signum_converges). The law [measured in the third round of measurements]: 1 − β_c(m) = C(data)/m^q with
    q = `law_exponent` (1; a control states another), judged per dataset by constant_spread (the constant's spread
    over m within the tolerance `c_spread_max`; every dataset must be supported: rules.tally) and by its exponent: p of
    1 − β_c ∝ m^−p with one intercept per dataset (laws.common_slope on the uncensored bracket midpoints) must have a
    95 % profile interval, joined to the slopes the brackets allow (bracketed_interval: an exact law is never excluded
    by the midpoints' bias), that contains q and excludes q ± `slope_tol` (laws.judge_interval; the spread alone tells
    1/m from 1/m² and nothing finer). Both must hold; the fit is the table's first row (laws.law_row). Reported, not
    judged: p per dataset (≥ 3 uncensored m; its spread over the brackets: slope_range)."""
    p = ctx.params
    tol = signum_tolerances(ctx)
    n = int(p["n"])
    q_law, band = float(p.get("law_exponent", 1.0)), ctx.tol("c_spread_max")
    rows, series, fits, judged_sets = [], [], [], []
    undecided = 0
    for seed in fresh_seeds(ctx):
        Z = store_of(ctx).data(discriminating_gr(n, int(p["d"]), int(seed), store_of(ctx))).Z
        pts = []
        for b in p["b_values"]:
            m = n / int(b)
            judged = []

            def classify(beta: float) -> bool:
                ctx.progress(f"seed {seed}, b = {b} (m = {m:g}), β = {beta:.4g}")
                r = signum_converges(Z, p, tol, int(b), beta)
                judged.append({"data seed": int(seed), "b": int(b), "m": m, "beta": beta, **r})
                return r["word"] == SUPPORTED

            br = bisect_threshold(classify, m, float(p["c_lo"]), float(p["c_hi"]), int(p["bisections"]))
            rows += judged
            undecided += sum(r["word"] == INCONCLUSIVE for r in judged)
            c_mid = math.sqrt(br["lo"] * br["hi"])
            pts.append({"data seed": int(seed), "m": m, "C_lo": br["lo"], "C_hi": br["hi"], "C": c_mid,
                        "1 − β_c": c_mid / m, "β_c": 1 - c_mid / m, "censored": br["censored"]})
            series.append(Series(f"seed {seed}, m = {m:g}", [r["beta"] for r in judged],
                                 [r["inv ×/decade"] for r in judged], xlabel="β", ylabel="gap·‖w‖∞ × per decade",
                                 log_x=False, group=f"bisection, data seed {seed}"))
        cs = constant_spread(pts, q_law, band)
        judged_sets.append({"data seed": int(seed), "decision": cs["decision"].word, "why": cs["decision"].reason,
                            "constant C·m^(q−1) by m": [round(c, 4) for c in cs["C"]],
                            "spread (midpoints)": cs["mid"], "spread ≥": cs["least"], "spread ≤": cs["most"]})
        ok = [q for q in pts if not q["censored"]]
        if len(ok) >= 3:
            lm = np.log([q["m"] for q in ok])
            ly_lo, ly_hi = np.log([q["C_lo"] / q["m"] for q in ok]), np.log([q["C_hi"] / q["m"] for q in ok])
            s_lo, s_hi = slope_range(lm, ly_lo, ly_hi)
            pm = float(-np.polyfit(lm, (ly_lo + ly_hi) / 2, 1)[0])
            fits.append({"data seed": int(seed), "p": pm, "p_min": -s_hi, "p_max": -s_lo, "m used": len(ok)})
        series.append(Series(f"seed {seed}", [q["m"] for q in pts], [q["1 − β_c"] for q in pts], xlabel="m = N/b",
                             ylabel="1 − β_c", group="1 − β_c(m)"))
        for q in pts:
            q["kind"] = "threshold"
        rows += pts
    thresholds = [r for r in rows if r.get("kind") == "threshold"]
    good = [q for q in thresholds if not q["censored"]]
    seeds = sorted({q["data seed"] for q in good})
    # the law's free parameter: one exponent p for every dataset, one constant per dataset (laws.common_slope)
    fit = common_slope([(np.log([q["m"] for q in good if q["data seed"] == s]),
                         np.log([q["1 − β_c"] for q in good if q["data seed"] == s])) for s in seeds])
    b_lo, b_hi = pooled_slope_range([(np.log([q["m"] for q in good if q["data seed"] == s]),
                                      np.log([q["C_lo"] / q["m"] for q in good if q["data seed"] == s]),
                                      np.log([q["C_hi"] / q["m"] for q in good if q["data seed"] == s]))
                                     for s in seeds])
    midpoints = Fit(-fit.estimate, -fit.hi, -fit.lo, fit.points, fit.dof, fit.level)
    p_fit = bracketed_interval(midpoints, -b_hi, -b_lo)
    resolution = ctx.tol("slope_tol")
    exp_dec = judge_interval(p_fit.lo, p_fit.hi, q_law, resolution)
    law = law_row("p in 1 − β_c(m) ∝ m^−p", p_fit, q_law, resolution, exp_dec,
                  f"least squares of ln(1 − β_c) on ln m over the uncensored thresholds (bracket midpoints), one "
                  f"intercept per dataset ({len(seeds)}), t profile interval at {p_fit.level:.0%} "
                  f"[{midpoints.lo:.3g}, {midpoints.hi:.3g}] joined to the slopes the brackets allow "
                  f"[{-b_hi:.3g}, {-b_lo:.3g}]",
                  scope=f"{p_fit.points} thresholds on {len(seeds)} datasets")
    words = [s["decision"] for s in judged_sets]
    spread_holds, text = tally(words, math.ceil(2 * len(words) / 3))
    holds = (False if spread_holds is False or exp_dec.word == CONTRADICTED else
             None if spread_holds is None or exp_dec.word == INCONCLUSIVE else True)
    exponent = (f"exponent p = {p_fit.estimate:.3g} ∈ [{p_fit.lo:.3g}, {p_fit.hi:.3g}] "
                f"({exp_dec.word}: {exp_dec.reason})")
    why = "; ".join(x for x in ((f"constant spread: {text}" if spread_holds is None else ""),
                                (exponent if exp_dec.word == INCONCLUSIVE else "")) if x)
    p_lo = min((f["p_min"] for f in fits), default=float("nan"))
    p_hi = max((f["p_max"] for f in fits), default=float("nan"))
    law_text = f"1 − β_c(m) = C/m{'' if q_law == 1 else f'^{q_law:g}'}"
    fig = (f"{law_text}: {exponent}; C one constant per dataset within ×{band:g}: " + "; ".join(
        f"seed {s['data seed']}: C spread {s['spread (midpoints)']:.3g} ({s['decision']})" for s in judged_sets)
           + f" [{text}]; thresholds: " + "; ".join(
        f"seed {s}: " + ", ".join(f"m={q['m']:g} β_c={q['β_c']:.4g}" + (f" ({q['censored']})" if q["censored"] else "")
                                  for q in thresholds if q["data seed"] == s)
        for s in sorted({q["data seed"] for q in thresholds}))
           + "; p per dataset " + ", ".join(f"{f['p']:.2f}" for f in fits)
           + f" (bracket range {p_lo:.2f}–{p_hi:.2f}); {undecided} undecided runs counted as not converging")
    figures = {"C_spread": max(s["spread (midpoints)"] for s in judged_sets),
               "C_spread_least": max(s["spread ≥"] for s in judged_sets),
               "p_pooled": p_fit.estimate, "p_pooled_lo": p_fit.lo, "p_pooled_hi": p_fit.hi,
               "p_half_width": p_fit.half_width, "p_min": p_lo, "p_max": p_hi,
               "p_midpoints_lo": midpoints.lo, "p_midpoints_hi": midpoints.hi,
               "p_brackets_lo": -b_hi, "p_brackets_hi": -b_lo,
               "undecided_runs": float(undecided), "censored": float(sum(bool(q["censored"]) for q in thresholds)),
               "C_min": min((q["C"] for q in good), default=float("nan")),
               "C_max": max((q["C"] for q in good), default=float("nan"))}
    return Outcome(holds=holds, figure=fig, figures=figures, series=series,
                   table=plain([law] + judged_sets + rows + fits), inconclusive=why if holds is None else "",
                   decisions={w: words.count(w) for w in set(words)}, examples=len(rows) - len(thresholds),
                   details="a law beyond the paper: Thm 5.1 gives no β0(m); measured by bisection with the invariant "
                           "criterion of baek.signum-any-batch-linf (resolution of each β_c: its bracket, carried "
                           f"into the spread of C); the law's exponent: {exponent}, resolution ±{resolution:g} "
                           f"(excludes p = {q_law - resolution:g} and {q_law + resolution:g} when supported); "
                           "per dataset: " + "; ".join(
                               f"seed {s['data seed']}: {s['decision']} ({s['why']})" for s in judged_sets))


# ---------------------------------------------------------------- the fixed point, probed

def distinct(directions: list[np.ndarray], tol: float = 1e-8) -> list[np.ndarray]:
    """Representatives of the directions up to 1 − cos ≤ tol."""
    reps: list[np.ndarray] = []
    for u in directions:
        if not any(1 - u @ r <= tol for r in reps):
            reps.append(u)
    return reps


def fixed_point_multiplicity(ctx: CheckContext) -> Outcome:
    """Algorithm 3 (c ← T(c)) from `starts` random Dirichlet c⁰ (concentrations `concentrations`) plus the
    uniform start, per dataset: the number of distinct limit directions p* (1 − cos ≤ 1e-8), distinct c*
    (‖Δc‖₁ ≤ 1e-6), starts that did not converge, and iterations. Uniqueness of c* is open (spec §8 #3)."""
    p = ctx.params
    rows = []
    store = store_of(ctx)
    sets = [(f"gaussian N={p['n']} d={p['d']} seed={s}", store.data(gaussian(p["n"], p["d"], s)).Z)
            for s in p["data_seeds"]]
    sets += [(f"shifted-diagonal δ={dl}",
              store.data(DataRecipe.generated("shifted-diagonal", a=np.arange(1.0, 7.0), delta=dl)).Z)
             for dl in p.get("deltas", [])]
    for label, Z in sets:
        rng = np.random.default_rng(ctx.seed)
        n = Z.shape[0]
        starts = [np.full(n, 1.0 / n)] + [rng.dirichlet(np.full(n, float(a)))
                                           for a in p["concentrations"] for _ in range(int(p["starts"]))]
        dirs, cs, its, failed = [], [], [], 0
        for c0 in starts:
            try:
                fp = fixed_point.iterate(Z, c0=c0, max_iter=int(p.get("max_iter", 200)))
            except IbverifyError:
                failed += 1
                continue
            dirs.append(fp.direction)
            cs.append(fp.c)
            its.append(fp.iterations)
        reps = distinct(dirs)
        creps: list[np.ndarray] = []
        for c in cs:
            if not any(np.abs(c - r).sum() <= 1e-6 for r in creps):
                creps.append(c)
        rows.append({"dataset": label, "starts": len(starts), "converged": len(dirs), "did not converge": failed,
                     "distinct directions p*": len(reps), "distinct c*": len(creps),
                     "iterations (median, max)": [float(np.median(its)) if its else None, max(its) if its else None]})
    most = max(r["distinct directions p*"] for r in rows)
    fig = (f"{sum(r['starts'] for r in rows)} starts on {len(rows)} datasets: distinct fixed-point directions per "
           f"dataset = {[r['distinct directions p*'] for r in rows]}, distinct c* = "
           f"{[r['distinct c*'] for r in rows]}, non-converged starts = {sum(r['did not converge'] for r in rows)}")
    return Outcome(holds=None, figure=fig, figures={"max_distinct_directions": most,
                                                    "non_converged": sum(r["did not converge"] for r in rows)},
                   series=[Series("distinct p* per dataset", list(range(1, len(rows) + 1)),
                                  [r["distinct directions p*"] for r in rows], xlabel="dataset", ylabel="count",
                                  log_x=False, log_y=False, group="multiplicity")],
                   table=plain(rows), examples=len(rows),
                   details="beyond the paper: Algorithm 3's limit from many starts (uniqueness is not established)")


def batch_metric_prediction(ctx: CheckContext) -> Outcome:
    """Kim et al.'s batch metric M_{N,b} (External) as a law: for each b < N the fixed point of T with M_{N,b}
    (fixed_point.iterate(Z, b=b); `metric_b`: one wrong b for every run, a control's) predicts the limit direction
    of reshuffled mini-batch Adam (β1, β2 near 1, `epochs` epochs, sampling seed = the verify seed) on Gaussian data
    (data seeds from fresh_seeds): per (dataset, b) rules.judge_gap on 1 − cos(run, prediction) over the last decade
    (≤ tolerance `cos_gap_max` and falling: supported; a plateau: contradicted; an undecided b is extended ×10 at
    most `extensions` times); every example must be supported.
    Reported: the predicted and the run's ℓ∞ margins, and whether both increase with b (drift toward ℓ∞)."""
    p = ctx.params
    rows, series, words = [], [], []
    store = store_of(ctx)
    bound = ctx.tol("cos_gap_max")
    seeds = fresh_seeds(ctx)
    for s in seeds:
        data = gaussian(p["n"], p["d"], s)
        Z = store.data(data).Z
        pm, rm = [], []
        for b in p["b_values"]:
            pred = fixed_point.iterate(Z, b=int(p.get("metric_b", b))).direction
            r = dict(p.get("run", {}), optimizer="adam", batch_size=int(b), order=p.get("order", "reshuffle"))
            E, cap, k = int(p["epochs"]), int(p["epochs"]) * 10 ** int(p.get("extensions", 0)), 0
            while True:   # an undecided b is extended ×10 up to the tier's cap (as prop.sequential)
                out = store.run(listed_run(data, dict(r, epochs=E), Z.shape[0], ctx.seed,
                                           checkpoints=int(p.get("checkpoints", 12)) + 5 * k))
                cos = out.ws @ pred / np.linalg.norm(out.ws, axis=1)
                gap = np.maximum(1 - cos, 0.0)
                dec = judge_gap(out.checkpoints, gap, bound, decades=float(p.get("decades", 1.0)),
                                final=E * 10 > cap)
                if dec.word != INCONCLUSIVE or E * 10 > cap:
                    break
                E, k = E * 10, k + 1
            words.append(dec.word)
            pm.append(float(np.min(Z @ pred) / np.abs(pred).max()))
            rm.append(float(np.min(Z @ out.w) / np.abs(out.w).max()))
            rows.append({"data seed": int(s), "b": int(b), "metric b": int(p.get("metric_b", b)),
                         "cos(run, M_N,b fixed point)": float(cos[-1]), "1 − cos": float(gap[-1]),
                         "1 − cos one decade earlier": float(value_before(out.checkpoints, gap, 1.0) or math.nan),
                         "decision": dec.word, "reason": dec.reason, "epochs": E,
                         "cos at the middle checkpoint (≈ √T steps)": float(cos[len(cos) // 2]),
                         "predicted ℓ∞ margin": pm[-1], "run ℓ∞ margin": rm[-1]})
            series.append(Series(f"seed {s}, b = {b}", out.checkpoints.tolist(), np.maximum(1 - cos, 1e-17).tolist(),
                                 ylabel="1 − cos(w, M_N,b prediction)", group=f"data seed {s}"))
        for row in rows[-len(pm):]:
            row["predicted margins increase with b"] = bool(np.all(np.diff(pm) > 0))
            row["run margins increase with b"] = bool(np.all(np.diff(rm) > 0))
    cmin = min(r["cos(run, M_N,b fixed point)"] for r in rows)
    holds, text = tally(words, len(words))
    metric = f"M_{{N,{p['metric_b']}}} (the wrong metric) for every b" if "metric_b" in p else "M_{N,b}"
    fig = (f"1 − cos(reshuffled mini-batch Adam, fixed point of {metric}) on data seeds "
           f"{', '.join(map(str, seeds))}: " + "; ".join(
               f"seed {r['data seed']} b={r['b']}: {r['1 − cos']:.2g} (was {r['1 − cos one decade earlier']:.2g}, "
               f"{r['decision']})" for r in rows)
           + f" [tolerance {bound:g}, falling; {text}]; ℓ∞ margins increase with b: predicted "
             f"{rows[0]['predicted margins increase with b']}, runs {rows[0]['run margins increase with b']}")
    return Outcome(holds=holds, figure=fig, figures={"max_cos_gap": max(r["1 − cos"] for r in rows),
                                                     "min_cos_prediction": cmin},
                   series=series, table=plain(rows), examples=len(rows),
                   inconclusive=text if holds is None else "", decisions={w: words.count(w) for w in set(words)},
                   details="a law beyond the paper: M_{N,b} is Kim et al.'s (External), not Baek et al.'s; judged on "
                           "fresh Gaussian data per seed")


# ---------------------------------------------------------------- Prop 4.3 and Assumption 4.4 along AdamProxy

def proxy_quantities(Z: np.ndarray, ws: np.ndarray) -> dict[str, np.ndarray]:
    """Along AdamProxy iterates, in the log domain (σ_i = e^{ls_i}, ls = −logaddexp(0, z·w), shifted by its
    max M): L = (1/N) Σ logaddexp(0, −z_i·w); ∇L = −(1/N) Σ σ_i z_i; P = diag(sqrt(Σ_i (σ_i z_i)²));
        log ‖∇L‖_{P⁻¹} = M/2 + ½ log(g̃ᵀ P̃⁻¹ g̃) − log N   (g̃, P̃ with σ̃ = e^{ls − M}).
    log L = logsumexp(log ℓ(z_i·w)) − log N, finite past the underflow of L itself.
    Returns L, ‖∇L‖_{P⁻¹}, their ratio, ‖∇L‖²_{P⁻¹}/L and ‖w‖ (the ratios from logs, exact where L underflows)."""
    n = Z.shape[0]
    logL, logG = [], []
    for w in ws:
        m = Z @ w
        ls = -np.logaddexp(0.0, m)
        M = ls.max()
        s = np.exp(ls - M)
        g = s @ Z
        P = np.sqrt((s[:, None] ** 2 * Z ** 2).sum(axis=0))
        ok = P > 0
        logG.append(M / 2 + 0.5 * np.log(g[ok] @ (g[ok] / P[ok])) - np.log(n))
        logL.append(logsumexp(log_loss_terms(m, "logistic")) - np.log(n))
    lL, lG = np.array(logL), np.array(logG)
    return {"L": np.exp(lL), "grad_norm": np.exp(lG), "ratio": np.exp(lG - lL), "sq_ratio": np.exp(2 * lG - lL),
            "norm": np.linalg.norm(ws, axis=1)}


def cauchy_series(x: np.ndarray, ws: np.ndarray, vector: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Angle between w_T and w_{T/10} (radians) at every checkpoint T that has one ≥ one decade earlier;
    with vector=True the relative distance ‖w_T − w_{T/10}‖/‖w_T‖ instead (convergence of the vector)."""
    xs, ys = [], []
    for k, T in enumerate(x):
        early = np.flatnonzero(x <= T / 10 * (1 + 1e-12))
        if not len(early):
            continue
        a, b = ws[k], ws[early[-1]]
        if vector:
            ys.append(float(np.linalg.norm(a - b) / np.linalg.norm(a)))
        else:
            c = float(np.clip(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), -1.0, 1.0))
            ys.append(float(np.arccos(c)) if c < 1 - 1e-15 else float(np.sqrt(max(2 * (1 - c), 0.0))))
        xs.append(float(T))
    return np.array(xs), np.array(ys)


def proxy_optimizes(ctx: CheckContext) -> Outcome:
    """AdamProxy runs (η_t = lr (t+1)^(−lr_decay)) on Gaussian data, a Cauchy criterion judged three-valued by
    rules.judge_gap over the last two decades (≤ tolerance `max_value` at the horizon and falling by trend_drop:
    supported; a stable plateau at the largest horizon: contradicted; else extended ×10 at most `extensions` times):
        cauchy_angle    ∠(w_T, w_{T/10}) → 0 (Assumption 4.4)
        cauchy_vector   ‖w_T − w_{T/10}‖/‖w_T‖ → 0 (control: the iterate itself diverges, a plateau)."""
    p = ctx.params
    q = p["quantity"]
    drop, vmax = ctx.tol("trend_drop"), ctx.tol("max_value")
    rows, series, words = [], [], []
    steps = int(p["steps"])
    store = store_of(ctx)
    for s in p["data_seeds"]:
        data = gaussian(p["n"], p["d"], s)
        spec = OptimizerSpec.from_params(p, name="adam-proxy")
        seen = {}

        def judge_at(T: int, final: bool, data=data, spec=spec, seen=seen) -> Example:
            r = store.run(vector(data, spec, T, checkpoints=int(p.get("checkpoints", 25))))
            x, y = cauchy_series(r.checkpoints, r.ws, vector=q == "cauchy_vector")
            d = judge_gap(x, y, vmax, decades=2.0, min_drop=drop, final=final)
            seen.update(r=r, x=x, y=y)
            return Example(d.word != CONTRADICTED, {}, reason=d.reason, decision=d.word)

        e = sequential(judge_at, steps, steps * 10 ** int(p.get("extensions", 1)), first=p.get("first_horizon"))
        record_horizons(ctx, [e])
        r, x, y = seen["r"], seen["x"], seen["y"]
        words.append(e.word)
        rows.append({"data seed": int(s), "steps": int(r.horizon), f"{q} at horizon": float(y[-1]),
                     f"{q} one decade earlier": float(y[x <= x[-1] / 10 * (1 + 1e-12)][-1]) if len(x) > 1 else None,
                     "decision": e.word, "why": e.reason, "‖w‖": float(np.linalg.norm(r.w))})
        series.append(Series(f"seed {s}: {q}", x.tolist(), np.maximum(y, 1e-300).tolist(), ylabel=q, group=q))
    verdict, text = tally(words, len(words))
    fig = (f"{q}: " + ", ".join(f"seed {r['data seed']}: {r[f'{q} at horizon']:.3g} "
                                f"(was {r[f'{q} one decade earlier']:.3g}), {r['decision']}" for r in rows)
           + f"; supported: ≤ {vmax:g} and falling ≥ {drop:.0%}/decade")
    return Outcome(holds=verdict is True, inconclusive=text if verdict is None else "",
                   decisions={w: words.count(w) for w in set(words)}, figure=fig,
                   figures={f"max_{q}": max(r[f"{q} at horizon"] for r in rows)},
                   series=series, table=plain(rows), examples=len(rows),
                   details="; ".join(f"seed {r['data seed']}: {r['decision']} ({r['why']})" for r in rows))


def decade_sums(x: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Σ_{T/10 < t ≤ T} f_t at every checkpoint T that has one ≥ a decade earlier, from f at log-spaced checkpoints x:
    between neighbouring checkpoints f is taken as a power law through its two values (∫ of a power-law segment;
    where either value is 0 the segment counts as its trapezoid), and the steps before the first checkpoint as
    x[0]·f[0]. Used for the partial sums of a series that must converge: the sum over the last decade must → 0."""
    xa, fa = np.asarray(x, float), np.asarray(f, float)
    seg = np.zeros(len(xa))
    for k in range(1, len(xa)):
        a, b, r = fa[k - 1], fa[k], xa[k] / xa[k - 1]
        if a > 0 and b > 0:
            q = np.log(b / a) / np.log(r) + 1.0
            seg[k] = a * xa[k - 1] * (np.log(r) if abs(q) < 1e-12 else np.expm1(q * np.log(r)) / q)
        else:
            seg[k] = 0.5 * (a + b) * (xa[k] - xa[k - 1])
    S = xa[0] * fa[0] + np.cumsum(seg)
    xs, ds = [], []
    for k, T in enumerate(xa):
        early = np.flatnonzero(xa <= T / 10 * (1 + 1e-12))
        if len(early):
            xs.append(float(T))
            ds.append(float(S[k] - S[early[-1]]))
    return np.array(xs), np.array(ds)


CONSEQUENCES_43 = ("‖w‖ → ∞", "Σ η‖∇L‖²_P⁻¹ < ∞")   # follow from L → 0 on a run: checked, not evidence


def prop43_decision(x, L, norm, xs, D, *, loss_bound: float, inv_norm_bound: float, sum_bound: float,
                    final: bool = True) -> tuple[Decision, dict[str, Decision]]:
    """Prop 4.3 on one run, three quantities each judged by rules.judge_gap (a quantity that must → 0):
    L → 0 (the evidence); 1/‖w‖ → 0 and the decade sums D(T) = Σ_{T/10<t≤T} η_t ‖∇L‖²_{P⁻¹} → 0 (the proof's
    summability, a Cauchy criterion for Σ η_t ‖∇L‖²_{P⁻¹} < ∞), which are consequences: L → 0 forces every margin,
    hence ‖w‖, to ∞, and a last-decade sum is at most the loss decrease over that decade (descent lemma), so on a
    run neither can fail while L → 0 holds. They are checked (a failing consequence contradicts: the run or the
    derivation is wrong) and reported as consequences, never as evidence of their own. Combined by rules.tally:
    contradicted when any is, supported when all are, else inconclusive."""
    parts = {"L → 0": judge_gap(x, L, loss_bound, final=final),
             "‖w‖ → ∞": judge_gap(x, 1.0 / np.asarray(norm, float), inv_norm_bound, final=final),
             "Σ η‖∇L‖²_P⁻¹ < ∞": judge_gap(xs, D, sum_bound, final=final)}
    verdict, _ = tally([d.word for d in parts.values()], len(parts))
    word = {True: SUPPORTED, False: CONTRADICTED, None: INCONCLUSIVE}[verdict]
    ev = "; ".join(f"{k}: {d.word} ({d.reason})" for k, d in parts.items() if k not in CONSEQUENCES_43)
    cons = "; ".join(f"{k}: {d.word} ({d.reason})" for k, d in parts.items() if k in CONSEQUENCES_43)
    return Decision(word, f"evidence: {ev} | consequences of L → 0, checked: {cons}"), parts


def proxy_prop43(ctx: CheckContext) -> Outcome:
    """Prop 4.3 [reconstructed] along AdamProxy runs (η_t = lr (t+1)^(−lr_decay)) on Gaussian data, per data seed:
    prop43_decision over `checkpoints` log-spaced checkpoints (L, ‖w‖ and ‖∇L‖²_{P⁻¹} from proxy_quantities, in the
    log domain). The gradient term ‖∇L‖_{P⁻¹} → 0 is not judged apart: ‖∇L‖²_{P⁻¹} ≤ (maxᵢ‖zᵢ‖₁/√N)·L [derived]
    (Cauchy–Schwarz with σ_i ≤ ℓ_i), so it follows from L → 0; the bound's ratio is reported (≤ 1 everywhere).
    `reflect`: the data with every sample's reflection −z_i/2 appended (never separable: the control)."""
    p = ctx.params
    bounds = {"loss_bound": ctx.tol("max_loss"), "inv_norm_bound": ctx.tol("max_inv_norm"),
              "sum_bound": ctx.tol("max_decade_sum")}
    examples, series = [], []
    store = store_of(ctx)
    for s in p["data_seeds"]:
        data = gaussian(p["n"], p["d"], s)
        Z = store.data(data).Z
        if p.get("reflect"):
            Z = np.vstack([Z, -Z / 2])
            data = DataRecipe.of_arrays(Z)
        spec = OptimizerSpec.from_params(p, name="adam-proxy")
        res = spec.resolved(Z.shape[0])
        r = store.run(vector(data, spec, int(p["steps"]), checkpoints=int(p.get("checkpoints", 200))))
        x = r.checkpoints.astype(float)
        Q = proxy_quantities(Z, r.ws)
        G = Q["grad_norm"] ** 2
        eta = float(res.lr) * (x + 1.0) ** (-float(res.lr_decay))
        xs, D = decade_sums(x, eta * G)
        dec, parts = prop43_decision(x, Q["L"], Q["norm"], xs, D, **bounds)
        C = float(np.abs(Z).sum(axis=1).max() / np.sqrt(Z.shape[0]))
        with np.errstate(divide="ignore", invalid="ignore"):
            bound_ratio = float(np.nanmax(Q["sq_ratio"] / C))
        figures = {"L": float(Q["L"][-1]), "norm": float(Q["norm"][-1]), "decade_sum": float(D[-1]) if len(D) else
                   float("nan"), "grad_norm": float(Q["grad_norm"][-1]), "sq_ratio": float(Q["sq_ratio"][-1]),
                   "bound_ratio_max": bound_ratio, "steps": float(r.horizon)}
        examples.append(Example(True, figures, {}, dec.reason, f"data seed {s} (N = {Z.shape[0]}"
                                + (", reflected: not separable)" if p.get("reflect") else ")"),
                                {"data seed": int(s)}, decision=dec.word, decided_at=int(r.horizon)))
        examples[-1].inputs.update({k: d.word for k, d in parts.items()})
        series += [Series(f"seed {s}: L", x.tolist(), np.maximum(Q["L"], 1e-300).tolist(), ylabel="L", group="L"),
                   Series(f"seed {s}: 1/‖w‖", x.tolist(), (1 / Q["norm"]).tolist(), ylabel="1/‖w‖", group="1/‖w‖"),
                   Series(f"seed {s}: Σ over the last decade", xs.tolist(), np.maximum(D, 1e-300).tolist(),
                          ylabel="Σ_{T/10<t≤T} η_t ‖∇L‖²_P⁻¹", group="decade sums of η‖∇L‖²_P⁻¹"),
                   Series(f"seed {s}: ‖∇L‖²_P⁻¹ / L", x.tolist(), Q["sq_ratio"].tolist(), ylabel="‖∇L‖²_P⁻¹ / L",
                          group="squared ratio (a data constant, ≤ maxᵢ‖zᵢ‖₁/√N)")]
    record_horizons(ctx, examples)
    verdict, text, counts = decide(examples, p.get("min_supported"))
    fig = ("; ".join(f"{e.description}: {e.word} (L {e.figures['L']:.3g}, ‖w‖ {e.figures['norm']:.3g}, last-decade Σ "
                     f"{e.figures['decade_sum']:.3g}, ‖∇L‖²_P⁻¹/L {e.figures['sq_ratio']:.3g})" for e in examples)
           + f" [{text}]")
    return Outcome(holds=verdict is True, figure=fig, inconclusive="" if verdict is not None else text,
                   decisions=counts,
                   figures={"max_L": max(e.figures["L"] for e in examples),
                            "max_decade_sum": max(e.figures["decade_sum"] for e in examples),
                            "min_norm": min(e.figures["norm"] for e in examples),
                            "max_bound_ratio": max(e.figures["bound_ratio_max"] for e in examples)},
                   series=series, examples=len(examples),
                   table=[{"example": e.description, "decision": e.word, **e.inputs, **e.figures, "reason": e.reason}
                          for e in examples],
                   details="; ".join(f"{e.description}: {e.reason}" for e in examples))


# ---------------------------------------------------------------- Cor 3.2: per-sample weights sandwiched

def weight_bounds(n: int, beta2: float) -> tuple[float, float]:
    """Cor 3.2's sandwich [derived] for κ̃_j = κ_j · max_l σ_l a_l (spec §4.3, κ_j = C_inc Σ_i β1^((i−j) mod N)/D_i):
    D_i ≤ max(σa)·sqrt((1 − β2^N)/(1 − β2)) gives κ̃_j ≥ 1; D_i ≥ max(σa)·β2^((N−1)/2) gives
    κ̃_j ≤ sqrt((1 − β2^N)/(1 − β2)) / β2^((N−1)/2). Finite only for β2 > 0."""
    return 1.0, float(np.sqrt((1 - beta2 ** n) / (1 - beta2)) / beta2 ** ((n - 1) / 2))


def realized_weights(Z: np.ndarray, w0: np.ndarray, w1: np.ndarray, eta: float,
                     significance: float = 0.1) -> np.ndarray:
    """The epoch displacement w1 − w0 = Σ_j c_j z_j solved for c (Z has full row rank), and
    κ̃_j = c_j / (η σ_j) · max_l σ_l a_l in the log domain (σ_j = σ(−z_j·w0), a_l = |z_l[0]|), for the
    samples whose loss weight σ_j a_j is ≥ `significance` × the largest (for the others c_j is below the
    resolution of the vanishing error ε_r, which 1/σ_j would amplify)."""
    c = np.linalg.lstsq(Z.T, w1 - w0, rcond=None)[0]
    ls = -np.logaddexp(0.0, Z @ w0)
    la = np.log(np.abs(Z[:, 0]))
    rel = ls + la - (ls + la).max()
    keep = rel >= np.log(significance)
    return c[keep] / eta * np.exp((ls + la).max() - ls[keep])


def log_grad_size(Z: np.ndarray, w: np.ndarray) -> float:
    """ln max_l σ(−z_l·w) a_l (a_l = |z_l[0]|): the log of the largest per-sample gradient coordinate on GR data."""
    return float(np.max(-np.logaddexp(0.0, Z @ w) + np.log(np.abs(Z[:, 0]))))


def cor32_lag(lu: list[float], steps: list[int], eta_sum: float, eta: float, beta1: float, beta2: float,
              per_epoch: int) -> tuple[float, float, float]:
    """The lag of Adam's moments behind the current gradients, from the run itself [derived]; lu[k] = log_grad_size
    at step steps[k] (steps[0] = 0: w = 0), the last entry the current one, the one before it the previous measured
    epoch (`eta_sum` = Σ η_t between them). Two parts, the larger counts:
      drift   u = max_l σ_l a_l decays like e^{−ρ Σ η} (ρ = −Δ ln u / Σ η); an EMA with factor β of a quantity decaying
              by e^{−2ρη} per step overestimates it by 1/(1 − ℓ), ℓ = 2ρη/(1 − β2) for v (κ̃ realized × √(1 − ℓ)),
              ℓ1 = ρη/(1 − β1) for m (× 1/(1 − ℓ1));
      memory  v_t ≥ (1 − β2) β2^{t−s} u_s² for every earlier step s, against v ≈ (1 − β2) m u_t²/(1 − β2^m) at most
              for the current gradients (m = per_epoch samples per epoch): Ψ = max_s β2^{t−s} (u_s/u_t)² (1 − β2^m)/m
              > 1 caps
              κ̃ at ≈ Ψ^{−1/2}, i.e. ℓ ≥ 1 − 1/Ψ (without bias correction v keeps the first gradients: the start-up
              freeze, in which the margins, and so ρ, stand still).
    Returns (ρ, ℓ, ℓ1)."""
    rho = -(lu[-1] - lu[-2]) / eta_sum
    t = steps[-1]
    log_psi = max((t - s) * np.log(beta2) + 2 * (u - lu[-1]) for s, u in zip(steps[:-1], lu[:-1], strict=True))
    log_psi += np.log1p(-beta2 ** per_epoch) - np.log(per_epoch)
    memory = -np.expm1(-log_psi) if log_psi > 0 else 0.0
    return rho, max(2 * rho * eta / (1 - beta2), memory), rho * eta / (1 - beta1) if beta1 < 1 else float("inf")


def cor32_decision(rows: list[dict], lo: float, hi: float, slack: float, lag_max: float,
                   lag_decide: float | None = None) -> Decision:
    """Cor 3.2 on one run from its measured epochs (rows with epoch, kmin, kmax, lag ℓ, lag1 ℓ1; the last two judged):
    SUPPORTED when both lie in the sandwich [lo·(1 − slack), hi·(1 + slack)]; CONTRADICTED when both leave the lag-aware
    sandwich [lo·√(1 − ℓ)·(1 − slack), hi·(1 + slack)/(1 − ℓ1)] (no lag of the moments explains them) while the last
    ℓ ≤ lag_max, or hold a weight < −slack·lo (whatever ℓ: lagging positive moments give positive weights);
    INCONCLUSIVE otherwise, with the epoch at which ℓ ∝ η_t would fall to `lag_decide` (default 1 − (1 − slack)²,
    where the plain sandwich's slack covers the lag)."""
    last = rows[-2:]
    plain = [r["kmin"] >= lo * (1 - slack) and r["kmax"] <= hi * (1 + slack) for r in last]
    if all(plain):
        return Decision(SUPPORTED, f"κ̃ ∈ [{min(r['kmin'] for r in last):.4g}, {max(r['kmax'] for r in last):.4g}] "
                                   f"⊂ [{lo:g}, {hi:.4g}] ± {slack:g}")

    def leaves(r):
        low = lo * np.sqrt(max(0.0, 1.0 - r["lag"])) * (1 - slack) if np.isfinite(r["lag"]) else 0.0
        high = hi * (1 + slack) / (1 - r["lag1"]) if r["lag1"] < 1 else np.inf
        return r["kmin"] < low or r["kmax"] > high

    ell = last[-1]["lag"]
    head = (f"κ̃ ∈ [{last[-1]['kmin']:.4g}, {last[-1]['kmax']:.4g}] at epoch {last[-1]['epoch']:.3g}, "
            f"lag ℓ = {ell:.3g} (ρ = {last[-1]['rho']:.3g})")
    if all(r["kmin"] < -slack * lo for r in last):
        return Decision(CONTRADICTED, head + ": a negative weight (beyond the slack) at the last two epochs, which no "
                                             "lag of positively weighted moments produces")
    if all(leaves(r) for r in last) and np.isfinite(ell) and ell <= lag_max:
        return Decision(CONTRADICTED, head + f": leaves the lag-aware sandwich at the last two epochs "
                                             f"(ℓ ≤ {lag_max:g})")
    target = 1 - (1 - slack) ** 2 if lag_decide is None else lag_decide
    if np.isfinite(ell) and ell > target and last[-1]["rho"] > 0:
        when = last[-1]["epoch"] * (ell / target) ** (1 / last[-1]["decay"])
        more = (f"; ℓ reaches {target:.3g} at ≈ {when:.2g} epochs if it falls like η_t (rough: ρ still grows while "
                f"the moments lag)")
    else:
        more = ""
    why = "within the lag-aware sandwich, on track" if not any(leaves(r) for r in last) else \
        f"the lag ℓ > {lag_max:g} can explain it"
    return Decision(INCONCLUSIVE, head + f": outside [{lo:g}, {hi:.4g}] ± {slack:g}, {why}{more}")


def cor32_rows(Z: np.ndarray, p: dict, b1: float, b2: float, significance: float,
               store: RunStore | None = None) -> list[dict]:
    """Run p["optimizer"] (β1, β2; lr, lr_decay, convention from p) for p["epochs"] epochs and measure, at p["points"]
    log-spaced epochs r from 10: the realized κ̃ range (realized_weights over epoch r) and the lag (cor32_lag over the
    interval from the previous measured epoch). One epoch = N steps for Inc-Adam, one step otherwise."""
    n = Z.shape[0]
    spec = OptimizerSpec.from_params(p, beta1=b1, beta2=b2)
    lr, decay = float(p.get("lr", 0.1)), float(p.get("lr_decay", 0.5))
    per_epoch = n // spec.resolved(n).batch_size   # steps per epoch: N at batch size 1, 1 full batch
    R = np.unique(np.geomspace(10, int(p["epochs"]), int(p.get("points", 8))).astype(np.int64))
    cps = np.unique(np.r_[R * per_epoch, (R + 1) * per_epoch])
    r = (store or RunStore.process()).run(vector(Z, spec, int(cps[-1]), checkpoints=cps))
    W = dict(zip(r.checkpoints.tolist(), r.ws, strict=False))
    rows = []
    steps, lu = [0], [log_grad_size(Z, np.zeros(Z.shape[1]))]
    for k, ep in enumerate(R):
        t = int(ep * per_epoch)
        eta = lr * (t + 1.0) ** (-decay)
        kap = realized_weights(Z, W[t], W[int((ep + 1) * per_epoch)], eta, significance)
        steps.append(t)
        lu.append(log_grad_size(Z, W[t]))
        rho = ell = ell1 = float("nan")
        if k:
            t0 = int(R[k - 1] * per_epoch)
            eta_sum = lr * (((t + 1.0) ** (1 - decay) - (t0 + 1.0) ** (1 - decay)) / (1 - decay)
                            if decay != 1 else np.log((t + 1.0) / (t0 + 1.0)))
            rho, ell, ell1 = cor32_lag(lu, steps, eta_sum, eta, b1, b2, per_epoch)
        rows.append({"epoch": int(ep), "kmin": float(kap.min()), "kmax": float(kap.max()), "rho": rho,
                     "lag": ell, "lag1": ell1, "decay": decay})
    return rows


def cor32_weights(ctx: CheckContext) -> Outcome:
    """Along runs of `optimizer` on GR data with d ≥ N (so the z_j are independent), at R log-spaced epochs:
    the realized normalized weights κ̃_j(r) (realized_weights) of every sample, judged by cor32_decision at the last
    two measured epochs against the sandwich [lower, upper] (weight_bounds, tol = tolerance `slack` for the vanishing
    ε_r) made lag-aware by the moments' lag ℓ (cor32_lag; tolerance `lag_max`: above it a deficit is left
    undecided). The control runs Det-Adam: its displacement is sign-like, not a positively weighted gradient step,
    and leaves the sandwich (negative or near-zero weights) where no lag explains it."""
    p = ctx.params
    slack, lag_max = ctx.tol("slack"), ctx.tol("lag_max")
    strat = st.tuples(S.data("gr", n=st.integers(*p["n"]), d=st.integers(*p["d"])),
                      S.betas(beta2=beta2_strategy(*p["beta2_range"], p.get("beta2_scale", "linear"))))

    def evaluate(ex) -> Example:
        cert, (b1, b2) = ex
        Z = cert.dataset.Z
        n, d = Z.shape
        assume(np.linalg.matrix_rank(Z) == n)  # the decomposition w1 − w0 = Σ c_j z_j must be unique
        rows = cor32_rows(Z, p, b1, b2, ctx.tol("significance"), store_of(ctx))
        lo, hi = weight_bounds(n, b2)
        dec = cor32_decision(rows, lo, hi, slack, lag_max)
        late = rows[-int(p.get("late", 3)):]
        kmin, kmax = min(x["kmin"] for x in late), max(x["kmax"] for x in late)
        return Example(True, {"kmin": kmin, "kmax": kmax, "upper": hi, "lag": rows[-1]["lag"],
                              "rho": rows[-1]["rho"]},
                       {"min κ̃": ([x["epoch"] for x in rows], [x["kmin"] for x in rows]),
                        "max κ̃": ([x["epoch"] for x in rows], [x["kmax"] for x in rows]),
                        "lag ℓ": ([x["epoch"] for x in rows[1:]], [x["lag"] for x in rows[1:]])},
                       dec.reason, f"n={n} d={Z.shape[1]} β1={beta_text(b1)} β2={beta_text(b2)}",
                       {"data": repr(cert), "beta1": b1, "beta2": b2}, decision=dec.word,
                       decided_at=rows[-1]["epoch"] if dec.decided else None)

    res = run_property(ctx, strat, evaluate)
    exs = res.examples
    fig = (f"late κ̃ range over {len(exs)} datasets: [{min(e.figures['kmin'] for e in exs):.4g}, "
           f"{max(e.figures['kmax'] for e in exs):.4g}] (bounds [1, U(β2, N)], U ≥ "
           f"{min(e.figures['upper'] for e in exs):.3g}); lag ℓ at the horizon ≤ "
           f"{max(e.figures['lag'] for e in exs):.3g}; "
           + ", ".join(f"{res.counts.get(w, 0)} {w}" for w in (SUPPORTED, CONTRADICTED, INCONCLUSIVE)))
    if res.failing:
        fig = f"counterexample: {res.failing.reason} ({res.failing.description})"
    undecided = [e for e in exs if e.word == INCONCLUSIVE]
    return Outcome(holds=res.holds, figure=fig, inconclusive=res.undecided, decisions=res.counts,
                   figures={"min_kappa": min(e.figures["kmin"] for e in exs),
                            "max_lag": max(e.figures["lag"] for e in exs)},
                   series=[Series(f"{e.description}: {k}", *c, xlabel="epoch r", ylabel="κ̃_j or ℓ",
                                  group=e.description) for e in exs[:4] for k, c in e.curves.items()],
                   table=[{"example": e.description, "decision": e.word, "min κ̃ (late)": e.figures["kmin"],
                           "max κ̃ (late)": e.figures["kmax"], "upper bound": e.figures["upper"],
                           "lag ℓ at the horizon": e.figures["lag"], "ρ": e.figures["rho"], "reason": e.reason}
                          for e in exs],
                   examples=len(exs),
                   details=(res.failing.reason if res.failing else
                            "; ".join(f"{e.description}: {e.reason}" for e in undecided)),
                   counterexample=(dict(res.failing.inputs, reason=res.failing.reason) if res.failing else None))
