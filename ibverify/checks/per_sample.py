"""Checks of paper 1's direction claims for linear models (Inc-Adam, Det-Adam, Signum).

`direction_converges` is one property over generated datasets. Data always come from
`strategies.data(kind, discriminate=True)`: ŵ2 is ≥ 10 % below γ∞ in ℓ∞ margin and every direction
within 3 % of γ∞ has cos ≤ 0.99 to ŵ2, so no run can pass an ℓ2 check and an ℓ∞ check at once.
The optimizer runs and the gap to a target geometry is measured at log-spaced checkpoints:
    target l2:    gap = 1 − cos(w_t, ŵ2)                      close: cos ≥ cos_min at the horizon
    target linf:  gap = (γ∞ − min_i z_i·w_t/‖w_t‖_∞) / γ∞     close: gap ≤ gap_max at the horizon
    target l1:    gap = (γ1 − min_i z_i·w_t/‖w_t‖_1) / γ1      close: gap ≤ gap_max (data: strategies.discriminating_l1
                  with params discriminate = "l1", so that ŵ2 is ≥ 10 % short of γ1)
and the trend half (rules.py, one implementation; fits over ≥ 3 checkpoints spanning ≥ 2 decades) too. Each
example is three-valued (decide_direction):
    criterion "falling"   (default) rules.judge_gap(gap, bound, min_drop = tolerance trend_drop): supported when
                          close and falling, contradicted by a stable plateau at the cap, else inconclusive
    criterion "invariant" (l2 only)  K_t = (1 − cos(w_t, ŵ2))·‖w_t‖² must settle: rules.judge_invariant (settled:
                          last decade ≤ 1 + k_rise_max; contradicted: K rising ≥ 2× per decade over two decades),
                          and ‖w‖² grows by ≥ tolerance w2_growth_min per decade (rules.falling of 1/‖w‖²).
                          If w_t = r_t ŵ2 + ξ_t
                          with a bounded offset ξ_t, then 1 − cos ≈ ‖ξ⊥‖²/(2 r_t²) and K → ‖ξ⊥‖²/2: a settled
                          K with ‖w_t‖ → ∞ is directional convergence at rate 1/‖w‖², and it survives the
                          small-β2 transient in which the gap first rises while the support margins build
                          their offset Δ* ≈ ((N−1)/2)·ln(1/β2) (measured; K then jumps and settles again).
A claim and its control call this same function; only the optimizer (or the target) and the
expectation differ. An inconclusive example is extended ×10 (epochs) at most `extensions` times (default 1).
`refuted_by` = "trend" | "closeness" (controls) asserts which half must decide: "trend": the check raises if
closeness fails on any example; "closeness": it raises unless some example has a falling gap that is not yet close
(the control would not test that half). Closeness alone never contradicts: a falling
gap above the bound is "not yet", so the closeness control expects "inconclusive".
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..errors import IbverifyError
from ..claims import CheckContext
from ..strategies import linear as S
from ..strategies import scaled as SC
from ..recipes import Recipe, RunStore, settings, store_of
from ..recipes.linear import checkpoint_identity, gr_data
from ..recipes import iterate_chain
from ..evidence import Outcome, Series, beta_text
from ..optim import OptimizerSpec, info
from ..optim.backend import Float64
from ..optim.transforms import precond_diagonal
from ..oracles import max_margin, normalized_margin
from .prop import Example, run_property, sequential, step_progress
from .rules import (CONTRADICTED, FLAT, FLOOR, INCONCLUSIVE, SUPPORTED, Decision, closeness, falling, judge_gap,
                    judge_invariant, judge_rate_invariant, value_before, window_fit)


def beta2_strategy(lo: float, hi: float, scale: str = "linear"):
    """β2 ∈ [lo, hi]; scale "log" draws log-uniformly in β2 on [lo, ½] or in 1 − β2 on [1 − hi, ½]
    (so both ends of 0 < β2 < 1 are sampled, e.g. 1e-6 and 0.9999)."""
    if scale != "log":
        return st.floats(lo, hi)
    low = st.floats(np.log10(lo), np.log10(0.5)).map(lambda u: 10.0 ** u)
    high = st.floats(np.log10(1 - hi), np.log10(0.5)).map(lambda u: 1.0 - 10.0 ** u)
    return st.one_of(low, high)


def _strategy(p: dict, direction: bool = True):
    # every direction claim runs on discriminating data; the one exception is a control of the trend
    # half (dataset gr-orthogonal), whose point is data where the wrong limit is within tolerance
    if p.get("discriminate") == "l1":   # ℓ1 claims: data on which ŵ2 is measurably short of γ1 (strategies)
        data = S.discriminating_l1(S.data(p["dataset"], **_size_kw(p)))
    elif isinstance(p.get("discriminate"), str) and p["discriminate"] != "linf":   # ℓp (e.g. "l3"): discriminating_lp
        data = S.discriminating_lp(S.data(p["dataset"], **_size_kw(p)), p["discriminate"])
    else:
        data = S.data(p["dataset"], discriminate=direction and p["dataset"] != "gr-orthogonal", **_size_kw(p))
    if "coordinate_scale" in p:   # Thm 3.3's same-speed wrong-limit control: GR data with unequal coordinate scales
        data = SC.coordinate_scaled(data, float(p["coordinate_scale"]), tuple(p["limit_gap"]))
    if "beta1" in p:
        bet = st.just((p["beta1"], p.get("beta2", p["beta1"])))
    elif "beta_range" in p:  # Signum: one momentum β (stored as β1)
        bet = st.floats(*p["beta_range"]).map(lambda b: (b, b))
    else:
        lo, hi = p.get("beta2_range", (0.3, 0.999))
        bet = S.betas(beta2=beta2_strategy(lo, hi, p.get("beta2_scale", "linear")))
    loss = st.sampled_from(list(p["losses"])) if "losses" in p else st.just(p.get("loss", "logistic"))
    return st.tuples(data, bet, st.integers(1, 10**6), loss)


def _size_kw(p: dict) -> dict:
    kw = {}
    if "n" in p:
        kw["n"] = st.integers(*p["n"])
    if "d" in p:
        kw["d"] = st.integers(*p["d"])
    if "extra_dims" in p:   # gaussian data: d = n + extra
        kw["extra_dims"] = st.integers(*p["extra_dims"])
    return kw


def resumable(ctx: CheckContext, recipe: Recipe) -> dict:
    """With `resumable = true` (full tier) and the resume cache on, each run checkpoints in the claim's cache
    folder (the run store's checkpoint path, named by the recipe's key: its data, spec, horizon and checkpoints,
    so a file is only ever resumed by the run it was saved from) and a re-run of the claim continues where a
    killed one stopped. The io options for `RunStore.run(recipe, **io)`."""
    if not ctx.params.get("resumable") or ctx.cache is None:
        return {}
    return RunStore.checkpoint(ctx.cache.folder / "runs", ctx.claim.id, checkpoint_identity(recipe))


def gap_series(Z: np.ndarray, ws: np.ndarray, target: str) -> tuple[np.ndarray, dict]:
    ref = max_margin(Z, target)
    if target == "l2":
        cos = ws @ ref.direction / np.maximum(np.linalg.norm(ws, axis=1), 1e-300)
        return 1.0 - cos, {"gamma_l2": ref.margin}
    m = np.array([normalized_margin(Z, w, target) for w in ws])   # ℓ∞ / ℓ1: by margin (maximizers non-unique)
    return (ref.margin - m) / ref.margin, {f"gamma_{target}": ref.margin}


def direction_converges(ctx: CheckContext) -> Outcome:
    p = ctx.params
    target = p["target"]
    need = ctx.tol("cos_min") if target == "l2" else ctx.tol("gap_max")
    criterion = p.get("criterion", "falling")
    decades = float(p.get("trend_decades", 1.0))
    if criterion == "invariant" and target != "l2":
        raise IbverifyError("criterion 'invariant' (K = (1 − cos)·‖w‖²) is defined for target l2 only")
    refuted_by = p.get("refuted_by")
    bound = 1 - need if target == "l2" else need  # l2: 1 − cos ≤ 1 − cos_min
    store = store_of(ctx)

    def evaluate(ex) -> Example:
        cert, (b1, b2), bseed, loss = ex
        D = cert.dataset
        Z = D.Z
        b = p.get("batch_size")
        if b == "drawn":
            b = 1 + bseed % D.n
        spec = OptimizerSpec.from_params(p, batch_size=b, beta1=b1, beta2=b2, loss=loss, seed=bseed).resolved(D.n)
        per_epoch = D.n // spec.batch_size if spec.batch_size < D.n else 1
        epochs = int(p["epochs"])
        desc = f"n={D.n} d={D.d} β1={beta_text(b1)} β2={beta_text(b2)} b={spec.batch_size} {loss}"
        inputs = {"n": D.n, "d": D.d, "beta1": b1, "beta2": b2, "batch_size": spec.batch_size, "loss": loss,
                  "beta1_zero_reconstructed": b1 == 0.0, "data": repr(cert)}

        def at(E: int, final: bool) -> Example:
            steps = E * per_epoch
            recipe = settings.vector(Z, spec, steps, checkpoints=p.get("checkpoints", 24))
            r = store.run(recipe, progress=step_progress(ctx, desc), **resumable(ctx, recipe))
            gap, refs = gap_series(Z, r.ws, target)
            w2 = np.sum(r.ws * r.ws, axis=1)
            K = gap * w2
            d, close, trend = decide_direction(r.checkpoints, gap, w2, bound, criterion, decades, ctx, final)
            if refuted_by == "trend" and not close:
                raise IbverifyError(f"{ctx.claim.id}: meant to be refuted by the trend alone, "
                                    f"but closeness failed ({desc})")
            curves = {"gap": (r.checkpoints.tolist(), np.maximum(gap, 1e-18).tolist())}
            if criterion == "invariant":
                curves["K"] = (r.checkpoints.tolist(), np.maximum(K, 1e-18).tolist())
            final_gap = float(gap[-1])
            return Example(d.word != CONTRADICTED,
                           {"final_gap": final_gap, **refs, "K": float(K[-1]), "close": float(close),
                            "trend": float(trend), "stalled": r.diagnostics["stalled_steps"],
                            "crossing": d.fit.crossing if d.fit and d.fit.crossing else float("nan")},
                           curves, "" if d.word == SUPPORTED else d.reason, desc, {**inputs, "steps": steps},
                           decision=d.word)

        return sequential(at, epochs, epochs * 10 ** int(p.get("extensions", 1)), first=p.get("first_horizon"))

    res = run_property(ctx, _strategy(p), evaluate)
    out = _outcome(res, target, need)
    if refuted_by == "closeness" and not out.figures["refuted_by_closeness_only"]:
        raise IbverifyError(f"{ctx.claim.id}: meant to be kept from support by closeness alone, but no example has a "
                            "falling gap that is not yet close")
    return out


def decide_direction(x, gap, w2, bound: float, criterion: str, decades: float, ctx: CheckContext,
                     final: bool) -> tuple:
    """(rules.Decision, close, trend) of one run: criterion "falling" is rules.judge_gap on the gap; "invariant"
    needs K = gap·‖w‖² settled (rules.judge_invariant: contradicted when K rises ≥ 2× per decade over two decades
    while the gap is above the floor) and ‖w‖² growing, with the gap within `bound` for support."""
    decades = max(2.0, decades)
    close = closeness(float(gap[-1]), bound)
    if criterion != "invariant":
        d = judge_gap(x, gap, bound, decades=decades, min_drop=ctx.tol("trend_drop"), final=final)
        return d, close, bool(d.fit is not None and d.fit.slope < FLAT and falling(x, gap, 1.0, ctx.tol("trend_drop")))
    K = gap * w2
    grows = falling(x, 1.0 / np.maximum(w2, 1e-300), 1.0, 1.0 - 1.0 / ctx.tol("w2_growth_min"))
    inv = judge_invariant(x, K, floor=FLOOR * float(w2[-1]), decades=decades, rise_max=ctx.tol("k_rise_max"))
    trend = inv.word == SUPPORTED and grows
    if inv.word == CONTRADICTED:
        return Decision(CONTRADICTED, f"K = (1 − cos)·‖w‖² {inv.reason}"), close, trend
    if not grows:
        why = "‖w‖² not growing (the run froze)"
        return Decision(CONTRADICTED if final else INCONCLUSIVE, why), close, trend
    if trend and close:
        return Decision(SUPPORTED, f"K {inv.reason}, gap {float(gap[-1]):.3g} ≤ {bound:g}"), close, trend
    fit = window_fit(x, gap, bound, decades)
    return (Decision(INCONCLUSIVE, f"K {inv.reason}; gap {float(gap[-1]):.3g} vs {bound:g}"
                     + (f"; {fit.describe(bound)}" if fit else ""), fit), close, trend)


def _before(x, y, decades: float) -> float:
    v = value_before(x, y, decades)
    return float("nan") if v is None else v


def _outcome(res, target: str, need: float) -> Outcome:
    exs = res.examples
    counts = ", ".join(f"{v} {k}" for k, v in res.counts.items() if v)
    finals = np.array([e.figures["final_gap"] for e in exs])
    sub = {"linf": "∞", "l1": "1"}.get(target, target[1:])
    label = "1 − cos(w, ŵ2)" if target == "l2" else f"(γ{sub} − γ{sub}(w))/γ{sub}"
    series = [Series(f"{e.description}", *e.curves["gap"], ylabel=label, group="gap") for e in exs[:12]]
    series += [Series(f"{e.description}", *e.curves["K"], ylabel="K = (1 − cos)·‖w‖²", group="invariant K")
               for e in exs[:12] if "K" in e.curves]
    worst = exs[int(np.argmax(finals))]
    if target == "l2":
        fig = f"min cos(w, ŵ2) = {1 - finals.max():.6f} over {len(exs)} datasets ({counts}; need ≥ {need})"
        figures = {"min_cos_l2": 1 - finals.max(), "max_gap": finals.max()}
    else:
        fig = f"max ℓ{sub} margin gap = {finals.max():.3%} over {len(exs)} datasets ({counts}; need ≤ {need:.0%})"
        figures = {f"max_{target}_gap": finals.max(), f"min_{target}_gap": finals.min()}
    if res.failing is not None:
        f = res.failing
        fig = f"counterexample: {f.reason} ({f.description})"
    table = [{"example": e.description, "final gap": e.figures["final_gap"], "K": e.figures["K"],
              "close": bool(e.figures["close"]), "trend": bool(e.figures["trend"]),
              "β1 = 0 (reconstructed)": bool(e.inputs.get("beta1_zero_reconstructed")), "decision": e.word,
              "horizon (steps)": e.inputs.get("steps"), "why not": e.reason} for e in exs]
    figures["refuted_by_trend_only"] = float(sum(e.figures["close"] and not e.figures["trend"] for e in exs))
    figures["refuted_by_closeness_only"] = float(sum(e.figures["trend"] and not e.figures["close"] for e in exs))
    return Outcome(
        holds=res.holds, inconclusive=res.undecided, decisions=res.counts, figure=fig, figures=figures, series=series,
        details=(f"worst example: {worst.description}, final gap {worst.figures['final_gap']:.3g}"
                 + (f"; {res.failing.reason}" if res.failing else "")),
        examples=len(exs), table=table,
        counterexample=(dict(res.failing.inputs, reason=res.failing.reason) if res.failing else None))


def v_isotropic(ctx: CheckContext) -> Outcome:
    """Inc-Adam's second moment v_t has all coordinates equal at every step (GR data, spec §4.2).

    Runs the float64 reference chain step by step and measures max_t (max_k v_t[k] − min_k v_t[k]) /
    max_k v_t[k]; holds when it is ≤ rtol (exact up to rounding)."""
    p = ctx.params
    rtol = ctx.tol("rtol")

    def evaluate(ex) -> Example:
        cert, (b1, b2), _, loss = ex
        Z = cert.dataset.Z
        spec = OptimizerSpec.from_params({"optimizer": "inc-adam"}, beta1=b1, beta2=b2, loss=loss)
        spec = spec.resolved(cert.dataset.n)
        worst, xs, ys = 0.0, [], []
        for t, _w, _g, state in iterate_chain(Z, spec, Float64()):
            v = state[0][1]
            spread = float((v.max() - v.min()) / v.max()) if v.max() > 0 else 0.0
            worst = max(worst, spread)
            xs.append(t)
            ys.append(max(spread, 1e-18))
            if t >= p["steps"]:
                break
        return Example(worst <= rtol, {"max_spread": worst}, {"spread": (xs, ys)},
                       f"relative spread of v reached {worst:.3g} > {rtol:g}",
                       f"n={cert.dataset.n} d={cert.dataset.d} β1={beta_text(b1)} β2={beta_text(b2)}",
                       {"data": repr(cert), "beta1": b1, "beta2": b2})

    res = run_property(ctx, _strategy(p, direction=False), evaluate)
    spreads = [e.figures["max_spread"] for e in res.examples]
    return Outcome(
        holds=res.holds,
        figure=f"max relative spread of v_t over coordinates = {max(spreads):.2g} over {len(spreads)} datasets",
        figures={"max_spread": max(spreads)},
        series=[Series(e.description, *e.curves["spread"], ylabel="(max v − min v)/max v", group="spread", log_y=True)
                for e in res.examples[:8]],
        examples=len(spreads),
        details=res.failing.reason if res.failing else "",
        counterexample=(dict(res.failing.inputs, reason=res.failing.reason) if res.failing else None))


def sign_sum_closed_form(Z: np.ndarray, steps: np.ndarray, lr: float = 0.1, decay: float = 0.5) -> np.ndarray:
    """Per-sample Adam at β1 = β2 = 0, cyclic order, started at 0: every step is w ← w + η_t sign(z_i)
    (m_t = g_t, v_t = g_t², so m/√v = sign(g_t) = −sign(z_i) whatever the loss weight), hence exactly
        w_T = Σ_{t<T} η_t s_{t mod N},   s_i = sign(z_i),   η_t = lr (t+1)^(−decay).
    Returns w_T for every T in `steps` (summed per residue class in chunks)."""
    n = Z.shape[0]
    S_ = np.sign(Z)
    steps = np.asarray(steps, dtype=np.int64)
    out = np.zeros((len(steps), Z.shape[1]))
    acc = np.zeros(n)  # Σ_{t<T, t ≡ i} η_t
    start = 0
    for k, T in enumerate(steps):
        for lo in range(start, int(T), 1 << 22):
            hi = min(int(T), lo + (1 << 22))
            t = np.arange(lo, hi)
            acc += np.bincount(t % n, weights=lr * (t + 1.0) ** (-decay), minlength=n)
        start = int(T)
        out[k] = acc @ S_
    return out


def gr_beta2_zero(ctx: CheckContext) -> Outcome:
    """Finding: at β1 = β2 = 0 Inc-Adam's step is sign(g_t) = −sign(z_i) exactly, whatever the loss
    weights, so on GR data (sign z_i = s_i) the iterate is the closed form Σ_t η_t s_{t mod N}
    (sign_sum_closed_form) and its direction tends to Σ_i s_i / ‖Σ_i s_i‖, not ŵ2. The engine's β2 = 0
    run is compared with the closed form at every checkpoint (relative error; the check raises above
    `closed_form_rtol`: then the engine, not the finding, is wrong). For small β2 > 0 it still reaches
    ŵ2, slowly. Reported per β2: 1 − cos(w_t, ŵ2) and 1 − cos(w_t, Σ_i s_i)."""
    p = ctx.params
    rows, series, cf_err = [], [], 0.0
    store = store_of(ctx)
    for seed in p["data_seeds"]:
        data = gr_data(p["n"], p["d"], seed)
        Z = store.data(data).Z
        l2 = max_margin(Z, "l2").direction
        ss = np.sign(Z).sum(axis=0)
        ss = ss / np.linalg.norm(ss)
        for b2 in p["beta2s"]:
            r = store.run(settings.vector(data, OptimizerSpec.from_params({"optimizer": "inc-adam"}, beta1=0.0,
                                                                          beta2=b2), int(p["steps"]), checkpoints=12))
            dirs = r.ws / np.linalg.norm(r.ws, axis=1, keepdims=True)
            g2, gs = 1 - dirs @ l2, 1 - dirs @ ss
            row = {"seed": seed, "beta2": b2, "1 − cos(w, ŵ2)": float(g2[-1]),
                   "1 − cos(w, Σ s_i)": float(gs[-1]), "cos(ŵ2, Σ s_i)": float(l2 @ ss)}
            if b2 == 0.0:
                cf = sign_sum_closed_form(Z, r.checkpoints)
                err = float(np.max(np.linalg.norm(r.ws - cf, axis=1) / np.linalg.norm(cf, axis=1)))
                cf_err = max(cf_err, err)
                row["engine vs closed form (rel.)"] = err
                row["max margin spread"] = float(np.ptp(Z @ cf[-1]))
            rows.append(row)
            if seed == p["data_seeds"][0]:
                series.append(Series(f"β2 = {b2:g}: to ŵ2", r.checkpoints.tolist(), np.maximum(g2, 1e-18).tolist(),
                                     ylabel="1 − cos", group="gap to ŵ2"))
                series.append(Series(f"β2 = {b2:g}: to Σ s_i", r.checkpoints.tolist(),
                                     np.maximum(gs, 1e-18).tolist(), ylabel="1 − cos", group="gap to Σ s_i"))
    if cf_err > float(p.get("closed_form_rtol", 1e-9)):
        raise IbverifyError(f"engine at β1 = β2 = 0 departs from the closed form Σ η_t s_i by {cf_err:.2e} (relative)")
    zero = [r for r in rows if r["beta2"] == 0.0]
    worst_l2 = min(r["1 − cos(w, ŵ2)"] for r in zero) if zero else float("nan")
    best_ss = max(r["1 − cos(w, Σ s_i)"] for r in zero) if zero else float("nan")
    return Outcome(
        holds=None,
        figure=(f"β1 = β2 = 0: engine = closed form Σ η_t s_i to {cf_err:.1e}; 1 − cos(w, Σ s_i) ≤ {best_ss:.1e} while "
                f"1 − cos(w, ŵ2) ≥ {worst_l2:.3g} after {int(p['steps']):.0e} steps ({len(zero)} datasets)"),
        figures={"beta0_gap_signsum": best_ss, "beta0_gap_l2": worst_l2, "closed_form_rel_error": cf_err},
        series=series, table=rows, examples=len(rows))


# ---------------------------------------------------------------- Thm 5.1: Signum above the β envelope

def signum_horizon(base_steps: float, beta: float, ref: float = 0.01) -> int:
    """Steps for a run at momentum β: base_steps, ×ref/(1 − β) when 1 − β < ref (the momentum's transient lasts
    ∝ 1/(1 − β) steps: ≈ 5e4 at β = 0.99, ≈ 2e5 at 0.995, measured on GR data N ≤ 10)."""
    return int(round(float(base_steps) * max(1.0, ref / (1.0 - beta))))


def signum_curves(Z: np.ndarray, p: dict, b: int, beta: float, steps: int, seed: int = 0,
                  checkpoints: int = 31, store: RunStore | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs p["optimizer"] (signum at batch size b; the control inc-adam: β1 = β2 = β, batch 1) for `steps` steps
    (in `store`, default the process's run store); returns the checkpoints, the relative ℓ∞ gap
    (γ∞ − γ∞(w_t))/γ∞ and ‖w_t‖∞."""
    n = Z.shape[0]
    weighted = info(p["optimizer"]).name == "precond-signum"
    # precond-signum = D ⊙ (Signum on Z·D) exactly (strategies.scaled): run through Signum's compiled kernel
    D = precond_diagonal(Z.shape[1]) if weighted else np.ones(Z.shape[1])
    spec = OptimizerSpec.from_params({**p, "optimizer": "signum"} if weighted else p,
                                     batch_size=None if info(p["optimizer"]).batch == "one" else b, beta1=beta,
                                     beta2=beta, seed=seed).resolved(n)
    r = (store or RunStore.process()).run(settings.vector(Z * D if weighted else Z, spec, steps,
                                                          checkpoints=checkpoints))
    ws = r.ws * D
    gamma = max_margin(Z, "linf").margin
    gap = np.array([(gamma - normalized_margin(Z, w, "linf")) / gamma for w in ws])
    return r.checkpoints.astype(float), gap, np.max(np.abs(ws), axis=1)


