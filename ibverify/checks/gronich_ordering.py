"""The own-norm ordering of paper 2's Figure 1 (gronich.own-norm-wins) and its ReLU finding (gronich.beyond.relu):
per dataset, seed and norm (ℓ2, ℓ∞, max-spectral), does every run whose optimizer has that norm as its own geometry
reach a larger normalized margin than every run whose optimizer does not?

The runs compared: `optimizers` (names), or `runs`, tables overriding the run's keys. A run with `input_scale` is
its optimizer preconditioned by a fixed diagonal on the first layer (gronich_nets.weighted_run) and is still judged
in its optimizer's own norm: the control gronich.control.own-norm-precond-signum.
"""

from __future__ import annotations

import math

import numpy as np

from ..claims import CheckContext
from ..evidence import Outcome, Series
from ..jsonio import plain
from ..geometry import analysis
from ..optim import info
from .gronich import _seeds, get_run
from .gronich_nets import weighted_run

NORMS = ("l2", "linf", "msp")
OPTIMIZERS = ["momentum-gd", "signum", "adam", "muon"]
NOT_RUN_KEYS = ("datasets", "optimizers", "runs", "seeds", "cases", "lr_overrides", "input_scale")


def compared(ctx: CheckContext) -> list[dict]:
    """The runs compared: `runs`, else one per name of `optimizers`."""
    return ctx.params.get("runs") or [{"optimizer": o} for o in ctx.params.get("optimizers", OPTIMIZERS)]


def label(run: dict) -> str:
    """The optimizer's name, with the run's other keys: `signum[input_scale=1]`."""
    extra = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in run.items() if k != "optimizer")
    return run["optimizer"] + (f"[{extra}]" if extra else "")


def margins(ctx: CheckContext, dcfg: dict, run: dict, seed: int) -> dict[str, float]:
    """Normalized margins (ℓ2, ℓ∞, max-spectral) of one run at its horizon; NaN when it has not separated the data."""
    name = run["optimizer"]
    cfg = {**{k: v for k, v in ctx.params.items() if k not in NOT_RUN_KEYS}, **dcfg,
           **{k: v for k, v in run.items() if k != "input_scale"}}
    cfg["lr"] = run["lr"] if "lr" in run else ctx.params.get("lr_overrides", {}).get(name, info(name).default("lr"))
    if "input_scale" in run:
        r, model, data, _ = weighted_run(ctx, cfg, seed, float(run["input_scale"]))
    else:
        r, model, data, _ = get_run(ctx, cfg, seed)
    if r.q_min[-1] <= 0:
        return {g: float("nan") for g in NORMS}
    return {g: v for g, v in analysis.margins(model, r.theta, data.X, data.y).items() if g in NORMS}


def ordering_table(ctx: CheckContext, datasets_: list[dict], runs: list[dict]) -> tuple[list[dict], dict]:
    """Per dataset, seed and norm: the winner and whether every own-norm run beats every other one."""
    table, figs = [], {}
    labels = [label(r) for r in runs]
    geometry = {lab: info(r["optimizer"]).geometry for lab, r in zip(labels, runs, strict=True)}
    for dcfg in datasets_:
        for seed in _seeds(ctx):
            marg = {lab: margins(ctx, dcfg, r, seed) for lab, r in zip(labels, runs, strict=True)}
            for lab in labels:
                for g, v in marg[lab].items():
                    figs[f"margin_{g}[{dcfg['dataset']}/{lab}/s{seed}]"] = v
            for g in NORMS:
                own = [o for o in labels if geometry[o] == g]
                other = [o for o in labels if geometry[o] != g]
                if not own or not other:
                    continue
                winner = max(labels, key=lambda o: marg[o][g] if math.isfinite(marg[o][g]) else -np.inf)
                ok = all(marg[a][g] > marg[b][g] for a in own for b in other)
                table.append({"data": dcfg["dataset"], "seed": seed, "norm": g, "winner": winner, "ordering_holds": ok,
                              **{o: round(marg[o][g], 6) for o in labels}})
    return table, figs


def ordering_series(table: list[dict], labels: list[str]) -> list[Series]:
    """One plot per (dataset, norm): each run's normalized margin against the seed."""
    out = []
    for key in dict.fromkeys((r["data"], r["norm"]) for r in table):
        rows = [r for r in table if (r["data"], r["norm"]) == key]
        for o in labels:
            out.append(Series(o, [r["seed"] for r in rows], [r[o] for r in rows], xlabel="seed",
                              ylabel=f"normalized {key[1]} margin", log_x=False, log_y=True,
                              group=f"{key[0]}: {key[1]} margin"))
    return out


def own_norm_wins(ctx: CheckContext) -> Outcome:
    """Each optimizer reaches the largest normalized margin in its own norm among those compared (Fig. 1)."""
    runs = compared(ctx)
    dsets = ctx.params.get("datasets", [{"dataset": "teacher"}])
    table, figs = ordering_table(ctx, dsets, runs)
    held = sum(r["ordering_holds"] for r in table)
    fails = [f"{r['data']}/s{r['seed']}/{r['norm']}: winner {r['winner']}" for r in table if not r["ordering_holds"]]
    holds = None if ctx.status == "beyond" else (held == len(table))
    return Outcome(holds=holds, figure=f"ordering holds in {held}/{len(table)} (dataset, seed, norm) cells",
                   figures={**figs, "cells_holding": held, "cells": len(table)},
                   series=ordering_series(table, [label(r) for r in runs]),
                   table=plain(table), examples=len(table),
                   details=("failing cells: " + "; ".join(fails)) if fails else "ordering holds in every cell",
                   counterexample={"failures": fails} if fails and holds is not None else None)


def relu(ctx: CheckContext) -> Outcome:
    """Finding: non-smooth ReLU (q = 1): the own-norm ordering and the KKT-residual trend, reported."""
    runs = compared(ctx)
    dsets = ctx.params.get("datasets", [{"dataset": "teacher"}])
    table, figs = ordering_table(ctx, dsets, runs)
    held = sum(r["ordering_holds"] for r in table)
    return Outcome(holds=None, figure=f"ReLU: ordering holds in {held}/{len(table)} cells",
                   figures={**figs, "cells_holding": held, "cells": len(table)},
                   series=ordering_series(table, [label(r) for r in runs]),
                   table=plain(table), examples=len(table),
                   details="q = 1 gradients use σ'(0) := 0 (a Clarke element); outside (M1), so no pass/fail")
