"""Full-batch training loop with log-spaced checkpoints, run diagnostics, margins and KKT signatures."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .blocks import Params, copy, inner
from . import geometry as geo
from .loss import evaluate
from .optim import Optimizer, Scaled
from .geometry.base import spectral as spectral_norm


def log_checkpoints(steps: int, k: int = 16, start: int = 1) -> list[int]:
    """About k log-spaced integer steps in [start, steps], always including steps."""
    pts = np.unique(np.round(np.logspace(np.log10(max(start, 1)), np.log10(steps), k)).astype(int))
    return [int(t) for t in pts if t >= 1]


@dataclass
class Run:
    steps: list[int] = field(default_factory=list)
    thetas: list[Params] = field(default_factory=list)
    log_loss: list[float] = field(default_factory=list)
    q_min: list[float] = field(default_factory=list)
    align: list[float] = field(default_factory=list)        # r_t = ⟨Δθ_t/ν_t, −g_t/‖g_t‖_*⟩
    track: list[float] = field(default_factory=list)        # ‖m/‖m‖_* − g/‖g‖_*‖_* (nan without momentum)
    adam_dev: list[float] = field(default_factory=list)     # max |m̂/√v̂ − sign g| on significant coordinates
    underflow: dict = field(default_factory=dict)
    diverged: bool = False

    @property
    def theta(self) -> Params:
        return self.thetas[-1]


def _dual_unit(geometry, p: Params) -> Params:
    n = geometry.dual_norm(p)
    return {k: v / n for k, v in p.items()} if n > 0 else p


def run(model, X, y, opt: Optimizer, steps: int, theta0: Params, *, loss: str = "logistic",
        checkpoints: list[int] | None = None, sig: float = 1e-3) -> Run:
    """Train for `steps` full-batch steps from theta0; record at `checkpoints` (default: log-spaced)."""
    cps = set(checkpoints or log_checkpoints(steps))
    theta = copy(theta0)
    opt.init(theta)
    out = Run()
    G = opt.geometry
    for t in range(1, steps + 1):
        ev = evaluate(model, theta, X, y, loss, with_loss=t in cps)
        g = Scaled(ev.ghat, ev.log_scale)
        if ev.underflow_samples == len(ev.q):
            out.underflow["all_weights"] = out.underflow.get("all_weights", 0) + 1
        new = opt.step(theta, g)
        if t in cps:
            gn = G.dual_norm(ev.ghat)
            delta = {k: (new[k] - theta[k]) / opt.nu(t) for k in theta}
            out.steps.append(t)
            out.thetas.append(copy(theta))
            out.log_loss.append(ev.log_loss)
            out.q_min.append(float(np.min(ev.q)))
            out.align.append(-inner(delta, ev.ghat) / gn if gn > 0 else float("nan"))
            m = opt.momentum()
            if m is not None and gn > 0:
                diff = {k: v - w for (k, v), w in zip(_dual_unit(G, m.blocks).items(),
                                                      _dual_unit(G, ev.ghat).values(), strict=False)}
                out.track.append(G.dual_norm(diff))
            else:
                out.track.append(float("nan"))
            ratio = opt.adam_ratio()
            if ratio is not None:
                l1 = sum(float(np.sum(np.abs(v))) for v in ev.ghat.values())
                dev = 0.0
                for k, r in ratio.items():
                    s = np.abs(ev.ghat[k]) > sig * l1
                    if s.any():
                        dev = max(dev, float(np.max(np.abs(r[s] - np.sign(ev.ghat[k][s])))))
                out.adam_dev.append(dev)
            else:
                out.adam_dev.append(float("nan"))
        theta = new
        if not all(np.all(np.isfinite(v)) for v in theta.values()):
            out.diverged = True
            break
    out.underflow.update(opt.underflow)
    return out


# ----------------------------------------------------------------------------------------------- analysis

def all_geometries(theta: Params, c: float = 1.0) -> dict:
    gs = {"l2": geo.L2(), "linf": geo.Linf(), "msp": geo.MaxSpectral()}
    if any(v.ndim == 2 for v in theta.values()) and any(v.ndim == 1 for v in theta.values()):
        gs["hybrid"] = geo.Hybrid(c)
    if len(theta) == 1 and next(iter(theta.values())).ndim == 2:
        gs["spectral"] = geo.Spectral()
    return gs


def margins(model, theta: Params, X, y, c: float = 1.0) -> dict[str, float]:
    """Normalized margin min_i y_i f(x_i;θ)/‖θ‖^L in every applicable geometry."""
    return {name: g.margin(model, theta, X, y) for name, g in all_geometries(theta, c).items()}


def signatures(model, theta: Params, c: float = 1.0) -> dict[str, float]:
    """Structural KKT signatures (0 at a KKT point of the respective geometry, §3.3 of the spec):
    l2_balance     max_k/min_k of ‖θ_k‖²/L_k, minus 1 (two-layer: |‖W‖_F²/(q‖a‖²) − 1| up to the max/min form)
    msp_equal      1 − min_k ‖W_k‖_sp / max_k ‖W_k‖_sp over blocks of positive degree
    linf_saturate  1 − min_k max|θ_k| / ‖θ‖_∞ (every block must reach the global max)
    hybrid_balance |c‖W‖_msp / ‖u‖_∞ − 1| (when there are matrix and vector blocks)."""
    ks = [k for k in theta if model.degrees[k] > 0]
    b = [float(np.sum(theta[k] ** 2)) / model.degrees[k] for k in ks]
    sp = [spectral_norm(theta[k]) for k in ks]
    mx = [float(np.max(np.abs(theta[k]))) for k in ks]
    out = {"l2_balance": max(b) / min(b) - 1.0, "msp_equal": 1.0 - min(sp) / max(sp),
           "linf_saturate": 1.0 - min(mx) / max(mx)}
    h = geo.Hybrid(c)
    mats, vecs = h.split(theta)
    if mats and vecs:
        w, u = h.parts(theta)
        out["hybrid_balance"] = abs(w / u - 1.0)
    return out


def cosine(a: Params, b: Params) -> float:
    return inner(a, b) / math.sqrt(inner(a, a) * inner(b, b))
