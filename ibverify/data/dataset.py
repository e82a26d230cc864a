"""`Dataset`: validated (X, y) for binary classification, for every model (vector or matrix inputs)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import IbverifyError


@dataclass(frozen=True)
class Dataset:
    """X (n×d float64, or n×p×r input matrices), y (n,) in {−1, +1}; `certificate`: how a generated set is
    separable (e.g. its teacher's margin). `Z = y[:, None] * X` is the label-folded sample matrix."""

    X: np.ndarray
    y: np.ndarray
    name: str = "data"
    certificate: dict = field(default_factory=dict, compare=False)

    @property
    def Z(self) -> np.ndarray:
        return self.y[:, None] * self.X

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    @property
    def inert(self) -> np.ndarray:
        """Inert coordinates: columns of X that are zero in every sample (see `inert_coordinates`)."""
        return inert_coordinates(self.X)

    def validated(self, matrices: bool = False) -> "Dataset":
        """Check shapes, finiteness and labels; raise a one-line IbverifyError naming the problem.
        matrices: X may also hold one p×r input matrix per sample (n×p×r)."""
        X, y = self.X, self.y
        if X.ndim != 2 and not (matrices and X.ndim == 3):
            raise IbverifyError(f"{self.name}: X must be a 2-d array (n×d){' or n×p×r' if matrices else ''}, "
                                f"got shape {X.shape}")
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


def inert_coordinates(Z) -> np.ndarray:
    """Columns k with Z_ik = 0 for every sample i. No margin depends on w_k, and (per-sample) Adam
    never moves w_k (its gradient and second moment stay 0, update 0/0 := 0): such coordinates are
    set aside by the oracles and the theory and reported, never refused."""
    return np.flatnonzero(~np.any(np.asarray(Z) != 0, axis=0))


def _real_array(a, what: str, name: str) -> np.ndarray:
    """float64 copy of a real numeric array; complex, object, text or ragged input is an error."""
    try:
        arr = np.asarray(a)
    except (TypeError, ValueError) as e:
        raise IbverifyError(f"{name}: {what} is not a numeric array: {str(e).splitlines()[0]}") from None
    if arr.dtype.kind == "c":
        raise IbverifyError(f"{name}: {what} is complex ({arr.dtype}); give real values")
    if arr.dtype.kind not in "biuf":
        raise IbverifyError(f"{name}: {what} must hold real numbers, not dtype {arr.dtype}")
    return np.array(arr, dtype=np.float64)


def make(X, y, name: str = "data") -> Dataset:
    """Build a validated float64 Dataset (shape, finiteness, labels; separability is separate)."""
    return Dataset(_real_array(X, "X", name), _real_array(y, "y", name), name).validated()
