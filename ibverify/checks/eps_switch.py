"""Adam's ε switch (Wang, Meng, Chen, Liu, ICML 2021; issue 36 item 2): the gradient switch of full-batch Adam with
ε > 0, the first step at which ‖∇L‖∞ < ε, as a function of ε (a law), and beside it the direction switch, the step
at which the run's direction crosses from ŵ∞'s side to ŵ2's (a finding, not judged).

Observable. The switch step t_s(ε) of a run is the first step at which the full-batch gradient's largest coordinate
‖∇L(w_t)‖∞ falls below ε (`switch_step`: read on a linear grid of checkpoints, interpolated linearly in ln‖∇L‖∞
between the two checkpoints around the crossing; ‖∇L‖∞ of the mean logistic loss in the log domain,
`log_grad_inf`). It is computed from the iterates alone, in the units of ε itself.

Law [derived here]. While the gradient is ≫ ε, Adam's update is m̂/√v̂ per coordinate, and late in the sign-like
phase every gradient coordinate decays like the loss, by a factor ρ per step. With g_t ∝ ρ^t the EMA
v_t = β2 v_{t−1} + (1 − β2) g_t² gives g²/v = c² with c² = (1 − β2/ρ²)/(1 − β2): the update moves every
coordinate by η·c (ℓ∞ steepest descent at speed ηc), so the smallest margin grows by γ∞·η·c per step and
ρ = exp(−γ∞ηc). Hence c solves c² = (1 − β2·e^{2γ∞ηc})/(1 − β2) (`speed_factor`; to first order
c² + a·c − 1 = 0 with a = 2γ∞η/(1 − β2)), ln‖∇L‖∞ falls by γ∞ηc per step, and

    t_s(ε) = ln(1/ε)/(γ∞·η·c) + const        (`law_slope` = 1/(γ∞ηc) steps per unit of ln(1/ε)).

For a ≪ 1 (v follows g²) c → 1 and the slope is 1/(ηγ∞), the sign-descent estimate; for a ≫ 1 (PyTorch's
η = 1e-3, β2 = 0.999 on data with γ∞ ≳ 1) v cannot fall faster than β2 per step, c ≈ 1/a and the slope tends to
2/(1 − β2), set by β2, not by the margin. Data scaled by s with step η is the same run as the data with step s·η
and ε/s (u = s·w), and the law is the same function of γ∞·η: it is covariant with the data's scale.

Decision (`judge_switch`, per dataset and step size, rules.all_of of three halves, each a rules.closeness):
    slope    the least-squares slope of t_s against ln(1/ε) over the fitted ε (`cases`, ≥ 3) over law_slope: its
             95 % profile interval (checks.laws.line_slope) inside 1 ± `slope_tol` (laws.judge_interval with the
             allowance = the resolution = slope_tol; disjoint from that band: contradicted; straddling: undecided);
    linear   the fit's largest |residual| within `resid_max` of the span of the fitted t_s;
    predict  t_s at the predicted ε (`eps`: PyTorch's default 1e-8, not fitted) within a relative `offset_max` of
             the law's prediction: the intercept fitted with the law's slope held fixed, plus law_slope·ln(1/ε).
A half is inconclusive while a switch it needs is not seen by the horizon (extended ×10, `extensions`), except that
`predict` is contradicted when its switch is unseen at a horizon ≥ (1 + offset_max)× the predicted step.
`norm` names the margin the law uses (linf; a control states l2, a wrong law of the same form). The datasets are
the first discriminating GR draws (ℓ2 and ℓ∞ differ: strategies.linear.discrimination) of the data seeds
`fresh_seeds`; each run (`runs`: step size lr and first horizon steps) is the table's `adam` at full batch, with the
claim's β1, β2 and bias correction, constant step. Reported, not judged: the fitted slope against the naive
1/(ηγ∞), and whether after the switch at the predicted ε the direction leaves ŵ∞ for ŵ2 (normalized ℓ∞ and ℓ2
margins relative to the certified max margins, at the switch and at the horizon); and the direction switch
(`direction_switch`: the first step at which the ℓ2 margin gap 1 − γ2(w)/γ2* falls to the ℓ∞ one, after being above
it) per ε, fitted against ln(1/ε) (`direction_law`: its slope's profile interval, "no ε-dependence" when it contains
0). Each (dataset, η)'s slope fit is a row of the table (laws.law_row).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_expit

from ..errors import IbverifyError
from ..claims import CheckContext
from ..evidence import Outcome, Series
from ..jsonio import plain
from ..optim import OptimizerSpec
from ..oracles import max_margin, normalized_margin
from ..recipes import store_of
from ..recipes.settings import vector
from .paper1_laws import discriminating_gr, fresh_seeds
from .laws import LEVEL, Fit, judge_interval, law_row, line_slope
from .rules import CONTRADICTED, INCONCLUSIVE, SUPPORTED, Decision, all_of, closeness, tally

HALVES = ("slope", "linear", "predict")
SERIES_POINTS = 100   # gradient curves (first dataset) reported at about this many checkpoints


def log_grad_inf(Z: np.ndarray, ws: np.ndarray) -> np.ndarray:
    """ln ‖∇L(w)‖∞ for each row w of ws, L(w) = (1/N) Σ_j ln(1 + e^(−z_j·w)), in the log domain (no underflow):
    ∇L = −(1/N) Σ_j σ(−z_j·w) z_j."""
    lw = log_expit(-(np.atleast_2d(ws) @ Z.T))                 # ln σ(−m_j), shape (T, N)
    top = lw.max(axis=1, keepdims=True)
    s = np.exp(lw - top) @ Z                                    # Σ_j σ_j z_j / max_j σ_j
    with np.errstate(divide="ignore"):
        return top[:, 0] + np.log(np.abs(s).max(axis=1)) - math.log(Z.shape[0])


def switch_step(x, log_g, eps: float) -> float | None:
    """The first step at which ln‖∇L‖∞ (log_g at steps x) is below ln ε, interpolated linearly in ln‖∇L‖∞ between
    the checkpoint before and the first one below; None when no checkpoint is below ε, or already the first is."""
    xa, ya = np.asarray(x, float), np.asarray(log_g, float)
    below = np.flatnonzero(ya < math.log(eps))
    if not len(below) or below[0] == 0:
        return None
    k = int(below[0])
    y0, y1 = ya[k - 1], ya[k]
    return float(xa[k - 1] + (xa[k] - xa[k - 1]) * (y0 - math.log(eps)) / (y0 - y1))


def speed_factor(gamma: float, eta: float, beta2: float) -> float:
    """c ∈ (0, 1): Adam's ℓ∞ speed (in units of η) in the sign-like phase, the root of
    c² = (1 − β2·e^{2γηc})/(1 − β2) (module docstring); 1 when β2 = 0 would make v = g²."""
    if not (gamma > 0 and eta > 0 and 0 <= beta2 < 1):
        raise IbverifyError(f"speed_factor needs γ > 0, η > 0, 0 ≤ β2 < 1 (got {gamma}, {eta}, {beta2})")
    f = lambda c: c * c - (1 - beta2 * math.exp(2 * gamma * eta * c)) / (1 - beta2)  # noqa: E731
    return float(brentq(f, 0.0, 1.0, xtol=1e-15, rtol=1e-14)) if f(1.0) > 0 else 1.0


def law_slope(gamma: float, eta: float, beta2: float) -> float:
    """Steps per unit of ln(1/ε) of the switch: 1/(γ·η·c) (module docstring)."""
    return 1.0 / (gamma * eta * speed_factor(gamma, eta, beta2))


def judge_switch(eps_fit, t_fit, eps_pred: float, t_pred: float | None, slope: float, horizon: float,
                 tol: dict) -> tuple[Decision, dict, dict]:
    """The three halves of the module docstring for one dataset and step size: (all_of decision, halves, figures).
    t_fit: the switch steps at eps_fit (None: not seen by `horizon`); tol: slope_tol, resid_max, offset_max."""
    L = np.log(1.0 / np.asarray(eps_fit, float))
    seen = [t is not None for t in t_fit]
    figs = {"slope_law": slope}
    parts: dict[str, Decision] = {}
    if len(L) < 3:
        raise IbverifyError(f"the switch law is fitted over ≥ 3 values of ε (got {len(L)})")
    if not all(seen):
        miss = ", ".join(f"{e:g}" for e, s in zip(eps_fit, seen, strict=True) if not s)
        why = f"no switch seen by step {horizon:.3g} at ε = {miss}"
        parts = {h: Decision(INCONCLUSIVE, why) for h in HALVES}
        return all_of(parts), parts, figs
    t = np.asarray(t_fit, float)
    fit_slope, fit_icpt = np.polyfit(L, t, 1)
    ratio = fit_slope / slope
    fit = line_slope(L, t)
    figs.update(slope_fit=float(fit_slope), slope_error=float(abs(ratio - 1)), ratio=float(ratio),
                ratio_lo=fit.lo / slope, ratio_hi=fit.hi / slope, dof=float(fit.dof))
    band = judge_interval(fit.lo / slope, fit.hi / slope, 1.0, tol["slope_tol"], tol["slope_tol"])
    parts["slope"] = Decision(band.word, f"fitted slope {fit_slope:.4g} = {ratio:.4f} × the law's {slope:.4g}, "
                                         f"{fit.level:.0%} interval of the ratio: {band.reason} "
                                         f"(tolerance ±{tol['slope_tol']:g})")
    span = float(t.max() - t.min())
    resid = float(np.abs(t - np.polyval([fit_slope, fit_icpt], L)).max() / span) if span > 0 else math.inf
    figs["linearity_resid"] = resid
    word = SUPPORTED if closeness(resid, tol["resid_max"]) else CONTRADICTED
    parts["linear"] = Decision(word, f"largest residual {resid:.3g} of the span {span:.4g} (≤ {tol['resid_max']:g})")
    predicted = float(np.mean(t - slope * L) + slope * math.log(1.0 / eps_pred))
    figs["t_pred_law"] = predicted
    if t_pred is None:
        if horizon >= predicted * (1 + tol["offset_max"]):
            parts["predict"] = Decision(CONTRADICTED, f"no switch at ε = {eps_pred:g} by step {horizon:.3g}, predicted "
                                                      f"at {predicted:.4g}")
        else:
            parts["predict"] = Decision(INCONCLUSIVE, f"no switch at ε = {eps_pred:g} by step {horizon:.3g} (predicted "
                                                      f"at {predicted:.4g})")
    else:
        err = abs(t_pred - predicted) / t_pred
        figs.update(t_pred_measured=float(t_pred), predict_error=float(err))
        word = SUPPORTED if closeness(err, tol["offset_max"]) else CONTRADICTED
        parts["predict"] = Decision(word, f"switch at ε = {eps_pred:g}: step {t_pred:.5g} measured, {predicted:.5g} "
                                          f"predicted (relative error {err:.3g}, ≤ {tol['offset_max']:g})")
    return all_of(parts), parts, figs


def margin_gaps(Z: np.ndarray, ws: np.ndarray, opt: dict) -> dict[str, np.ndarray]:
    """1 − γ_g(w_t)/γ_g* per row w_t of ws for g = linf, l2 (normalized margin over the certified max margin;
    NaN at w = 0)."""
    m = np.min(np.atleast_2d(ws) @ Z.T, axis=1)
    norms = {"linf": np.max(np.abs(ws), axis=1), "l2": np.linalg.norm(ws, axis=1)}
    with np.errstate(divide="ignore", invalid="ignore"):
        return {g: np.where(norms[g] > 0, 1 - m / norms[g] / opt[g].margin, np.nan) for g in ("linf", "l2")}


def direction_switch(x, gap_linf, gap_l2) -> tuple[float | None, str]:
    """The direction switch: the first step at which the ℓ2 margin gap falls to the ℓ∞ one after being above it
    (the run's direction leaves ŵ∞'s side for ŵ2's), interpolated linearly in their difference; (None, why) when
    it is not seen: the ℓ2 gap never above (no ℓ∞ phase at these checkpoints) or never back at or below it."""
    xa, diff = np.asarray(x, float), np.asarray(gap_l2, float) - np.asarray(gap_linf, float)
    above = np.flatnonzero(diff > 0)
    if not len(above):
        return None, "the ℓ2 gap is never above the ℓ∞ gap (no ℓ∞ phase at these checkpoints)"
    after = np.flatnonzero(diff[above[0]:] <= 0)
    if not len(after):
        return None, f"the ℓ2 gap is still above the ℓ∞ gap at step {xa[-1]:.4g}"
    k = int(above[0] + after[0])
    return float(xa[k - 1] + (xa[k] - xa[k - 1]) * diff[k - 1] / (diff[k - 1] - diff[k])), "seen"


def direction_law(eps, t_dir) -> dict:
    """The direction switch against ln(1/ε) over the ε at which it is seen (≥ 3): its fitted slope with the profile
    interval (laws.line_slope) and the finding: "no ε-dependence" when the interval contains 0, else the slope."""
    seen = [(math.log(1 / e), t) for e, t in zip(eps, t_dir, strict=True) if t is not None]
    if len(seen) < 3:
        return {"finding": f"seen at {len(seen)} of {len(eps)} ε: no fit", "slope": None, "interval": None}
    fit = line_slope([a for a, _ in seen], [t for _, t in seen])
    none = fit.lo <= 0 <= fit.hi
    word = ("no ε-dependence" if none else
            f"{fit.estimate:.4g} steps per unit of ln(1/ε)")
    return {"finding": f"{word} ({fit.level:.0%} interval [{fit.lo:.4g}, {fit.hi:.4g}], {len(seen)} ε)",
            "slope": fit.estimate, "interval": [fit.lo, fit.hi]}


def _linear_grid(T: int, count: int) -> np.ndarray:
    return np.unique(np.linspace(T / count, T, count).round().astype(np.int64))


def _margin_ratios(Z: np.ndarray, w: np.ndarray, opt: dict) -> dict[str, float]:
    return {g: normalized_margin(Z, w, g) / opt[g].margin for g in ("linf", "l2")}


def adam_eps_switch(ctx: CheckContext) -> Outcome:
    p = ctx.params
    n, d, norm = int(p["n"]), int(p["d"]), str(p.get("norm", "linf"))
    eps_fit = sorted((float(c["eps"]) for c in p["cases"]), reverse=True)
    eps_pred, count = float(p["eps"]), int(p.get("checkpoints", 2000))
    if eps_pred >= eps_fit[-1]:
        raise IbverifyError(f"the predicted ε = {eps_pred:g} must lie below the fitted ones (smallest "
                            f"{eps_fit[-1]:g})")
    tol = {k: ctx.tol(k) for k in ("slope_tol", "resid_max", "offset_max")}
    store = store_of(ctx)
    words, rows, series, examples, laws = [], [], [], [], []
    seeds = fresh_seeds(ctx)
    for seed in seeds:
        data = discriminating_gr(n, d, int(seed), store)
        Z = store.data(data).Z
        opt = {g: max_margin(Z, g) for g in ("linf", "l2")}
        if norm not in opt:
            raise IbverifyError(f"norm must be linf or l2, got {norm!r}")
        for r in p["runs"]:
            eta = float(r["lr"])
            slope = law_slope(opt[norm].margin, eta, float(p["beta2"]))
            T = int(r["steps"])
            cap = T * 10 ** int(p.get("extensions", 0))
            while True:   # an undecided (dataset, η) is extended ×10 up to the tier's cap (as prop.sequential)
                ctx.progress(f"data seed {seed}, η = {eta:g}: {T:.2g} steps")
                logs, steps = {}, {}
                for eps in [*eps_fit, eps_pred]:
                    spec = OptimizerSpec.from_params(p, name="adam", lr=eta, lr_decay=0.0, eps=eps, batch_size=n)
                    run = store.run(vector(data, spec, T, checkpoints=_linear_grid(T, count)))
                    logs[eps] = (run.checkpoints.astype(float), log_grad_inf(Z, run.ws), run.ws)
                    steps[eps] = switch_step(logs[eps][0], logs[eps][1], eps)
                dec, parts, figs = judge_switch(eps_fit, [steps[e] for e in eps_fit], eps_pred, steps[eps_pred],
                                                slope, T, tol)
                if dec.word != INCONCLUSIVE or T * 10 > cap:
                    break
                T *= 10
            words.append(dec.word)
            all_eps = [*eps_fit, eps_pred]
            gaps = {e: margin_gaps(Z, logs[e][2], opt) for e in all_eps}
            dirs = {e: direction_switch(logs[e][0], gaps[e]["linf"], gaps[e]["l2"]) for e in all_eps}
            dlaw = direction_law(all_eps, [dirs[e][0] for e in all_eps])
            if figs.get("ratio_lo") is not None:
                laws.append(law_row("fitted/law slope of t_s in ln(1/ε)", Fit(figs["ratio"], figs["ratio_lo"],
                                                                             figs["ratio_hi"], len(eps_fit),
                                                                             int(figs["dof"])),
                                    1.0, tol["slope_tol"], parts["slope"], "least squares of t_s on ln(1/ε) over "
                                    f"ε = {', '.join(f'{e:g}' for e in eps_fit)}, t profile interval, over the "
                                    "law's slope", allowance=tol["slope_tol"],
                                    scope=f"data seed {seed}, η = {eta:g}"))
            x, _, ws = logs[eps_pred]
            ts = steps[eps_pred]
            at_switch = _margin_ratios(Z, ws[int(np.searchsorted(x, ts))], opt) if ts is not None else {}
            at_end = _margin_ratios(Z, ws[-1], opt)
            leaves = bool(at_switch and at_end["l2"] > at_switch["l2"] and at_end["linf"] < at_switch["linf"])
            naive = 1.0 / (eta * opt["linf"].margin)
            tag = f"data seed {seed} (n={n}, d={d}), η = {eta:g}"
            examples.append(figs)
            rows.append({"dataset": tag, "γ∞": opt["linf"].margin, "γ2": opt["l2"].margin, "law margin": norm,
                         "a = 2γη/(1−β2)": 2 * opt[norm].margin * eta / (1 - float(p["beta2"])),
                         "c (ℓ∞ speed/η)": speed_factor(opt[norm].margin, eta, float(p["beta2"])),
                         "switch steps": {f"{e:g}": steps[e] for e in [*eps_fit, eps_pred]},
                         "law slope": slope, "fitted slope": figs.get("slope_fit"),
                         "fitted / naive 1/(ηγ∞)": figs.get("slope_fit", math.nan) / naive,
                         f"predicted step at ε = {eps_pred:g}": figs.get("t_pred_law"),
                         "margins / max margins at the switch": at_switch,
                         "margins / max margins at the horizon": at_end,
                         "leaves ŵ∞ for ŵ2 after the switch": leaves,
                         "direction switch (ℓ2 gap ≤ ℓ∞ gap) steps": {f"{e:g}": dirs[e][0] if dirs[e][0] is not None
                                                                      else dirs[e][1] for e in all_eps},
                         "direction switch against ln(1/ε)": dlaw["finding"],
                         "direction switch slope": dlaw["slope"], "direction switch slope interval": dlaw["interval"],
                         "horizon": T, "decision": dec.word,
                         "halves": {k: v.word for k, v in parts.items()}, "reason": dec.reason})
            for eps in [*eps_fit, eps_pred] if seed == seeds[0] else ():   # the gradients of the first dataset
                xe, lg, _ = logs[eps]
                k = slice(None, None, max(1, len(xe) // SERIES_POINTS))
                series.append(Series(f"ε = {eps:g}", xe[k].tolist(), np.exp(lg[k]).tolist(), ylabel="‖∇L(w_t)‖∞",
                                     group=f"{tag}: gradient", log_x=False))
            if seed == seeds[0]:   # the margin-gap curves whose crossing is the direction switch
                k = slice(None, None, max(1, len(x) // SERIES_POINTS))
                for g, name in (("linf", "ℓ∞"), ("l2", "ℓ2")):
                    series.append(Series(f"{name} gap", x[k].tolist(), gaps[eps_pred][g][k].tolist(),
                                         ylabel="1 − γ(w)/γ*", group=f"{tag}: margin gaps at ε = {eps_pred:g}",
                                         log_x=False))
            seen = [e for e in [*eps_fit, eps_pred] if steps[e] is not None]
            lx = [math.log(1 / e) for e in seen]
            group = f"switch step against ln(1/ε), η = {eta:g}"
            series.append(Series(f"data seed {seed}, measured", lx, [steps[e] for e in seen], xlabel="ln(1/ε)",
                                 ylabel="switch step", group=group, log_x=False, log_y=False))
            if "t_pred_law" in figs:
                icpt = figs["t_pred_law"] - slope * math.log(1 / eps_pred)
                series.append(Series(f"data seed {seed}, law", lx, [icpt + slope * v for v in lx], xlabel="ln(1/ε)",
                                     ylabel="switch step", group=group, log_x=False, log_y=False))
    holds, text = tally(words, len(words))
    judged = [e for e in examples if "slope_error" in e]

    def worst(k):
        return max((e[k] for e in examples if k in e), default=math.nan)

    figures = {"max_slope_error": worst("slope_error"), "max_linearity_resid": worst("linearity_resid"),
               "max_predict_error": worst("predict_error"), "judged": float(len(judged))}
    figures.update({w.replace(" ", "_"): float(words.count(w)) for w in (SUPPORTED, CONTRADICTED, INCONCLUSIVE)})
    figures.update(slope_ratio_lo=min((e["ratio_lo"] for e in judged), default=math.nan),
                   slope_ratio_hi=max((e["ratio_hi"] for e in judged), default=math.nan),
                   max_slope_ratio_half_width=max(((e["ratio_hi"] - e["ratio_lo"]) / 2 for e in judged),
                                                  default=math.nan),
                   direction_switches_seen=float(sum(isinstance(v, float) for r in rows for v in
                                                     r["direction switch (ℓ2 gap ≤ ℓ∞ gap) steps"].values())))
    what = "ℓ∞" if norm == "linf" else "ℓ2 (a wrong law)"
    fig = (f"switch law t_s = ln(1/ε)/(γη c) with the {what} max margin, {len(words)} (dataset, η): {text}; "
           f"largest |slope/law − 1| {figures['max_slope_error']:.3g} (±{tol['slope_tol']:g}), linearity "
           f"{figures['max_linearity_resid']:.3g} (≤ {tol['resid_max']:g}), ε = {eps_pred:g} prediction "
           f"{figures['max_predict_error']:.3g} (≤ {tol['offset_max']:g})")
    return Outcome(holds=holds, inconclusive=text if holds is None else "",
                   decisions={w: words.count(w) for w in (SUPPORTED, CONTRADICTED, INCONCLUSIVE)},
                   figure=fig, figures=figures, series=series, table=plain(laws + rows), examples=len(words),
                   details=f"the gradient switch t_s(ε), the first step with ‖∇L‖∞ < ε; its slope in ln(1/ε) over the "
                           f"law's: {LEVEL:.0%} profile interval inside 1 ± {tol['slope_tol']:g} (the resolution: "
                           "excludes the sign-descent slope 1/(ηγ∞) and any law off by more) | "
                           + " | ".join(f"{r['dataset']}: {r['decision']} ({r['reason']})" for r in rows)
                           + " || the direction switch, its own finding (not judged): the first step at which the ℓ2 "
                             "margin gap 1 − γ2(w)/γ2* falls to the ℓ∞ one 1 − γ∞(w)/γ∞*, against ln(1/ε) | "
                           + " | ".join(f"{r['dataset']}: {r['direction switch against ln(1/ε)']}; steps by ε "
                                        + ", ".join(f"{k}: {v:.5g}" if isinstance(v, float) else f"{k}: not seen"
                                                    for k, v in r["direction switch (ℓ2 gap ≤ ℓ∞ gap) steps"].items())
                                        for r in rows))
