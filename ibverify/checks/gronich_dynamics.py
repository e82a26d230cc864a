"""Trajectory claims of paper 2 on the same generated network runs as the KKT claims (gronich_nets):
directional convergence (T2) by a criterion that can fail, the soft margin approaching the hard margin, and
approximate steepest descent with the master theorem's hypothesis R_max ≤ 1.

Each case names a `family` claim (e.g. gronich.signum-linf); its tier parameters and hypothesis seed are used,
so the very runs that claim judged are re-used from the per-process run cache.

Directional convergence (Cauchy in log-time):   δ(t) = 1 − cos(θ_{t/10}, θ_t)   (ℓ2 cosine of the flat θ)
    at every checkpoint of the last two decades, judged three-valued on its sup-envelope max_{s ≥ t} δ(s)
    (gronich_score.judge_direction → rules.judge_gap): supported when ≤ dir_max and falling, contradicted by a
    stable plateau at the cap, inconclusive otherwise, and then extended ×10 up to `horizon_cap` (prop.sequential).
    A late-half cosine to the final iterate proves nothing (‖θ‖ ~ t^{1−p} makes it ≈ 1 for almost any
    dynamics), and a two-point rule one decade apart fails excursions (NUMERICS.md: δ 0.0163 → 0.0351 → 0.0080 at
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
from .gronich_nets import example_tag, run_example
from .prop import Example, run_property, sequential

def family(ctx: CheckContext, claim_id: str) -> CheckContext:
    """The family claim's context (its tier params, its hypothesis seed) with this claim's `run_overrides`
    (e.g. another schedule exponent) on top, making separate runs."""
    return ctx.family(claim_id, **ctx.params.get("run_overrides", {}))


def cosine(a, b) -> float:
    return inner(a, b) / (fro(a) * fro(b))


def at(run, t: float) -> int:
    """Index of the last checkpoint at a step ≤ t (within rounding)."""
    return max(i for i, s in enumerate(run.checkpoints) if s <= t * (1 + 1e-9))


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


def separated_run(fctx: CheckContext, ex: dict, steps: int | None = None):
    """The example's run (gronich_nets.run_example) to `steps`; None when it has no positive margin at the
    horizon (outside (T2))."""
    r, model, data, opt = run_example(fctx, ex, steps)
    if not r.q_min or r.q_min[-1] <= 0:
        return None
    return r, model, data, opt


def last_decade(steps) -> list[int]:
    """Indices of the checkpoints in the last decade of steps, [T/10, T]."""
    return [i for i, t in enumerate(steps) if t >= steps[-1] / 10 * (1 - 1e-12)]


def directional_convergence(ctx: CheckContext) -> Outcome:
    """δ(T) ≤ dir_max and falling, and the soft margin → hard margin, on every family's generated runs."""
    dmax, min_drop = ctx.tol("dir_max"), ctx.tol("min_drop")
    series, figs, lines = [], {}, []
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
    results, set_aside = [], []
    for fam in ctx.params["families"]:
        fctx = family(ctx, fam)
        fctx = dataclasses.replace(fctx, seed=ctx.seed)
        steps = int(fctx.params["steps"])
        cap = int(ctx.params.get("horizon_cap", 10 * steps))

        def evaluate(ex: dict, fctx=fctx, fam=fam, steps=steps, cap=cap) -> Example:
            seen = {}

            def judge_at(T: int, final: bool) -> Example:
                got = separated_run(fctx, ex, T)
                if got is None:
                    return Example(True, {}, decision=rules.SET_ASIDE if final else rules.INCONCLUSIVE)
                r, model, data, opt = got
                d, ts, ds = S.judge_direction(r.checkpoints, r.thetas, dmax, min_drop, final)
                G = opt.geometry
                soft = [abs(-r.log_loss[i] - r.q_min[i]) / G.norm(r.thetas[i]) ** model.L
                        for i in range(len(r.checkpoints))]
                word, why = d.word, [] if d.word == rules.SUPPORTED else [d.reason]
                if word == rules.SUPPORTED and not rules.closeness(soft[-1], ctx.tol("soft_max")):
                    word = rules.INCONCLUSIVE
                    why.append(f"|soft − hard margin| = {soft[-1]:.3g} > {ctx.tol('soft_max'):g} at T")
                seen.update(r=r, ts=ts, ds=ds, soft=soft, T=T)
                return Example(word != rules.CONTRADICTED, {"delta": ds[-1] if ds else float("nan")},
                               reason="; ".join(why), description=example_tag(ex), inputs=ex, decision=word)

            e = sequential(judge_at, steps, cap)
            if e.word == rules.SET_ASIDE:
                set_aside.append(f"{fam} {example_tag(ex)}")
                reject()
            r, ts, ds, soft, T = (seen[k] for k in ("r", "ts", "ds", "soft", "T"))
            k = len(lines)
            series.append(Series(f"{fam} {example_tag(ex)} δ(t)", ts, ds, ylabel="1 − cos(θ_{t/10}, θ_t)",
                                 group="direction"))
            series.append(Series(f"{fam} {example_tag(ex)} soft − hard margin", r.checkpoints, soft, ylabel="|γ̃ − γ|",
                                 group="soft margin"))
            figs.update({f"delta_T[{fam}/{k}]": ds[-1], f"delta_first[{fam}/{k}]": ds[0], f"soft_gap[{fam}/{k}]":
                         soft[-1], f"horizon[{fam}/{k}]": float(T)})
            lines.append(f"{fam} {example_tag(ex)}: {e.word} at T = {T:.2g}, δ {ds[0]:.3g} → {ds[-1]:.3g}, "
                         f"soft−hard {soft[-1]:.3g}" + (f" ({e.reason})" if e.reason else ""))
            return e

        results.append(run_property(fctx, network_example(), evaluate))
    deltas = [v for k, v in figs.items() if k.startswith("delta_T[")]
    counts = {w: sum(r.counts.get(w, 0) for r in results) for w in rules.DECISIONS}
    failed = any(not r.holds and not r.undecided for r in results)
    undecided = "" if failed else "; ".join(r.undecided for r in results if r.undecided)
    figs["set_aside"] = float(len(set_aside))
    return Outcome(holds=all(r.holds for r in results), inconclusive=undecided, decisions=counts,
                   figure=f"{len(deltas)} runs ({', '.join(f'{v} {k}' for k, v in counts.items() if v)}): "
                          f"δ(T) = 1 − cos(θ_T/10, θ_T) ≤ {max(deltas):.3g} (bound {dmax:g})",
                   figures=figs, series=series, examples=len(deltas),
                   details=" | ".join(lines) + (f" | set aside (no positive margin even at the cap): "
                                                f"{', '.join(set_aside)}" if set_aside else ""))


