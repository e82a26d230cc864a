"""Loading a user's dataset: `.npz` (arrays X, y) or `.csv` (comma-separated, label ±1 in the last
column). Every load is validated: shapes, real finite values, labels in {−1, +1}, and linear
separability with a certificate (an LP direction w whose margins min_i y_i⟨w, x_i⟩ > 0 are
re-checked in float64). Nothing is dropped silently: a CSV's first line is a header only when none
of its cells is a number; any other line that does not parse is an error naming the line.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import IbverifyError
from .dataset import Dataset, make

SEPARABILITY_TOL = 1e-9


@dataclass
class Separability:
    """The decision of `separability`: `direction` (exactly verified: min_i z_i·w > 0 in rational arithmetic) or
    `witness` (λ ≥ 0, Σλ = 1, on the column-scaled data Ẑ: no direction with |u_k| ≤ 1 has a scaled margin above
    `bound` = ‖Ẑᵀλ‖_1, weak duality), with the LP optimum `gamma` (column-scaled units)."""

    direction: np.ndarray | None
    witness: np.ndarray | None
    bound: float
    gamma: float
    scale: np.ndarray          # column scale c (1 on all-zero columns)


def separability(D: Dataset) -> Separability:
    """Decide linear separability through the origin by certificate, never by solver status alone.

    The LP runs on column-scaled data Ẑ = Z·diag(1/c), c_k = max_i |Z_ik| (a feature in thousands and one in
    thousandths weigh alike; all-zero columns are inert): max γ s.t. Ẑu ≥ γ·1, −1 ≤ u ≤ 1 (HiGHS). If γ > 0, w = u/c
    in the original units is checked exactly (every z_i·w as a Fraction of the float64 values). Otherwise the LP's
    dual λ is the witness of non-separability (see Separability)."""
    from fractions import Fraction

    from scipy.optimize import linprog  # start-up time: scipy (the CLI imports ibverify.data before reading a file)

    Z = D.Z
    n, d = Z.shape
    c = np.max(np.abs(Z), axis=0)
    c = np.where(c > 0, c, 1.0)
    Zs = Z / c
    obj = np.r_[np.zeros(d), -1.0]
    A = np.hstack([-Zs, np.ones((n, 1))])
    res = linprog(obj, A_ub=A, b_ub=np.zeros(n), bounds=[(-1, 1)] * d + [(None, 1.0)], method="highs")
    if res.status != 0:
        raise IbverifyError(f"{D.name}: separability LP failed: {res.message}")
    gamma = -float(res.fun)
    lam = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=float), 0.0)
    lam = lam / lam.sum() if lam.sum() > 0 else None
    bound = float(np.abs(Zs.T @ lam).sum()) if lam is not None else float("inf")
    if gamma > 0:
        w = res.x[:d] / c
        fw = [Fraction(float(v)) for v in w]
        if all(sum(Fraction(float(a)) * b for a, b in zip(row, fw, strict=True) if a) > 0 for row in Z):
            return Separability(w, None, bound, gamma, c)
        return Separability(None, None, bound, gamma, c)    # undecided in float64: neither certificate
    return Separability(None, lam, bound, gamma, c)


def separability_certificate(D: Dataset) -> np.ndarray:
    """A direction with min_i z_i·w > 0, proved exactly (`separability`), or one IbverifyError line: "not linearly
    separable" with its dual witness, or "not decided" when float64 cannot settle it."""
    if not np.any(D.Z):
        raise IbverifyError(f"{D.name}: data are not linearly separable: every entry of X is 0")
    s = separability(D)
    if s.direction is not None:
        return s.direction
    if s.witness is None:
        raise IbverifyError(f"{D.name}: separability not decided in float64: the LP direction (column-scaled margin "
                            f"{s.gamma:.3g}) fails the exact check")
    support = int(np.sum(s.witness > 1e-12))
    raise IbverifyError(
        f"{D.name}: data are not linearly separable: dual witness λ ≥ 0 on {support} samples with Σλ = 1 and "
        f"‖Σ λ_i ẑ_i‖_1 = {s.bound:.2g} (column-scaled), so no direction separates with a scaled margin above that "
        f"(best found {s.gamma:.3g})")


def with_intercept(D: Dataset) -> Dataset:
    """D with a column of ones appended to X: a bias b as the last weight, f(x) = ⟨w, x⟩ + b."""
    return make(np.c_[D.X, np.ones(D.n)], D.y, f"{D.name} + intercept")


