"""Checks of paper 1's closed-form step maps: symbolic (sympy) proofs plus their numeric counterparts.

    epoch_map_inc         Prop 2.5: cyclic steady state = C_inc map (sympy N = 2..4; numeric; along a run)
    epoch_map_det         Prop 2.4: Det-Adam's step → −η_t sign(∇L) on significant coordinates
    proxy_limit           Prop 4.1: β2 → 1 limit = sqrt(N)·S/√Q for every β1 (sympy limit; numeric)
    proxy_scale_invariance  §5.2: AdamProxy closed form, invariance to s → α·s (log-domain exactness)

A claim and its control call the same function; the control changes the claimed formula
(`map`/`target` = "sign", or `eps` > 0) and must be refuted.
"""

from __future__ import annotations


import numpy as np
import sympy as sp

from ..claims import CheckContext
from ..recipes import iterate_chain
from ..evidence import Outcome, Series, log_slope
from ..jsonio import plain
from ..optim import OptimizerSpec
from ..optim.backend import Float64
from ..recipes import DataRecipe, store_of
from ..recipes.paper1 import gaussian
from ..recipes.settings import vector
from ..theory import epoch_map as em
from ..theory import symbolic
from .rules import falling


def _data(p: dict) -> DataRecipe:
    """The claim's Gaussian data: `n`, `d`, `data_seed` (default 10, 50, 1)."""
    return gaussian(p.get("n", 10), p.get("d", 50), p.get("data_seed", 1))


def _eta(p: dict, t):
    return float(p.get("lr", 0.1)) * (np.asarray(t, dtype=np.float64) + 1.0) ** (-float(p.get("lr_decay", 0.5)))


def _proofs(prove, ns, **kw):
    rows, ok, failures = [], True, []
    for n in ns:
        pr = prove(int(n), **kw)
        rows.append({"part": "sympy", "N": int(n), "statement": pr.statement, "steps": len(pr.steps),
                     "proved": pr.holds})
        ok &= pr.holds
        failures += [{"N": int(n), "step": f.name, **(f.counterexample or {})} for f in pr.failures()]
    return ok, rows, failures


def _rel(a, b) -> float:
    den = max(np.abs(a).max(), np.abs(b).max())
    return float(np.abs(a - b).max() / den) if den > 0 else 0.0


def epoch_map_inc(ctx: CheckContext) -> Outcome:
    """(a) sympy: the cyclic steady state of Adam's moments gives the claimed epoch map (N = 2..4);
    (a') numeric: frozen-gradient simulation vs the map for larger N, rtol;
    (b) along an Inc-Adam run: r_ep = ‖(w_{(r+1)N} − w_{rN})/η_{rN} + map(w_{rN})‖/‖map‖ falls
        (rules.falling: ≥ trend_drop below its value one decade of epochs earlier) and ends ≤ resid_max;
        the fitted log-log slope is reported."""
    p = ctx.params
    claimed = p.get("map", "c_inc")
    emap = em.inc_epoch_map if claimed == "c_inc" else (lambda G, b1, b2: em.sign_map(G))
    rtol, drop, resid_max = ctx.tol("rtol"), ctx.tol("trend_drop"), ctx.tol("resid_max")

    ctx.progress("sympy proofs")
    sym_ok, table, fails = _proofs(symbolic.prove_epoch_map_inc, p.get("symbolic_n", [2, 3, 4]), claimed=claimed)

    ctx.progress("frozen-gradient simulations")
    num_err, rng = 0.0, np.random.default_rng(ctx.seed)
    for n in p.get("numeric_n", [5, 8, 16, 32]):
        G = rng.standard_normal((int(n), 4))
        for b1, b2 in p.get("numeric_betas", [[0.9, 0.95], [0.5, 0.6], [0.9, 0.999], [0.0, 0.0]]):
            e = _rel(em.frozen_cyclic_adam(G, b1, b2), emap(G, b1, b2))
            num_err = max(num_err, e)
            table.append({"part": "numeric", "N": int(n), "beta1": b1, "beta2": b2, "rel_error": e})
    num_ok = num_err <= rtol

    store = store_of(ctx)
    data = _data(p)
    Z = store.data(data).Z
    N = Z.shape[0]
    R = np.unique(np.geomspace(p.get("first_epoch", 10), int(p["epochs"]), int(p.get("points", 9))).astype(np.int64))
    cps = np.unique(np.r_[R * N, (R + 1) * N])
    series, figures, run_ok = [], {}, True
    for b1, b2 in p.get("run_betas", [[0.9, 0.95], [0.5, 0.6]]):
        ctx.progress(f"Inc-Adam run β1={b1} β2={b2}")
        r = store.run(vector(data, OptimizerSpec.from_params(p, name="inc-adam", beta1=b1, beta2=b2), int(cps[-1]),
                             checkpoints=cps))
        W = dict(zip(r.checkpoints.tolist(), r.ws, strict=False))
        res = []
        for ep in R:
            w0 = W[int(ep * N)]
            pred = (em.inc_epoch_map_at(Z, w0, b1, b2) if claimed == "c_inc"
                    else em.sign_map(em.per_sample_gradients(Z, w0)))
            disp = (W[int((ep + 1) * N)] - w0) / _eta(p, ep * N)
            res.append(float(np.linalg.norm(disp + pred) / np.linalg.norm(pred)))
        slope = log_slope(R.tolist(), res)
        ok = falling(R, res, 1.0, drop) and res[-1] <= resid_max
        run_ok &= ok
        tag = f"b{b1}_{b2}"
        figures[f"final_residual_{tag}"], figures[f"slope_{tag}"] = res[-1], slope
        series.append(Series(f"β1={b1}, β2={b2}", R.tolist(), res, xlabel="epoch r",
                             ylabel="‖Δw/η_rN + map‖ / ‖map‖", group="run residual"))
    figures.update({"max_numeric_rel_error": num_err, "symbolic_proved": float(sym_ok)})
    worst = max(v for k, v in figures.items() if k.startswith("final_residual"))
    return Outcome(
        holds=bool(sym_ok and num_ok and run_ok),
        figure=(f"sympy {'proved' if sym_ok else 'REFUTED'} (N={p.get('symbolic_n', [2, 3, 4])}); numeric rel err "
                f"{num_err:.1e} (≤ {rtol:g}); run residual {worst:.2g} at {R[-1]} epochs"),
        figures=figures, series=series, table=plain(table), examples=len(table),
        details=f"claimed map: {claimed}; run data N={N}, d={Z.shape[1]}",
        counterexample=plain(fails[0]) if fails else None)


