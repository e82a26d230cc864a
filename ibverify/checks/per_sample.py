"""Checks of paper 1's direction claims for linear models (Inc-Adam, Det-Adam, Signum).

`direction_converges` is one property over generated datasets: run the optimizer and measure the
gap to a target geometry at log-spaced checkpoints,
    target l2:    gap = 1 − cos(w_t, ŵ2)                      pass: cos ≥ cos_min at the horizon
    target linf:  gap = (γ∞ − min_i z_i·w_t/‖w_t‖_∞) / γ∞     pass: gap ≤ gap_max at the horizon
and in both cases the gap must also be falling: below its value one decade of steps earlier (or
`trend_decades` decades, for claims whose limit gap is only ε-small, like Thm 5.1's).
A claim and its control call this same function; only the expectation differs.
"""

from __future__ import annotations

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from ..claims import CheckContext
from ..data import strategies as S
from ..engine import run
from ..engine.run import iterate_chain
from ..evidence import Outcome, Series
from ..optim import OptimizerSpec
from ..optim.backend import Float64
from ..oracles import max_margin, normalized_margin
from .prop import Example, run_property, step_progress

FLOOR = 1e-12  # a gap this small counts as reached (no trend needed)


def _strategy(p: dict):
    data = S.data(p["dataset"], **_size_kw(p))
    if "beta1" in p:
        bet = st.just((p["beta1"], p.get("beta2", p["beta1"])))
    elif "beta_range" in p:  # Signum: one momentum β (stored as β1)
        bet = st.floats(*p["beta_range"]).map(lambda b: (b, b))
    else:
        bet = S.betas(beta2=st.floats(*p.get("beta2_range", (0.3, 0.999))))
    return st.tuples(data, bet, st.integers(1, 10**6))


def _size_kw(p: dict) -> dict:
    kw = {}
    if "n" in p:
        kw["n"] = st.integers(*p["n"])
    if "d" in p:
        kw["d"] = st.integers(*p["d"])
    return kw


def falls(x: np.ndarray, gap: np.ndarray, decades: float = 1.0) -> bool:
    """The gap at the horizon is below the gap `decades` decades earlier (or already below FLOOR)."""
    if gap[-1] <= FLOOR:
        return True
    earlier = gap[x <= x[-1] / 10 ** decades]
    return bool(len(earlier) and gap[-1] < earlier[-1])


def resumable(ctx: CheckContext, Z: np.ndarray, spec: OptimizerSpec, steps: int) -> dict:
    """With `resumable = true` (full tier) each run checkpoints under $IBVERIFY_CACHE (default
    .ibverify-cache/) and a re-run of the claim continues where a killed one stopped."""
    if not ctx.params.get("resumable"):
        return {}
    import hashlib
    import os
    from pathlib import Path

    key = hashlib.sha256(Z.tobytes() + repr((ctx.claim.id, spec, steps)).encode()).hexdigest()[:20]
    path = Path(os.environ.get("IBVERIFY_CACHE", ".ibverify-cache")) / ctx.claim.id / f"{key}.ckpt"
    path.parent.mkdir(parents=True, exist_ok=True)
    return {"save_to": str(path), "resume": path.exists(), "save_every": 10.0}


def gap_series(Z: np.ndarray, ws: np.ndarray, target: str) -> tuple[np.ndarray, dict]:
    ref = max_margin(Z, target)
    if target == "l2":
        cos = ws @ ref.direction / np.maximum(np.linalg.norm(ws, axis=1), 1e-300)
        return 1.0 - cos, {"gamma_l2": ref.margin}
    m = np.array([normalized_margin(Z, w, "linf") for w in ws])
    return (ref.margin - m) / ref.margin, {"gamma_linf": ref.margin}


