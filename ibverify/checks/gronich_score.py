"""Scoring a network run in every applicable geometry, and the cross-geometry judgement.

A run (checkpoints θ_t, t = T/10^k, …, T) is scored in each geometry g ∈ {ℓ2, ℓ∞, max-spectral, hybrid(c)}:

    residual_g(t)   tolerance-free Fenchel KKT residual of (P_g) at θ_t (ibverify.oracles.kkt.fenchel_residual)
    signature_g(t)  structural KKT signature of g (analysis.signatures): ℓ2 layer balance, ℓ∞ saturation of every
                    layer, equal layer spectral norms, hybrid balance c‖W‖_msp/‖u‖_∞ − 1

Judgement of "the run goes to a KKT direction of geometry `own`" (rules.py, no private trend rule):

    falling     rules.falling(t, residual_own, decades, min_drop)
    separates   rules.separates(residual_own(T), {residual_g(T)}_g≠own, factor)
    signature   reported (value, drop, rate fit, ratio to the other geometries' signatures); at the bound tier
                ≤ `signature_max` at the horizon (rules.closeness)
    move        reported, never decides: 1 − cos(θ_first, θ_T) over the scored window, how far the direction still
                moved there (the theorem assumes it converges); given with a not-falling residual

Both residual halves must hold. Early in training every residual falls because the loss falls, so `falling`
alone cannot tell geometries apart; `separates` can. Signatures are necessary conditions only (two layers give
one number each, and a wrong geometry's signature can be small by accident), so they are compared across
geometries in the report (figures `signature_ratio`) but not used for separation. Rates: rules.rate_fit over the last
`decades` gives the extrapolated step at which the own residual/signature reaches `bound`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import geometry as geo
from ..blocks import cosine
from ..geometry import analysis
from ..oracles import kkt
from . import rules

SIGNATURE = {"l2": "l2_balance", "linf": "linf_saturate", "msp": "msp_equal", "hybrid": "hybrid_balance"}
LABEL = {"l2": "ℓ2", "linf": "ℓ∞", "msp": "max-spectral", "hybrid": "hybrid"}


def applicable(model) -> list[str]:
    """Geometries in which a model's run can be scored: hybrid needs both matrix and vector blocks."""
    shapes = list(model.blocks.values())
    out = ["l2", "linf", "msp"]
    if any(len(s) == 2 for s in shapes) and any(len(s) == 1 for s in shapes):
        out.append("hybrid")
    return out


def geometry(name: str, c: float):
    return geo.Hybrid(c) if name == "hybrid" else geo.get(name)


@dataclass
class Scores:
    steps: list[int]
    residual: dict[str, list[float]] = field(default_factory=dict)
    signature: dict[str, list[float]] = field(default_factory=dict)
    c: float = 1.0
    move: float = float("nan")    # 1 − cos(θ at steps[0], θ at steps[-1])


def score(run, model, data, c: float = 1.0, decades: float = 1.0, geometries: list[str] | None = None,
          points: int | None = 4) -> Scores:
    """Residuals and signatures in every geometry at (at most `points` of) the separated checkpoints of the last
    `decades` decades."""
    T = run.checkpoints[-1]
    idx = [i for i, t in enumerate(run.checkpoints) if t >= T / 10 ** decades * (1 - 1e-12) and run.q_min[i] > 0]
    if points and len(idx) > points:   # first, last and evenly spread (in log-step) in between
        idx = [idx[round(j * (len(idx) - 1) / (points - 1))] for j in range(points)]
    names = geometries or applicable(model)
    sc = Scores([run.checkpoints[i] for i in idx], c=c)
    if idx:
        sc.move = 1.0 - cosine(run.thetas[idx[0]], run.thetas[idx[-1]])
    for g in names:
        G = geometry(g, c)
        sc.residual[g] = [kkt.fenchel_residual(G, model, run.thetas[i], data.X, data.y) for i in idx]
        sc.signature[g] = [analysis.signatures(model, run.thetas[i], c).get(SIGNATURE[g], float("nan")) for i in idx]
    return sc


@dataclass
class Judgement:
    ok: bool
    reasons: list[str]
    figures: dict[str, float]
    rates: dict[str, rules.RateFit]


def judge(sc: Scores, own: str, *, factor: float, min_drop: float, decades: float = 1.0, bound: float = 0.05,
          signature_max: float | None = None) -> Judgement:
    """The cross-geometry rule for geometry `own` on one scored run (see the module docstring)."""
    reasons, figs, rates = [], {}, {}
    if len(sc.steps) < 2 or sc.steps[0] > sc.steps[-1] / 10 ** decades * (1 + 1e-9):
        return Judgement(False, [f"too few separated checkpoints in the last {decades:g} decade(s): {sc.steps}"],
                         figs, rates)
    for kind, curves in (("residual", sc.residual), ("signature", sc.signature)):
        y = curves[own]
        last, before = y[-1], rules.value_before(sc.steps, y, decades)
        others = {g: v[-1] for g, v in curves.items() if g != own}
        sep, rival = rules.separates(last, others, factor)
        figs[kind] = last
        figs[f"{kind}_drop"] = 1 - last / before if before else float("nan")
        figs[f"{kind}_rival"] = others.get(rival, float("nan"))
        figs[f"{kind}_ratio"] = last / others[rival] if rival and others[rival] else float("nan")
        rates[kind] = rules.rate_fit(sc.steps, y, bound, decades)
        falls = rules.falling(sc.steps, y, decades, min_drop)
        if kind == "residual":
            if not falls:
                reasons.append(f"{LABEL[own]} residual not falling: {before:.3g} → {last:.3g} over the last "
                               f"{decades:g} decade(s) (needs ≥ {min_drop:.0%} drop; direction moved "
                               f"1 − cos = {sc.move:.2g} over it)")
            if not sep:
                reasons.append(f"{LABEL[own]} residual {last:.3g} is not {factor:g}× below "
                               f"{LABEL.get(rival, rival)}'s {others.get(rival, float('nan')):.3g}")
        elif signature_max is not None and not rules.closeness(last, signature_max):
            reasons.append(f"{LABEL[own]} signature {last:.3g} > {signature_max:g} at t = {sc.steps[-1]}")
        figs[f"{kind}_falling"] = float(falls)
    figs["direction_move"] = sc.move
    return Judgement(not reasons, reasons, figs, rates)


def rate_line(rates: dict[str, rules.RateFit], bound: float) -> str:
    return "; ".join(f"{k}: {r.describe(bound)}, stability {r.stability:.2g}" for k, r in rates.items())


def median(xs) -> float:
    xs = [x for x in xs if x is not None and np.isfinite(x)]
    return float(np.median(xs)) if xs else float("nan")
