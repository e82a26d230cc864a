"""Classical implicit-bias theorems on homogeneous networks (issue 22, point 3).

`smoothed_margin` — Lyu & Li (ICLR 2020), their main theorem (gradient flow) and its gradient-descent version (under a
step-size condition): for an L-homogeneous model trained by GD with the exponential or logistic loss, once
ℒ(θ) = Σ_i ℓ(q_i(θ)) < ℓ(0) (every sample classified correctly), the smoothed normalized margin

    γ̃(θ) = g(log 1/ℒ(θ)) / ‖θ‖₂^L,   exponential loss: g(x) = x, so γ̃ = −log ℒ / ‖θ‖^L;
                                      logistic loss:    g(x) = −log(e^{e^{−x}} − 1), so γ̃ = −log(e^ℒ − 1) / ‖θ‖^L

(ℓ = e^{−f(q)}, g = f^{−1}; ℒ the SUM of the per-sample losses) is non-decreasing. Checked pointwise at every
checkpoint after the first one below the threshold, with rules.judge_nondecreasing (a step down by more than the
float64 allowance `monotone_rtol` contradicts at any horizon; supported when no step goes down over ≥ `decades`
decades of checkpoints). An example whose run never gets below the threshold, or gets there too late for `decades`
decades of checkpoints, is set aside (outside the theorem's hypothesis at this horizon), never support.
`network_alignment` — Ji & Telgarsky (NeurIPS 2020): 1 − cos(θ_t, −∇ℒ(θ_t)) → 0 on the same kind of examples.

Examples: two-layer ReLU^q teacher data (strategies.network.network_example), run through the run store
(gronich.get_run); a control sets `examples_from` to the claim it controls and judges the very same examples with
another optimizer.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import reject

from ..blocks import flatten
from ..claims import CheckContext
from ..evidence import Outcome, Series
from .. import losses
from ..losses import check_loss
from ..strategies.network import network_example
from .gronich_nets import RUN_PARAMS, example_tag, family_ctx, outside, run_example
from .gronich import get_run
from .prop import Example, run_property, sequential
from .rules import CONTRADICTED, SET_ASIDE, SUPPORTED, judge_gap, judge_nondecreasing

THRESHOLD = {"exponential": 0.0, "logistic": math.log(math.log(2.0))}   # log ℓ(0)


def smoothed_margin_series(log_loss, norms, L: float, loss: str) -> np.ndarray:
    """γ̃ at each checkpoint from log ℒ (ℒ the sum of the losses, in the log domain) and ‖θ‖₂: exponential −log ℒ/‖θ‖^L;
    logistic −log(e^ℒ − 1)/‖θ‖^L = (−log ℒ − log(expm1(ℒ)/ℒ))/‖θ‖^L (stable for ℒ → 0, where the correction is ℒ/2)."""
    ll = np.asarray(log_loss, float)
    nrm = np.asarray(norms, float)
    if check_loss(loss) == "exponential":
        num = -ll
    else:
        x = np.exp(ll)
        with np.errstate(divide="ignore", invalid="ignore"):
            corr = np.where(x < 1e-8, x / 2, np.log(np.expm1(x) / np.where(x > 0, x, 1.0)))
        num = -ll - corr
    return num / nrm ** L


def smoothed_margin(ctx: CheckContext) -> Outcome:
    """Lyu & Li's monotone smoothed margin on every generated example (see the module docstring)."""
    p = ctx.params
    loss = p.get("loss", "logistic")
    rtol = ctx.tol("monotone_rtol")
    decades = float(p.get("decades", 2.0))
    steps = int(p["steps"])
    per_decade = int(p.get("checkpoints_per_decade", 12))
    aside: list[str] = []
    lines: list[str] = []
    series: list[Series] = []

    def evaluate(ex: dict) -> Example:
        tag = example_tag(ex)
        cfg = {k: p[k] for k in RUN_PARAMS if k in p}
        cfg.update({k: v for k, v in ex.items() if k != "seed"})
        cfg.update(steps=steps, start=1, checkpoints=int(per_decade * math.log10(steps)) + 1)
        r, model, _, _ = get_run(ctx, cfg, int(ex["seed"]), warn=False)
        x = np.asarray(r.checkpoints, float)
        ll = np.asarray(r.log_loss, float)
        nrm = np.array([np.linalg.norm(flatten(t)) for t in r.thetas])
        gam = smoothed_margin_series(ll, nrm, model.L, loss)
        below = np.flatnonzero(ll < THRESHOLD[loss])
        if not len(below) or r.diverged:
            aside.append(f"{tag} (ℒ ≥ ℓ(0) up to step {steps})")
            reject()
        k0 = int(below[0])
        if np.any(ll[k0:] >= THRESHOLD[loss]):   # GD's loss may rise again if the step is too large: report it
            lines.append(f"{tag}: ℒ back above ℓ(0) after step {x[k0]:.3g}")
        dec = judge_nondecreasing(x[k0:], gam[k0:], rtol, decades=decades)
        if dec.word not in (SUPPORTED, CONTRADICTED):
            aside.append(f"{tag} (threshold reached at step {x[k0]:.3g}: {dec.reason})")
            reject()
        g = gam[k0:]
        steps_down = np.diff(g) / np.abs(g[:-1])
        figs = {"threshold_step": float(x[k0]), "gamma_first": float(g[0]), "gamma_last": float(g[-1]),
                "min_relative_step": float(steps_down.min()) if len(steps_down) else math.nan,
                "decreases": float(np.sum(steps_down < -rtol))}
        series.append(Series(tag, x[k0:].tolist(), g.tolist(), ylabel="smoothed margin γ̃(θ)", group="γ̃ after ℒ < ℓ(0)",
                             log_y=False))
        lines.append(f"{tag}: {dec.word}: {dec.reason}")
        return Example(True, figs, reason="" if dec.word == SUPPORTED else dec.reason, description=tag,
                       inputs=dict(ex, steps=steps), decision=dec.word)

    res = run_property(family_ctx(ctx), network_example(), evaluate, set_aside=aside)
    exs = res.examples
    counts = ", ".join(f"{v} {k}" for k, v in res.counts.items() if v)
    mins = [e.figures["min_relative_step"] for e in exs]
    fig = (f"{counts}; smallest relative step of γ̃ per example: " + ", ".join(f"{v:.3g}" for v in mins)
           + f" (a step below −{rtol:g} contradicts), at T = {steps:.2g}"
           + (f"; {len(aside)} set aside" if aside else ""))
    if res.failing is not None:
        fig = f"counterexample: {res.failing.reason} ({res.failing.description})"
    return Outcome(holds=res.holds, inconclusive=res.undecided, decisions=res.counts, figure=fig,
                   figures={"min_relative_step": min(mins) if mins else math.nan, "set_aside": float(len(aside))},
                   series=series, examples=len(exs),
                   details=" | ".join(lines + [f"set aside: {a}" for a in aside]),
                   table=[{"example": e.description, "decision": e.word, "first step below ℓ(0)":
                           e.figures["threshold_step"], "γ̃ there": e.figures["gamma_first"],
                           "γ̃ at T": e.figures["gamma_last"], "smallest relative step": e.figures["min_relative_step"],
                           "steps down": e.figures["decreases"], "why": e.reason} for e in exs],
                   counterexample=None if res.failing is None else
                   {"example": res.failing.inputs, "reason": res.failing.reason})


