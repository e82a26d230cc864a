"""Beyond claims that ask `ibverify bias`'s question of one configuration: does the run go to geometry g's KKT
direction, or does it not? (issue 22 point 4: per-sample Adam on a network, the LR-MSD threshold, NS5 Muon.)

`geometry_law(ctx)` draws `datasets` datasets of `model` with checks.bias.draws (seed = the claim's seed: the same
datasets as `ibverify bias --seed S`), judges the geometry `geometry` on each with checks.bias.judge_dataset (the
very rules of `ibverify bias`: certified margin gaps and rules.judge_gap on the matrix model, Fenchel KKT residuals
and the cross-geometry rule rules.judge_separation on the two-layer net; an undecided dataset extended ×10 from
`first` up to `cap`), and tallies per dataset with rules.tally (≥ ⌈2k/3⌉ supported and none contradicted: holds):

    expect = "to"    the run goes to g's KKT direction: the dataset's decision for g, as judged
    expect = "not"   it does not: g contradicted on the dataset supports the law, g supported contradicts it
                     (inconclusive stays inconclusive; set aside stays set aside)

The claim's tolerances document the rules' own numbers and must equal them: `bound`, `min_drop` = checks.bias.BOUND,
MIN_DROP (degree-1 margin gaps), or `guard`, `min_drop`, `bound` = checks.bias.NET (two-layer residuals). Optional
`batch` (two-layer): cyclic mini-batches of that many samples per step (engine.block.run), e.g. 1 for per-sample
Adam. `until_contradicted` (a control's smoke tier): stop drawing datasets at the first one that contradicts the law,
which already decides the verdict. The optimizer's knobs come from the claim's params (the table's KNOBS). A control
runs the opposite law on the same datasets with a configuration for which the rules must find g (e.g. exact-polar
Muon against "NS5 Muon goes to the spectral direction"), so a contradiction of the law is the configuration's doing,
not the data's or the rule's.
"""

from __future__ import annotations

import math

from ..errors import IbverifyError
from ..claims import CheckContext
from ..evidence import Outcome, Series
from ..optim import OptimizerSpec
from ..optim.table import KNOBS
from ..recipes import store_of
from . import bias, rules

SWAP = {rules.SUPPORTED: rules.CONTRADICTED, rules.CONTRADICTED: rules.SUPPORTED}


def law_word(decision: str, expect: str) -> str:
    """The law's per-dataset word from the geometry's decision (module docstring)."""
    if expect == "to":
        return decision
    if expect == "not":
        return SWAP.get(decision, decision)
    raise IbverifyError(f"expect must be 'to' or 'not', got {expect!r}")


def geometry_law(ctx: CheckContext) -> Outcome:
    p = ctx.params
    model, g, expect = p["model"], p["geometry"], p.get("expect", "to")
    k = int(p.get("dataset_count", 3))
    first, cap = int(p["first"]), int(p.get("cap", p["first"]))
    batch = p.get("batch")
    rule = ({"guard": bias.NET["guard"], "min_drop": bias.NET["min_drop"], "bound": bias.NET["bound"]}
            if model == "two-layer" else {"bound": bias.BOUND, "min_drop": bias.MIN_DROP})
    for name in ctx.claim.tolerances:   # documented in the claim file: they must be the rules' own
        used = rule.get(name)
        if used is None or ctx.tol(name) != used:
            raise IbverifyError(f"{ctx.claim.id}: tolerance {name} = {ctx.tol(name)} is not checks.bias's {used} "
                                "(the law is judged by ibverify bias's rules)")
    spec = OptimizerSpec.from_params({x: p[x] for x in KNOBS if x in p and x not in ("seed", "loss")},
                                     name=p["optimizer"])
    words, series, figs, lines = [], [], {}, []
    store = store_of(ctx)
    for i, pr in enumerate(bias.generated(model, ctx.seed, k, store=store)):
        ctx.progress(f"{pr.tag}: {p['optimizer']} up to {cap:.2g} steps")
        res = bias.judge_dataset(model, pr, bias.resolved_spec(spec, model, pr.n), "fast", batch=batch,
                                 horizons=(first, cap), store=store)
        if g not in res:
            raise IbverifyError(f"geometry {g!r} is not scored on the {model} model (scored: {', '.join(res)})")
        j = res[g]
        w = law_word(j.word, expect)
        words.append(w)
        for h, jh in res.items():
            if jh.curve and jh.curve[0]:
                series.append(Series(f"{h} {jh.quantity.replace('_', ' ')}", jh.curve[0], jh.curve[1],
                                     ylabel=jh.quantity.replace("_", " "), group=f"dataset {i}: {pr.tag}"))
        figs.update({f"{g}_{j.quantity}[{i}]": j.value, f"{g}_slope[{i}]": j.slope, f"horizon[{i}]": float(j.horizon)})
        for h, jh in res.items():
            figs[f"decision_{h}[{i}]"] = float(rules.DECISIONS.index(jh.word))
        others = ", ".join(f"{h} {jh.word} {jh.value:.3g}" for h, jh in res.items() if h != g)
        lines.append(f"{pr.tag}: {g} {j.word} at T = {j.horizon:.2g} ({j.quantity} {j.value:.3g}, slope "
                     f"{j.slope:.2g}; {j.reason}) → law {w}; others: {others}")
        if w == rules.CONTRADICTED and p.get("until_contradicted", False):
            break   # a control's smoke tier: one contradicted dataset already decides (refuted)
    judged = [w for w in words if w != rules.SET_ASIDE]
    need = max(1, math.ceil(2 * len(judged) / 3))
    holds, text = rules.tally(words, need)
    figs.update({w.replace(" ", "_"): float(words.count(w)) for w in rules.DECISIONS})
    what = (f"{p['optimizer']}" + (f", batch {batch}" if batch else "") + f" {'→' if expect == 'to' else '↛'} {g} "
            f"on the {model} model")
    return Outcome(holds=bool(holds), inconclusive="" if holds is not None else text,
                   decisions={w: words.count(w) for w in rules.DECISIONS},
                   figure=f"{what}: {text}", figures=figs, series=series, examples=len(words),
                   details=f"rules of ibverify bias (checks.bias.judge_dataset, horizons {first:.2g} … {cap:.2g}); "
                           f"law holds with ≥ {need} of {len(judged)} judged datasets supporting and none "
                           "contradicting | " + " | ".join(lines))
