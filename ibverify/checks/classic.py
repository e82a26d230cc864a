"""Checks of the field's classical implicit-bias theorems on linear models (issue 22, point 3).

`log_rate` — Soudry, Hoffer, Nacson, Gunasekar, Srebro (JMLR 2018), Thm 3: GD with a constant step η < 2/β on a
β-smooth loss with an exponential tail, on separable data, gives w(t) = ŵ log t + ρ(t) with ŵ the ℓ2 max-margin
(SVM) vector (‖ŵ‖ = 1/γ2) and ρ(t) bounded. The cosine to ŵ2 converges like 1/log t, too slowly for a tolerance, so
each example is judged by three halves (rules.all_of), every one through rules.py:
    K        K_t = (1 − cos(w_t, ŵ2))·‖w_t‖² settles (rules.judge_invariant): with w = ŵ log t + ρ,
             K → ‖ρ⊥‖²/2, bounded; a wrong direction makes K grow like ‖w‖²
    rho      ‖ρ(t)‖ = ‖w_t − ŵ ln t‖ settles (rules.judge_invariant): the theorem's "ρ bounded" as measured
    slope    the log-linear form ‖w(t)‖ ≈ a ln t + b fitted over the decade [t/10, t] (≥ 3 checkpoints) at every
             checkpoint t, and the relative gap |a·γ2 − 1| must tend to 0 (rules.judge_gap, bound = tolerance
             slope_gap_max, floor = slope_gap_floor: below it the gap is within the expansion's own second-order
             term −Kγ2²/ln²t of d‖w‖/d ln t and counts as reached): ‖w‖/ln t → ‖ŵ‖ = 1/γ2. A wrong growth law
             (sign GD: ‖w‖ ∝ t; GD at η_t ∝ t^(−1/2): a = 1/(2γ2)) is a stable plateau or a rise: contradicted at
             the largest horizon.
The data are discriminating GR data (strategies.discriminating: ŵ2 is ≥ 10 % below γ∞ in ℓ∞ margin) drawn
non-degenerate (strategies.nondegenerate: every non-support sample has relative slack θ ≥ slack_min, every support
vector a dual ≥ dual_min × the largest, and the residual's rate κ ≥ rate_min), because ρ(t) approaches its limit like
t^(−θ) (the non-support samples' terms in the theorem's proof) and like t^(−κ) inside the support vectors' span
(strategies.regularity), and need not stay bounded when a support vector has a zero dual (a degenerate case the
theorem's "almost every dataset" leaves out). The step is η = u·2/β with u drawn in `lr_fraction` and
β = λ_max(ZᵀZ)/(4N), the smoothness of the mean logistic loss; the horizon is `steps`/u, so every example covers the
same η·t (the dynamics' own time: w(t) depends on η and t through η·t up to O(η) terms). An inconclusive example is
extended ×10 up to `extensions` times (prop.sequential). A control runs the same check with another optimizer or
schedule.

Parameters beyond Soudry's: `halves` (default K, rho, slope; `norm` = ‖w‖ growing: judge_gap on 1/‖w‖, no bound;
`approach` = 1 − cos(w, ŵ2) still falling: judge_gap with no bound, falling ≥ approach_drop per decade — GD's falls
like 1/ln²t, ×0.6–0.8 per decade at these horizons — while a limit at the same speed elsewhere is a plateau),
`lr_eps` (η = u·(2/β)·lr_eps: Adam with ε > 0 becomes GD with step η/ε once √v ≪ ε, so η/ε is held below 2/β),
`full_batch` (batch size N), `beta2_range` / `beta1_max` (Adam: β2 drawn, β1 = v·min(β2, beta1_max), v ∈ [0, 1]),
`smoothness` ("mean": β of the mean loss, the default; "per_sample": β_max = max_i ‖z_i‖²/4, the step condition of
SGD), for `order` reshuffle or replacement (SGD with `batch_size` < N) a sampler seed drawn per example, and
`precond_cos_max` (also `gradient_alignment`: only data on which precond-gd's limit, the D^(−1/2)-weighted ℓ2 max
margin, has cos ≤ precond_cos_max to ŵ2: the same-speed wrong-limit controls, whose wrong limit comes at GD's rate).
Nacson, Srebro, Soudry (AISTATS 2019): SGD with a fixed step, mini-batches sampled with reshuffling or with
replacement, the same three halves as GD (the same ŵ2 log t form).
Wang et al. (ICML 2021), Adam / RMSProp with ε > 0 → ŵ2 direction: halves K and norm (the direction statement; the
GD-regime log rate is not theirs), with ε = 0 (full-batch Adam → ℓ∞) as the control.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import assume as hypothesis_assume
from hypothesis import strategies as st

from ..errors import IbverifyError
from ..claims import CheckContext
from ..evidence import Outcome, Series
from ..optim import OptimizerSpec
from ..oracles import max_margin, normalized_margin
from ..oracles.constrained import ball_logistic, box_logistic
from ..recipes import settings, store_of
from ..recipes.linear import adagrad, gaussian_l1_data
from ..strategies import linear as S
from .per_sample import _size_kw
from .prop import Example, run_property, sequential, step_progress
from .rules import FLOOR, SUPPORTED, all_of, judge_gap, judge_invariant, judge_separation


def logistic_smoothness(Z: np.ndarray) -> float:
    """β of the mean logistic loss (1/N) Σ log(1 + e^(−z_i·w)): λ_max(ZᵀZ)/(4N) (ℓ'' ≤ 1/4)."""
    return float(np.linalg.eigvalsh(Z.T @ Z).max() / (4 * Z.shape[0]))


def per_sample_smoothness(Z: np.ndarray) -> float:
    """β_max = max_i ‖z_i‖²/4: the largest smoothness of one sample's logistic loss log(1 + e^(−z_i·w)), which bounds
    that of every mini-batch's mean loss (a mean of β_i-smooth functions is max_i β_i-smooth)."""
    return float(np.max(np.sum(Z * Z, axis=1)) / 4.0)