def approx_steepest(ctx: CheckContext) -> Outcome:
    """|1 − r_t| falling (or ≤ r_tol), R(t) ≤ 1 + 1e-9 over the last decade; r_t ≥ r_min at the bound tier."""
    bound = bool(ctx.params.get("bound", False))
    r_tol, r_min, min_drop = ctx.tol("r_tol"), ctx.tol("r_min"), ctx.tol("min_drop")
    series, figs, lines, verdicts = [], {}, [], []
    for fam in ctx.params["families"]:
        fctx = dataclasses.replace(family(ctx, fam), seed=ctx.seed)

        def evaluate(ex: dict, fctx=fctx, fam=fam) -> Example:
            got = separated_run(fctx, ex)
            if got is None:   # outside (T2): no positive margin at the horizon; hypothesis draws another
                reject()
            r, model, data, opt = got
            name = ctx.params.get("norm") or info(opt.name).geometry
            G = S.geometry(name, getattr(opt.geometry, "c", 1.0))
            theta0 = r.theta0
            nus = np.cumsum([opt.nu(t) for t in range(1, r.checkpoints[-1] + 1)])
            late = last_decade(r.checkpoints)
            R = [G.norm({k: r.thetas[i][k] - theta0[k] for k in theta0}) / nus[r.checkpoints[i] - 2] for i in late]
            dev = [abs(1 - r.align[i]) for i in late]
            ts = [r.checkpoints[i] for i in late]
            k = len(lines)
            series.append(Series(f"{fam} {example_tag(ex)} |1 − r_t|", ts, [max(x, 1e-16) for x in dev],
                                 ylabel="|1 − r_t|", group="alignment"))
            series.append(Series(f"{fam} {example_tag(ex)} R(t)", ts, R, ylabel="‖θ_t − θ_0‖ / Σν", group="R_max",
                                 log_y=False))
            why = []
            if not (rules.closeness(dev[-1], r_tol) or rules.falling(ts, dev, 1.0, min_drop)):
                why.append(f"|1 − r| neither ≤ {r_tol:g} nor falling: {dev[0]:.3g} → {dev[-1]:.3g}")
            if bound and not rules.closeness(1 - min(r.align[i] for i in late), 1 - r_min):
                why.append(f"late r_t = {min(r.align[i] for i in late):.4f} < {r_min:g}")
            if not rules.closeness(max(R), 1 + 1e-9):
                why.append(f"R_max = {max(R):.6g} > 1 in {S.LABEL.get(name, name)}")
            figs.update({f"r_T[{fam}/{k}]": r.align[-1], f"R_max[{fam}/{k}]": max(R)})
            lines.append(f"{fam} {example_tag(ex)}: r_T = {r.align[-1]:.4f}, R_max = {max(R):.4f}")
            return Example(not why, {"R_max": max(R)}, reason="; ".join(why), description=example_tag(ex), inputs=ex)

        verdicts.append(run_property(fctx, network_example(), evaluate).holds)
    rs = [v for k, v in figs.items() if k.startswith("r_T[")]
    Rs = [v for k, v in figs.items() if k.startswith("R_max[")]
    return Outcome(holds=all(verdicts), figure=f"{len(rs)} runs: r_T ≥ {min(rs):.4f}, R_max ≤ {max(Rs):.4f}",
                   figures=figs, series=series, examples=len(rs), details=" | ".join(lines))


