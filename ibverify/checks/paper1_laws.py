"""Paper 1's open laws, measured (beyond claims: findings, no pass/fail of the paper).

    gr_offset_law     Thm 3.3 at small β2: per β2, the invariant K = (1 − cos(w, ŵ2))·‖w‖² at the horizon,
                      whether it settled (rules.settled over the last decade), the transient length (first
                      checkpoint after which K stays within `settle_tol` of its final value) and the spread
                      Δ of the support vectors' margins z_i·w (i ∈ supp ŵ2) against ((N−1)/2)·ln(1/β2).
    signum_plateau_law  Thm 5.1's β0(m): per dataset and m = N/b the threshold β_c(m) by bisection with the claim's
                      invariant rule (gap·‖w‖∞ settled = converging, a plateau = not); the fitted exponent p of
                      1 − β_c ∝ m^(−p) with its spread (candidates: 1/m → 1, 1/m² → 2, 1/(m(m²−1)) → ≈3).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from .. import IbverifyError
from ..claims import CheckContext
from ..data import gaussian, gr, shifted_diagonal
from ..strategies import linear as S
from ..strategies.linear import discrimination
from ..engine import run
from ..evidence import Outcome, Series, beta_text
from ..jsonio import plain
from ..losses import log_loss_terms, logsumexp
from ..optim import OptimizerSpec
from ..oracles import max_margin
from ..theory import fixed_point
from .per_sample import beta2_strategy, signum_curves, signum_decision, signum_horizon, signum_tolerances
from .prop import Example, run_property
from .proxy import spec_of, steps_of
from .rules import INCONCLUSIVE, SUPPORTED, closeness, falling, settled, value_before


def discriminating_gr(n: int, d: int, seed: int) -> np.ndarray:
    """The first GR dataset (n, d) drawn from default_rng(seed) on which ℓ2 and ℓ∞ differ measurably."""
    rng = np.random.default_rng(seed)
    for _ in range(200):
        Z = gr(n, d, rng).Z
        if discrimination(Z).ok():
            return Z
    raise RuntimeError(f"no discriminating GR data for n={n}, d={d}, seed={seed}")


def transient_end(x: np.ndarray, K: np.ndarray, tol: float) -> float:
    """First checkpoint after which K stays within a relative `tol` of its final value."""
    off = np.abs(K / K[-1] - 1.0) > tol
    idx = np.flatnonzero(off)
    return float(x[0] if not len(idx) else x[min(idx[-1] + 1, len(x) - 1)])


def gr_offset_law(ctx: CheckContext) -> Outcome:
    p = ctx.params
    n, d = int(p["n"]), int(p["d"])
    rows, series = [], []
    for seed in p["data_seeds"]:
        Z = discriminating_gr(n, d, int(seed))
        l2 = max_margin(Z, "l2")
        sv = l2.support
        for b2 in p["beta2s"]:
            ctx.progress(f"seed {seed}, β2 = {b2}")
            spec = OptimizerSpec.from_params(p, name="inc-adam", beta1=0.0, beta2=float(b2))
            r = run(Z, spec, int(p["steps"]), checkpoints=int(p.get("checkpoints", 25)))
            nw2 = np.sum(r.ws * r.ws, axis=1)
            gap = 1 - r.ws @ l2.direction / np.sqrt(nw2)
            K = gap * nw2
            marg = Z[sv] @ r.w
            delta = float(marg.max() - marg.min())
            pred = (n - 1) / 2 * np.log(1 / float(b2))
            rows.append({"data seed": int(seed), "support vectors": len(sv), "beta2": float(b2), "K": float(K[-1]),
                         "K settled (last decade, 10%)": settled(r.checkpoints, K, 1.0, p.get("settle_tol", 0.1)),
                         "transient ends at step": transient_end(r.checkpoints, K, p.get("settle_tol", 0.1)),
                         "Δ (support margin spread)": delta, "((N−1)/2)·ln(1/β2)": pred,
                         "Δ/ln(1/β2)": delta / np.log(1 / float(b2)), "K/Δ²": float(K[-1]) / max(delta, 1e-300) ** 2,
                         "1 − cos at horizon": float(gap[-1])})
            if seed == p["data_seeds"][0]:
                series.append(Series(f"β2 = {b2:g}", r.checkpoints.tolist(), np.maximum(K, 1e-18).tolist(),
                                     ylabel="K = (1 − cos)·‖w‖²", group="invariant K by β2"))
    first = [r for r in rows if r["data seed"] == p["data_seeds"][0]]
    series.append(Series("K at the horizon", [r["beta2"] for r in first], [r["K"] for r in first], xlabel="β2",
                         ylabel="K", group="K(β2)"))
    series.append(Series("Δ at the horizon", [r["beta2"] for r in first], [max(r["Δ (support margin spread)"], 1e-18)
                                                                           for r in first],
                         xlabel="β2", ylabel="Δ", group="Δ*(β2)"))
    lb = np.log([1 / r["beta2"] for r in rows])
    Ks = np.array([r["K"] for r in rows])
    ok = Ks > 0
    slope = float(np.polyfit(np.log(lb[ok]), np.log(Ks[ok]), 1)[0]) if ok.sum() >= 2 else float("nan")
    fig = ("K(β2) = " + ", ".join(f"{r['beta2']:g}: {r['K']:.3g}" for r in first)
           + "; Δ/ln(1/β2) = " + ", ".join(f"{r['Δ/ln(1/β2)']:.2f}" for r in first)
           + f"; K ∝ ln(1/β2)^{slope:.2f}")
    return Outcome(holds=None, figure=fig, figures={"K_loglog_slope_in_ln_inv_beta2": slope,
                                                    **{f"K_beta2_{r['beta2']:g}": r["K"] for r in first}},
                   series=series, table=plain(rows), examples=len(rows),
                   details="beyond the paper: the constant K and the support-margin offset of Thm 3.3's limit")


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
    Assumes converging at c_lo and not at c_hi (the threshold is sharp, NUMERICS.md third round); an end is run only
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


def signum_plateau_law(ctx: CheckContext) -> Outcome:
    """Thm 5.1's β0(m), measured: per discriminating GR dataset (n, d, data seed) and batch size b (m = n/b), the
    threshold β_c(m) by bisection (bisect_threshold) in C = m(1 − β) with the claim's invariant criterion
    (signum_converges); then the exponent p of 1 − β_c ∝ m^−p per dataset (least squares on the bracket's geometric
    midpoints over the uncensored m, ≥ 3 of them; its spread: the slope range over the brackets, slope_range) and pooled
    (a common slope, one intercept per dataset). Prediction (NUMERICS.md third round, reconstructed): p = p_law within
    ± p_tol; `holds` reports whether the pooled p is within it (a finding: no paper states it)."""
    p = ctx.params
    tol = signum_tolerances(ctx)
    n = int(p["n"])
    rows, series, fits = [], [], []
    undecided = 0
    for seed in p["data_seeds"]:
        Z = discriminating_gr(n, int(p["d"]), int(seed))
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
    pooled = float("nan")
    if len(fits) >= 1:  # common slope, one intercept per dataset: demean within each dataset
        lm = np.concatenate([np.log([q["m"] for q in good if q["data seed"] == s])
                             - np.mean(np.log([q["m"] for q in good if q["data seed"] == s])) for s in seeds])
        ly = np.concatenate([np.log([q["1 − β_c"] for q in good if q["data seed"] == s])
                             - np.mean(np.log([q["1 − β_c"] for q in good if q["data seed"] == s])) for s in seeds])
        pooled = float(-(lm @ ly) / (lm @ lm))
    law, ptol = ctx.tol("p_law"), ctx.tol("p_tol")
    within = bool(math.isfinite(pooled) and abs(pooled - law) <= ptol)
    p_lo = min((f["p_min"] for f in fits), default=float("nan"))
    p_hi = max((f["p_max"] for f in fits), default=float("nan"))
    fig = ("1 − β_c(m) = C/m^p: " + "; ".join(
        f"seed {s}: " + ", ".join(f"m={q['m']:g} β_c={q['β_c']:.4g}" + (f" ({q['censored']})" if q["censored"] else "")
                                  for q in thresholds if q["data seed"] == s)
        for s in sorted({q["data seed"] for q in thresholds}))
           + f"; p = {pooled:.2f} pooled (per dataset " + ", ".join(f"{f['p']:.2f}" for f in fits)
           + f"; bracket range {p_lo:.2f}–{p_hi:.2f}); prediction p = {law:g} ± {ptol:g}: "
           + ("within" if within else "NOT within") + f"; {undecided} undecided runs counted as not converging")
    figures = {"p_pooled": pooled, "p_min": p_lo, "p_max": p_hi, "p_within_tolerance": float(within),
               "undecided_runs": float(undecided), "censored": float(sum(bool(q["censored"]) for q in thresholds)),
               "C_min": min((q["C"] for q in good), default=float("nan")),
               "C_max": max((q["C"] for q in good), default=float("nan"))}
    return Outcome(holds=within, figure=fig, figures=figures, series=series, table=plain(rows + fits),
                   examples=len(rows) - len(thresholds),
                   details="beyond the paper: Thm 5.1 gives no β0(m); measured by bisection with the invariant "
                           "criterion of baek.signum-any-batch-linf (resolution: the bracket of each β_c, carried "
                           "into the range of p)")


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
    sets = [(f"gaussian N={p['n']} d={p['d']} seed={s}",
             gaussian(int(p["n"]), int(p["d"]), np.random.default_rng(int(s))).Z) for s in p["data_seeds"]]
    sets += [(f"shifted-diagonal δ={dl}", shifted_diagonal(np.arange(1.0, 7.0), dl).Z) for dl in p.get("deltas", [])]
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
    """Kim et al.'s batch metric M_{N,b} (External) as a prediction: for each b < N the fixed point of T
    with M_{N,b} (fixed_point.iterate(Z, b=b)) against reshuffled mini-batch Adam (β1, β2 near 1, `epochs`
    epochs): cos(run, prediction) per b (reported against 0.999), the predicted and the run's ℓ∞ margins,
    and whether both increase with b (drift toward ℓ∞)."""
    p = ctx.params
    rows, series = [], []
    for s in p["data_seeds"]:
        Z = gaussian(int(p["n"]), int(p["d"]), np.random.default_rng(int(s))).Z
        pm, rm = [], []
        for b in p["b_values"]:
            pred = fixed_point.iterate(Z, b=int(b)).direction
            r = dict(p.get("run", {}), optimizer="adam", batch_size=int(b), order=p.get("order", "reshuffle"))
            out = run(Z, spec_of(r, ctx.seed), steps_of(dict(r, epochs=p["epochs"]), Z.shape[0]),
                      checkpoints=int(p.get("checkpoints", 12)))
            cos = out.ws @ pred / np.linalg.norm(out.ws, axis=1)
            pm.append(float(np.min(Z @ pred) / np.abs(pred).max()))
            rm.append(float(np.min(Z @ out.w) / np.abs(out.w).max()))
            rows.append({"data seed": int(s), "b": int(b), "cos(run, M_N,b fixed point)": float(cos[-1]),
                         "≥ 0.999": bool(cos[-1] >= 0.999),
                         "cos at the middle checkpoint (≈ √T steps)": float(cos[len(cos) // 2]),
                         "predicted ℓ∞ margin": pm[-1], "run ℓ∞ margin": rm[-1]})
            series.append(Series(f"seed {s}, b = {b}", out.checkpoints.tolist(), np.maximum(1 - cos, 1e-17).tolist(),
                                 ylabel="1 − cos(w, M_N,b prediction)", group=f"data seed {s}"))
        for row in rows[-len(pm):]:
            row["predicted margins increase with b"] = bool(np.all(np.diff(pm) > 0))
            row["run margins increase with b"] = bool(np.all(np.diff(rm) > 0))
    cmin = min(r["cos(run, M_N,b fixed point)"] for r in rows)
    fig = ("cos(reshuffled mini-batch Adam, M_{N,b} fixed point) by b: "
           + ", ".join(f"b={r['b']}: {r['cos(run, M_N,b fixed point)']:.5f}" for r in rows
                       if r["data seed"] == p["data_seeds"][0])
           + f"; min {cmin:.5f}; ℓ∞ margins increase with b: predicted {rows[0]['predicted margins increase with b']}, "
             f"runs {rows[0]['run margins increase with b']}")
    return Outcome(holds=None, figure=fig, figures={"min_cos_prediction": cmin}, series=series, table=plain(rows),
                   examples=len(rows),
                   details="beyond the paper: M_{N,b} is Kim et al.'s (External), not Baek et al.'s")


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
    """AdamProxy runs (η_t = lr (t+1)^(−lr_decay)) on Gaussian data; `quantity` is judged by the shared
    rule — close: value at the horizon ≤ tolerance `max_value`; trend: rules.falling over the last decade by
    tolerance trend_drop — and, for grad_norm, L falling and ‖w‖ growing as well (Prop 4.3 [reconstructed]):
        grad_norm       ‖∇L‖_{P⁻¹} → 0              ratio   ‖∇L‖_{P⁻¹}/L → 0 (control: it grows like L^{−1/2})
        cauchy_angle    ∠(w_T, w_{T/10}) → 0 (Assumption 4.4 by a Cauchy criterion)
        cauchy_vector   ‖w_T − w_{T/10}‖/‖w_T‖ → 0 (control: the iterate itself diverges)."""
    p = ctx.params
    q = p["quantity"]
    drop, vmax = ctx.tol("trend_drop"), ctx.tol("max_value")
    rows, series, holds = [], [], True
    for s in p["data_seeds"]:
        Z = gaussian(int(p["n"]), int(p["d"]), np.random.default_rng(int(s))).Z
        spec = OptimizerSpec.from_params(p, name="adam-proxy")
        r = run(Z, spec, int(p["steps"]), checkpoints=int(p.get("checkpoints", 25)))
        Q = proxy_quantities(Z, r.ws)
        if q.startswith("cauchy"):
            x, y = cauchy_series(r.checkpoints, r.ws, vector=q == "cauchy_vector")
        else:
            x, y = r.checkpoints.astype(float), Q[q]
        close = closeness(float(y[-1]), vmax)
        trend = falling(x, y, 1.0, drop)
        extra = True
        if q == "grad_norm":
            extra = falling(r.checkpoints, Q["L"], 1.0, drop) and falling(r.checkpoints, 1 / Q["norm"], 1.0, drop)
        ok = close and trend and extra
        holds &= ok
        rows.append({"data seed": int(s), "steps": int(r.horizon), f"{q} at horizon": float(y[-1]),
                     f"{q} one decade earlier": float(y[x <= x[-1] / 10 * (1 + 1e-12)][-1]) if len(x) > 1 else None,
                     "close": close, "falling": trend, "L at horizon": float(Q["L"][-1]),
                     "‖∇L‖_P⁻¹ / L at horizon": float(Q["ratio"][-1]),
                     "‖∇L‖²_P⁻¹ / L at horizon": float(Q["sq_ratio"][-1]),
                     "‖w‖": float(Q["norm"][-1]), "L falls and ‖w‖ grows": extra, "ok": ok})
        series.append(Series(f"seed {s}: {q}", x.tolist(), np.maximum(y, 1e-300).tolist(), ylabel=q, group=q))
        if q in ("grad_norm", "ratio"):
            series.append(Series(f"seed {s}: ‖∇L‖²_P⁻¹/L", r.checkpoints.tolist(), Q["sq_ratio"].tolist(),
                                 ylabel="‖∇L‖²_P⁻¹ / L", group="squared ratio (≈ constant)"))
    fig = (f"{q}: " + ", ".join(f"seed {r['data seed']}: {r[f'{q} at horizon']:.3g} "
                                f"(was {r[f'{q} one decade earlier']:.3g})" for r in rows)
           + f"; need ≤ {vmax:g} and falling ≥ {drop:.0%}/decade")
    return Outcome(holds=bool(holds), figure=fig, figures={f"max_{q}": max(r[f"{q} at horizon"] for r in rows)},
                   series=series, table=plain(rows), examples=len(rows),
                   details="; ".join(f"seed {r['data seed']}: close {r['close']}, falling {r['falling']}"
                                     for r in rows))


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


def cor32_weights(ctx: CheckContext) -> Outcome:
    """Along runs of `optimizer` on GR data with d ≥ N (so the z_j are independent), at R log-spaced epochs:
    the realized normalized weights κ̃_j(r) (realized_weights) of every sample lie in
    [lower·(1 − tol), upper·(1 + tol)] (weight_bounds, tol = tolerance `slack` for the vanishing ε_r)
    over the last `late` epochs measured. The control runs Det-Adam: its displacement is sign-like, not a
    positively weighted gradient step, and leaves the sandwich."""
    p = ctx.params
    slack = ctx.tol("slack")
    strat = st.tuples(S.data("gr", n=st.integers(*p["n"]), d=st.integers(*p["d"])),
                      S.betas(beta2=beta2_strategy(*p["beta2_range"], p.get("beta2_scale", "linear"))))

    def evaluate(ex) -> Example:
        cert, (b1, b2) = ex
        Z = cert.dataset.Z
        n, d = Z.shape
        assume(np.linalg.matrix_rank(Z) == n)  # the decomposition w1 − w0 = Σ c_j z_j must be unique
        spec = OptimizerSpec.from_params(p, beta1=b1, beta2=b2)
        per_epoch = n if p["optimizer"] == "inc-adam" else 1
        R = np.unique(np.geomspace(10, int(p["epochs"]), int(p.get("points", 8))).astype(np.int64))
        cps = np.unique(np.r_[R * per_epoch, (R + 1) * per_epoch])
        r = run(Z, spec, int(cps[-1]), checkpoints=cps)
        W = dict(zip(r.checkpoints.tolist(), r.ws, strict=False))
        lo, hi = weight_bounds(n, b2)
        rows = []
        for ep in R:
            eta = float(p.get("lr", 0.1)) * (ep * per_epoch + 1.0) ** (-float(p.get("lr_decay", 0.5)))
            k = realized_weights(Z, W[int(ep * per_epoch)], W[int((ep + 1) * per_epoch)], eta,
                                 ctx.tol("significance"))
            rows.append((int(ep), float(k.min()), float(k.max())))
        late = rows[-int(p.get("late", 3)):]
        kmin, kmax = min(x[1] for x in late), max(x[2] for x in late)
        ok = kmin >= lo * (1 - slack) and kmax <= hi * (1 + slack)
        return Example(ok, {"kmin": kmin, "kmax": kmax, "upper": hi},
                       {"min κ̃": ([x[0] for x in rows], [x[1] for x in rows]),
                        "max κ̃": ([x[0] for x in rows], [x[2] for x in rows])},
                       f"κ̃ ∈ [{kmin:.4g}, {kmax:.4g}] leaves [{lo:g}, {hi:.4g}]",
                       f"n={n} d={Z.shape[1]} β1={beta_text(b1)} β2={beta_text(b2)}",
                       {"data": repr(cert), "beta1": b1, "beta2": b2})

    res = run_property(ctx, strat, evaluate)
    exs = res.examples
    fig = (f"late κ̃ range over {len(exs)} datasets: [{min(e.figures['kmin'] for e in exs):.4g}, "
           f"{max(e.figures['kmax'] for e in exs):.4g}] (bounds [1, U(β2, N)], U ≥ "
           f"{min(e.figures['upper'] for e in exs):.3g})")
    if res.failing:
        fig = f"counterexample: {res.failing.reason} ({res.failing.description})"
    return Outcome(holds=res.holds, figure=fig, figures={"min_kappa": min(e.figures["kmin"] for e in exs)},
                   series=[Series(f"{e.description}: {k}", *c, xlabel="epoch r", ylabel="κ̃_j", group=e.description)
                           for e in exs[:4] for k, c in e.curves.items()],
                   table=[{"example": e.description, "min κ̃ (late)": e.figures["kmin"],
                           "max κ̃ (late)": e.figures["kmax"], "upper bound": e.figures["upper"], "ok": e.ok}
                          for e in exs],
                   examples=len(exs), details=res.failing.reason if res.failing else "",
                   counterexample=(dict(res.failing.inputs, reason=res.failing.reason) if res.failing else None))
