"""Data for the same-speed wrong-limit controls of paper 1's linear claims (issue 33 item 2).

    coordinate_scale(d, amplitude)  s_j = 10^(amplitude·(j/(d−1) − ½)): a fixed positive diagonal ≠ cI
    inc_adam_limit_gap(Z, s)        1 − cos(Inc-Adam's limit on the data Z·diag(s), ŵ2 of those data), Z GR data
    coordinate_scaled(inner, amplitude, gap_range)
                                    GR data with coordinate j multiplied by s_j (magnitudes no longer equal across
                                    coordinates: not GR), kept when inc_adam_limit_gap lies in gap_range
    weighted_linf_gap(Z, D)         the smallest ℓ∞ margin gap of any direction precond-signum can converge to
    weighted_linf(inner, gap_min)   data on which that gap is ≥ gap_min

Inc-Adam on Z' = Z·diag(s) is exactly D-preconditioned Inc-Adam on Z (D = diag(s)) through u = s ⊙ w': the
per-sample gradients scale by s, so m' = s ⊙ m and v' = s² ⊙ v, and m'/√v' = m/√v. On GR data v is isotropic
(baek.gr-v-isotropic), so the step is a scalar times D m: a sample-reweighted preconditioned GD, whose limit is
the max margin of the D^(−1/2)-weighted ℓ2 norm (strategies.linear.precond_limit). In w' that is
s^(−1/2) ⊙ SVM(Z·diag(s^(1/2))): reached at Inc-Adam's own speed, and not ŵ2 of Z'.

precond-signum (w ← w − η D sign(m)) on Z is D ⊙ (Signum on Z·D) exactly (sign(D m) = sign(m), D > 0): its
limit is D v with v in the ℓ∞ max-margin set of Z·D (Thm 5.1 on those data), the max margin of the weighted norm
‖D^(−1) w‖∞, reached at Signum's own speed.
"""

from __future__ import annotations

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from scipy.optimize import linprog

from ..errors import IbverifyError
from ..data.dataset import make
from ..oracles import max_margin
from .linear import Certified, precond_limit

SLACK = 1e-9   # relative relaxation of the weighted margin, so that rounding cannot empty its optimal set


def coordinate_scale(d: int, amplitude: float) -> np.ndarray:
    """s_j = 10^(amplitude·(j/(d−1) − ½)), j = 0 … d−1 (geometric, max/min = 10^amplitude; d = 1: s = 1)."""
    d = int(d)
    return np.ones(1) if d == 1 else 10.0 ** (float(amplitude) * (np.arange(d) / (d - 1) - 0.5))


def inc_adam_limit_gap(Z: np.ndarray, s: np.ndarray) -> float:
    """1 − cos(Inc-Adam's limit on Z·diag(s), ŵ2 of Z·diag(s)) for GR data Z (module docstring): the limit of
    preconditioned GD with P = diag(1/s) on the scaled data, precond_limit(Z·diag(s), 1/s)."""
    s = np.asarray(s, float)
    return 1.0 - precond_limit(Z * s, 1.0 / s).cos_l2


@st.composite
def coordinate_scaled(draw, inner, amplitude: float, gap_range: tuple[float, float]):
    """Data from `inner` (GR) with coordinate j multiplied by coordinate_scale(d, amplitude)_j, kept when Inc-Adam's
    limit on them has lo ≤ 1 − cos(limit, ŵ2) ≤ hi; the certificate w/s separates them with the same margins."""
    cert = draw(inner)
    Z = cert.dataset.Z
    s = coordinate_scale(Z.shape[1], amplitude)
    lo, hi = gap_range
    assume(lo <= inc_adam_limit_gap(Z, s) <= hi)
    D = cert.dataset
    X = D.X * s
    w = cert.w / s
    Zs = Z * s
    return Certified(make(X, D.y, f"{D.name}-scaled"), w, float(np.min(Zs @ w) / np.linalg.norm(w)))


def weighted_linf_gap(Z: np.ndarray, D: np.ndarray) -> float:
    """min over v in the ℓ∞ max-margin set S = {‖v‖∞ ≤ 1, Z·D v ≥ γ_D} of Z·D of the ℓ∞ margin gap (γ∞ − γ∞(Dv))/γ∞
    of w = D v on Z. One LP (Charnes–Cooper: y = v/‖Dv‖∞, r = 1/‖Dv‖∞): maximize t s.t. Z D y ≥ t, Z D y ≥ γ_D r,
    |D y| ≤ 1, |y| ≤ r; at the optimum ‖Dy‖∞ = 1 and t = the largest normalized ℓ∞ margin over D·S."""
    Z = np.asarray(Z, float)
    D = np.asarray(D, float)
    n, d = Z.shape
    ZD = Z * D
    gd = max_margin(ZD, "linf").margin * (1.0 - SLACK)
    gi = max_margin(Z, "linf").margin
    I_, zc, oc = np.eye(d), np.zeros((d, 1)), np.ones((d, 1))
    # variables x = (y (d), r, t); rows A x ≤ b
    A = np.vstack([np.hstack([-ZD, np.zeros((n, 1)), np.ones((n, 1))]),     # t − ZD y ≤ 0
                   np.hstack([-ZD, np.full((n, 1), gd), np.zeros((n, 1))]),  # γ_D r − ZD y ≤ 0
                   np.hstack([I_ * D, zc, zc]), np.hstack([-I_ * D, zc, zc]),  # |D y| ≤ 1
                   np.hstack([I_, -oc, zc]), np.hstack([-I_, -oc, zc])])        # |y| ≤ r
    b = np.concatenate([np.zeros(2 * n), np.ones(2 * d), np.zeros(2 * d)])
    c = np.zeros(d + 2)
    c[-1] = -1.0
    lp = linprog(c, A_ub=A, b_ub=b, bounds=[(None, None)] * d + [(0, None), (None, None)], method="highs")
    if lp.status != 0:
        raise IbverifyError(f"weighted ℓ∞ gap LP failed: {lp.message}")
    return float((gi - (-lp.fun)) / gi)


@st.composite
def weighted_linf(draw, inner, D_of, gap_min: float):
    """Data from `inner` on which every limit of precond-signum (diagonal D_of(d)) has ℓ∞ gap ≥ gap_min."""
    cert = draw(inner)
    Z = cert.dataset.Z
    assume(weighted_linf_gap(Z, D_of(Z.shape[1])) >= gap_min)
    return cert