SMOOTHNESS = {"mean": logistic_smoothness, "per_sample": per_sample_smoothness}


def decade_slopes(x, y) -> np.ndarray:
    """At every checkpoint t: the slope a of the least-squares line y ≈ a ln s + b over the checkpoints s in [t/10, t]
    (NaN where the curve does not reach a decade back or has fewer than 3 points there)."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    out = np.full(len(xa), np.nan)
    for k, t in enumerate(xa):
        lo = t / 10 * (1 - 1e-9)
        on = (xa >= lo) & (xa <= t)
        if xa[0] <= t / 10 * (1 + 1e-9) and on.sum() >= 3:
            out[k] = np.polyfit(np.log(xa[on]), ya[on], 1)[0]
    return out


def soudry_series(Z: np.ndarray, ws: np.ndarray, x) -> dict:
    """The evidence of `log_rate` for iterates ws at steps x: K, ‖ρ‖, the decade slope a of ‖w‖ against ln t and the
    relative gap |a·γ2 − 1|, with γ2 and ŵ = ŵ2/γ2 from the certified ℓ2 oracle."""
    ref = max_margin(Z, "l2")
    g, u = ref.margin, ref.direction
    xa = np.asarray(x, float)
    nw = np.linalg.norm(ws, axis=1)
    cos = ws @ u / np.maximum(nw, 1e-300)
    a = decade_slopes(xa, nw)
    rho = np.linalg.norm(ws - np.log(xa)[:, None] * (u / g), axis=1)
    return {"gamma_l2": g, "K": (1.0 - cos) * nw ** 2, "rho": rho, "a": a, "slope_gap": np.abs(a * g - 1.0),
            "norm": nw, "gap": 1.0 - cos}


def _finite(x, y):
    ok = np.isfinite(y)
    return np.asarray(x, float)[ok], np.asarray(y, float)[ok]


def _claim_data(p):
    """Non-degenerate discriminating data (module docstring); with `precond_cos_max` only data on which precond-gd's
    limit has cos ≤ precond_cos_max to ŵ2 (strategies.linear.discriminating_precond: the same-speed wrong-limit
    controls)."""
    data = S.nondegenerate(S.data(p.get("dataset", "gr"), discriminate=True, **_size_kw(p)),
                           float(p["slack_min"]), float(p["dual_min"]), float(p.get("rate_min", 0.0)))
    if "precond_cos_max" in p:
        data = S.discriminating_precond(data, float(p["precond_cos_max"]))
    return data


HALVES = ("K", "rho", "slope", "norm", "approach")


def soudry_decision(x, ev: dict, tol: dict, final: bool, halves=HALVES[:3]):
    """rules.all_of over the chosen halves of the module docstring (`norm`: ‖w‖ → ∞, rules.judge_gap on 1/‖w‖ with
    no bound: falling by ≥ norm_drop over the last decade; a plateau — a frozen run — contradicts at the largest
    horizon)."""
    decades = tol["decades"]
    parts = {}
    for h in halves:
        if h == "K":
            parts[h] = judge_invariant(x, ev["K"], floor=FLOOR * float(ev["norm"][-1]) ** 2, decades=decades,
                                       rise_max=tol["k_rise_max"])
        elif h == "rho":
            parts[h] = judge_invariant(x, ev["rho"], floor=FLOOR, decades=decades, rise_max=tol["rho_rise_max"])
        elif h == "slope":
            xs, sg = _finite(x, ev["slope_gap"])
            parts[h] = judge_gap(xs, sg, tol["slope_gap_max"], decades=decades, min_drop=tol["trend_drop"],
                                 final=final, floor=tol["slope_gap_floor"])
        elif h == "norm":
            parts[h] = judge_gap(x, 1.0 / np.maximum(ev["norm"], 1e-300), math.inf, decades=decades,
                                 min_drop=tol["norm_drop"], final=final)
        elif h == "approach":   # 1 − cos(w, ŵ2) keeps falling (≈ 1/ln²t); a limit elsewhere is a plateau
            parts[h] = judge_gap(x, np.maximum(ev["gap"], 0.0), math.inf, decades=decades,
                                 min_drop=tol["approach_drop"], final=final)
        else:
            raise IbverifyError(f"unknown half {h!r}; use {', '.join(HALVES)}")
    return all_of(parts), parts


def _scaled(first, u: float):
    """A first horizon in the same units as the example's steps (steps / u: every example covers the same η·t)."""
    return None if first is None else float(first) / u


