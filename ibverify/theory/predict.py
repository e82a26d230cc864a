"""`predict(Z)`: the per-sample Adam (AdamProxy) direction predicted by the dual fixed point, with
its diagnostics and its cosines to the ℓ2 and ℓ∞ max-margin solutions (for `ibverify predict`)."""

from __future__ import annotations

import numpy as np

from . import fixed_point
from .linf_set import max_cos_bound


def predict(Z, b: int = 1, tol: float = 1e-10, max_iter: int = 500, damping: float = 0.0) -> dict:
    """Run Algorithm 3 on label-folded data Z and describe the fixed point (JSON-ready dict).

    cos_linf is the cosine to the ℓ∞ LP solution the oracle returns; since ℓ∞ solutions can be
    non-unique, cos_linf_bound bounds the cosine to every ℓ∞ solution, and linf_margin_gap compares
    by margin: (γ∞ − min_i z_i·p/‖p‖∞)/γ∞."""
    from ..oracles import max_margin, normalized_margin

    Z = np.asarray(Z, dtype=np.float64)
    fp = fixed_point.iterate(Z, b=b, tol=tol, max_iter=max_iter, damping=damping)
    l2, li = max_margin(Z, "l2"), max_margin(Z, "linf")
    p = fp.direction
    vinf = li.direction / np.linalg.norm(li.direction)
    return {
        "direction": p.tolist(),
        "c": fp.c.tolist(),
        "support": fp.support.tolist(),
        "support_vectors": fp.active.tolist(),
        "cos_l2": float(p @ l2.direction),
        "cos_linf": float(p @ vinf),
        "cos_linf_bound": max_cos_bound(Z, p, li.margin),
        "l2_margin": normalized_margin(Z, p, "l2"),
        "gamma_l2": l2.margin,
        "linf_margin_gap": (li.margin - normalized_margin(Z, p, "linf")) / li.margin,
        "gamma_linf": li.margin,
        "iterations": fp.iterations,
        "residual": fp.residual,
        "kkt_residual": fp.kkt,
        "unique_dual": bool(fp.unique_dual),
        "batch_size": b,
    }