def load_dataset(path: str | Path, require_separable: bool = True, intercept: bool = False) -> Dataset:
    """Load and validate a data file; `intercept`: append a column of ones (the linear model has no bias
    otherwise). With require_separable, data separable only with an intercept are refused with that hint."""
    p = Path(path)
    if not p.exists():
        raise IbverifyError(f"data file not found: {p}")
    if not p.is_file():
        raise IbverifyError(f"data path is not a file: {p}")
    suffix = p.suffix.lower()
    if suffix == ".npz":
        X, y = _load_npz(p)
    elif suffix == ".csv":
        X, y = _load_csv(p)
    else:
        raise IbverifyError(f"{p.name}: unsupported data format '{suffix}' (use .npz with X, y or .csv)")
    D = make(X, y, p.name)
    if intercept:
        D = with_intercept(D)
    if require_separable:
        try:
            separability_certificate(D)
        except IbverifyError as e:
            if intercept or "not linearly separable" not in str(e):
                raise
            try:
                separability_certificate(with_intercept(D))
            except IbverifyError:
                raise e from None
            raise IbverifyError(f"{e}; the linear model has no intercept, and these data are separable with one: "
                                "add --intercept (a column of ones)") from None
    return D


def _load_npz(p: Path):
    if p.stat().st_size == 0:
        raise IbverifyError(f"{p.name}: empty file (an .npz archive with arrays X, y was expected)")
    if not zipfile.is_zipfile(p):
        raise IbverifyError(f"{p.name}: not an .npz archive, or a truncated one (np.savez writes one with X, y)")
    try:
        with np.load(p, allow_pickle=False) as f:
            missing = [k for k in ("X", "y") if k not in f.files]
            if missing:
                raise IbverifyError(f"{p.name}: .npz must hold arrays 'X' and 'y' (missing {', '.join(missing)})")
            return f["X"], f["y"]
    except IbverifyError:
        raise
    except ValueError as e:
        if "pickle" in str(e):
            raise IbverifyError(f"{p.name}: X or y is an object array (not numbers); save real arrays") from None
        raise IbverifyError(f"{p.name}: cannot read .npz: {str(e).splitlines()[0]}") from None
    except Exception as e:  # zipfile.BadZipFile, EOFError, zlib.error, OSError, …: a damaged archive
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise IbverifyError(f"{p.name}: cannot read .npz (corrupt or truncated: {why})") from None


def _number(cell: str) -> float | None:
    try:
        return float(cell.strip().strip('"').strip())
    except ValueError:
        return None


def _bad_cell(name: str, lineno: int, line: str, cells: list[str], header: bool = False) -> IbverifyError | None:
    """The one-line error for a line that is not a row of comma-separated numbers (separator, empty
    cell, text); with header=True, None when the line is a valid header (text cells, commas only)."""
    for sep, word in ((";", "';'"), ("\t", "tab")):
        if sep in line:
            return IbverifyError(f"{name}: line {lineno} is separated by {word}; only commas are supported")
    if len(cells) == 1 and len(line.split()) > 1:
        return IbverifyError(f"{name}: line {lineno} is separated by spaces; only commas are supported")
    if len(cells) > 1 and cells[-1].strip() == "":
        return IbverifyError(f"{name}: line {lineno} ends with a comma (an empty last cell): {line[:60]!r}")
    if any(c.strip() == "" for c in cells):
        return IbverifyError(f"{name}: line {lineno} has an empty cell: {line[:60]!r}")
    if header:
        return None
    bad = next(c for c in cells if _number(c) is None).strip()[:20]
    if lineno == 1 and any(_number(c) is not None for c in cells):
        return IbverifyError(f"{name}: line 1 mixes numbers and text ({bad!r}): neither a header (no numeric "
                             f"cell) nor a data row: {line[:60]!r}")
    return IbverifyError(f"{name}: line {lineno} is not numeric ({bad!r}): {line[:60]!r}")


def _load_csv(p: Path):
    try:
        text = p.read_bytes().decode("utf-8-sig")  # a spreadsheet's "CSV UTF-8" starts with a BOM
    except UnicodeDecodeError as e:
        raise IbverifyError(f"{p.name}: not UTF-8 text (byte {e.start}); save the CSV as UTF-8") from None
    lines = [(k + 1, ln) for k, ln in enumerate(text.splitlines()) if ln.strip()]
    if not lines:
        raise IbverifyError(f"{p.name}: empty CSV file")
    rows, header = [], None
    for i, (lineno, ln) in enumerate(lines):
        cells = ln.split(",")
        values = [_number(c) for c in cells]
        if all(v is not None for v in values):
            rows.append(values)
        elif i == 0 and all(v is None for v in values) and _bad_cell(p.name, lineno, ln, cells, header=True) is None:
            header = cells  # a header: no cell of line 1 is a number (and it is comma-separated)
        else:
            raise _bad_cell(p.name, lineno, ln, cells)
    if not rows:
        raise IbverifyError(f"{p.name}: no numeric rows (only a header)")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise IbverifyError(f"{p.name}: rows have different numbers of columns {sorted(widths)}")
    width = widths.pop()
    if header is not None and len(header) != width:
        raise IbverifyError(f"{p.name}: the header has {len(header)} columns but the rows have {width}")
    if width < 2:
        raise IbverifyError(f"{p.name}: need at least one feature column and a label column (comma-separated)")
    A = np.array(rows)
    return A[:, :-1], A[:, -1]