def log_rate(ctx: CheckContext) -> Outcome:
    p = ctx.params
    halves = tuple(p.get("halves", HALVES[:3]))
    need = {"K": ("k_rise_max",), "rho": ("rho_rise_max",), "slope": ("slope_gap_max", "slope_gap_floor", "trend_drop"),
            "norm": ("norm_drop",), "approach": ("approach_drop",)}
    tol = {k: ctx.tol(k) for h in halves for k in need.get(h, ())}
    tol["decades"] = float(p.get("decades", 2.0))
    data = _claim_data(p)
    if "beta2_range" in p:   # Adam: β2 drawn, β1 = v·min(β2, beta1_max)
        bet = st.tuples(st.floats(*p["beta2_range"]), st.floats(0.0, 1.0)).map(
            lambda b: (b[1] * min(b[0], float(p.get("beta1_max", 1.0))), b[0]))
    else:
        bet = st.just(None)
    if p.get("order", "cyclic") != "cyclic":   # SGD: the sample order's seed drawn per example
        order_seed = st.integers(0, 2 ** 31 - 1)
    else:
        order_seed = st.just(None)   # draws nothing: the examples of the cyclic claims are unchanged
    smooth = SMOOTHNESS[p.get("smoothness", "mean")]
    strat = st.tuples(data, st.floats(*p["lr_fraction"]), bet, order_seed)
    per_decade = int(p.get("checkpoints_per_decade", 10))
    store = store_of(ctx)

    def evaluate(ex) -> Example:
        cert, u, bet, oseed = ex
        Z = cert.dataset.Z
        n, d = Z.shape
        beta = smooth(Z)
        lr = u * 2.0 / beta * float(p.get("lr_eps", 1.0))
        over = {"lr": lr}
        if p.get("full_batch"):
            over["batch_size"] = n
        if bet is not None:
            over["beta1"], over["beta2"] = bet
        if oseed is not None:
            over["seed"] = oseed
        spec = OptimizerSpec.from_params(p, **over).resolved(n)
        scale = f"·{p['lr_eps']:g}" if "lr_eps" in p else ""
        desc = f"n={n} d={d} η={u:.2f}·2/β{scale}={lr:.3g} {spec.name}" + (
            f" β1={bet[0]:.3g} β2={bet[1]:.4g} ε={spec.eps:g}" if bet is not None else "") + (
            f" batch {spec.batch_size} {spec.order} (seed {oseed})" if oseed is not None else "")

        def at(T: int, final: bool) -> Example:
            r = store.run(settings.vector(Z, spec, T, checkpoints=int(per_decade * np.log10(T)) + 1),
                          progress=step_progress(ctx, desc))
            x = r.checkpoints.astype(float)
            ev = soudry_series(Z, r.ws, x)
            dec, parts = soudry_decision(x, ev, tol, final, halves)
            xs, sg = _finite(x, ev["slope_gap"])
            k0 = np.flatnonzero(x >= x[-1] / 10 * (1 - 1e-9))
            curves = {"K": (x.tolist(), np.maximum(ev["K"], 1e-18).tolist()),
                      "rho": (x.tolist(), ev["rho"].tolist()),
                      "slope_gap": (xs.tolist(), np.maximum(sg, 1e-18).tolist())}
            a_last = float(ev["a"][-1])
            figs = {"K": float(ev["K"][-1]), "K_decade_ratio": float(ev["K"][-1] / ev["K"][k0[0]]),
                    "rho": float(ev["rho"][-1]), "rho_decade_ratio": float(ev["rho"][-1] / ev["rho"][k0[0]]),
                    "a_gamma": a_last * ev["gamma_l2"], "slope_gap": float(abs(a_last * ev["gamma_l2"] - 1)),
                    "one_minus_cos": float(ev["gap"][-1]), "gamma_l2": ev["gamma_l2"], "lr": lr,
                    "crossing": (parts["slope"].fit.crossing if "slope" in parts and parts["slope"].fit
                                 and parts["slope"].fit.crossing else float("nan"))}
            return Example(True, figs, curves, "" if dec.word == SUPPORTED else dec.reason, desc,
                           {"data": repr(cert), "lr": lr, "lr_fraction": u, "steps": T, "order_seed": oseed,
                            "halves": {k: v.word for k, v in parts.items()}}, decision=dec.word)

        steps = int(round(float(p["steps"]) / u))   # every example covers the same η·t
        return sequential(at, steps, steps * 10 ** int(p.get("extensions", 1)),
                          first=_scaled(p.get("first_horizon"), u))

    res = run_property(ctx, strat, evaluate)
    exs = res.examples
    counts = ", ".join(f"{v} {k}" for k, v in res.counts.items() if v)
    gaps = [e.figures["slope_gap"] for e in exs]
    need = f" (need |a·γ2 − 1| ≤ {tol['slope_gap_max']:g}, falling)" if "slope" in halves else " (not judged)"
    fig = (f"{counts}; halves {', '.join(halves)}; a·γ2 = " + ", ".join(f"{e.figures['a_gamma']:.4g}" for e in exs)
           + need + "; K ×"
           + ", ".join(f"{e.figures['K_decade_ratio']:.3g}" for e in exs) + " over the last decade")
    if res.failing is not None:
        fig = f"counterexample: {res.failing.reason} ({res.failing.description})"
    series = [Series(e.description, *e.curves[k], ylabel=lab, group=k, log_y=k != "rho")
              for e in exs[:12] for k, lab in (("K", "K = (1 − cos(w, ŵ2))·‖w‖²"), ("rho", "‖ρ(t)‖ = ‖w − ŵ ln t‖"),
                                               ("slope_gap", "|a·γ2 − 1|, a = d‖w‖/d ln t over a decade"))]
    table = [{"example": e.description, "decision": e.word, "horizon (steps)": e.inputs["steps"],
              "a·γ2": e.figures["a_gamma"], "K": e.figures["K"], "K ratio (last decade)": e.figures["K_decade_ratio"],
              "‖ρ‖": e.figures["rho"], "‖ρ‖ ratio (last decade)": e.figures["rho_decade_ratio"],
              "1 − cos": e.figures["one_minus_cos"], "halves": e.inputs["halves"], "why not": e.reason} for e in exs]
    return Outcome(holds=res.holds, inconclusive=res.undecided, decisions=res.counts, figure=fig,
                   figures={"max_slope_gap": max(gaps), "min_slope_gap": min(gaps),
                            "max_K_decade_ratio": max(e.figures["K_decade_ratio"] for e in exs)},
                   series=series, table=table, examples=len(exs),
                   details=res.failing.reason if res.failing else "",
                   counterexample=(dict(res.failing.inputs, reason=res.failing.reason) if res.failing else None))