# ------------------------------------------------------------------ Ji & Telgarsky 2020: alignment on networks

def network_alignment_gap(model, thetas, X, y, loss: str = "logistic") -> np.ndarray:
    """1 − cos(θ, −∇ℒ(θ)) at every θ of `thetas`, computed as ‖θ/‖θ‖ − (−ĝ)/‖ĝ‖‖²/2 (no cancellation near 1) from the
    log-frame gradient ĝ (∇ℒ = e^S ĝ, so its direction survives a loss far below float64's range); NaN where ĝ = 0."""
    out = []
    for th in thetas:
        g = -flatten(losses.evaluate(model, th, X, y, loss, with_loss=False).ghat)
        w = flatten(th)
        ng, nw = np.linalg.norm(g), np.linalg.norm(w)
        out.append(0.5 * float(np.sum((w / nw - g / ng) ** 2)) if ng > 0 and nw > 0 else math.nan)
    return np.array(out)


def network_alignment(ctx: CheckContext) -> Outcome:
    """Ji & Telgarsky (NeurIPS 2020) on two-layer homogeneous networks: 1 − cos(θ_t, −∇ℒ(θ_t)) → 0. Each generated
    example (strategies.network.network_example; a control with `examples_from` judges the very examples of the claim
    it controls) is trained with the claim's optimizer (gronich_nets.run_example: 13 checkpoints over the last three
    decades) and judged by rules.judge_gap on the gap over the last `decades` decades (bound = tolerance align_max,
    falling by ≥ trend_drop over the last decade; a stable plateau or a rise at the largest horizon contradicts), an
    undecided example extended ×10 up to `extensions` times. A run that does not separate the data at its horizon
    (q_min ≤ 0) is outside the theorem (ℒ < ℓ(0) is its hypothesis): set aside and counted, at once when inert samples
    alone hold its margin at 0, else at the cap (gronich_nets.outside)."""
    p = ctx.params
    loss = p.get("loss", "logistic")
    bound, drop = ctx.tol("align_max"), ctx.tol("trend_drop")
    decades = float(p.get("decades", 2.0))
    steps = int(p["steps"])
    cap = steps * 10 ** int(p.get("extensions", 1))
    aside: list[str] = []
    lines: list[str] = []
    series: list[Series] = []

    def evaluate(ex: dict) -> Example:
        tag = example_tag(ex)

        def at(T: int, final: bool) -> Example:
            r, model, data, _ = run_example(ctx, ex, T)
            out = outside(r, model, data, final)
            if out is not None:
                return Example(True, {}, description=tag, decision=out[0])
            x = np.asarray(r.checkpoints, float)
            gap = network_alignment_gap(model, r.thetas, data.X, data.y, loss)
            ok = np.isfinite(gap)
            dec = judge_gap(x[ok], gap[ok], bound, decades=decades, min_drop=drop, final=final)
            k0 = np.flatnonzero(x >= x[-1] / 10 * (1 - 1e-9))[0]
            return Example(True, {"gap": float(gap[-1]), "gap_decade_ratio": float(gap[-1] / gap[k0]),
                                  "slope": dec.fit.slope if dec.fit else math.nan, "horizon": float(T)},
                           {"gap": (x[ok].tolist(), np.maximum(gap[ok], 1e-18).tolist())},
                           "" if dec.word == SUPPORTED else dec.reason, tag, dict(ex, steps=T), decision=dec.word)

        e = sequential(at, steps, cap, first=p.get("first_horizon"))
        if e.word == SET_ASIDE:
            aside.append(f"{tag} (not separating at the horizon)")
            reject()
        series.append(Series(tag, *e.curves["gap"], ylabel="1 − cos(θ, −∇ℒ)", group="alignment"))
        lines.append(f"{tag}: {e.word} at T = {e.figures['horizon']:.2g}: 1 − cos {e.figures['gap']:.3g}"
                     + (f" ({e.reason})" if e.reason else ""))
        return e

    res = run_property(family_ctx(ctx), network_example(), evaluate, set_aside=aside)
    exs = res.examples
    counts = ", ".join(f"{v} {k}" for k, v in res.counts.items() if v)
    gaps = [e.figures["gap"] for e in exs]
    fig = (f"{counts}; 1 − cos(θ, −∇ℒ) = " + ", ".join(f"{v:.3g}" for v in gaps) + f" (need ≤ {bound:g}, falling)"
           + (f"; {len(aside)} set aside" if aside else ""))
    if res.failing is not None:
        fig = f"counterexample: {res.failing.reason} ({res.failing.description})"
    return Outcome(holds=res.holds, inconclusive=res.undecided, decisions=res.counts, figure=fig,
                   figures={"max_gap": max(gaps) if gaps else math.nan, "set_aside": float(len(aside))},
                   series=series, examples=len(exs), details=" | ".join(lines + [f"set aside: {a}" for a in aside]),
                   table=[{"example": e.description, "decision": e.word, "horizon (steps)": e.figures["horizon"],
                           "1 − cos(θ, −∇ℒ)": e.figures["gap"], "ratio (last decade)": e.figures["gap_decade_ratio"],
                           "why not": e.reason} for e in exs],
                   counterexample=None if res.failing is None else
                   {"example": res.failing.inputs, "reason": res.failing.reason})
