"""Checks for paper 2 (Gronich & Vardi): homogeneity, dual norms, the run cache, and the findings (own-norm
ordering, Newton–Schulz Muon, ReLU, momentum tracking outside LR-MSD).

The KKT-direction claims live in gronich_nets (cross-geometry rule on generated network runs, gronich_score),
gronich_linear (degree-1 cases against certified optima) and gronich_dynamics (directional convergence, soft
margin, approximate steepest descent with R_max, momentum tracking).

All runs are full batch, float64, log frame (ibverify.optim.logframe). Runs are cached per process by their
configuration, so claims that look at the same runs (approx-steepest, momentum-tracks-gradient,
directional-convergence, own-norm-wins) train each configuration once.
"""

from __future__ import annotations

import math
import warnings

import cvxpy as cp
import numpy as np
from hypothesis import given, settings, strategies as st

from ..claims import CheckContext
from ..evidence import Outcome, Series, log_slope
from ..jsonio import plain
from ..data import netdata as datasets
from ..oracles import kkt
from .. import models
from ..engine import log_checkpoints, run
from ..engine.store import RunStore
from ..optim import OptimizerSpec, info
from ..optim.logframe import ScheduleWarning, check_schedule
from .. import geometry as geo
from ..blocks import inner
from ..geometry import analysis
from ..geometry.base import polar
from ..strategies.network import block_params, model_and_point

# ------------------------------------------------------------------------------------------- building blocks

def _data(cfg: dict, seed: int):
    kind = cfg.get("dataset", "teacher")
    n, d = cfg.get("n"), cfg.get("d", 6)
    if kind == "teacher":
        return datasets.teacher_two_layer(n or 30, d, m_teacher=cfg.get("teacher_width", 4),
                                          q=cfg.get("teacher_q", 2.0), seed=seed)
    if kind == "linear":
        return datasets.linear_separable(n or 20, d, seed=seed)
    if kind == "matrix":
        return datasets.matrix_separable(n or 20, cfg.get("rows", 4), cfg.get("cols", 3), seed=seed)
    if kind == "digits":
        return datasets.digits_even_odd(n, seed=seed)
    raise ValueError(f"unknown data kind {kind!r}")


def _model(cfg: dict, data):
    kind = cfg.get("model", "two-layer")
    d = data.X.shape[1]
    if kind == "matrix-linear":
        return models.MatrixLinear(*data.X.shape[1:])
    return models.make_model(kind, d, width=cfg.get("width", 16), q=cfg.get("q", 2.0), depth=cfg.get("depth", 2))


def run_spec(cfg: dict) -> OptimizerSpec:
    """The optimizer of a run configuration (Muon-Adam's `ratio` sets lr_vector = lr_matrix · ratio)."""
    if cfg["optimizer"] == "muon-adam" and "ratio" in cfg:
        lm = cfg.get("lr_matrix") or info("muon-adam").default("lr_matrix")
        cfg = {**cfg, "lr_matrix": lm, "lr_vector": lm * cfg["ratio"]}
    return OptimizerSpec.from_params(cfg)


