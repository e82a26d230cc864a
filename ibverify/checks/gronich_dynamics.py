"""Trajectory claims of paper 2 on the same generated network runs as the KKT claims (gronich_nets):
directional convergence (T2) by a criterion that can fail, the soft margin approaching the hard margin, and
approximate steepest descent with the master theorem's hypothesis R_max ≤ 1.

Each case names a `family` claim (e.g. gronich.signum-linf); its tier parameters and hypothesis seed are used,
so the very runs that claim judged are re-used from the per-process run cache.

Directional convergence (Cauchy in log-time):   δ(t) = 1 − cos(θ_{t/10}, θ_t)   (ℓ2 cosine of the flat θ)
    at every checkpoint of the last two decades, judged three-valued on its sup-envelope max_{s ≥ t} δ(s)
    (gronich_score.judge_direction → rules.judge_gap): supported when ≤ dir_max and falling, contradicted by a
    stable plateau at the cap, inconclusive otherwise, and then extended ×10 at most `extensions` times
    (prop.sequential).
    A late-half cosine to the final iterate proves nothing (‖θ‖ ~ t^{1−p} makes it ≈ 1 for almost any
    dynamics), and a two-point rule one decade apart fails excursions (measured: δ 0.0163 → 0.0351 → 0.0080 at
    1e6, 1e7, 1e8). The control `trajectory = "spiral"` (θ_t = t^{0.3}(cos(ω ln t) e_1 + sin(ω ln t) e_2):
    δ(t) = 1 − cos(ω ln 10) for every t) must be contradicted.
Soft vs hard margin: s(t) = (−log ℒ(θ_t) − q_min(θ_t)) / ‖θ_t‖^L → 0: |s(T)| ≤ soft_max (the numerator is
    −log(#samples near the minimum) ∈ [−log n, 0], so it is not monotone, but the normalized gap must be small).
Approximate steepest descent: r_t = ⟨Δθ_t/ν_t, −g_t/‖g_t‖_*⟩ → 1 (|1 − r| falling or ≤ r_tol; ≥ r_min at the
    bound tier) and R(t) = ‖θ_t − θ_0‖ / Σ_{s<t} ν_s ≤ 1 + 1e-9 over the last decade (R_max ≤ 1; automatic for
    normalized steps, not for Adam). Judging R in a geometry other than the optimizer's (`norm`) is a control.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import reject

from ..claims import CheckContext
from ..evidence import Outcome, Series
from ..optim import info
from ..blocks import fro, inner
from ..strategies.network import network_example
from . import gronich_score as S
from . import rules
from .gronich_nets import example_tag, outside, run_example
from .prop import Example, run_property, sequential

def family(ctx: CheckContext, claim_id: str) -> CheckContext:
    """The family claim's context (its tier params, its hypothesis seed) with this claim's `run_overrides`
    (e.g. another schedule exponent) on top, making separate runs."""
    return ctx.family(claim_id, **ctx.params.get("run_overrides", {}))


def cosine(a, b) -> float:
    return inner(a, b) / (fro(a) * fro(b))


@dataclasses.dataclass
class Trajectory:
    checkpoints: list[int]
    thetas: list[dict]


def spiral(T: int, omega: float = 0.5) -> Trajectory:
    """θ_t = t^{0.3}(cos(ω ln t), sin(ω ln t), 0, …): its direction turns by ω ln 100 between t/100 and t, forever."""
    steps = sorted({int(round(x)) for x in np.logspace(np.log10(max(1, T // 1000)), np.log10(T), 13)})
    th = [{"W": t ** 0.3 * np.array([[math.cos(omega * math.log(t)), math.sin(omega * math.log(t))], [0.0, 0.0]]),
           "a": np.zeros(2)} for t in steps]
    return Trajectory(steps, th)


def separated_run(fctx: CheckContext, ex: dict, steps: int | None = None, final: bool = True):
    """The example's run (gronich_nets.run_example) to `steps`, or, when it has no positive margin at the horizon
    (outside (T2)), the decision on it (gronich_nets.outside: set aside, or extended)."""
    r, model, data, opt = run_example(fctx, ex, steps)
    out = outside(r, model, data, final)
    return (r, model, data, opt) if out is None else out[0]


def last_decades(steps, decades: float = 1.0) -> list[int]:
    """Indices of the checkpoints in the last `decades` decades of steps, [T/10^decades, T] (rounding allowed)."""
    return [i for i, t in enumerate(steps) if t >= steps[-1] / 10 ** decades * (1 - 1e-3)]


def directional_convergence(ctx: CheckContext) -> Outcome:
    """δ(T) ≤ dir_max and falling, and the soft margin → hard margin, on every family's generated runs."""
    dmax, min_drop = ctx.tol("dir_max"), ctx.tol("min_drop")
    series = []
    if ctx.params.get("trajectory") == "spiral":
        T = int(ctx.params["steps"])
        traj = spiral(T, float(ctx.params.get("omega", 0.5)))
        d, ts, ds = S.judge_direction(traj.checkpoints, traj.thetas, dmax, min_drop, final=True)
        series.append(Series("spiral δ(t)", ts, ds, ylabel="1 − cos(θ_{t/10}, θ_t)", group="direction"))
        return Outcome(holds=d.word == rules.SUPPORTED, figure=f"spiral: δ = {ds[0]:.3g} → {ds[-1]:.3g} (bound "
                       f"{dmax:g}): {d.word}", figures={"delta_T": ds[-1], "delta_first": ds[0]}, series=series,
                       examples=1, decisions={d.word: 1},
                       inconclusive=d.reason if d.word == rules.INCONCLUSIVE else "",
                       details=f"θ_t = t^0.3 (cos(ω ln t), sin(ω ln t)): its direction keeps moving by construction; "
                               f"{d.reason}")

    def judge_run(r, model, data, opt, final):
        d, ts, ds = S.judge_direction(r.checkpoints, r.thetas, dmax, min_drop, final)
        soft = [abs(-r.log_loss[i] - r.q_min[i]) / opt.geometry.norm(r.thetas[i]) ** model.L
                for i in range(len(r.checkpoints))]
        word, why = d.word, [] if d.word == rules.SUPPORTED else [d.reason]
        if word == rules.SUPPORTED and not rules.closeness(soft[-1], ctx.tol("soft_max")):
            word = rules.INCONCLUSIVE
            why.append(f"|soft − hard margin| = {soft[-1]:.3g} > {ctx.tol('soft_max'):g} at T")
        curves = {"δ(t)": (ts, ds, "1 − cos(θ_{t/10}, θ_t)", "direction"),
                  "soft − hard margin": (list(r.checkpoints), soft, "|γ̃ − γ|", "soft margin")}
        return word, why, {"delta_T": ds[-1] if ds else float("nan"), "delta_first": ds[0] if ds else float("nan"),
                           "soft_gap": soft[-1]}, curves

    return family_runs(ctx, judge_run, "δ(T) = 1 − cos(θ_T/10, θ_T)", "delta_T", dmax)