def momentum_tracks(ctx: CheckContext) -> Outcome:
    """Lemma (momentum ≈ gradient): ‖m_t/‖m_t‖_* − g_t/‖g_t‖_*‖_* (MSD), max |m̂/√v̂ − sign g| on significant
    coordinates (Adam) is ≤ track_max at the horizon or falling over the last decade (fast tier), ≤ track_max at
    the bound tier. On the families' runs (p = 0.7 > 1 − 1/L)."""
    bound = bool(ctx.params.get("bound", False))
    tmax, min_drop = ctx.tol("track_max"), ctx.tol("min_drop")
    series, figs, lines, verdicts = [], {}, [], []
    for fam in ctx.params["families"]:
        fctx = dataclasses.replace(family(ctx, fam), seed=ctx.seed)

        def evaluate(ex: dict, fctx=fctx, fam=fam) -> Example:
            got = separated_run(fctx, ex)
            if got is None:   # outside (T2): no positive margin at the horizon; hypothesis draws another
                reject()
            r, model, data, opt = got
            late = last_decade(r.checkpoints)
            vals = r.adam_dev if math.isfinite(r.adam_dev[-1]) else r.track
            ts, ys = [r.checkpoints[i] for i in late], [vals[i] for i in late]
            k = len(lines)
            series.append(Series(f"{fam} {example_tag(ex)}", ts, [max(y, 1e-18) for y in ys],
                                 ylabel="momentum − gradient (dual norm) / Adam ratio − sign", group="tracking"))
            close = rules.closeness(ys[-1], tmax)
            ok = close if bound else (close or rules.falling(ts, ys, 1.0, min_drop))
            figs[f"track_T[{fam}/{k}]"] = ys[-1]
            lines.append(f"{fam} {example_tag(ex)}: {ys[0]:.3g} → {ys[-1]:.3g}")
            why = f"tracking residual {ys[0]:.3g} → {ys[-1]:.3g} (bound {tmax:g})"
            return Example(ok, {"track": ys[-1]}, reason=why, description=example_tag(ex), inputs=ex)

        verdicts.append(run_property(fctx, network_example(), evaluate).holds)
    tr = [v for k, v in figs.items() if k.startswith("track_T[")]
    return Outcome(holds=all(verdicts), figure=f"{len(tr)} runs: tracking residual at T ≤ {max(tr):.3g} "
                                                f"(bound {tmax:g}{'' if bound else ', or falling'})",
                   figures=figs, series=series, examples=len(tr), details=" | ".join(lines))
