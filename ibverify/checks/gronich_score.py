"""Scoring a network run in every applicable geometry, and the cross-geometry judgement.

A run (checkpoints θ_t, t = T/10^k, …, T) is scored in each geometry g ∈ {ℓ2, ℓ∞, max-spectral, hybrid(c)}:

    residual_g(t)   tolerance-free Fenchel KKT residual of (P_g) at θ_t (ibverify.oracles.kkt.fenchel_residual)
    signature_g(t)  structural KKT signature of g (analysis.signatures): ℓ2 layer balance, ℓ∞ saturation of every
                    layer, equal layer spectral norms, hybrid balance c‖W‖_msp/‖u‖_∞ − 1

Judgement of "the run goes to a KKT direction of geometry `own`" (rules.judge_separation, no private rule), over the
separated checkpoints of the last `decades` (≥ 2) decades, fits over ≥ 3 of them:

    supported     the ratio ρ = residual_own / min_{g≠own} residual_g is < 1/guard and falls, and the own residual
                  falls (fitted slope and the last decade's drop ≥ min_drop); at the bound tier also the own
                  signature ≤ `signature_max` at the horizon (else inconclusive)
    contradicted  another geometry at or below the own one (ρ ≥ 1) with no falling ratio over the window; or, at
                  the largest horizon the example can reach (`final`), the own residual a stable plateau while the
                  run does not approach (by normalized margin) a certified own-geometry KKT point found from its
                  direction (`approach`: a residual is not a distance; a run nearing a KKT point slowly, e.g. while
                  a unit dies, can see its residual rise)
    inconclusive  otherwise: the example is extended ×10 (prop.sequential) up to the tier's cap

The guard (1 by default) is derived from fresh runs, not the judged ones (third round of measurements: right
pairings ρ 0.08–0.58, wrong 1.73–18.7 on 20 fresh examples × 5 optimizers). Early in training every residual
falls because the loss falls, so the own residual falling alone cannot tell geometries apart; the ratio can.
Signatures are necessary conditions only (a wrong geometry's signature can be small by accident): compared across
geometries in the report (figures `signature_ratio`), never used for separation. `move` (1 − cos between the first
and last scored θ) is reported, never decides. Rates: rules.rate_fit gives the step at which the own residual
would reach `bound`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import geometry as geo
from ..blocks import cosine
from ..geometry import analysis
from ..oracles import kkt
from . import rules

SIGNATURE = {"l2": "l2_balance", "linf": "linf_saturate", "msp": "msp_equal", "hybrid": "hybrid_balance"}
LABEL = {"l2": "ℓ2", "linf": "ℓ∞", "msp": "max-spectral", "hybrid": "hybrid"}


def inert_mask(model, theta, X) -> np.ndarray:
    """Which samples have f(x_i) = 0 with ∂f(x_i)/∂θ = 0 exactly (in a ReLU^q net: every unit dead on them): they no
    longer move the run, and they keep its min margin at exactly 0. When every sample is inert the loss gradient is
    exactly 0."""
    f = model.outputs(theta, X)
    J = model.jac(theta, X)
    grad_zero = np.all([np.all(v.reshape(len(f), -1) == 0, axis=1) for v in J.values()], axis=0)
    return (f == 0) & grad_zero


def inert_samples(model, theta, X) -> int:
    """How many samples are inert (inert_mask)."""
    return int(np.sum(inert_mask(model, theta, X)))


def unseparated(model, theta, X, y, final: bool) -> tuple[str, int]:
    """The decision on a run without a positive margin at its horizon, and its number of inert samples.

    A positive margin is the theorems' hypothesis, so such a run is outside them: set aside at the largest horizon it
    can reach (`final`), and already before it when inert samples alone hold its margin (every sample with
    y·f(x) ≤ 0 is inert: no step acts on them any more, the run fits the others); inconclusive (extended ×10) while
    the gradient still acts on an unseparated sample. At seed 0 none of the six runs so held at the fast tier's horizon
    had separated a decade later, while their weights moved (by up to 14 per coordinate)."""
    inert = inert_mask(model, theta, X)
    open_ = y * model.outputs(theta, X) <= 0
    held = bool(np.any(open_) and np.all(inert[open_]))
    return (rules.SET_ASIDE if final or held else rules.INCONCLUSIVE), int(np.sum(inert))


def applicable(model) -> list[str]:
    """Geometries in which a model's run can be scored: hybrid needs both matrix and vector blocks."""
    shapes = list(model.blocks.values())
    out = ["l2", "linf", "msp"]
    if any(len(s) == 2 for s in shapes) and any(len(s) == 1 for s in shapes):
        out.append("hybrid")
    return out


