"""Network KKT-direction claims of paper 2, judged across geometries on hypothesis-generated examples.

`network_kkt(ctx)`: for each generated example (teacher data of drawn size/dimension/seed, a two-layer ReLU²
student of drawn width, a drawn initialization) train the claim's optimizer, score the run in every applicable
geometry (gronich_score.score) and apply the cross-geometry rule (gronich_score.judge) to the geometry
`judge` (default: the optimizer's own). The claim holds only if the rule holds on every example.

A control names a wrong geometry in `judge` and sets `examples_from` to the claim it controls: its examples are
then drawn with that claim's hypothesis seed, so the control judges the very runs the claim judged (and reuses
them from the per-process run cache), and must be refuted.
"""

from __future__ import annotations

import dataclasses

from hypothesis import reject

from ..claims import CheckContext
from ..evidence import Outcome, Series
from ..optim import info
from ..optim.table import KNOBS
from ..strategies.network import network_example
from . import gronich_score as S
from .gronich import get_run
from .prop import Example, run_property

RUN_PARAMS = ("model", "depth", "q", "loss", "optimizer", "steps", "init_scale", "ratio", *KNOBS)


def family_ctx(ctx: CheckContext) -> CheckContext:
    """The context whose claim id seeds hypothesis: the controlled claim's (`examples_from`) or the claim's own."""
    fam = ctx.params.get("examples_from")
    if not fam:
        return ctx
    return dataclasses.replace(ctx, claim=dataclasses.replace(ctx.claim, id=fam))


def run_example(ctx: CheckContext, ex: dict, decades: float = 1.0):
    """Train (or fetch from the cache) one example; 13 log-spaced checkpoints over the last three decades."""
    cfg = {k: ctx.params[k] for k in RUN_PARAMS if k in ctx.params}
    cfg.update({k: v for k, v in ex.items() if k != "seed"})
    steps = int(cfg["steps"])
    cfg["start"] = max(1, steps // 1000)          # T/1000 … T, 4 per decade: shared with the direction checks
    cfg["checkpoints"] = 13
    return get_run(ctx, cfg, int(ex["seed"]), warn=False)


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
    return Outcome(holds=all(o.holds for o in outs),
                   figure="; ".join(f"{n}: {o.figure}" for n, o in zip(names, outs, strict=True)),
                   figures={f"{n}:{k}": v for n, o in zip(names, outs, strict=True) for k, v in o.figures.items()},
                   series=[s for o in outs for s in o.series], examples=sum(o.examples for o in outs),
                   details=" || ".join(f"{n}: {o.details}" for n, o in zip(names, outs, strict=True)),
                   counterexample=next((o.counterexample for o in outs if o.counterexample), None))


def _one(ctx: CheckContext) -> Outcome:
    p = ctx.params
    opt_name = p["optimizer"]
    own = p.get("judge") or info(opt_name).geometry
    decades, factor, min_drop = float(p.get("decades", 1.0)), ctx.tol("factor"), ctx.tol("min_drop")
    bound = float(p.get("rate_bound", 0.05))
    sig_max = ctx.tol("signature_max") if p.get("bound", False) else None
    series: list[Series] = []
    figs: dict[str, float] = {}
    lines: list[str] = []
    rejected: list[str] = []

    def evaluate(ex: dict) -> Example:
        r, model, data, opt = run_example(ctx, ex, decades)
        c = getattr(opt.geometry, "c", 1.0)
        tag = example_tag(ex)
        if not r.q_min or r.q_min[-1] <= 0:
            # (T2) assumes a limit direction with positive margin; a run whose ReLU² units all died (f ≡ 0) or
            # that never separates the data is outside the theorem: discarded and counted, never a pass
            rejected.append(tag)
            reject()
        sc = S.score(r, model, data, c, decades)
        j = S.judge(sc, own, factor=factor, min_drop=min_drop, decades=decades, bound=bound, signature_max=sig_max)
        k = len(lines)
        for g in sc.residual:
            series.append(Series(f"{S.LABEL[g]} residual", sc.steps, sc.residual[g], ylabel="Fenchel KKT residual",
                                 group=f"example {k}: {opt_name} ({tag})"))
        figs.update({f"{name}[{k}]": v for name, v in j.figures.items()})
        for kind, rf in j.rates.items():
            figs[f"{kind}_slope[{k}]"] = rf.slope
            figs[f"{kind}_crossing[{k}]"] = rf.crossing if rf.crossing is not None else float("nan")
        lines.append(f"{tag}: {S.LABEL[own]} residual {j.figures['residual']:.3g} "
                     f"({j.figures['residual_ratio']:.2f}× the closest other geometry), "
                     f"signature {j.figures['signature']:.3g}; " + S.rate_line(j.rates, bound))
        return Example(j.ok, j.figures, reason="; ".join(j.reasons), description=tag, inputs=ex)

    res = run_property(family_ctx(ctx), network_example(), evaluate)
    ex = res.examples
    ratios = [e.figures.get("residual_ratio") for e in ex]
    resid = [e.figures.get("residual") for e in ex]
    fig = (f"{len(ex)} example(s): {S.LABEL[own]} residual median {S.median(resid):.3g}, "
           f"own/closest-other ratio ≤ {max((r for r in ratios if r is not None), default=float('nan')):.2f} "
           f"(rule: ≤ 1/{factor:g}), at T = {int(p['steps']):.2g}")
    details = (f"judged in {S.LABEL[own]}; rule: falling ≥ {min_drop:.0%} over the last {decades:g} decade(s) and "
               f"{factor:g}× below every other geometry, for the Fenchel residual (signature: reported; "
               "≤ 5% at the bound tier); "
               + " | ".join(lines)
               + (f" | discarded (no positive margin at the horizon, outside (T2)): {', '.join(rejected)}"
                  if rejected else ""))
    figs["discarded"] = len(rejected)
    return Outcome(holds=res.holds, figure=fig, figures=figs, series=series, examples=len(ex), details=details,
                   counterexample=None if res.failing is None else
                   {"example": res.failing.inputs, "reason": res.failing.reason})