# ------------------------------------------------------------------ Gunasekar et al. 2018: Adagrad's limit moves

def adagrad_init(ctx: CheckContext) -> Outcome:
    """Finding (Gunasekar, Lee, Soudry, Srebro 2018, §3.3): diagonal Adagrad's limit direction depends on the
    initialization and the step size. For each dataset (params data_seeds, n, d), diagonal Adagrad (table row `adagrad`,
    ε = 0, constant step lr) runs on the linear model (block engine, sum loss) from θ0 = 0 and from
    θ0 = init_scale·N(0, I)
    (init_seeds), at each step size of `lrs`, for `steps` steps. Reported per run: the normalized margins of w_T in
    ℓ1, ℓ2 and ℓ∞ relative to each certified max margin γ_p (1 = that geometry's max margin), at T and T/10; and per
    dataset the spread (max − min over the runs) of each, and the smallest cosine between two runs' w_T. No pass/fail:
    a spread that persists from T/10 to T is the dependence the source describes (Adagrad's conditioner converges to
    a diagonal D fixed early, and the late dynamics are GD in the metric of D, whose max-margin direction depends on
    D). The data are recipes.linear.gaussian_l1_data (data source gaussian-l1), the runs recipes.linear.adagrad."""
    p = ctx.params
    store = store_of(ctx)
    steps = int(p["steps"])
    rows, series, spreads, cosines = [], [], {g: [] for g in ("l1", "l2", "linf")}, []
    for ds in p["data_seeds"]:
        data = gaussian_l1_data(int(p["n"]), int(p["d"]), int(ds))
        Z = store.data(data).Z
        n, d = Z.shape
        gam = {g: max_margin(Z, g).margin for g in ("l1", "l2", "linf")}
        finals = []
        for lr in p["lrs"]:
            for init in [None, *p["init_seeds"]]:
                w0 = (np.zeros(d) if init is None
                      else float(p["init_scale"]) * np.random.default_rng(int(init)).standard_normal(d))
                ctx.progress(f"data {ds}: lr {lr}, init {init}")
                r = store.run(adagrad(data, lr, steps, w0), warn=False)
                ws = np.array([th["w"] for th in r.thetas])
                rel = {g: [normalized_margin(Z, w, g) / gam[g] for w in ws] for g in gam}
                finals.append(ws[-1] / np.linalg.norm(ws[-1]))
                row = {"data seed": ds, "n": n, "d": d, "lr": lr, "init": "0" if init is None else f"seed {init}"}
                for g in gam:
                    row[f"{g} margin / γ at T/10"] = float(rel[g][0])
                    row[f"{g} margin / γ at T"] = float(rel[g][1])
                rows.append(row)
        mine = rows[-len(finals):]
        for g in gam:
            vals = [r_[f"{g} margin / γ at T"] for r_ in mine]
            spreads[g].append(max(vals) - min(vals))
        F = np.array(finals)
        cosines.append(float((F @ F.T).min()))
        series.append(Series(f"data {ds}: ℓ2 margin/γ2 at T per run", list(range(1, len(mine) + 1)),
                             [r_["l2 margin / γ at T"] for r_ in mine], xlabel="run (lr × init)",
                             ylabel="ℓ2 margin / γ2", group="l2 margin per run", log_x=False, log_y=False))
    top = {g: max(v) for g, v in spreads.items()}
    return Outcome(
        holds=None,
        figure=(f"spread over {len(p['lrs'])} step sizes × {1 + len(p['init_seeds'])} inits at T = {steps:g}: ℓ1 "
                f"{top['l1']:.3f}, ℓ2 {top['l2']:.3f}, ℓ∞ {top['linf']:.3f} (relative margins); min cos between two "
                f"runs' directions {min(cosines):.4f}"),
        figures={f"spread_{g}": v for g, v in top.items()} | {"min_cos_between_runs": min(cosines)},
        series=series, table=rows, examples=len(rows))


