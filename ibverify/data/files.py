"""Loading a user's dataset: `.npz` (arrays X, y) or `.csv` (label ±1 in the last column, optional
header). Every load is validated: shapes, finite values, labels in {−1, +1}, and linear separability
with a certificate (an LP direction w whose margins min_i y_i⟨w, x_i⟩ > 0 are re-checked in float64).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.optimize import linprog

from .. import IbverifyError
from .dataset import Dataset, make

SEPARABILITY_TOL = 1e-9


def separability_certificate(D: Dataset) -> np.ndarray:
    """A direction w with min_i z_i·w > 0 (‖w‖_∞ ≤ 1), or IbverifyError naming the violated sample.

    LP: max γ s.t. Z w ≥ γ·1, −1 ≤ w ≤ 1 (HiGHS). Separable iff the optimum γ > 0; the returned w is
    re-checked directly, so the certificate does not rest on solver status alone.
    """
    Z = D.Z
    n, d = Z.shape
    c = np.r_[np.zeros(d), -1.0]
    A = np.hstack([-Z, np.ones((n, 1))])
    res = linprog(c, A_ub=A, b_ub=np.zeros(n), bounds=[(-1, 1)] * d + [(None, 1e6)], method="highs")
    if res.status != 0:
        raise IbverifyError(f"{D.name}: separability LP failed: {res.message}")
    w = res.x[:d]
    margins = Z @ w
    scale = np.abs(Z).sum(axis=1).max()
    if margins.min() <= SEPARABILITY_TOL * scale:
        worst = int(np.argmin(margins))
        raise IbverifyError(
            f"{D.name}: data are not linearly separable: best ℓ∞-bounded direction has margin "
            f"{margins.min():.3g} ≤ 0 (sample {worst} is not separated)")
    return w


def load_dataset(path: str | Path, require_separable: bool = True) -> Dataset:
    p = Path(path)
    if not p.exists():
        raise IbverifyError(f"data file not found: {p}")
    suffix = p.suffix.lower()
    if suffix == ".npz":
        X, y = _load_npz(p)
    elif suffix == ".csv":
        X, y = _load_csv(p)
    else:
        raise IbverifyError(f"{p.name}: unsupported data format '{suffix}' (use .npz with X, y or .csv)")
    D = make(X, y, p.name)
    if require_separable:
        separability_certificate(D)
    return D


def _load_npz(p: Path):
    try:
        with np.load(p, allow_pickle=False) as f:
            missing = [k for k in ("X", "y") if k not in f.files]
            if missing:
                raise IbverifyError(f"{p.name}: .npz must hold arrays 'X' and 'y' (missing {', '.join(missing)})")
            return f["X"], f["y"]
    except (OSError, ValueError) as e:
        raise IbverifyError(f"{p.name}: cannot read .npz: {e}") from None


def _load_csv(p: Path):
    lines = [ln for ln in p.read_text().splitlines() if ln.strip()]
    if not lines:
        raise IbverifyError(f"{p.name}: empty CSV file")
    rows = []
    for k, ln in enumerate(lines):
        cells = [c.strip() for c in ln.split(",")]
        try:
            rows.append([float(c) for c in cells])
        except ValueError:
            if k == 0:
                continue  # header
            raise IbverifyError(f"{p.name}: line {k + 1} is not numeric: {ln[:60]!r}") from None
    if not rows:
        raise IbverifyError(f"{p.name}: no numeric rows")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise IbverifyError(f"{p.name}: rows have different numbers of columns {sorted(widths)}")
    if widths.pop() < 2:
        raise IbverifyError(f"{p.name}: need at least one feature column and a label column")
    A = np.array(rows)
    return A[:, :-1], A[:, -1]