def geometry(name: str, c: float):
    return geo.Hybrid(c) if name == "hybrid" else geo.get(name)


@dataclass
class Scores:
    steps: list[int]
    residual: dict[str, list[float]] = field(default_factory=dict)
    signature: dict[str, list[float]] = field(default_factory=dict)
    c: float = 1.0
    move: float = float("nan")    # 1 − cos(θ at steps[0], θ at steps[-1])


def score(run, model, data, c: float = 1.0, decades: float = 2.0, geometries: list[str] | None = None,
          points: int | None = 5) -> Scores:
    """Residuals and signatures in every geometry at (at most `points` of) the separated checkpoints of the last
    `decades` decades."""
    T = run.checkpoints[-1]
    idx = [i for i, t in enumerate(run.checkpoints) if t >= T / 10 ** decades * (1 - 1e-12) and run.q_min[i] > 0]
    if points and len(idx) > points:   # first, last and evenly spread (in log-step) in between
        idx = [idx[round(j * (len(idx) - 1) / (points - 1))] for j in range(points)]
    names = geometries or applicable(model)
    sc = Scores([run.checkpoints[i] for i in idx], c=c)
    if idx:
        sc.move = 1.0 - cosine(run.thetas[idx[0]], run.thetas[idx[-1]])
    for g in names:
        G = geometry(g, c)
        sc.residual[g] = [kkt.fenchel_residual(G, model, run.thetas[i], data.X, data.y) for i in idx]
        sc.signature[g] = [analysis.signatures(model, run.thetas[i], c).get(SIGNATURE[g], float("nan")) for i in idx]
    return sc


@dataclass
class Judgement:
    decision: str          # rules.SUPPORTED | CONTRADICTED | INCONCLUSIVE
    reasons: list[str]
    figures: dict[str, float]
    rates: dict[str, rules.RateFit]

    @property
    def ok(self) -> bool:
        """Not contradicted."""
        return self.decision != rules.CONTRADICTED


def approach(run, model, data, sc: Scores, own: str, tol: float = 1e-4):
    """The `approach` evidence of rules.judge_separation for one scored run: a KKT point of the own geometry reached
    from the horizon's direction (oracles.kkt.local_kkt), certified by its own Fenchel residual ≤ tol, and the run's
    own-geometry normalized-margin gap to it, 1 − γ(θ_t)/γ(θ_K), at the scored steps; None when none is certified."""
    def evidence():
        G = geometry(own, sc.c)
        at = dict(zip(run.checkpoints, run.thetas, strict=True))
        K = kkt.local_kkt(G, model, at[sc.steps[-1]], data.X, data.y)
        if not K.certified(tol):
            return None
        gap = [1.0 - G.margin(model, at[t], data.X, data.y) / K.margin for t in sc.steps]
        return gap, (f"a certified {LABEL[own]} KKT point near its direction (Fenchel residual {K.fenchel:.2g}) "
                     "by margin")
    return evidence