def signum_decision(x, gap, scale, bound: float, tol: dict, final: bool) -> Decision:
    """rules.judge_rate_invariant on the ℓ∞ gap with scale ‖w‖∞: converging Signum has gap ∝ 1/‖w‖∞ (the invariant
    gap·‖w‖∞ settles, third round of measurements), a plateau (or a slow approach to one) makes it rise like ‖w‖∞."""
    return judge_rate_invariant(x, gap, scale, bound, rise=tol["inv_rise"], decades=tol["decades"],
                                min_drop=tol["trend_drop"], final=final, floor=tol.get("gap_floor", FLOOR))


def signum_tolerances(ctx: CheckContext) -> dict:
    """The rule's knobs from the claim: inv_rise, trend_drop and gap_floor (tolerances), decades (params, default 2)."""
    return {"inv_rise": ctx.tol("inv_rise"), "decades": float(ctx.params.get("decades", 2.0)),
            "trend_drop": ctx.tol("trend_drop"), "gap_floor": ctx.tol("gap_floor")}


def beta_envelope(m: float, c_beta: float) -> float:
    """The smallest β of the measured envelope 1 − β ≤ c_beta/m (clipped to β ≥ 0)."""
    return max(0.0, 1.0 - float(c_beta) / float(m))


def signum_beta_trend(ctx: CheckContext) -> Outcome:
    """Thm 5.1 where it applies: for each batch size b (m = N/b batches per epoch) Signum with β close enough to 1
    reaches the ℓ∞ max margin. Property over generated discriminating GR data, drawn b and β drawn log-uniformly
    in 1 − β ∈ [beta_one_minus_min, c_beta/m] (ABOVE the measured envelope 1 − β_c ≥ 0.2/m, measured in the third
    round; `beta_fixed` instead: the no-momentum control). Each example is one run at signum_horizon steps,
    judged by rules.judge_rate_invariant (gap ≤ gap_max and falling, gap·‖w‖∞ settled: supported; a plateau or
    gap·‖w‖∞ rising ≥ inv_rise× per decade over `decades` decades at the largest horizon: contradicted) and
    extended ×10 while inconclusive, at most `extensions` times (prop.sequential). The claim holds by the tally
    (rules.tally).
    The controls run the same check with optimizer inc-adam (β1 = β2 = β: it goes to ŵ2, whose ℓ∞ gap is ≥ 10 %
    on these data) and with β = 0 (per-sample SignGD)."""
    p = ctx.params
    tol = signum_tolerances(ctx)
    need = ctx.tol("gap_max")
    data = S.data(p["dataset"], discriminate=True, **_size_kw(p))
    if "weighted_gap_min" in p:   # precond-signum's control: data on which every weighted-ℓ∞ limit is off γ∞
        data = SC.weighted_linf(data, precond_diagonal, float(p["weighted_gap_min"]))
    strat = st.tuples(data, st.integers(1, 10**6), st.floats(0.0, 1.0))
    store = store_of(ctx)

    def evaluate(ex) -> Example:
        cert, bseed, u = ex
        Z = cert.dataset.Z
        n = Z.shape[0]
        b = 1 if info(p["optimizer"]).batch == "one" else (
            1 + bseed % n if p.get("batch_size", "drawn") == "drawn" else int(p["batch_size"]))
        m = n / b
        if "beta_fixed" in p:
            beta = float(p["beta_fixed"])
        else:
            hi, lo = 1.0 - beta_envelope(m, p["c_beta"]), float(p["beta_one_minus_min"])
            beta = 1.0 - float(np.exp(np.log(hi) + u * (np.log(min(lo, hi)) - np.log(hi))))
        desc = f"n={n} d={Z.shape[1]} b={b} (m={m:.3g}) β={beta:.4g}"
        base = signum_horizon(p["base_steps"], beta)

        def judge_at(T: int, final: bool) -> Example:
            ctx.progress(f"{desc}: {T:.2g} steps")
            x, gap, sc = signum_curves(Z, p, b, beta, T, bseed, store=store)
            dec = signum_decision(x, gap, sc, need, tol, final)
            inv = gap * sc
            return Example(True, {"gap": float(gap[-1]), "inv": float(inv[-1]),
                                  "inv_decade_ratio": float(inv[-1] / _before(x, inv, 1.0)), "beta": beta, "b": b,
                                  "m": m, "one_minus_beta_m": (1 - beta) * m},
                           {"gap": (x.tolist(), np.maximum(gap, 1e-18).tolist()),
                            "gap·‖w‖∞": (x.tolist(), np.maximum(inv, 1e-18).tolist())},
                           dec.reason if dec.word != SUPPORTED else "", desc,
                           {"data": repr(cert), "b": b, "beta": beta, "steps": T, "decision": dec.reason},
                           decision=dec.word)

        return sequential(judge_at, base, base * 10 ** int(p.get("extensions", 0)))

    res = run_property(ctx, strat, evaluate)
    exs = res.examples
    gaps = [e.figures["gap"] for e in exs]
    counts = ", ".join(f"{v} {k}" for k, v in res.counts.items() if v)
    fig = (f"{counts}; ℓ∞ gap at the horizon {min(gaps):.3%}–{max(gaps):.3%} (need ≤ {need:.0%}), gap·‖w‖∞ ×"
           + ", ".join(f"{e.figures['inv_decade_ratio']:.3g}" for e in exs) + " over the last decade")
    if res.failing is not None:
        fig = f"counterexample: {res.failing.reason} ({res.failing.description})"
    series = [Series(e.description, *e.curves[k], ylabel=k, group=k) for e in exs[:12] for k in ("gap", "gap·‖w‖∞")]
    table = [{"example": e.description, "decision": e.word, "horizon": e.figures.get("horizon"),
              "ℓ∞ gap": e.figures["gap"], "gap·‖w‖∞": e.figures["inv"],
              "gap·‖w‖∞ ratio over the last decade": e.figures["inv_decade_ratio"],
              "(1 − β)·m": e.figures["one_minus_beta_m"], "why": e.inputs["decision"]} for e in exs]
    ratios = [e.figures["inv_decade_ratio"] for e in exs]
    return Outcome(holds=res.holds, figure=fig, inconclusive=res.undecided, decisions=res.counts,
                   figures={"max_gap": max(gaps), "min_gap": min(gaps), "max_inv_decade_ratio": max(ratios),
                            "min_inv_decade_ratio": min(ratios), **{f"n_{k.replace(' ', '_')}": float(v)
                                                                     for k, v in res.counts.items()}},
                   series=series, table=table, examples=len(exs), details=res.failing.reason if res.failing else "",
                   counterexample=(dict(res.failing.inputs, reason=res.failing.reason) if res.failing else None))