def family_runs(ctx: CheckContext, judge_run, label: str, key: str, bound: float) -> Outcome:
    """One three-valued property per family claim over its generated runs: judge_run(run, model, data, opt, final)
    -> (decision word, reasons, figures, {name: (x, y, ylabel, group)}); an undecided example is extended ×10 up
    at most `extensions` times (default 1); an example without a positive margin at the cap, or whose margin inert
    samples alone hold at 0 (gronich_nets.outside), is outside (T2)'s positive-margin hypothesis and set aside
    (counted). Claim level: prop.decide per family, all families combined (one contradicted example decides)."""
    series, figs, lines, results, set_aside = [], {}, [], [], []
    for fam in ctx.params["families"]:
        fctx = dataclasses.replace(family(ctx, fam), seed=ctx.seed)
        steps = int(fctx.params["steps"])
        cap = steps * 10 ** int(ctx.params.get("extensions", 1))

        aside: list[str] = []   # this family's (prop.decide counts them per family)

        def evaluate(ex: dict, fctx=fctx, fam=fam, steps=steps, cap=cap, aside=aside) -> Example:
            seen = {}

            def judge_at(T: int, final: bool) -> Example:
                got = separated_run(fctx, ex, T, final)
                if isinstance(got, str):
                    return Example(True, {}, decision=got)
                word, why, fg, curves = judge_run(*got, final)
                seen.update(fg=fg, curves=curves, T=T)
                return Example(word != rules.CONTRADICTED, fg, reason="; ".join(why), description=example_tag(ex),
                               inputs=ex, decision=word)

            e = sequential(judge_at, steps, cap, first=ctx.params.get("first_horizon"))
            if e.word == rules.SET_ASIDE:
                aside.append(f"{fam} {example_tag(ex)}")
                reject()
            k = len(lines)
            for name, (x, y, ylabel, group) in seen["curves"].items():
                series.append(Series(f"{fam} {example_tag(ex)} {name}", list(x), [max(v, 1e-18) for v in y],
                                     ylabel=ylabel, group=group))
            figs.update({f"{n}[{fam}/{k}]": v for n, v in seen["fg"].items()})
            figs[f"horizon[{fam}/{k}]"] = float(seen["T"])
            lines.append(f"{fam} {example_tag(ex)}: {e.word} at T = {seen['T']:.2g}; "
                         + ", ".join(f"{n} {v:.3g}" for n, v in seen["fg"].items())
                         + (f" ({e.reason})" if e.reason else ""))
            return e

        results.append(run_property(fctx, network_example(), evaluate, set_aside=aside))
        set_aside += aside
    values = [v for k, v in figs.items() if k.startswith(f"{key}[")]
    counts = {w: sum(r.counts.get(w, 0) for r in results) for w in rules.DECISIONS}
    failed = any(not r.holds and not r.undecided for r in results)
    undecided = "" if failed else "; ".join(r.undecided for r in results if r.undecided)
    figs["set_aside"] = float(len(set_aside))
    return Outcome(holds=all(r.holds for r in results), inconclusive=undecided, decisions=counts,
                   figure=f"{len(values)} runs ({', '.join(f'{v} {k}' for k, v in counts.items() if v)}): "
                          f"{label} ≤ {max(values, default=float('nan')):.3g} (bound {bound:g})",
                   figures=figs, series=series, examples=len(values),
                   details=" | ".join(lines) + (f" | set aside (no positive margin at the horizon): "
                                                f"{', '.join(set_aside)}" if set_aside else ""))


