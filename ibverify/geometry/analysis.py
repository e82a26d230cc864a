"""Every geometry applied to one parameter point: normalized margins and structural KKT signatures."""

from __future__ import annotations

import numpy as np

from ..blocks import Params
from .base import spectral as spectral_norm
from .hybrid import Hybrid
from .l2 import L2
from .linf import Linf
from .msp import MaxSpectral
from .spectral import Spectral


def all_geometries(theta: Params, c: float = 1.0) -> dict:
    gs = {"l2": L2(), "linf": Linf(), "msp": MaxSpectral()}
    if any(v.ndim == 2 for v in theta.values()) and any(v.ndim == 1 for v in theta.values()):
        gs["hybrid"] = Hybrid(c)
    if len(theta) == 1 and next(iter(theta.values())).ndim == 2:
        gs["spectral"] = Spectral()
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
    h = Hybrid(c)
    mats, vecs = h.split(theta)
    if mats and vecs:
        w, u = h.parts(theta)
        out["hybrid_balance"] = abs(w / u - 1.0)
    return out
