"""What the max-margin oracles share (oracles.maxmargin for ℓ1/ℓ2/ℓ∞, oracles.lp for 1 < p < ∞): the result type,
the support rule, the pinned solver settings and the data scale."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import IbverifyError
from ..data.dataset import inert_coordinates

SUPPORT_RTOL = 1e-6  # support vector: λ_i > SUPPORT_RTOL·max λ and z_i·w ≤ (1 + SUPPORT_RTOL)·min_j z_j·w
CLARABEL = dict(tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11, max_iter=500)


class Memo:
    """Results of deterministic solves by a digest (`cache.fingerprint`) of everything they are computed from: a claim
    and its controls ask the oracles the same questions. The most recent `size` results are kept."""

    def __init__(self, size: int = 4096):
        self.size, self.values = size, OrderedDict()

    def get(self, key: str, solve: Callable[[], Any]) -> Any:
        if key in self.values:
            self.values.move_to_end(key)
            return self.values[key]
        value = self.values[key] = solve()
        if len(self.values) > self.size:
            self.values.popitem(last=False)
        return value


@dataclass
class MaxMargin:
    norm: str
    direction: np.ndarray  # unit in the norm (0 on inert coordinates)
    margin: float          # γ_p
    duals: np.ndarray      # λ of (D), normalized so that ‖Zᵀλ‖_{p*} = 1 and 1ᵀλ = 1/γ_p
    certificate: dict = field(default_factory=dict)
    relative_slack: np.ndarray | None = None  # z_i·w/γ_p − 1 ≥ 0 (0 on active constraints)
    inert: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # all-zero columns

    @property
    def support(self) -> np.ndarray:
        """Support vectors, decided by relative quantities only: a dual weight that is not negligible
        next to the largest one, on a constraint that is active relative to the margin."""
        lam = self.duals
        on = lam > SUPPORT_RTOL * lam.max()
        if self.relative_slack is not None:
            on &= self.relative_slack <= SUPPORT_RTOL
        return np.flatnonzero(on)


def data_scale(Z: np.ndarray) -> float:
    """s = max_ik |Z_ik|: the oracles solve on Z/s (entries in [−1, 1]) and rescale after."""
    s = float(np.max(np.abs(Z), initial=0.0))
    if not (s > 0 and np.isfinite(s)):
        raise IbverifyError("data are all zero or not finite: no margin to compute")
    return s


def prepared(Z):
    """(Z as float64, its inert columns, the live ones, s = data_scale(Z), Z[:, live]/s): what every max-margin oracle
    solves on; IbverifyError for anything but a finite, non-empty 2-d array."""
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2 or Z.size == 0 or not np.all(np.isfinite(Z)):
        raise IbverifyError("Z must be a finite, non-empty 2-d array (rows z_i = y_i x_i)")
    inert = inert_coordinates(Z)
    live = np.setdiff1d(np.arange(Z.shape[1]), inert)
    s = data_scale(Z)
    return Z, inert, live, s, Z[:, live] / s