def r_max_by_construction(spec, norm: str | None) -> str:
    """Why R(t) ≤ 1 holds by construction on this optimizer's runs in its own norm ("" when it can fail): normalized
    steps have own-norm length ν_t exactly (the triangle inequality); Adam with β1 = β2 has |m̂_j| ≤ √v̂_j
    (Cauchy–Schwarz). Adam with β1 ≠ β2 (or a hybrid with an Adam part), or a norm other than the own one, can
    exceed 1: there R_max ≤ 1 is evidence."""
    if norm is not None:
        return ""
    adam = any("bias_correction" in info(n).moments for n in (info(spec.name).parts or (spec.name,)))
    if not adam:
        return "normalized steps: ‖Δθ_t‖ = ν_t in the own norm"
    return "Adam with β1 = β2: |m̂_j| ≤ √v̂_j (Cauchy–Schwarz)" if spec.beta1 == spec.beta2 else ""


def approx_steepest(ctx: CheckContext) -> Outcome:
    """Per run, three-valued: R(t) ≤ 1 + 1e-9 at every checkpoint of the last two decades (a violation contradicts:
    the master theorem's hypothesis R_max ≤ 1 is pointwise and horizon-free), and |1 − r_t| → 0 by rules.judge_gap
    (≤ r_tol and falling: supported); at the bound tier also late r_t ≥ r_min for support. Where R_max ≤ 1 holds
    by construction (r_max_by_construction) it is still checked but reported as a consequence, not as evidence;
    the figures count the runs where it was evidence (Adam with β1 < β2: the full tier)."""
    bound = bool(ctx.params.get("bound", False))
    r_tol, r_min, min_drop = ctx.tol("r_tol"), ctx.tol("r_min"), ctx.tol("min_drop")

    def judge_run(r, model, data, opt, final):
        name = ctx.params.get("norm") or info(opt.name).geometry
        G = S.geometry(name, getattr(opt.geometry, "c", 1.0))
        theta0 = r.theta0
        nus = np.cumsum([opt.nu(t) for t in range(1, r.checkpoints[-1] + 1)])
        late = last_decades(r.checkpoints, 2.0)
        R = [G.norm({k: r.thetas[i][k] - theta0[k] for k in theta0}) / nus[r.checkpoints[i] - 2] for i in late]
        dev = [abs(1 - r.align[i]) for i in late]
        ts = [r.checkpoints[i] for i in late]
        # r_t's own rounding: Δθ = θ_{t+1} − θ_t cancels ‖θ_t‖/ν_t-fold, so |1 − r_t| below ~100 ulp of that is 0
        T = r.checkpoints[-1]
        floor = 100 * np.finfo(float).eps * G.norm(r.thetas[-1]) / opt.nu(T)
        d = rules.judge_gap(ts, dev, r_tol, decades=2.0, min_drop=min_drop, final=final, floor=floor)
        word, why = d.word, [] if d.word == rules.SUPPORTED else [f"|1 − r_t|: {d.reason}"]
        given = r_max_by_construction(opt.spec, ctx.params.get("norm"))
        if not rules.closeness(max(R), 1 + 1e-9):
            word = rules.CONTRADICTED
            why.append(f"R_max = {max(R):.6g} > 1 in {S.LABEL.get(name, name)}")
        else:
            why.append(f"R_max = {max(R):.6g} ≤ 1: " + (f"a consequence ({given}), checked" if given else "evidence"))
        r_late = min(r.align[i] for i in last_decades(r.checkpoints, 1.0))
        if word == rules.SUPPORTED and bound and not rules.closeness(1 - r_late, 1 - r_min):
            word = rules.INCONCLUSIVE
            why.append(f"late r_t = {r_late:.4f} < {r_min:g}")
        curves = {"|1 − r_t|": (ts, dev, "|1 − r_t|", "alignment"), "R(t)": (ts, R, "‖θ_t − θ_0‖ / Σν", "R_max")}
        return word, why, {"dev_T": dev[-1], "r_T": r.align[-1], "R_max": max(R), "rounding_floor": floor,
                           "r_max_evidence": 0.0 if given else 1.0}, curves

    return family_runs(ctx, judge_run, "|1 − r_T|", "dev_T", r_tol)


