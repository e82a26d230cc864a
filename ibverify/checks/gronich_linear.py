"""Degree-1 cases of paper 2 with a certified optimum: for a linear model the KKT direction of (P_‖·‖) is the
convex max-margin solution, so each corollary is checked against a certificate (kkt.certified_max_margin).

Cases (`kind`):
  vector         f(x; w) = ⟨w, x⟩                       ℓ2 for MomentumGD, ℓ∞ for Signum and Adam
  matrix         f(X; W) = ⟨W, X⟩ = tr(WᵀX)            max-spectral (= spectral) for Muon, an SDP
  matrix-vector  f(X, z; W, u) = ⟨W, X⟩ + ⟨u, z⟩       hybrid max{c‖W‖_sp, ‖u‖_∞}, c = η_A/η_M, for
                                                        Muon-Signum (c = 1) and Muon-Adam

Rule per example (rules.judge_gap, three-valued): the margin gap 1 − γ(θ_t)/γ⁺ to the certified upper bound γ⁺ ≥ γ*
over the checkpoints of the last two decades: ≤ `gap_max` at the horizon and falling supports, a stable plateau at the
cap contradicts, anything else is extended ×10 at most `extensions` times (default 1); the optimum's certificate
(primal feasibility, dual feasibility, duality gap) must hold. With `rival` (a control's own-geometry optimum, data
drawn where the two optima differ) a run supported going to the rival optimum contradicts when that optimum's gap in
the judged geometry exceeds `gap_max` (the run's limit is elsewhere, not merely slow). A control judges a run against
the optimum of a wrong geometry (`judge`).
"""

from __future__ import annotations

import dataclasses
import math

from hypothesis import reject

from ..errors import IbverifyError

from ..claims import CheckContext
from ..evidence import Outcome, Series
from ..oracles import kkt
from ..recipes import DataRecipe, store_of
from ..recipes.settings import degree_one
from ..optim import info
from .. import geometry as geo
from ..strategies.network import linear_example
from ..strategies.scaled import coordinate_scale
from . import rules
from .prop import Example, run_property, sequential


def train_linear(ctx: CheckContext, ex: dict, p: dict, steps: int | None = None):
    """Train from θ = 0 to `steps` (default the tier's; `recipes.settings.degree_one`): the run store keeps it, so
    a claim and its control train each example once."""
    recipe = degree_one(ex, p, steps)
    store = store_of(ctx)
    if "input_scale" in p:   # the same-speed wrong-limit controls: a fixed diagonal preconditioner (vector kind)
        return weighted_linear(store, recipe, float(p["input_scale"]))
    r = store.run(recipe, warn=False)
    return r, store.model(recipe), store.data(recipe.data), r.optimizer


def weighted_linear(store, recipe, amplitude: float):
    """The run of `recipe` (a vector degree-1 problem, f = ⟨w, x⟩) on the inputs scaled per coordinate by
    s = strategies.scaled.coordinate_scale(d, amplitude), w mapped back (w = s ⊙ w'): the same margins on the original
    data, so exactly the optimizer preconditioned by a fixed diagonal (MomentumGD: the steepest descent of ‖w/s‖₂;
    Signum and Adam: the sign step scaled by s), at its own speed, judged on the original data."""
    data = store.data(recipe.data)
    if data.X.ndim != 2:
        raise IbverifyError("input_scale: vector degree-1 problems only")
    s = coordinate_scale(data.X.shape[1], amplitude)
    r = store.run(recipe.replace(data=DataRecipe.of_arrays(data.X * s, data.y, name="scaled")), warn=False)
    r = dataclasses.replace(r, block_thetas=[{k: v * s for k, v in th.items()} for th in r.thetas])
    return r, store.model(recipe), data, r.optimizer


def judged_geometry(name: str, opt):
    if name == "hybrid":
        return geo.Hybrid(getattr(opt.geometry, "c", 1.0))
    return geo.get(name)