def judge(sc: Scores, own: str, *, guard: float = 1.0, min_drop: float = 0.05, decades: float = 2.0,
          bound: float = 0.05, signature_max: float | None = None, final: bool = True, approach=None) -> Judgement:
    """The cross-geometry rule for geometry `own` on one scored run (see the module docstring); `approach`: see
    rules.judge_separation (gronich_score.approach makes it for a run)."""
    figs, rates = {}, {}
    others = {g: v for g, v in sc.residual.items() if g != own}
    d, rival = rules.judge_separation(sc.steps, sc.residual[own], others, decades=decades, guard=guard,
                                      min_drop=min_drop, final=final, bound=bound, approach=approach)
    reasons = [] if d.word == rules.SUPPORTED else [f"{LABEL[own]} residual: {d.reason}"]
    for kind, curves in (("residual", sc.residual), ("signature", sc.signature)):
        y = curves[own]
        last = y[-1] if y else float("nan")
        before = rules.value_before(sc.steps, y, 1.0) if y else None
        rest = {g: v[-1] for g, v in curves.items() if g != own and v}
        near = min(rest, key=lambda g: rest[g] if np.isfinite(rest[g]) else np.inf) if rest else ""
        figs[kind] = last
        figs[f"{kind}_drop"] = 1 - last / before if before else float("nan")
        figs[f"{kind}_rival"] = rest.get(near, float("nan"))
        figs[f"{kind}_ratio"] = last / rest[near] if near and rest[near] else float("nan")
        rates[kind] = rules.rate_fit(sc.steps, y, bound, decades) if y else rules.RateFit(float("nan"), None,
                                                                                           float("nan"), False)
        figs[f"{kind}_falling"] = float(bool(y) and rules.falling(sc.steps, y, 1.0, min_drop))
    word = d.word
    if word == rules.SUPPORTED and signature_max is not None and not rules.closeness(figs["signature"], signature_max):
        word = rules.INCONCLUSIVE
        reasons.append(f"{LABEL[own]} signature {figs['signature']:.3g} > {signature_max:g} at t = {sc.steps[-1]}")
    figs["direction_move"] = sc.move
    figs["decision"] = float(rules.DECISIONS.index(word))
    return Judgement(word, reasons, figs, rates)


def direction_increments(steps, thetas, lag: float = 10.0, decades: float = 2.0) -> tuple[list[int], list[float]]:
    """(T2) observed, geometry-free: the Cauchy increments δ(t) = 1 − cos(θ_{t/lag}, θ_t) (ℓ2 cosine of the flat θ)
    at every checkpoint t of the last `decades` decades that has one at ≤ t/lag."""
    T = steps[-1]
    ts, ds = [], []
    for i, t in enumerate(steps):
        early = [j for j, s in enumerate(steps) if s <= t / lag * (1 + 1e-3)]   # integer checkpoints round
        if t >= T / 10 ** decades * (1 - 1e-9) and early:
            ts.append(int(t))
            ds.append(1.0 - cosine(thetas[early[-1]], thetas[i]))
    return ts, ds


def envelope(ds) -> list[float]:
    """The sup-envelope from the right, E(t) = max_{s ≥ t} δ(s): a bump in the middle does not count, a direction
    still turning at the horizon does."""
    out, m = [], -np.inf
    for d in reversed(list(ds)):
        m = max(m, d)
        out.append(m)
    return out[::-1]


def judge_direction(steps, thetas, dir_max: float, min_drop: float, final: bool, lag: float = 10.0,
                    decades: float = 2.0) -> tuple[rules.Decision, list[int], list[float]]:
    """(T2) on one run: rules.judge_gap on the sup-envelope of the Cauchy increments over ≥ 1.9 decades (checkpoint
    rounding): supported when ≤ dir_max and falling; contradicted by a stable plateau at the cap (a direction that
    keeps turning at a constant log-time rate keeps δ constant); else inconclusive. Returns (decision, t, δ)."""
    ts, ds = direction_increments(steps, thetas, lag, decades)
    if len(ts) < 3 or math.log10(ts[-1] / ts[0]) < 1.9:
        return rules.Decision(rules.INCONCLUSIVE, f"direction increments over {len(ts)} checkpoints only"), ts, ds
    d = rules.judge_gap(ts, envelope(ds), dir_max, decades=math.log10(ts[-1] / ts[0]), min_drop=min_drop,
                        final=final)
    return rules.Decision(d.word, f"direction increment δ: {d.reason}", d.fit), ts, ds


def rate_line(rates: dict[str, rules.RateFit], bound: float) -> str:
    return "; ".join(f"{k}: {r.describe(bound)}, stability {r.stability:.2g}" for k, r in rates.items())


def median(xs) -> float:
    xs = [x for x in xs if x is not None and np.isfinite(x)]
    return float(np.median(xs)) if xs else float("nan")