# ------------------------------------------------------------------ Xie & Li 2024: AdamW's limit point

def box_vs_ball(Z: np.ndarray, R: float) -> float:
    """‖w_box − w_ball‖ / ‖w_box‖ of the certified (BOX) and (BALL) optima at radius R (oracles.constrained)."""
    b, c = box_logistic(Z, R), ball_logistic(Z, R)
    return float(np.linalg.norm(b.w - c.w) / np.linalg.norm(b.w))


def constrained_limit(ctx: CheckContext) -> Outcome:
    """Xie & Li (ICML 2024): full-batch AdamW with weight decay λ, if it converges, converges to a KKT point of
    min L(w) s.t. ‖w‖_∞ ≤ 1/λ; for a linear model with the logistic loss that problem is convex, so the point is its
    certified optimum w_box (oracles.constrained.box_logistic). Each example runs AdamW (table row `adamw`, full batch)
    on separable Gaussian data on which w_box and the ℓ2-ball optimum w_ball (same radius) differ by ≥ `box_ball_min`
    (relative), and judges the relative distance ‖w_t − w*‖/‖w*‖ to the target w* (params.target: "box"; the control:
    "ball") with rules.all_of over two halves: `distance`, rules.judge_gap (bound = tolerance dist_max, drop ≥
    trend_drop over the last decade; a plateau at the largest horizon contradicts), and `separation`,
    rules.judge_separation of the distance to the target against the distance to the other optimum (supported: the
    ratio < 1 and falling while the distance falls; contradicted: the other optimum at least as close with the ratio not
    falling over the window — the run approaches the rival, not the target). Extended ×10 up to `extensions` times while
    inconclusive."""
    p = ctx.params
    lam = float(p["weight_decay"])
    R = 1.0 / lam
    target = p["target"]
    if target not in ("box", "ball"):
        raise IbverifyError(f"target must be 'box' or 'ball', got {target!r}")
    bound, drop = ctx.tol("dist_max"), ctx.tol("trend_drop")
    store = store_of(ctx)

    @st.composite
    def data(draw):
        cert = draw(S.data("gaussian", **_size_kw(p)))
        hypothesis_assume(box_vs_ball(cert.dataset.Z, R) >= float(p["box_ball_min"]))
        return cert

    def evaluate(cert) -> Example:
        Z = cert.dataset.Z
        n, d = Z.shape
        opts = {"box": box_logistic(Z, R), "ball": ball_logistic(Z, R)}
        opt, rival = opts[target], {"box": "ball", "ball": "box"}[target]
        spec = OptimizerSpec.from_params(p, batch_size=n).resolved(n)
        desc = f"n={n} d={d} λ={lam:g} β1={spec.beta1:g} β2={spec.beta2:g} → {target} optimum"

        def at(T: int, final: bool) -> Example:
            r = store.run(settings.vector(Z, spec, T, checkpoints=int(p.get("checkpoints", 16))),
                          progress=step_progress(ctx, desc))
            x = r.checkpoints.astype(float)
            dist = np.linalg.norm(r.ws - opt.w, axis=1) / np.linalg.norm(opt.w)
            other = np.linalg.norm(r.ws - opts[rival].w, axis=1) / np.linalg.norm(opts[rival].w)
            decades = float(p.get("decades", 2.0))
            dec = all_of({"distance": judge_gap(x, dist, bound, decades=decades, min_drop=drop, final=final),
                          "separation": judge_separation(x, dist, {rival: other.tolist()}, decades=decades,
                                                         min_drop=drop, final=final, bound=bound)[0]})
            return Example(True, {"distance": float(dist[-1]), "loss_gap": float(
                               np.mean(np.logaddexp(0.0, -(Z @ r.ws[-1]))) - opt.loss),
                               "linf_norm_times_lambda": float(np.max(np.abs(r.ws[-1])) * lam),
                               "distance_to_rival": float(other[-1]),
                               "crossing": dec.fit.crossing if dec.fit and dec.fit.crossing else float("nan")},
                           {"distance": (x.tolist(), np.maximum(dist, 1e-18).tolist()),
                            "rival": (x.tolist(), np.maximum(other, 1e-18).tolist())},
                           "" if dec.word == SUPPORTED else dec.reason, desc,
                           {"data": repr(cert), "steps": T, "certificate": opt.certificate}, decision=dec.word)

        steps = int(p["steps"])
        return sequential(at, steps, steps * 10 ** int(p.get("extensions", 1)), first=p.get("first_horizon"))

    res = run_property(ctx, data(), evaluate)
    exs = res.examples
    counts = ", ".join(f"{v} {k}" for k, v in res.counts.items() if v)
    dists = [e.figures["distance"] for e in exs]
    fig = (f"{counts}; ‖w_T − w_{target}‖/‖w_{target}‖ = " + ", ".join(f"{v:.3g}" for v in dists)
           + f" (need ≤ {bound:g}, falling)")
    if res.failing is not None:
        fig = f"counterexample: {res.failing.reason} ({res.failing.description})"
    table = [{"example": e.description, "decision": e.word, "horizon (steps)": e.inputs["steps"],
              "distance": e.figures["distance"], "distance to the other optimum": e.figures["distance_to_rival"],
              "L(w_T) − L(w*)": e.figures["loss_gap"],
              "λ·‖w_T‖∞": e.figures["linf_norm_times_lambda"], "why not": e.reason} for e in exs]
    return Outcome(holds=res.holds, inconclusive=res.undecided, decisions=res.counts, figure=fig,
                   figures={"max_distance": max(dists), "min_distance": min(dists)},
                   series=[Series(e.description, *e.curves[k], ylabel=lab, group=k) for e in exs[:12]
                           for k, lab in (("distance", f"‖w − w_{target}‖/‖w_{target}‖"),
                                          ("rival", "relative distance to the other optimum"))],
                   table=table, examples=len(exs), details=res.failing.reason if res.failing else "",
                   counterexample=(dict(res.failing.inputs, reason=res.failing.reason) if res.failing else None))