def epoch_map_det(ctx: CheckContext) -> Outcome:
    """r_t = max over significant k (|∇L_k| ≥ τ‖∇L‖∞) of |(w_{t+1} − w_t)/η_t + sign(∇L(w_t))_k|,
    at log-spaced t (set to 0 when below the float64 rounding bound 8·ulp·‖w‖∞/η_t); holds when r_t
    falls (rules.falling: ≥ trend_drop below its value one decade earlier) and ends ≤ resid_max, for
    every (β1, β2[, horizon]) listed (the residual decays like η_t/(1 − β2), so β2 near 1 needs a longer horizon)."""
    p = ctx.params
    tau, resid_max = ctx.tol("significance"), ctx.tol("resid_max")
    store = store_of(ctx)
    data = _data(p)
    Z = store.data(data).Z
    series, figures, table, holds = [], {}, [], True
    for b1, b2, *horizon in p.get("betas", [[0.9, 0.95]]):  # optional third entry: this pair's horizon
        T = np.unique(np.geomspace(10, int(horizon[0] if horizon else p["steps"]),
                                   int(p.get("points", 11))).astype(np.int64))
        cps = np.unique(np.r_[T, T + 1])
        ctx.progress(f"{p['optimizer']} β1={b1} β2={b2}")
        r = store.run(vector(data, OptimizerSpec.from_params(p, beta1=b1, beta2=b2), int(cps[-1]), checkpoints=cps))
        W = dict(zip(r.checkpoints.tolist(), r.ws, strict=False))
        res = []
        for t in T:
            g = em.per_sample_gradients(Z, W[int(t)]).sum(axis=0)  # ∝ ∇L (positive scale)
            sig = np.abs(g) >= tau * np.abs(g).max()
            u = (W[int(t) + 1] - W[int(t)]) / _eta(p, t)
            r_t = float(np.abs(u + np.sign(g))[sig].max())
            # float64 rounding of (w_{t+1} − w_t)/η_t: below this bound the residual is zero
            rounding = 8 * np.finfo(float).eps * np.abs(W[int(t) + 1]).max() / _eta(p, t)
            res.append(0.0 if r_t <= rounding else r_t)
        res_a = np.array(res)
        falls = falling(T, res_a, 1.0, ctx.tol("trend_drop"))  # a zero residual (≤ 1e-12) counts as reached
        ok = falls and res_a[-1] <= resid_max
        holds &= ok
        figures[f"final_residual_b{b1}_{b2}"] = res_a[-1]
        table.append({"beta1": b1, "beta2": b2, "horizon": int(T[-1]), "final residual": res_a[-1],
                      "falling": falls, "ok": ok})
        series.append(Series(f"β1={b1}, β2={b2}", T.tolist(), [max(x, 1e-16) for x in res], xlabel="step t",
                             ylabel="max_k |Δw/η_t + sign(∇L)|", group="residual"))
    worst = max(table, key=lambda row: row["final residual"])
    return Outcome(holds=bool(holds),
                   figure=(f"{p['optimizer']}: max residual {worst['final residual']:.3g} (β = {worst['beta1']}, "
                           f"{worst['beta2']}, t = {worst['horizon']}; need ≤ {resid_max:g}, falling)"),
                   figures=figures, series=series, table=plain(table), examples=len(table),
                   details=f"significant coordinates: |∇L_k| ≥ {tau:g}·‖∇L‖∞")


