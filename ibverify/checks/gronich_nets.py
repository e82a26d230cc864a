"""Network KKT-direction claims of paper 2, judged across geometries on hypothesis-generated examples.

`network_kkt(ctx)`: for each generated example (teacher data of drawn size/dimension/seed, a two-layer ReLU²
student of drawn width, a drawn initialization) train the claim's optimizer, score the run in every applicable
geometry (gronich_score.score) and apply the three-valued cross-geometry rule (gronich_score.judge) to the geometry
`judge` (default: the optimizer's own). An inconclusive example is extended ×10 at most `extensions` times (default
1; prop.sequential). The claim holds with ≥ min_supported supported examples and none contradicted, does not
hold on a contradicted one, and is inconclusive otherwise (prop.decide). The theorems' hypotheses are checked per
example, geometry-free: positive margin and (T2) observed (gronich_score.judge_direction); an example outside them is
set aside and counted (figures `discarded`, `outside_t2`), never support, and one whose direction has not yet settled
is not supported yet. A run without positive margin is extended like an undecided one while the gradient still acts on
an unseparated sample, and set aside at once when inert samples alone hold its margin at 0 (gronich_score.unseparated).

A control names a wrong geometry in `judge` and sets `examples_from` to the claim it controls: its examples are
then drawn with that claim's hypothesis seed, so the control judges the very runs the claim judged (and reuses
them from the per-process run cache), and must be refuted.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hypothesis import reject

from ..claims import CheckContext
from ..evidence import THRESHOLD, Outcome, Series, bound_text
from ..optim import info
from ..recipes import DataRecipe, store_of
from ..recipes.settings import network as network_recipe
from ..strategies.scaled import coordinate_scale
from ..optim.table import KNOBS
from ..strategies.network import network_example
from . import gronich_score as S
from .gronich import get_run
from .prop import Example, run_property, sequential
from .rules import CONTRADICTED, DECISIONS, INCONCLUSIVE, SET_ASIDE, SUPPORTED

# (T2), the theorems' hypothesis, observed per example and geometry-free (gronich_score.judge_direction), with the
# tolerances of gronich.directional-convergence: an example whose direction is contradicted is set aside (counted),
# one whose direction is not yet shown to settle is not supported yet
T2_DIR_MAX, T2_DROP = 0.1, 0.05

RUN_PARAMS = ("model", "depth", "q", "loss", "optimizer", "steps", "init_scale", "ratio", *KNOBS)


def family_ctx(ctx: CheckContext) -> CheckContext:
    """The context whose claim id seeds hypothesis: the controlled claim's (`examples_from`) or the claim's own."""
    fam = ctx.params.get("examples_from")
    if not fam:
        return ctx
    return dataclasses.replace(ctx, claim=dataclasses.replace(ctx.claim, id=fam))


def run_example(ctx: CheckContext, ex: dict, steps: int | None = None):
    """Train (or fetch from the cache) one example to `steps` (default: the tier's); 13 log-spaced checkpoints over
    the last three decades."""
    cfg = {k: ctx.params[k] for k in RUN_PARAMS if k in ctx.params}
    cfg.update({k: v for k, v in ex.items() if k != "seed"})
    if steps is not None:
        cfg["steps"] = int(steps)
    steps = int(cfg["steps"])
    cfg["start"] = max(1, steps // 1000)          # T/1000 … T, 4 per decade: shared with the direction checks
    cfg["checkpoints"] = 13
    if "input_scale" in ctx.params:
        return weighted_run(ctx, cfg, int(ex["seed"]), float(ctx.params["input_scale"]))
    return get_run(ctx, cfg, int(ex["seed"]), warn=False)


def weighted_run(ctx: CheckContext, cfg: dict, seed: int, amplitude: float):
    """(run, model, data, optimizer) of the claim's optimizer run on the inputs scaled per coordinate by
    s = strategies.scaled.coordinate_scale(d, amplitude), its first layer mapped back (W = W'·diag(s)): the same
    outputs on the original data, so this is exactly the optimizer preconditioned by a fixed diagonal on the first
    layer's columns (MomentumGD: D = s² in the steepest-descent norm ‖W diag(1/s)‖² + ‖rest‖²; Signum/Adam: D = s on
    the sign step), at the optimizer's own speed and compiled kernel, judged on the original data. Its limit is a KKT
    direction of that weighted geometry, not of the optimizer's own (the same-speed wrong-limit controls)."""
    recipe = network_recipe(cfg, seed)
    store = store_of(ctx)
    data = store.data(recipe.data)
    s = coordinate_scale(data.X.shape[1], amplitude)
    r = store.run(recipe.replace(data=DataRecipe.of_arrays(data.X * s, data.y, name="scaled")), warn=False)
    first = "W1" if "W1" in r.thetas[0] else "W"

    def back(th):
        return None if th is None else {**th, first: th[first] * s}

    r = dataclasses.replace(r, block_thetas=[back(th) for th in r.thetas], theta0=back(r.theta0))
    return r, store.model(recipe), data, r.optimizer


def outside(r, model, data, final: bool) -> tuple[str, int] | None:
    """None when the run has a positive margin at its horizon; else (decision, inert samples) by
    gronich_score.unseparated (a run without checkpoints: set aside at the cap, extended before it)."""
    if r.q_min and r.q_min[-1] > 0:
        return None
    if not r.q_min:
        return (SET_ASIDE if final else INCONCLUSIVE), 0
    return S.unseparated(model, r.thetas[-1], data.X, data.y, final)


def example_tag(ex: dict) -> str:
    return f"n={ex['n']},d={ex['d']},m={ex['width']},data{ex['data_seed']},init{ex['seed']}"


def network_kkt(ctx: CheckContext) -> Outcome:
    """Cross-geometry KKT rule on every generated example (see the module docstring); with `cases` (a list of
    parameter overrides, e.g. several optimizers) every case must hold, each on the same generated examples."""
    cases = ctx.params.get("cases")
    if not cases:
        return _one(ctx)
    outs = [_one(dataclasses.replace(ctx, params={**ctx.params, **case})) for case in cases]
    names = [c.get("optimizer", ctx.params.get("optimizer")) for c in cases]
    undecided = [f"{n}: {o.inconclusive}" for n, o in zip(names, outs, strict=True) if o.inconclusive]
    failed = any(not o.holds and not o.inconclusive for o in outs)
    return Outcome(holds=all(o.holds for o in outs), inconclusive="" if failed else "; ".join(undecided),
                   decisions={k: sum(o.decisions.get(k, 0) for o in outs) for k in outs[0].decisions},
                   figure="; ".join(f"{n}: {o.figure}" for n, o in zip(names, outs, strict=True)),
                   figures={f"{n}:{k}": v for n, o in zip(names, outs, strict=True) for k, v in o.figures.items()},
                   series=[s for o in outs for s in o.series], examples=sum(o.examples for o in outs),
                   details=" || ".join(f"{n}: {o.details}" for n, o in zip(names, outs, strict=True)),
                   counterexample=next((o.counterexample for o in outs if o.counterexample), None))


def _one(ctx: CheckContext) -> Outcome:
    p = ctx.params
    opt_name = p["optimizer"]
    own = p.get("judge") or info(opt_name).geometry
    decades, guard, min_drop = float(p.get("decades", 2.0)), ctx.tol("guard"), ctx.tol("min_drop")
    steps = int(p["steps"])
    cap = steps * 10 ** int(p.get("extensions", 1))
    bound = float(p.get("rate_bound", 0.05))
    sig_max = ctx.tol("signature_max") if p.get("bound", False) else None
    series: list[Series] = []
    figs: dict[str, float] = {}
    lines: list[str] = []
    rejected: list[str] = []
    outside_t2: list[str] = []
    aside: list[str] = []   # both kinds, for the tally
    dir_max = float(p.get("t2_dir_max", T2_DIR_MAX))

    def judge_at(ex: dict, T: int, final: bool) -> tuple:
        r, model, data, opt = run_example(ctx, ex, T)
        out = outside(r, model, data, final)
        if out is not None:    # not separated: set aside, or extended while the gradient acts on an open sample
            return r, None, None, None, (*out, len(data.y))
        t2, _, _ = S.judge_direction(r.checkpoints, r.thetas, dir_max, T2_DROP, final)
        sc = S.score(r, model, data, getattr(opt.geometry, "c", 1.0), decades)
        j = S.judge(sc, own, guard=guard, min_drop=min_drop, decades=decades, bound=bound, signature_max=sig_max,
                    final=final, approach=S.approach(r, model, data, sc, own))
        return r, sc, j, t2, None

    def evaluate(ex: dict) -> Example:
        tag = example_tag(ex)
        seen = {}

        def at(T: int, final: bool) -> Example:
            r, sc, j, t2, unsep = judge_at(ex, T, final)
            seen.update(sc=sc, j=j, T=T, unsep=unsep)
            if j is None:    # unsep: (decision, inert samples, samples)
                return Example(True, {}, decision=unsep[0])
            word, why = j.decision, list(j.reasons)
            if t2.word == CONTRADICTED:      # outside (T2): the direction does not converge; set aside, counted
                word, why = SET_ASIDE, [f"outside (T2): {t2.reason}"]
            elif t2.word != SUPPORTED and word == SUPPORTED:   # (T2) not yet shown: no support yet
                word, why = INCONCLUSIVE, [f"(T2) not yet shown: {t2.reason}"]
            return Example(word != CONTRADICTED, {**j.figures, "t2": float(DECISIONS.index(t2.word))},
                           reason="; ".join(why), description=tag, inputs=ex, decision=word)

        e = sequential(at, steps, cap, first=p.get("first_horizon"))
        sc, j, T = seen["sc"], seen["j"], seen["T"]
        if j is not None and e.word == SET_ASIDE:
            outside_t2.append(f"{tag} ({e.reason})")
            aside.append(tag)
            reject()
        if j is None:
            # (T2) assumes a limit direction with positive margin; a run that does not separate the data at the cap,
            # or whose margin inert samples alone hold at 0 (S.unseparated), is outside the theorem: set aside, counted
            _, k, n = seen["unsep"]
            rejected.append(tag + f" (at T = {seen['T']:.2g}"
                            + (f": {k} of {n} samples inert: f = 0 with a zero gradient, every unit dead on them)"
                               if k else ")"))
            aside.append(tag)
            reject()
        k = len(lines)
        for g in sc.residual:
            series.append(Series(f"{S.LABEL[g]} residual", sc.steps, sc.residual[g], ylabel="Fenchel KKT residual",
                                 group=f"example {k}: {opt_name} ({tag})"))
        # the rule's threshold for the own residual, pointwise: supported needs own < (closest other) / guard
        rivals = [min((v[i] for g, v in sc.residual.items() if g != own and np.isfinite(v[i])), default=float("nan"))
                  for i in range(len(sc.steps))]
        series.append(Series(f"{THRESHOLD} {S.LABEL[own]} residual < closest other ÷ {guard:g}", sc.steps,
                             [r / guard for r in rivals], ylabel="Fenchel KKT residual",
                             group=f"example {k}: {opt_name} ({tag})"))
        figs.update({f"{name}[{k}]": v for name, v in j.figures.items()})
        for kind, rf in j.rates.items():
            figs[f"{kind}_slope[{k}]"] = rf.slope
            figs[f"{kind}_crossing[{k}]"] = rf.crossing if rf.crossing is not None else float("nan")
        figs[f"horizon[{k}]"] = float(T)
        lines.append(f"{tag}: {e.word} at T = {T:.2g}: {S.LABEL[own]} residual {j.figures['residual']:.3g} "
                     f"({bound_text(j.figures['residual_ratio'], 1 / guard)}× the closest other geometry), "
                     f"signature {j.figures['signature']:.3g}; " + S.rate_line(j.rates, bound)
                     + (f" ({e.reason})" if e.reason else ""))
        return e

    res = run_property(family_ctx(ctx), network_example(), evaluate, set_aside=aside)
    ex = res.examples
    ratios = [e.figures.get("residual_ratio") for e in ex]
    resid = [e.figures.get("residual") for e in ex]
    counts = ", ".join(f"{v} {k}" for k, v in res.counts.items() if v)
    extended = [e.figures["horizon"] for e in ex if e.figures.get("horizon", steps) > steps]
    worst = max((r for r in ratios if r is not None), default=float("nan"))
    fig = (f"{len(ex)} example(s) ({counts}): {S.LABEL[own]} residual median {S.median(resid):.3g}, "
           f"own/closest-other ratio ≤ {bound_text(worst, 1 / guard)} "
           f"(supported: < {1 / guard:g} and falling), at T = {steps:.2g}"
           + (f", {len(extended)} extended to {max(extended):.2g}" if extended else "")
           + (f" (×10 up to {cap:.2g} while undecided)" if cap > steps else ""))
    details = (f"judged in {S.LABEL[own]}; rule (rules.judge_separation over the last {decades:g} decades, ≥ 3 "
               f"checkpoints): supported when the own/closest-other Fenchel residual ratio is < {1 / guard:g} and "
               f"falls and the own residual falls (≥ {min_drop:.0%} in the last decade); contradicted when another "
               "geometry is at or below the own one with no falling ratio, or at the cap the own residual is a "
               "stable plateau and the run does not approach a certified own KKT point near its direction (by "
               "margin); inconclusive otherwise (signature: reported; ≤ 5% at the bound tier)"
               + "".join(f" | {line}" for line in lines)
               + (f" | discarded (no positive margin at the horizon, outside (T2)): {', '.join(rejected)}"
                  if rejected else ""))
    figs["discarded"] = len(rejected)
    figs["outside_t2"] = len(outside_t2)
    if outside_t2:
        details += f" | set aside, outside (T2) (direction not converging at the cap): {', '.join(outside_t2)}"
    return Outcome(holds=res.holds, inconclusive=res.undecided, decisions=res.counts, figure=fig, figures=figs,
                   series=series, examples=len(ex), details=details,
                   counterexample=None if res.failing is None else
                   {"example": res.failing.inputs, "reason": res.failing.reason})