# ------------------------------------------------------------------ Ji & Telgarsky 2020: alignment with −∇L

def neg_gradient_directions(Z: np.ndarray, ws: np.ndarray, loss: str = "logistic") -> np.ndarray:
    """Unit vectors of −∇L(w) = Σ_i |ℓ'(z_i·w)| z_i (mean or sum: the same direction) at every row of ws, computed in
    the log domain (weights e^{l_i − max l}, l_i = log|ℓ'(z_i·w)|), so a loss far below float64's range still gives
    its direction. Rows whose gradient vanishes exactly give NaN."""
    m = ws @ Z.T                                        # (checkpoints, n) margins
    if loss == "logistic":
        lw = -np.logaddexp(0.0, m)                       # log σ(−m) = log|ℓ'(m)|
    elif loss == "exponential":
        lw = -m
    else:
        raise IbverifyError(f"unknown loss {loss!r}; use logistic or exponential")
    g = np.exp(lw - lw.max(axis=1, keepdims=True)) @ Z
    nrm = np.linalg.norm(g, axis=1, keepdims=True)
    return g / np.where(nrm > 0, nrm, np.nan)


def alignment_gap(Z: np.ndarray, ws: np.ndarray, loss: str = "logistic", geometry: str = "l2") -> np.ndarray:
    """1 − ⟨w, −∇L(w)⟩/(‖w‖ ‖∇L(w)‖_*) at every row of ws. "l2": 1 − cos, computed as ‖ŵ − ĝ‖²/2 (no cancellation
    near 1); "linf": the ℓ∞/ℓ1 pairing 1 − ⟨w, −∇L⟩/(‖w‖_∞ ‖∇L‖_1) (sign descent's own geometry)."""
    gh = neg_gradient_directions(Z, ws, loss)
    if geometry == "l2":
        wh = ws / np.linalg.norm(ws, axis=1, keepdims=True)
        return 0.5 * np.sum((wh - gh) ** 2, axis=1)
    if geometry == "linf":
        return 1.0 - np.sum(ws * gh, axis=1) / (np.max(np.abs(ws), axis=1) * np.sum(np.abs(gh), axis=1))
    raise IbverifyError(f"unknown alignment geometry {geometry!r}; use l2 or linf")


