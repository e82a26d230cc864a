"""Numerics claims: the compiled log-frame engine equals the exact algorithm past float64 underflow.

`engine_matches_mpmath` runs each optimizer family on GR data scaled so that margins pass the
float64 underflow points (g² at z ≈ 372, g at z ≈ 745) within the horizon, once in the compiled
engine and once in the mpmath chain (local context, `dps` digits), and measures the largest relative
difference of the iterates over log-spaced checkpoints. Holds when every family is within `rtol`.
A family with `data = "spread"` runs on the explicit rows `spread_Z` instead (issue 10 item 7): data
whose sample margins drift more than 745 apart, so a frame shared across the batch would flush the
far sample's coordinates to 0 while the exact memoryless update (β2 = 0, Signum β = 0, AdamProxy)
still takes full steps there.
The control runs the same comparison with the log-frame switched off (naive float64).
"""

from __future__ import annotations

import numpy as np

from ..claims import CheckContext
from ..data import gr
from ..engine import run
from ..evidence import Outcome, Series
from ..optim import OptimizerSpec


def engine_matches_mpmath(ctx: CheckContext) -> Outcome:
    p = ctx.params
    rtol = ctx.tol("rtol")
    data = {"gr": gr(p["n"], p["d"], np.random.default_rng(p["data_seed"])).Z * p["scale"]}
    if "spread_Z" in p:
        data["spread"] = np.array(p["spread_Z"], dtype=float)
    rows, series, worst = [], [], 0.0
    for fam in p["families"]:
        kw = {k: v for k, v in fam.items() if k not in ("name", "data")}
        Z = data[fam.get("data", "gr")]
        spec = OptimizerSpec(fam["name"], **{"lr": p["lr"], "beta1": p["beta1"], "beta2": p["beta2"], **kw})
        ctx.progress(f"{fam['name']} {kw}")
        fast = run(Z, spec, p["steps"], checkpoints=p["checkpoints"], log_frame=p["log_frame"])
        exact = run(Z, spec, p["steps"], checkpoints=p["checkpoints"], engine="mpmath", dps=p["dps"])
        scale = np.maximum(np.abs(exact.ws).max(axis=1), 1e-300)
        err = np.abs(fast.ws - exact.ws).max(axis=1) / scale
        margins = Z @ exact.w
        margin = float(np.min(margins))
        label = fam["name"] + "".join(f" {k}={v}" for k, v in kw.items())
        if "data" in fam:
            label += f" on {fam['data']} data"
        rows.append({"family": label, "max relative difference": float(err.max()), "min margin at horizon": margin,
                     "margin spread at horizon": float(np.max(margins) - margin),
                     "frame shifts": fast.diagnostics.get("frame_shifts", 0), "frozen": fast.diagnostics["frozen"]})
        series.append(Series(label, exact.checkpoints.tolist(), np.maximum(err, 1e-18).tolist(),
                             ylabel="max |w − w_mpmath| / max |w_mpmath|", group="difference"))
        worst = max(worst, float(err.max()))
    past = min(r["min margin at horizon"] for r in rows if "eps" not in r["family"])
    holds = worst <= rtol
    mode = "log-frame" if p["log_frame"] else "naive float64"
    return Outcome(
        holds=holds,
        figure=f"{mode} vs mpmath: max relative difference {worst:.2g} over {len(rows)} families "
               f"(need ≤ {rtol:g}); min margin {past:.0f} (float64 e^(−2z) underflows at 372)",
        figures={"max_rel_diff": worst, "min_margin": past}, series=series, table=rows, examples=len(rows),
        details="" if holds else f"families above rtol: "
                                 f"{[r['family'] for r in rows if r['max relative difference'] > rtol]}")
