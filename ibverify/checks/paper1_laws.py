"""Paper 1's open laws, measured (beyond claims: findings, no pass/fail of the paper).

    gr_offset_law     Thm 3.3 at small β2: per β2, the invariant K = (1 − cos(w, ŵ2))·‖w‖² at the horizon,
                      whether it settled (rules.settled over the last decade), the transient length (first
                      checkpoint after which K stays within `settle_tol` of its final value) and the spread
                      Δ of the support vectors' margins z_i·w (i ∈ supp ŵ2) against ((N−1)/2)·ln(1/β2).
    signum_plateau_law  Thm 5.1's ε(β, m): per m = N/b and β, the late ℓ∞ gap and whether the run still falls
                      (rules.falling); β0(m) = the smallest grid β from which on every run still converges (NaN: none
                      on the grid); the fitted exponent p
                      of 1 − β0 ∝ m^(−p) (candidates: 1/m → 1, 1/m² → 2, 1/(m(m²−1)) → ≈3).
"""

from __future__ import annotations

import numpy as np

from ..claims import CheckContext
from ..data import gr
from ..data.strategies import discrimination
from ..engine import run
from ..evidence import Outcome, Series, plain
from ..optim import OptimizerSpec
from ..oracles import max_margin
from .per_sample import beta_sweep
from .rules import settled


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
            spec = OptimizerSpec("inc-adam", beta1=0.0, beta2=float(b2), lr=p.get("lr", 0.1),
                                 lr_decay=p.get("lr_decay", 0.3))
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


def signum_plateau_law(ctx: CheckContext) -> Outcome:
    p = ctx.params
    drop, floor = float(p.get("trend_drop", 0.1)), float(p.get("gap_floor", 1e-3))
    rows, series, beta0 = [], [], {}
    for seed in p["data_seeds"]:
        Z = discriminating_gr(int(p["n"]), int(p["d"]), int(seed))
        for b in p["b_values"]:
            sweep = beta_sweep(Z, {**p, "c_beta": 1e9}, int(b), 0, ctx.progress, drop, floor)
            for r in sweep:
                rows.append({"data seed": int(seed), **{k: v for k, v in r.items() if k != "curve"}})
            b0 = float("nan")  # smallest grid β from which on every run still converges
            for r in reversed(sweep):
                if not r["still falling"]:
                    break
                b0 = r["beta"]
            beta0.setdefault(int(b), []).append(b0)
            series.append(Series(f"seed {seed}, b = {b} (m = {sweep[0]['m']:g})", [r["beta"] for r in sweep],
                                 [max(r["late gap ε"], 1e-18) for r in sweep], xlabel="β", ylabel="late ℓ∞ gap ε",
                                 log_x=False, group=f"ε(β, m), data seed {seed}"))
    n = int(p["n"])
    ms = np.array([n / b for b in beta0])
    one_minus = np.array([1 - np.nanmax(v) for v in beta0.values()])  # worst dataset: the largest β0
    ok = np.isfinite(one_minus) & (one_minus > 0) & (ms > 1)
    expo = float(-np.polyfit(np.log(ms[ok]), np.log(one_minus[ok]), 1)[0]) if ok.sum() >= 2 else float("nan")
    fig = ("β0(m) (from it on every grid β converges; worst dataset): "
           + ", ".join(f"m={n / b:g}: {np.nanmax(v):g}" for b, v in beta0.items())
           + f"; 1 − β0 ∝ m^−{expo:.2f} (1/m → 1, 1/m² → 2, 1/(m(m²−1)) → ≈3)")
    figures = {"beta0_exponent": expo, **{f"beta0_m{n / b:g}": float(np.nanmax(v)) for b, v in beta0.items()}}
    return Outcome(holds=None, figure=fig, figures=figures,
                   series=series, table=plain(rows), examples=len(rows),
                   details="beyond the paper: Thm 5.1 gives no β0(m); measured on a grid (coarse: the exponent is "
                           "resolved only as finely as the β grid)")