def gradient_alignment(ctx: CheckContext) -> Outcome:
    """Ji & Telgarsky (NeurIPS 2020): gradient flow / GD on a homogeneous model with an exponentially tailed loss
    aligns its parameters with the negative gradient, ⟨θ, −∇L⟩/(‖θ‖‖∇L‖) → 1; here the linear model (degree 1). Each
    example draws non-degenerate discriminating GR data (as `log_rate`) and u in `lr_fraction`, runs the claim's
    optimizer at η = u·2/β (β the mean logistic loss's smoothness) for `steps`/u steps from w = 0, and judges the gap
    1 − cos(w_t, −∇L(w_t)) (params.geometry "l2"; "linf": the ℓ∞/ℓ1 pairing) by rules.judge_gap: supported when
    ≤ tolerance align_max at the horizon and falling (fitted slope over the last `decades` decades, ≥ trend_drop over
    the last decade); contradicted by a stable plateau or a rise at the largest horizon; extended ×10 up to
    `extensions` times while inconclusive."""
    p = ctx.params
    geometry = p.get("geometry", "l2")
    bound, drop = ctx.tol("align_max"), ctx.tol("trend_drop")
    decades = float(p.get("decades", 2.0))
    data = _claim_data(p)
    strat = st.tuples(data, st.floats(*p["lr_fraction"]))
    per_decade = int(p.get("checkpoints_per_decade", 10))
    store = store_of(ctx)

    def evaluate(ex) -> Example:
        cert, u = ex
        Z = cert.dataset.Z
        n, d = Z.shape
        lr = u * 2.0 / logistic_smoothness(Z)
        spec = OptimizerSpec.from_params(p, lr=lr).resolved(n)
        desc = f"n={n} d={d} η={u:.2f}·2/β={lr:.3g} {spec.name}"

        def at(T: int, final: bool) -> Example:
            r = store.run(settings.vector(Z, spec, T, checkpoints=int(per_decade * np.log10(T)) + 1),
                          progress=step_progress(ctx, desc))
            x = r.checkpoints.astype(float)
            gap = alignment_gap(Z, r.ws, spec.loss, geometry)
            dec = judge_gap(x, gap, bound, decades=decades, min_drop=drop, final=final)
            k0 = np.flatnonzero(x >= x[-1] / 10 * (1 - 1e-9))[0]
            figs = {"gap": float(gap[-1]), "gap_decade_ratio": float(gap[-1] / gap[k0]) if gap[k0] > 0 else math.nan,
                    "lr": lr, "slope": dec.fit.slope if dec.fit else math.nan,
                    "crossing": dec.fit.crossing if dec.fit and dec.fit.crossing else math.nan}
            return Example(True, figs, {"gap": (x.tolist(), np.maximum(gap, 1e-18).tolist())},
                           "" if dec.word == SUPPORTED else dec.reason, desc,
                           {"data": repr(cert), "lr": lr, "lr_fraction": u, "steps": T}, decision=dec.word)

        steps = int(round(float(p["steps"]) / u))
        return sequential(at, steps, steps * 10 ** int(p.get("extensions", 1)),
                          first=_scaled(p.get("first_horizon"), u))

    res = run_property(ctx, strat, evaluate)
    exs = res.examples
    counts = ", ".join(f"{v} {k}" for k, v in res.counts.items() if v)
    gaps = [e.figures["gap"] for e in exs]
    label = {"l2": "1 − cos(w, −∇L)", "linf": "1 − ⟨w, −∇L⟩/(‖w‖∞‖∇L‖1)"}[geometry]
    fig = (f"{counts}; {label} = " + ", ".join(f"{v:.3g}" for v in gaps) + f" (need ≤ {bound:g}, falling); ×"
           + ", ".join(f"{e.figures['gap_decade_ratio']:.3g}" for e in exs) + " over the last decade")
    if res.failing is not None:
        fig = f"counterexample: {res.failing.reason} ({res.failing.description})"
    table = [{"example": e.description, "decision": e.word, "horizon (steps)": e.inputs["steps"],
              label: e.figures["gap"], "ratio (last decade)": e.figures["gap_decade_ratio"],
              "slope": e.figures["slope"], "why not": e.reason}
             for e in exs]
    return Outcome(holds=res.holds, inconclusive=res.undecided, decisions=res.counts, figure=fig,
                   figures={"max_gap": max(gaps), "min_gap": min(gaps)},
                   series=[Series(e.description, *e.curves["gap"], ylabel=label, group="alignment") for e in exs[:12]],
                   table=table, examples=len(exs), details=res.failing.reason if res.failing else "",
                   counterexample=(dict(res.failing.inputs, reason=res.failing.reason) if res.failing else None))