def direction_converges(ctx: CheckContext) -> Outcome:
    p = ctx.params
    target = p["target"]
    need = ctx.tol("cos_min") if target == "l2" else ctx.tol("gap_max")

    def evaluate(ex) -> Example:
        cert, (b1, b2), bseed = ex
        D = cert.dataset
        Z = D.Z
        if p.get("require_l2_not_linf"):  # control data: ŵ2 is not an ℓ∞ max-margin solution
            l2, li = max_margin(Z, "l2"), max_margin(Z, "linf")
            assume((li.margin - normalized_margin(Z, l2.direction, "linf")) / li.margin >= p["require_l2_not_linf"])
        b = p.get("batch_size")
        if b == "drawn":
            b = 1 + bseed % D.n
        spec = OptimizerSpec(p["optimizer"], batch_size=b, lr=p.get("lr", 0.1), lr_decay=p.get("lr_decay", 0.5),
                             beta1=b1, beta2=b2, eps=p.get("eps", 0.0),
                             bias_correction=p.get("bias_correction", False), order=p.get("order", "cyclic"),
                             seed=bseed).resolved(D.n)
        steps = int(p["epochs"]) * (D.n // spec.batch_size if spec.batch_size < D.n else 1)
        desc = f"n={D.n} d={D.d} β1={b1:.3g} β2={b2:.3g} b={spec.batch_size}"
        r = run(Z, spec, steps, checkpoints=p.get("checkpoints", 24), progress=step_progress(ctx, desc),
                **resumable(ctx, Z, spec, steps))
        gap, refs = gap_series(Z, r.ws, target)
        final = float(gap[-1])
        close = (1 - final >= need) if target == "l2" else (final <= need)
        trend = falls(r.checkpoints, gap, p.get("trend_decades", 1.0))
        reason = [] if close else [f"{'cos' if target == 'l2' else 'gap'} at horizon {1 - final if target == 'l2' else final:.4g}"]
        if not trend:
            reason.append(f"gap not falling over the last {p.get('trend_decades', 1.0):g} decade(s)")
        return Example(close and trend, {"final_gap": final, **refs, "stalled": r.diagnostics["stalled_steps"]},
                       {"gap": (r.checkpoints.tolist(), gap.tolist())}, "; ".join(reason), desc,
                       {"n": D.n, "d": D.d, "beta1": b1, "beta2": b2, "batch_size": spec.batch_size,
                        "steps": steps, "data": repr(cert)})

    res = run_property(ctx, _strategy(p), evaluate)
    return _outcome(res, target, need)


def _outcome(res, target: str, need: float) -> Outcome:
    exs = res.examples
    finals = np.array([e.figures["final_gap"] for e in exs])
    label = "1 − cos(w, ŵ2)" if target == "l2" else "(γ∞ − γ∞(w))/γ∞"
    series = [Series(f"{e.description}", *e.curves["gap"], ylabel=label, group="gap") for e in exs[:12]]
    worst = exs[int(np.argmax(finals))]
    if target == "l2":
        fig = f"min cos(w, ŵ2) = {1 - finals.max():.6f} over {len(exs)} datasets (need ≥ {need})"
        figures = {"min_cos_l2": 1 - finals.max(), "max_gap": finals.max()}
    else:
        fig = f"max ℓ∞ margin gap = {finals.max():.3%} over {len(exs)} datasets (need ≤ {need:.0%})"
        figures = {"max_linf_gap": finals.max(), "min_linf_gap": finals.min()}
    if res.failing is not None:
        f = res.failing
        fig = f"counterexample: {f.reason} ({f.description})"
    table = [{"example": e.description, "final gap": e.figures["final_gap"], "ok": e.ok, "why not": e.reason}
             for e in exs]
    return Outcome(
        holds=res.holds, figure=fig, figures=figures, series=series,
        details=(f"worst example: {worst.description}, final gap {worst.figures['final_gap']:.3g}"
                 + (f"; {res.failing.reason}" if res.failing else "")),
        examples=len(exs), table=table,
        counterexample=(dict(res.failing.inputs, reason=res.failing.reason) if res.failing else None))


def v_isotropic(ctx: CheckContext) -> Outcome:
    """Inc-Adam's second moment v_t has all coordinates equal at every step (GR data, spec §4.2).

    Runs the float64 reference chain step by step and measures max_t (max_k v_t[k] − min_k v_t[k]) /
    max_k v_t[k]; holds when it is ≤ rtol (exact up to rounding)."""
    p = ctx.params
    rtol = ctx.tol("rtol")

    def evaluate(ex) -> Example:
        cert, (b1, b2), _ = ex
        Z = cert.dataset.Z
        spec = OptimizerSpec("inc-adam", beta1=b1, beta2=b2).resolved(cert.dataset.n)
        worst, xs, ys = 0.0, [], []
        for t, w, g, state in iterate_chain(Z, spec, Float64()):
            v = state[0][1]
            spread = float((v.max() - v.min()) / v.max()) if v.max() > 0 else 0.0
            worst = max(worst, spread)
            xs.append(t)
            ys.append(max(spread, 1e-18))
            if t >= p["steps"]:
                break
        return Example(worst <= rtol, {"max_spread": worst}, {"spread": (xs, ys)},
                       f"relative spread of v reached {worst:.3g} > {rtol:g}",
                       f"n={cert.dataset.n} d={cert.dataset.d} β1={b1:.3g} β2={b2:.3g}",
                       {"data": repr(cert), "beta1": b1, "beta2": b2})

    res = run_property(ctx, _strategy(p), evaluate)
    spreads = [e.figures["max_spread"] for e in res.examples]
    return Outcome(
        holds=res.holds,
        figure=f"max relative spread of v_t over coordinates = {max(spreads):.2g} over {len(spreads)} datasets",
        figures={"max_spread": max(spreads)},
        series=[Series(e.description, *e.curves["spread"], ylabel="(max v − min v)/max v", group="spread", log_y=True)
                for e in res.examples[:8]],
        examples=len(spreads),
        details=res.failing.reason if res.failing else "",
        counterexample=(dict(res.failing.inputs, reason=res.failing.reason) if res.failing else None))


def gr_beta2_zero(ctx: CheckContext) -> Outcome:
    """Finding: at β1 = β2 = 0 Inc-Adam's step is sign(g_t) = −sign(z_i) exactly, whatever the loss
    weights, so on GR data (sign z_i = s_i) the iterate is Σ_t η_t s_{t mod N} and its direction tends
    to Σ_i s_i / ‖Σ_i s_i‖, not ŵ2. For small β2 > 0 it still reaches ŵ2, slowly. Reported per β2:
    1 − cos(w_t, ŵ2) and 1 − cos(w_t, Σ_i s_i)."""
    p = ctx.params
    rows, series = [], []
    for seed in p["data_seeds"]:
        Z = gr_dataset(p["n"], p["d"], seed)
        l2 = max_margin(Z, "l2").direction
        ss = np.sign(Z).sum(axis=0)
        ss = ss / np.linalg.norm(ss)
        for b2 in p["beta2s"]:
            r = run(Z, OptimizerSpec("inc-adam", beta1=0.0, beta2=b2), int(p["steps"]), checkpoints=12)
            dirs = r.ws / np.linalg.norm(r.ws, axis=1, keepdims=True)
            g2, gs = 1 - dirs @ l2, 1 - dirs @ ss
            rows.append({"seed": seed, "beta2": b2, "1 − cos(w, ŵ2)": float(g2[-1]),
                         "1 − cos(w, Σ s_i)": float(gs[-1]), "cos(ŵ2, Σ s_i)": float(l2 @ ss)})
            if seed == p["data_seeds"][0]:
                series.append(Series(f"β2 = {b2:g}: to ŵ2", r.checkpoints.tolist(), np.maximum(g2, 1e-18).tolist(),
                                     ylabel="1 − cos", group="gap to ŵ2"))
                series.append(Series(f"β2 = {b2:g}: to Σ s_i", r.checkpoints.tolist(),
                                     np.maximum(gs, 1e-18).tolist(), ylabel="1 − cos", group="gap to Σ s_i"))
    zero = [r for r in rows if r["beta2"] == 0.0]
    worst_l2 = min(r["1 − cos(w, ŵ2)"] for r in zero) if zero else float("nan")
    best_ss = max(r["1 − cos(w, Σ s_i)"] for r in zero) if zero else float("nan")
    return Outcome(
        holds=None,
        figure=(f"β1 = β2 = 0: 1 − cos(w, Σ s_i) ≤ {best_ss:.1e} while 1 − cos(w, ŵ2) ≥ {worst_l2:.3g} "
                f"after {int(p['steps']):.0e} steps ({len(zero)} datasets)"),
        figures={"beta0_gap_signsum": best_ss, "beta0_gap_l2": worst_l2}, series=series, table=rows,
        examples=len(rows))


def gr_dataset(n: int, d: int, seed: int) -> np.ndarray:
    from ..data import gr

    return gr(n, d, np.random.default_rng(seed)).Z
