"""`predict(Z)`: the per-sample Adam (AdamProxy) direction predicted by the dual fixed point, with
its diagnostics and its cosines to the ℓ2 and ℓ∞ max-margin solutions (for `ibverify predict`).

Real data: inert coordinates (columns of Z that are zero in every sample) are set aside: Adam never
moves them (gradient and second moment stay 0, update 0/0 := 0) and no margin depends on them, so
the fixed point is computed on the other columns and p* is 0 there; they are listed in the result.
Scale: the fixed point is computed on Ẑ = Z/s, s = max|Z| (M(c), P_Adam(c) and T(c) give the same
c* and direction for any s > 0: M scales by s, the constraint by s, λ by 1/s and T normalizes it), so
tolerances are relative to the data's scale; margins are reported for Z itself.
Damping (damping=None, the default): Algorithm 3 is run plain (θ = 0) first; when that fails (on real
data T(c) often puts zero weight on every sample where some pixel is nonzero, so M(c) is singular at
the next step) it is rerun damped, c ← (1−θ)T(c) + θc with θ = AUTO_DAMPING, which keeps c > 0 and
has the same fixed points. The damping used is reported.
"""

from __future__ import annotations

import numpy as np

from ..errors import IbverifyError
from ..data.dataset import inert_coordinates
from ..oracles import max_margin, normalized_margin
from ..oracles.maxmargin import data_scale
from . import fixed_point
from .linf_set import max_cos_bound


AUTO_DAMPING = 0.3


def predict(Z, b: int = 1, tol: float = 1e-10, max_iter: int = 500, damping: float | None = None) -> dict:
    """Run Algorithm 3 on label-folded data Z and describe the fixed point (JSON-ready dict).

    cos_linf is the cosine to the ℓ∞ LP solution the oracle returns; since ℓ∞ solutions can be
    non-unique, cos_linf_bound bounds the cosine to every ℓ∞ solution (inert coordinates included,
    where ℓ∞ solutions are free), and linf_margin_gap compares by margin: (γ∞ − min_i z_i·p/‖p‖∞)/γ∞."""
    Z = np.asarray(Z, dtype=np.float64)
    inert = inert_coordinates(Z)
    live = np.setdiff1d(np.arange(Z.shape[1]), inert)
    s = data_scale(Z)
    Zn = Z / s
    if damping is None:
        try:
            damping = 0.0
            fp = fixed_point.iterate(Zn[:, live], b=b, tol=tol, max_iter=max_iter, damping=damping)
        except IbverifyError:
            damping = AUTO_DAMPING
            fp = fixed_point.iterate(Zn[:, live], b=b, tol=tol, max_iter=max_iter, damping=damping)
    else:
        fp = fixed_point.iterate(Zn[:, live], b=b, tol=tol, max_iter=max_iter, damping=damping)
    l2, li = max_margin(Z, "l2"), max_margin(Z, "linf")
    p = np.zeros(Z.shape[1])
    p[live] = fp.direction
    vinf = li.direction / np.linalg.norm(li.direction)
    return {
        "direction": p.tolist(),
        "c": fp.c.tolist(),
        "support": fp.support.tolist(),
        "support_vectors": fp.active.tolist(),
        "inert_coordinates": inert.tolist(),
        "cos_l2": float(p @ l2.direction),
        "cos_linf": float(p @ vinf),
        "cos_linf_bound": max_cos_bound(Zn, p, li.margin / s),
        "l2_margin": normalized_margin(Z, p, "l2"),
        "gamma_l2": l2.margin,
        "linf_margin_gap": (li.margin - normalized_margin(Z, p, "linf")) / li.margin,
        "gamma_linf": li.margin,
        "data_scale": s,
        "iterations": fp.iterations,
        "residual": fp.residual,
        "kkt_residual": fp.kkt,
        "unique_dual": bool(fp.unique_dual),
        "batch_size": b,
        "damping": damping,
    }
