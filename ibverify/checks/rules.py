"""Evidence rules shared by every check: one implementation of each, tested in tests/unit/test_rules.py.

    falling(x, y, decades, min_drop)   y at the horizon ≤ (1 − min_drop) · y one `decades` earlier
    settled(x, y, decades, rise_max)   y at the horizon ≤ (1 + rise_max) · y one `decades` earlier
                                       (an invariant that stopped growing; `falling` with −rise_max)
    closeness(value, bound)            value ≤ bound (the other half of a direction rule)
    rate_fit(x, y, bound, decades)     power law y ≈ A x^s over the last decade(s) and the step at
                                       which it would cross `bound` (None when flat or rising)
    separates(own, others, factor)     own-geometry residual smaller than every competitor by `factor`
    conditioning_bound(sens, rtol, factor), within_conditioning(err, sens, rtol, factor)
                                       a float64 result within max(rtol, factor·sens) of the exact one, where
                                       sens is how far a one-ulp change of the input moves the exact result

A curve is a pair (x, y) of equal-length sequences at increasing steps x > 0. Non-finite or
non-positive y values are skipped by the fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

FLOOR = 1e-12  # a gap this small counts as reached: no trend is needed


def value_before(x, y, decades: float) -> float | None:
    """The last y at a step ≤ x[-1] / 10**decades (None when the curve is shorter than that)."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    early = ya[xa <= xa[-1] / 10 ** decades * (1 + 1e-12)]
    return float(early[-1]) if len(early) else None


def falling(x, y, decades: float = 1.0, min_drop: float = 0.1, floor: float = FLOOR) -> bool:
    """True when y at the horizon is at most (1 − min_drop) times its value `decades` decades
    earlier, or already ≤ floor. A plateau that creeps down by less than min_drop is not falling."""
    last = float(np.asarray(y, float)[-1])
    if math.isfinite(last) and last <= floor:
        return True
    before = value_before(x, y, decades)
    if before is None or not (math.isfinite(last) and math.isfinite(before)):
        return False
    return last <= (1.0 - min_drop) * before


def settled(x, y, decades: float = 1.0, rise_max: float = 0.1) -> bool:
    """True when y at the horizon is at most (1 + rise_max) times its value `decades` decades
    earlier: a quantity that should tend to a constant (e.g. K = (1 − cos)·‖w‖²) is bounded and has
    stopped growing. The same rule as `falling` with a negative drop; no floor (a settled constant
    is judged by its ratio, however small)."""
    return falling(x, y, decades, min_drop=-rise_max, floor=-math.inf)


def closeness(value: float, bound: float) -> bool:
    """value ≤ bound, with NaN never close."""
    return bool(math.isfinite(value) and value <= bound)


@dataclass(frozen=True)
class RateFit:
    slope: float           # d log y / d log x over the fitted window (negative: falling)
    crossing: float | None  # extrapolated step where y reaches the bound; None if flat/rising/unknown
    stability: float       # |slope(last half-window) − slope(first half-window)|: small = a stable law
    reached: bool          # y at the horizon is already ≤ bound

    def describe(self, bound: float) -> str:
        if self.reached:
            return f"reached {bound:g}"
        if self.crossing is None:
            return f"flat (slope {self.slope:.3g})"
        return f"on track: reaches {bound:g} at ≈ {self.crossing:.2g} steps (slope {self.slope:.3g})"


def _slope(lx: np.ndarray, ly: np.ndarray) -> float:
    if len(lx) < 2 or np.ptp(lx) == 0:
        return float("nan")
    return float(np.polyfit(lx, ly, 1)[0])


def rate_fit(x, y, bound: float, decades: float = 1.0, flat: float = -1e-3) -> RateFit:
    """Fit log y = a + s log x over the last `decades` decades and extrapolate where y = bound."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    ok = (xa > 0) & (ya > 0) & np.isfinite(ya)
    reached = bool(len(ya) and math.isfinite(ya[-1]) and ya[-1] <= bound)
    xa, ya = xa[ok], ya[ok]
    if len(xa) < 2:
        return RateFit(float("nan"), None, float("nan"), reached)
    win = xa >= xa[-1] / 10 ** decades
    if win.sum() < 2:
        win[-2:] = True
    lx, ly = np.log(xa[win]), np.log(ya[win])
    s = _slope(lx, ly)
    h = len(lx) // 2
    stab = abs(_slope(lx[h:], ly[h:]) - _slope(lx[: h + 1], ly[: h + 1])) if len(lx) >= 4 else float("nan")
    crossing = None
    if not reached and math.isfinite(s) and s < flat and bound > 0:
        a = float(np.mean(ly) - s * np.mean(lx))
        log_cross = (math.log(bound) - a) / s
        crossing = float(math.exp(log_cross)) if log_cross < 709.0 else None  # beyond float range: no crossing
    return RateFit(s, crossing, stab, reached)


def separates(own: float, others: dict[str, float], factor: float) -> tuple[bool, str]:
    """own · factor ≤ every competing value; returns (ok, the closest competitor's name)."""
    if not others:
        return math.isfinite(own), ""
    rival = min(others, key=lambda k: others[k] if math.isfinite(others[k]) else math.inf)
    ok = math.isfinite(own) and all(math.isfinite(v) and own * factor <= v for v in others.values())
    return bool(ok), rival


def conditioning_bound(sensitivity, rtol: float, factor: float) -> np.ndarray:
    """The allowance of `within_conditioning`: max(rtol, factor · sensitivity), a non-finite sensitivity giving
    none (rtol)."""
    c = np.asarray(sensitivity, float)
    return np.maximum(rtol, factor * np.where(np.isfinite(c), c, 0.0))


def within_conditioning(err, sensitivity, rtol: float, factor: float) -> np.ndarray:
    """Pointwise: err ≤ conditioning_bound(sensitivity, rtol, factor), NaN never within. `err` is the relative
    distance of a float64 computation from the exact one, `sensitivity` that of the exact computation on input
    perturbed by one ulp: no float64 method can be closer than the problem's own conditioning, so where the exact
    orbit amplifies perturbations (sensitivity ≫ rtol) the bound grows with it, and where it does not, rtol
    decides."""
    e = np.asarray(err, float)
    return np.isfinite(e) & (e <= conditioning_bound(sensitivity, rtol, factor))