def momentum_tracks(ctx: CheckContext) -> Outcome:
    """Lemma (momentum ≈ gradient): ‖m_t/‖m_t‖_* − g_t/‖g_t‖_*‖_* (MSD), max |m̂/√v̂ − sign g| on significant
    coordinates (Adam), three-valued per run by rules.judge_gap over the last two decades (≤ track_max and falling:
    supported; a stable plateau at the cap: contradicted). On the families' runs (p = 0.8 > 1 − 1/L)."""
    tmax, min_drop = ctx.tol("track_max"), ctx.tol("min_drop")

    def judge_run(r, model, data, opt, final):
        late = last_decades(r.checkpoints, 2.0)
        vals = r.adam_dev if math.isfinite(r.adam_dev[-1]) else r.track
        ts, ys = [r.checkpoints[i] for i in late], [vals[i] for i in late]
        d = rules.judge_gap(ts, ys, tmax, decades=2.0, min_drop=min_drop, final=final)
        curves = {"tracking": (ts, ys, "momentum − gradient (dual norm) / Adam ratio − sign", "tracking")}
        return d.word, [] if d.word == rules.SUPPORTED else [d.reason], {"track_T": ys[-1]}, curves

    return family_runs(ctx, judge_run, "tracking residual at T", "track_T", tmax)
