"""`Dataset`: validated (X, y) for binary linear classification."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import IbverifyError


@dataclass(frozen=True)
class Dataset:
    """X (n×d float64), y (n,) in {−1, +1}. `Z = y[:, None] * X` is the label-folded sample matrix."""

    X: np.ndarray
    y: np.ndarray
    name: str = "data"

    @property
    def Z(self) -> np.ndarray:
        return self.y[:, None] * self.X

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    def validated(self) -> "Dataset":
        """Check shapes, finiteness and labels; raise a one-line IbverifyError naming the problem."""
        X, y = self.X, self.y
        if X.ndim != 2:
            raise IbverifyError(f"{self.name}: X must be a 2-d array (n×d), got shape {X.shape}")
        if y.ndim != 1:
            raise IbverifyError(f"{self.name}: y must be a 1-d array of n labels, got shape {y.shape}")
        if X.shape[0] != y.shape[0]:
            raise IbverifyError(f"{self.name}: X has {X.shape[0]} rows but y has {y.shape[0]} labels")
        if X.shape[0] < 1 or X.shape[1] < 1:
            raise IbverifyError(f"{self.name}: empty data (shape {X.shape})")
        if not np.all(np.isfinite(X)):
            bad = np.argwhere(~np.isfinite(X))[0]
            raise IbverifyError(f"{self.name}: X has a non-finite value at row {bad[0]}, column {bad[1]}")
        if not np.all(np.isin(y, (-1.0, 1.0))):
            bad = y[~np.isin(y, (-1.0, 1.0))][0]
            raise IbverifyError(f"{self.name}: labels must be -1 or +1, found {float(bad):g}")
        return self


def make(X, y, name: str = "data") -> Dataset:
    """Build a validated float64 Dataset (shape, finiteness, labels; separability is separate)."""
    try:
        Xa = np.array(X, dtype=np.float64)
        ya = np.array(y, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise IbverifyError(f"{name}: data are not numeric: {e}") from None
    return Dataset(Xa, ya, name).validated()