def get_run(ctx: CheckContext, cfg: dict, seed: int, warn: bool = True):
    """(run, model, data, optimizer) for a configuration and seed, from the context's run store (a claim and its
    controls, also on two Dask workers, train each run once). θ0 = 0 for a degree-1 model unless zero_init is
    false, else drawn with the example's seed."""
    spec = run_spec(cfg)
    store = ctx.store or RunStore.process()
    data = _data(cfg, cfg.get("data_seed", seed))
    model = _model(cfg, data)
    init = None if model.L == 1 and cfg.get("zero_init", True) else seed
    steps = int(cfg["steps"])
    cps = log_checkpoints(steps, int(cfg.get("checkpoints", 10)), int(cfg.get("start", max(10, steps // 20))))
    r = store.extended("network-run", RunStore.key(cfg, spec, seed), RunStore.lineage(cfg, spec, seed), steps,
                       lambda prev: run(data, spec, steps, model=model, init_seed=init,
                                        init_scale=cfg.get("init_scale", 0.5), checkpoints=cps, warn=warn, extend=prev))
    return r, model, data, r.optimizer


def _sep(r) -> list[int]:
    """Indices of checkpoints at which the data are separated (q_min > 0)."""
    return [i for i, q in enumerate(r.q_min) if q > 0]


def _hyb_c(opt) -> float:
    return getattr(opt.geometry, "c", 1.0)


def _fmt(x: float) -> str:
    return f"{x:.3g}" if math.isfinite(x) else str(x)


def _tol(ctx: CheckContext, name: str, default: float | None = None) -> float:
    try:
        return ctx.tol(name)
    except KeyError:
        if default is None:
            raise
        return default


def _seeds(ctx: CheckContext) -> list[int]:
    s = ctx.params.get("seeds", 1)
    return [ctx.seed + i for i in range(s)] if isinstance(s, int) else [ctx.seed + int(i) for i in s]


# ------------------------------------------------------------------------------------------- gronich.homogeneity

def homogeneity(ctx: CheckContext) -> Outcome:
    """f(x; αθ) = α^L f(x; θ), Euler ⟨∇f, θ⟩ = L f and blockwise ⟨∇_k f, θ_k⟩ = L_k f, on hypothesis models."""
    rtol = ctx.tol("rtol")
    worst = {"scaling": 0.0, "euler": 0.0, "block_euler": 0.0, "jac_vs_vjp": 0.0}
    count = [0]
    errs: list[float] = []

    def rel(a, b):
        return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))

    @settings(max_examples=int(ctx.params.get("examples", 20)), deadline=None, database=None)
    @given(model_and_point(), st.floats(0.1, 10.0))
    def prop(mp, alpha):
        model, theta, X = mp
        count[0] += 1
        f = model.outputs(theta, X)
        fa = model.outputs({k: alpha * v for k, v in theta.items()}, X)
        e1 = rel(fa, alpha ** model.L * f)
        J = model.jac(theta, X)
        n = X.shape[0]
        eul = sum(J[k].reshape(n, -1) @ theta[k].ravel() for k in J)
        e2 = rel(eul, model.L * f)
        e3 = max(rel(J[k].reshape(n, -1) @ theta[k].ravel(), model.degrees[k] * f) for k in J)
        c = np.linspace(-1, 1, n)
        v = model.vjp(theta, X, c)
        e4 = max(rel(v[k].ravel(), J[k].reshape(n, -1).T @ c) for k in J)
        for k_, e in zip(worst, (e1, e2, e3, e4), strict=False):
            worst[k_] = max(worst[k_], e)
        errs.append(max(e1, e2, e3, e4))
        assert max(e1, e2, e3, e4) <= rtol, (model.describe(), e1, e2, e3, e4)

    cex = None
    try:
        prop()
    except AssertionError as e:
        cex = {"failure": str(e)[:500]}
    w = max(worst.values())
    return Outcome(holds=cex is None and w <= rtol, figure=f"max relative error {_fmt(w)} (rtol {rtol:g})",
                   figures={f"max_rel_err_{k}": v for k, v in worst.items()}, examples=count[0],
                   series=[_error_series(errs, "max relative error (scaling, Euler, blocks, vjp)")],
                   details="models: linear, matrix-linear, deep-linear (K=2..4), two-layer ReLU^q "
                           "(q ∈ {1, 1.5, 2, 3}); α ∈ [0.1, 10]; "
                           "also checks the batched vjp against per-sample gradients",
                   counterexample=cex)


# ------------------------------------------------------------------------------------------- gronich.dual-norms

def dual_norms(ctx: CheckContext) -> Outcome:
    """⟨LMO(g), g⟩ = −‖g‖_*, ‖LMO(g)‖ = 1, the dual-norm formula equals a cvxpy sup over the unit ball, and the
    Muon-Adam step equals η_A·(−LMO) of the hybrid norm with c = η_A/η_M."""
    rtol, rtol_solver = ctx.tol("rtol"), ctx.tol("rtol_solver")
    names = ["l2", "linf", "spectral", "msp", "hybrid"]
    worst = {"lmo_identity": 0.0, "lmo_unit": 0.0, "dual_formula_vs_solver": 0.0, "hybrid_step": 0.0}
    count = [0]
    errs: list[float] = []
    n_solver = int(ctx.params.get("solver_examples", 5))

    @settings(max_examples=int(ctx.params.get("examples", 30)), deadline=None, database=None)
    @given(st.sampled_from(names), block_params(), st.floats(0.1, 10.0))
    def prop(name, g, c):
        count[0] += 1
        if name == "spectral":
            g = {k: v for k, v in g.items() if v.ndim == 2} or {"W": np.ones((2, 2))}
            g = dict([next(iter(g.items()))])
        G = geo.get(name, c)
        if name == "hybrid" and not (any(v.ndim == 2 for v in g.values()) and any(v.ndim == 1 for v in g.values())):
            g = {**g, "W_extra": np.arange(6.0).reshape(2, 3) - 2.5, "u_extra": np.array([1.0, -2.0, 0.0])}
        ds = G.dual_norm(g)
        u = G.lmo(g)
        e1 = abs(inner(u, g) + ds) / max(ds, 1e-300)
        e2 = abs(G.norm(u) - 1.0) if ds > 0 else 0.0
        worst["lmo_identity"] = max(worst["lmo_identity"], e1)
        worst["lmo_unit"] = max(worst["lmo_unit"], e2)
        if count[0] <= n_solver and ds > 0:
            V = {k: cp.Variable(v.shape) for k, v in g.items()}
            prob = cp.Problem(cp.Maximize(sum(cp.sum(cp.multiply(V[k], g[k])) for k in g)), [G.cvx_norm(V) <= 1])
            prob.solve(solver=cp.CLARABEL)
            e3 = abs(prob.value - ds) / ds
            worst["dual_formula_vs_solver"] = max(worst["dual_formula_vs_solver"], e3)
            assert e3 <= rtol_solver, (name, "dual formula vs solver", e3)
        if name == "hybrid":
            eta_m, eta_a = 0.1, 0.1 * c
            H = geo.Hybrid(eta_a / eta_m)
            mats, vecs = H.split(g)
            step = {k: (eta_m * polar(g[k]) if k in mats else eta_a * np.sign(g[k])) for k in g}
            lm = H.lmo(g)
            e4 = max(float(np.max(np.abs(step[k] + eta_a * lm[k]))) for k in g) / max(eta_a, eta_m)
            worst["hybrid_step"] = max(worst["hybrid_step"], e4)
            assert e4 <= rtol, (name, "hybrid step", e4)
        errs.append(max(e1, e2))
        assert e1 <= rtol and e2 <= rtol, (name, e1, e2)

    cex = None
    try:
        prop()
    except AssertionError as e:
        cex = {"failure": str(e)[:500]}
    w = max(worst["lmo_identity"], worst["lmo_unit"], worst["hybrid_step"])
    return Outcome(holds=cex is None, figure=f"max LMO error {_fmt(w)}, dual formula vs solver "
                                             f"{_fmt(worst['dual_formula_vs_solver'])}",
                   figures={f"max_err_{k}": v for k, v in worst.items()}, examples=count[0],
                   series=[_error_series(errs, "|⟨LMO(g), g⟩ + ‖g‖_*| / ‖g‖_*, |‖LMO(g)‖ − 1|")],
                   details="geometries l2, linf, spectral, msp, hybrid (c ∈ [0.1, 10]) on hypothesis blocks, "
                           "including rank-deficient matrices and zero coordinates",
                   counterexample=cex)


# ------------------------------------------------------------------------------------------- run-based checks

def _cases(ctx: CheckContext) -> list[dict]:
    base = {k: v for k, v in ctx.params.items() if k not in ("cases", "seeds", "examples", "bound", "ratios")}
    base.setdefault("trend_start", 0)
    cases = ctx.params.get("cases") or [{}]
    out = [{**base, **c} for c in cases]
    if "ratios" in ctx.params:     # Muon-Adam: one case per η_A/η_M
        out = [{**c, "ratio": float(x)} for c in out for x in ctx.params["ratios"]]
    return out


def _late(r, frac: float) -> list[int]:
    T = r.checkpoints[-1]
    return [i for i, t in enumerate(r.checkpoints) if t >= frac * T]


def momentum_tracks(ctx: CheckContext) -> Outcome:
    """MSD: ‖m/‖m‖_* − g/‖g‖_*‖_* → 0; Adam: max |m̂/√v̂ − sign g| on significant coordinates → 0.
    Trend (slope < 0) always; bound (≤ track_max late) in the bound tier. The slow-decay control runs the same
    check with p well below 1 − 1/L."""
    bound = bool(ctx.params.get("bound", False))
    tmax = ctx.tol("track_max")
    figs, series, why = {}, [], []
    warn = ctx.status != "control"
    for case in _cases(ctx):
        for seed in _seeds(ctx):
            with warnings.catch_warnings():
                if not warn:
                    warnings.simplefilter("ignore", ScheduleWarning)
                r, model, data, opt = get_run(ctx, case, seed, warn=warn)
            tag = f"{case['optimizer']}/p={case['lr_decay']}/s{seed}"
            vals = r.adam_dev if case["optimizer"] == "adam" else r.track
            t_from = case.get("trend_start", 0)
            idx = [i for i in range(len(r.checkpoints)) if math.isfinite(vals[i]) and r.checkpoints[i] >= t_from]
            ts, ys = [r.checkpoints[i] for i in idx], [vals[i] for i in idx]
            series.append(Series(f"{tag} tracking residual", ts, ys, ylabel="momentum − gradient (dual norm)",
                                 group="tracking"))
            s = log_slope(ts, ys)
            late = max(vals[i] for i in _late(r, ctx.params.get("late_frac", 0.5)))
            figs[f"late_max[{tag}]"] = late
            figs[f"slope[{tag}]"] = s
            figs[f"schedule_ok[{tag}]"] = float(check_schedule(case["lr_decay"], model.L, warn=False))
            if not s < ctx.tol("slope_max"):
                why.append(f"{tag}: residual does not shrink (slope {_fmt(s)} ≥ {ctx.tol('slope_max'):g})")
            if bound and not late <= tmax:
                why.append(f"{tag}: late residual {late:.3g} > {tmax}")
    lates = [v for k, v in figs.items() if k.startswith("late_max")]
    return Outcome(holds=not why, figure=f"late tracking residual ≤ {_fmt(max(lates))}", figures=figs, series=series,
                   examples=len(lates), details="; ".join(why) or f"{'bound' if bound else 'trend'} mode: as claimed",
                   counterexample={"failures": why} if why else None)


def _ordering_table(ctx: CheckContext, datasets_: list[dict], optimizers: list[str]) -> tuple[list[dict], dict]:
    """Per dataset, seed and norm: the winner and whether every own-norm optimizer beats every other one."""
    table, figs = [], {}
    for dcfg in datasets_:
        for seed in _seeds(ctx):
            marg = {}
            for name in optimizers:
                cfg = {**{k: v for k, v in ctx.params.items() if k not in ("datasets", "optimizers", "seeds", "cases")},
                       **dcfg, "optimizer": name}
                cfg.pop("lr_overrides", None)
                cfg["lr"] = ctx.params.get("lr_overrides", {}).get(name, info(name).default("lr"))
                r, model, data, opt = get_run(ctx, cfg, seed)
                if r.q_min[-1] <= 0:
                    marg[name] = {g: float("nan") for g in ("l2", "linf", "msp")}
                else:
                    marg[name] = {g: v for g, v in analysis.margins(model, r.theta, data.X, data.y).items()
                                  if g in ("l2", "linf", "msp")}
                for g, v in marg[name].items():
                    figs[f"margin_{g}[{dcfg['dataset']}/{name}/s{seed}]"] = v
            for g in ("l2", "linf", "msp"):
                own = [o for o in optimizers if info(o).geometry == g]
                other = [o for o in optimizers if info(o).geometry != g]
                if not own or not other:
                    continue
                winner = max(optimizers, key=lambda o: marg[o][g] if math.isfinite(marg[o][g]) else -np.inf)
                ok = all(marg[a][g] > marg[b][g] for a in own for b in other)
                table.append({"data": dcfg["dataset"], "seed": seed, "norm": g, "winner": winner, "ordering_holds": ok,
                              **{o: round(marg[o][g], 6) for o in optimizers}})
    return table, figs


def _error_series(errs: list[float], label: str) -> Series:
    """Per-example errors (floored at 1e-18 for the log axis)."""
    return Series("error per generated example", list(range(1, len(errs) + 1)), [max(e, 1e-18) for e in errs],
                  xlabel="example", ylabel=label, log_x=False, log_y=True, group="errors")


def _ordering_series(table: list[dict], optimizers: list[str]) -> list[Series]:
    """One plot per (dataset, norm): each optimizer's normalized margin against the seed."""
    out = []
    for key in dict.fromkeys((r["data"], r["norm"]) for r in table):
        rows = [r for r in table if (r["data"], r["norm"]) == key]
        for o in optimizers:
            out.append(Series(o, [r["seed"] for r in rows], [r[o] for r in rows], xlabel="seed",
                              ylabel=f"normalized {key[1]} margin", log_x=False, log_y=True,
                              group=f"{key[0]}: {key[1]} margin"))
    return out


def own_norm_wins(ctx: CheckContext) -> Outcome:
    """Each optimizer reaches the largest normalized margin in its own norm among those compared (Fig. 1)."""
    optimizers = ctx.params.get("optimizers", ["momentum-gd", "signum", "adam", "muon"])
    dsets = ctx.params.get("datasets", [{"dataset": "teacher"}])
    table, figs = _ordering_table(ctx, dsets, optimizers)
    held = sum(r["ordering_holds"] for r in table)
    fails = [f"{r['data']}/s{r['seed']}/{r['norm']}: winner {r['winner']}" for r in table if not r["ordering_holds"]]
    holds = None if ctx.status == "beyond" else (held == len(table))
    return Outcome(holds=holds, figure=f"ordering holds in {held}/{len(table)} (dataset, seed, norm) cells",
                   figures={**figs, "cells_holding": held, "cells": len(table)},
                   series=_ordering_series(table, optimizers),
                   table=plain(table), examples=len(table),
                   details=("failing cells: " + "; ".join(fails)) if fails else "ordering holds in every cell",
                   counterexample={"failures": fails} if fails and holds is not None else None)


# ------------------------------------------------------------------------------------------- beyond

def newton_schulz(ctx: CheckContext) -> Outcome:
    """Finding: Muon with Keller Jordan's NS5 vs exact-polar Muon — msp KKT residual, layer balance, margins."""
    figs, series, table = {}, [], []
    for seed in _seeds(ctx):
        row = {"seed": seed}
        for name in ("muon", "muon-ns5"):
            cfg = {**{k: v for k, v in ctx.params.items() if k not in ("seeds",)}, "optimizer": name}
            r, model, data, opt = get_run(ctx, cfg, seed)
            idx = _sep(r)
            ts = [r.checkpoints[i] for i in idx]
            fen = [kkt.kkt_residual(geo.MaxSpectral(), model, r.thetas[i], data.X, data.y).fenchel for i in idx]
            series.append(Series(f"{name}/s{seed} msp KKT residual", ts, fen, ylabel="Fenchel KKT residual",
                                 group="kkt"))
            sig = analysis.signatures(model, r.theta)["msp_equal"]
            m = analysis.margins(model, r.theta, data.X, data.y)
            row.update({f"{name}_kkt": fen[-1] if fen else float("nan"), f"{name}_msp_equal": sig,
                        f"{name}_margin_msp": m["msp"], f"{name}_align_late": r.align[-1],
                        f"{name}_kkt_slope": log_slope(ts, fen)})
        table.append(row)
        figs.update({f"{k}[s{seed}]": v for k, v in row.items() if k != "seed"})
    mean = lambda k: float(np.mean([r[k] for r in table]))
    fig = (f"msp margin NS5 {mean('muon-ns5_margin_msp'):.4g} vs exact {mean('muon_margin_msp'):.4g}; "
           f"KKT residual {mean('muon-ns5_kkt'):.3g} vs {mean('muon_kkt'):.3g}; "
           f"alignment r {mean('muon-ns5_align_late'):.3f} vs {mean('muon_align_late'):.3f}")
    return Outcome(holds=None, figure=fig,
                   figures=figs, series=series, table=plain(table), examples=len(table),
                   details="NS5 in float64 (not bf16), no Nesterov and no shape factor, "
                           "so only the orthogonalization differs")


def relu(ctx: CheckContext) -> Outcome:
    """Finding: non-smooth ReLU (q = 1): the own-norm ordering and the KKT-residual trend, reported."""
    optimizers = ctx.params.get("optimizers", ["momentum-gd", "signum", "adam", "muon"])
    dsets = ctx.params.get("datasets", [{"dataset": "teacher"}])
    table, figs = _ordering_table(ctx, dsets, optimizers)
    held = sum(r["ordering_holds"] for r in table)
    return Outcome(holds=None, figure=f"ReLU: ordering holds in {held}/{len(table)} cells",
                   figures={**figs, "cells_holding": held, "cells": len(table)},
                   series=_ordering_series(table, optimizers),
                   table=plain(table), examples=len(table),
                   details="q = 1 gradients use σ'(0) := 0 (a Clarke element); outside (M1), so no pass/fail")