def linear_certified(ctx: CheckContext) -> Outcome:
    """Margin gap to the certified optimum ≤ gap_max and falling, on every generated degree-1 example."""
    p = ctx.params
    kind, gap_max, cert_tol = p["problem"], ctx.tol("gap_max"), ctx.tol("certificate")
    min_drop = ctx.tol("min_drop")
    series, figs, lines, skipped = [], {}, [], []

    steps = int(p["steps"])
    cap = steps * 10 ** int(p.get("extensions", 1))

    def evaluate(ex: dict) -> Example:
        r, model, data, opt = train_linear(ctx, ex, p)
        G = judged_geometry(p.get("judge") or info(p["optimizer"]).geometry, opt)
        _, cert = kkt.certified_max_margin(G, model, data.X, data.y, cert_tol)
        R = alt = cert_alt = None
        if p.get("rival"):   # only data on which the judged geometry and the rival one have different optima
            R = judged_geometry(p["rival"], opt)
            alt, cert_alt = kkt.certified_max_margin(R, model, data.X, data.y, cert_tol)
            if 1 - G.margin(model, alt, data.X, data.y) / cert.upper < ctx.tol("discriminates"):
                skipped.append(str(ex))
                reject()
        seen = {}

        def at(T: int, final: bool) -> Example:
            r = train_linear(ctx, ex, p, T)[0]
            gaps = [1 - G.margin(model, th, data.X, data.y) / cert.upper for th in r.thetas]
            span = min(2.0, math.log10(r.checkpoints[-1] / r.checkpoints[0]))
            d = rules.judge_gap(r.checkpoints, gaps, gap_max, decades=span, min_drop=min_drop, final=final)
            word, why = d.word, [] if d.word == rules.SUPPORTED else [f"margin gap: {d.reason}"]
            if R is not None and word != rules.CONTRADICTED:
                # the run supported going to the rival optimum, which is beyond the bound in the judged geometry
                off = 1 - G.margin(model, alt, data.X, data.y) / cert.upper
                rg = [1 - R.margin(model, th, data.X, data.y) / cert_alt.upper for th in r.thetas]
                rd = rules.judge_gap(r.checkpoints, rg, gap_max, decades=span, min_drop=min_drop, final=final)
                if rd.word == rules.SUPPORTED and off > gap_max:
                    word = rules.CONTRADICTED
                    why.append(f"the run goes to the certified {p['rival']} optimum instead ({rd.reason}), whose "
                               f"{G.name} margin gap is {off:.3g} > {gap_max:g}")
            seen.update(r=r, gaps=gaps)
            return Example(word != rules.CONTRADICTED, {"gap": gaps[-1]}, reason="; ".join(why),
                           description=str(ex), inputs=ex, decision=word)

        e = sequential(at, steps, cap, first=p.get("first_horizon"))
        r, gaps = seen["r"], seen["gaps"]
        k = len(lines)
        series.append(Series(f"{p['optimizer']} in {G.name}: 1 − γ/γ*", r.checkpoints, gaps, ylabel="margin gap",
                             group=f"example {k}: {ex}"))
        rf = rules.rate_fit(r.checkpoints, gaps, gap_max, 1.0)
        figs.update({f"gap[{k}]": gaps[-1], f"gap_slope[{k}]": rf.slope, f"certificate_gap[{k}]": cert.gap,
                     f"optimum[{k}]": cert.upper, f"horizon[{k}]": float(r.checkpoints[-1])})
        lines.append(f"{ex}: {e.word} at T = {r.checkpoints[-1]:.2g}, gap {gaps[-1]:.3g} (γ* ∈ [{cert.lower:.6g}, "
                     f"{cert.upper:.6g}]), {rf.describe(gap_max)}" + (f" ({e.reason})" if e.reason else ""))
        return e

    res = run_property(ctx, linear_example(kind), evaluate)
    gaps = [e.figures.get("gap", float("nan")) for e in res.examples]
    judge = p.get("judge") or info(p["optimizer"]).geometry
    counts = ", ".join(f"{v} {k}" for k, v in res.counts.items() if v)
    return Outcome(holds=res.holds, inconclusive=res.undecided, decisions=res.counts,
                   figure=f"{len(gaps)} example(s) ({counts}): {p['optimizer']} margin gap to the certified {judge} "
                          f"optimum ≤ {max(gaps):.3g} at T = {int(p['steps']):.2g}"
                          + (f", extended ×10 up to {cap:.2g} while undecided" if cap > steps else "")
                          + f" (bound {gap_max:g})",
                   figures=figs, series=series, examples=len(gaps),
                   details="certificate: primal feasibility, dual feasibility, duality gap each ≤ "
                           f"{cert_tol:g} (kkt.certify)" + "".join(f" | {line}" for line in lines)
                           + (f" | not discriminating (the {p.get('rival')} optimum is within "
                              f"{ctx.tol('discriminates'):g} of the judged one), skipped: {len(skipped)}"
                              if skipped else ""),
                   counterexample=None if res.failing is None else
                   {"example": res.failing.inputs, "reason": res.failing.reason})
