"""Axis ranges and labelled ticks for the report's plots: at least three distinct labels on every axis.

Log axes: 1–2–5 ticks (…, 0.05, 0.1, 0.2, 0.5, 1, …) with the range widened to the nearest such values
around the data, when that gives 3 to 7 ticks and the data fill at least 35% of the axis; otherwise
decades (every k-th decade when there are more than 7), when the data reach over two decades or more;
otherwise (data inside less than a decade, e.g. 0.53…0.58) `axis` falls back to a linear axis.
A constant series on a log axis gets a decade either side. Linear axes: a step of 1, 2, 2.5 or 5 × 10^k
giving about five intervals, labels with a common number of decimals; a (near) constant series is padded
by 10%. Labels get the fewest significant digits that keep them distinct; powers of ten outside
0.001…10000 are written 10⁻⁵, other small/large numbers 2×10⁻⁵.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


@dataclass(frozen=True)
class Axis:
    log: bool
    lo: float
    hi: float
    ticks: tuple[float, ...]
    labels: tuple[str, ...]


def _number(v: float, digits: int) -> tuple[str, float]:
    """`v` with `digits` significant digits: plain between 0.001 and 10⁴, else m×10ᵏ (10ᵏ when m = 1);
    and the number the label writes."""
    if v == 0:
        return "0", 0.0
    k = math.floor(math.log10(abs(v)))
    if -3 <= k < 5:
        text = f"{v:.{max(0, digits - 1 - k)}f}"
        written = float(text)
    else:
        text = f"{v:.{digits - 1}e}"
        written = float(text)
        mant, exp = text.split("e")
        power = "10" + str(int(exp)).translate(_SUPERSCRIPT)
        text = power if float(mant) == 1.0 else ("-" + power) if float(mant) == -1.0 else f"{mant}×{power}"
    return text.replace("-", "−"), written


def _exact(pairs, values) -> bool:
    scale = max(abs(v) for v in values) or 1.0
    return all(abs(w - v) <= 1e-9 * scale for (_, w), v in zip(pairs, values, strict=True))


def tick_labels(values, fixed: bool = False) -> tuple[str, ...]:
    """The shortest labels that write every tick exactly (so they are also distinct): for evenly spaced
    ticks between 0.001 and 10⁴ (`fixed`) the same number of decimals for each, else 1 to 17 significant
    digits."""
    values = list(values)
    if fixed and all(v == 0 or 1e-3 <= abs(v) < 1e4 for v in values):
        for decimals in range(0, 18):
            pairs = [(f"{v:.{decimals}f}", float(f"{v:.{decimals}f}")) for v in values]
            if _exact(pairs, values):
                return tuple("0" if w == 0 else t.replace("-", "−") for t, w in pairs)
    pairs = []
    for digits in range(1, 18):
        pairs = [_number(v, digits) for v in values]
        if _exact(pairs, values) and len({t for t, _ in pairs}) == len(pairs):
            break
    return tuple(t for t, _ in pairs)


def _one_two_five(lo: float, hi: float) -> tuple[float, ...]:
    """All m·10ᵏ (m ∈ {1, 2, 5}) from the largest ≤ lo to the smallest ≥ hi."""
    cands = sorted(float(f"{m}e{k}") for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 2)
                   for m in (1, 2, 5))
    start = max(i for i, c in enumerate(cands) if c <= lo * (1 + 1e-12))
    stop = min(i for i, c in enumerate(cands) if c >= hi * (1 - 1e-12))
    return tuple(cands[start:stop + 1])


def log_axis(lo: float, hi: float) -> Axis | None:
    """A log axis over positive [lo, hi] with ≥ 3 labelled ticks, or None when only a linear one would have them."""
    a, b = math.log10(lo), math.log10(hi)
    ticks = _one_two_five(lo, hi)
    if 3 <= len(ticks) <= 7 and (b - a) >= 0.35 * math.log10(ticks[-1] / ticks[0]):
        return Axis(True, ticks[0], ticks[-1], ticks, tick_labels(ticks))
    k0, k1 = math.floor(a + 1e-12), math.ceil(b - 1e-12)
    if k1 - k0 < 2 or (b - a) < 1:
        return None
    every = max(1, math.ceil((k1 - k0 + 1) / 7))
    decades = tuple(float(f"1e{k}") for k in range(k0, k1 + 1) if k % every == 0)
    lo_, hi_ = min(float(f"1e{k0}"), decades[0]), max(float(f"1e{k1}"), decades[-1])
    return Axis(True, lo_, hi_, decades, tick_labels(decades))


def linear_axis(lo: float, hi: float) -> Axis:
    """A linear axis over [lo, hi] with 3 to 7 ticks at a 1–2–2.5–5 step."""
    if hi - lo <= 1e-9 * max(abs(lo), abs(hi)):
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / 5
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * (1 - 1e-12))
    i0, i1 = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    ticks = tuple(float(f"{i * step:.12g}") for i in range(i0, i1 + 1))
    return Axis(False, ticks[0], ticks[-1], ticks, tick_labels(ticks, fixed=True))


def axis(values: list[float], log: bool) -> Axis:
    """The axis for `values` (finite; positive if `log`), log if asked and it can carry ≥ 3 ticks."""
    lo, hi = min(values), max(values)
    if log and hi <= lo * (1 + 1e-9):  # constant: a decade either side
        lo, hi = lo / 10, hi * 10
    if log:
        found = log_axis(lo, hi)
        if found is not None:
            return found
    return linear_axis(lo, hi)