def proxy_limit(ctx: CheckContext) -> Outcome:
    """sympy.limit of the C_inc map as β2 → 1⁻ equals the claimed closed form (N = 2..4), and
    numerically inc_epoch_map(β2 = 1 − δ) vs the closed form to rtol for every β1 listed."""
    p = ctx.params
    target = p.get("target", "proxy")
    closed_sym = None if target == "proxy" else (lambda S, Q, n: n * sp.sign(S))
    closed_num = em.proxy_map if target == "proxy" else em.sign_map
    rtol = ctx.tol("rtol")
    sym_ok, table, fails = _proofs(symbolic.prove_proxy_limit, p.get("symbolic_n", [2, 3, 4]), target=closed_sym)
    rng = np.random.default_rng(ctx.seed)
    delta = float(p.get("one_minus_beta2", 1e-7))
    err, series = 0.0, []
    for n in p.get("numeric_n", [2, 5, 10]):
        G = rng.standard_normal((int(n), 5))
        for b1 in p.get("beta1s", [0.0, 0.5, 0.9, 0.99]):
            e = _rel(em.inc_epoch_map(G, b1, 1 - delta), closed_num(G))
            err = max(err, e)
            table.append({"part": "numeric", "N": int(n), "beta1": b1, "1-beta2": delta, "rel_error": e})
        ds = np.logspace(-1, -7, 7)
        series.append(Series(f"N={n}, β1=0.9", ds.tolist(),
                             [max(_rel(em.inc_epoch_map(G, 0.9, 1 - x), closed_num(G)), 1e-17) for x in ds],
                             xlabel="1 − β2", ylabel="relative error to closed form", group="β2 → 1"))
    return Outcome(holds=bool(sym_ok and err <= rtol),
                   figure=(f"sympy limit {'=' if sym_ok else '≠'} closed form ({target}); numeric rel err {err:.2e} "
                           f"at 1−β2 = {delta:g} (need ≤ {rtol:g})"),
                   figures={"max_numeric_rel_error": err, "symbolic_proved": float(sym_ok)},
                   series=series, table=plain(table), examples=len(table),
                   counterexample=plain(fails[0]) if fails else None)


def proxy_scale_invariance(ctx: CheckContext) -> Outcome:
    """AdamProxy −∇L ⊘ (sqrt(Σ∇L_i²) + ε): (1) sympy: invariant to s → α·s and equal to
    (1/N)(Σc_i z_i)/M(c) (N = 2..4); (2) numeric: the log-domain (rescaled) step equals the exact
    mpmath step at margins up to ~10³ (where σ underflows in float64), rtol; (3) for ε = 0 the
    engine's reference chain takes exactly that step (rtol)."""
    p = ctx.params
    eps = float(p.get("eps", 0.0))
    rtol = ctx.tol("rtol")
    sym_ok, table, fails = _proofs(symbolic.prove_proxy_closed_form, p.get("symbolic_n", [2, 3, 4]),
                                   eps=sp.nsimplify(eps))
    Z = store_of(ctx).data(_data(p)).Z
    w0 = np.linalg.lstsq(Z, np.ones(Z.shape[0]), rcond=None)[0]  # margins exactly 1
    scales = [float(s) for s in p.get("scales", [1, 10, 100, 1000])]
    errs = []
    for s in scales:
        e = _rel(em.proxy_step(Z, s * w0, eps), em.proxy_step_mp(Z, s * w0, eps))
        errs.append(e)
        table.append({"part": "log-domain vs mpmath", "min margin": s, "rel_error": e})
    num_ok = max(errs) <= rtol
    eng_err = float("nan")
    if eps == 0.0:
        spec = OptimizerSpec.from_params(p, name="adam-proxy").resolved(Z.shape[0])
        eng_err, w_prev = 0.0, np.zeros(Z.shape[1])
        for t, w, _, _ in iterate_chain(Z, spec, Float64()):
            pred = w_prev + _eta({"lr": spec.lr, "lr_decay": spec.lr_decay}, t - 1) * em.proxy_step(Z, w_prev)
            eng_err = max(eng_err, _rel(w - w_prev, pred - w_prev))
            w_prev = w
            if t >= int(p.get("engine_steps", 200)):
                break
        table.append({"part": "engine step vs closed form", "steps": int(p.get("engine_steps", 200)),
                      "rel_error": eng_err})
        num_ok &= eng_err <= rtol
    return Outcome(
        holds=bool(sym_ok and num_ok),
        figure=(f"sympy invariance {'proved' if sym_ok else 'REFUTED'} (ε = {eps:g}); log-domain vs exact: "
                f"max rel err {max(errs):.2g} up to margin {scales[-1]:g} (need ≤ {rtol:g})"),
        figures={"max_logdomain_rel_error": max(errs), "engine_step_rel_error": eng_err,
                 "symbolic_proved": float(sym_ok)},
        series=[Series("log-domain vs mpmath", scales, [max(e, 1e-17) for e in errs], xlabel="min margin",
                       ylabel="relative error", group="exactness")],
        table=plain(table), examples=len(table), counterexample=plain(fails[0]) if fails else None)
