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

from ..errors import IbverifyError
from .dataset import Dataset, _real_array, make

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


def linear_refusal(D: Dataset, intercept: bool = False) -> str | None:
    """Why the linear model (and every model linear in x) cannot separate D through the origin, or None: the
    refusal of `separability_certificate`, with the --intercept hint when the data are separable with one."""
    try:
        separability_certificate(D)
        return None
    except IbverifyError as e:
        if intercept or "not linearly separable" not in str(e):
            return str(e)
        try:
            separability_certificate(with_intercept(D))
        except IbverifyError:
            return str(e)
        return (f"{e}; the linear model has no intercept, and these data are separable with one: add --intercept "
                "(a column of ones)")


NETWORK_MODELS = ("two-layer", "deep")   # positively homogeneous nonlinear models: linear separability is not theirs


def network_refusal(D: Dataset) -> str | None:
    """Why no positively homogeneous model f(c·x) = c^L f(x) (c > 0: the ReLU^q nets, every model here) can separate
    D, or None. Linear separability is not the hypothesis of a network (the ReLU² net separates XOR: f = 4·x1·x2);
    what no such model separates: one class only, a sample x = 0 (f(0) = 0), or two samples on one ray from the
    origin (x_j = c·x_i, c > 0, duplicates included) with opposite labels."""
    y = D.y
    if np.all(y == y[0]):
        return f"{D.name}: one class only (every label is {y[0]:+g}): nothing to separate"
    X = D.X.reshape(D.n, -1)
    big = np.max(np.abs(X), axis=1)
    if np.any(big == 0):
        i = int(np.flatnonzero(big == 0)[0])
        return f"{D.name}: sample {i} is x = 0, where every homogeneous model gives f(0) = 0: it cannot be separated"
    U = X / big[:, None]                                  # scaled first: no overflow or underflow at 1e±300
    U = U / np.linalg.norm(U, axis=1)[:, None]
    key = np.round(U, 12)
    _, first, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inv = np.ravel(inv)
    for k in range(len(first)):
        idx = np.flatnonzero(inv == k)
        if len(idx) > 1 and np.any(y[idx] != y[idx[0]]):
            a, b = idx[0], idx[np.flatnonzero(y[idx] != y[idx[0]])[0]]
            same = "the same point" if np.array_equal(X[a], X[b]) else "on one ray from the origin (x_j = c·x_i, c > 0)"
            return (f"{D.name}: samples {a} and {b} are {same} with opposite labels: no model separates them "
                    f"(f(c·x) = c^L f(x))")
    return None


FLOAT_RANGE_LOG10 = 300   # float64's normal numbers, with room: 1e−300 … 1e300


def scale_refusal(D: Dataset, power: float, quantity: str) -> str | None:
    """Why float64 runs cannot be made on D, or None: a feature's scale c_k = max_i |X_ik| (nonzero columns; the
    inert ones are set aside) whose `power` (the degree of `quantity` in x: 2 for Adam's second moments and the
    metric Σ c_i z_i², 2q for a ReLU^q net's) leaves 1e±300: `quantity` overflows (large data) or underflows to 0
    (small data). The oracles are scale-free (`margin`, `predict` solve on X/max|X|); runs are not."""
    A = np.abs(D.X.reshape(D.n, -1))
    c = A.max(axis=0)
    c = c[c > 0]
    if not len(c):
        return None
    hi, lo = float(np.log10(c.max())), float(np.log10(c.min()))
    if power * hi > FLOAT_RANGE_LOG10:
        return (f"{D.name}: X's scale max|x| = {c.max():.3g} is too large for float64 runs: {quantity} "
                f"(∝ x^{power:g}) would overflow; rescale X (e.g. X / {c.max():.3g}: max-margin directions do not "
                f"depend on the scale)")
    if power * lo < -FLOAT_RANGE_LOG10:
        return (f"{D.name}: a feature's scale max|x_k| = {c.min():.3g} is too small for float64 runs: {quantity} "
                f"(∝ x^{power:g}) would underflow to 0; rescale X (e.g. X / {c.min():.3g}, or per column: max-margin "
                f"directions do not depend on the scale)")
    return None


def x_degree(model: str, q: float = 2.0, depth: int = 2) -> float:
    """The degree of a block model's output in its input x: q for the two-layer ReLU^q net, q^(depth−1) for the deep
    one, 1 for the models linear in x."""
    return q if model == "two-layer" else q ** (depth - 1) if model == "deep" else 1.0


def require_run_scale(D: Dataset, power: float, quantity: str) -> Dataset:
    """D, or one IbverifyError line (`scale_refusal`)."""
    why = scale_refusal(D, power, quantity)
    if why is not None:
        raise IbverifyError(why)
    return D


def refusals(D: Dataset, models) -> dict[str, str]:
    """{model: why D cannot feed it} for the `bias` models (linear, matrix: linear separability, of vec(X) for the
    matrix model; two-layer: network_refusal)."""
    out = {}
    for m in models:
        if m == "linear":
            why = linear_refusal(D)
        elif m in NETWORK_MODELS:   # the bias two-layer net is ReLU²: f ∝ x², its Adam moments ∝ x⁴
            why = network_refusal(D) or scale_refusal(D, 4, "the net's squared gradients")
        else:   # the matrix model f = ⟨W, X⟩ is linear in vec(X)
            why = linear_refusal(make(D.X.reshape(D.n, -1), D.y, D.name))
        if why is not None:
            out[m] = why
    return out


def load_dataset(path: str | Path, require_separable: bool = True, intercept: bool = False,
                 network: bool = False) -> Dataset:
    """Load and validate a data file; `intercept`: append a column of ones (the linear model has no bias
    otherwise). With require_separable, data separable only with an intercept are refused with that hint;
    `network`: the data feed a homogeneous network, so `network_refusal` replaces linear separability."""
    D = read_dataset(path, intercept)
    if require_separable:
        why = network_refusal(D) if network else linear_refusal(D, intercept)
        if why is not None:
            raise IbverifyError(why)
    return D


def read_npz(p: str | Path):
    """(X, y) of an .npz file as arrays (any shape), or one IbverifyError line (absent, truncated, not an archive,
    pickled objects, missing arrays)."""
    p = Path(p)
    if not p.exists():
        raise IbverifyError(f"data file not found: {p}")
    if not p.is_file():
        raise IbverifyError(f"data path is not a file: {p}")
    return _load_npz(p)


def load_matrices(path: str | Path, require_separable: bool = True) -> Dataset:
    """Input matrices from an .npz (X of shape (n, p, r), y), validated; with require_separable, refused unless
    vec(X) is linearly separable (the matrix model f = ⟨W, X⟩ is linear in it)."""
    X, y = read_npz(path)
    D = Dataset(_real_array(X, "X", Path(path).name), _real_array(y, "y", Path(path).name),
                str(path)).validated(matrices=True)
    if require_separable and D.X.ndim == 3:
        why = refusals(D, ["matrix"]).get("matrix")
        if why is not None:
            raise IbverifyError(why)
    return D


def read_dataset(path: str | Path, intercept: bool = False) -> Dataset:
    """The validated Dataset of a data file (.npz or .csv), no separability decided."""
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
    return with_intercept(D) if intercept else D


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
