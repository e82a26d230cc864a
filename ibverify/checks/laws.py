"""A law's free parameter, fitted with an interval, and the rule that judges the law by it (issue 45 item 4).

A law of the suite's own (status "law": checks.paper1_laws, checks.eps_switch) predicts a value θ0 of a parameter
that the data could set freely (the exponent of 1 − β_c ∝ m^−p, the rate ½ per cyclic lag of the support-margin
offsets, the slope of the ε-switch in ln(1/ε)). Each is fitted by least squares with its profile interval at
LEVEL (the t-interval of the fitted coefficient from the fit's own residuals: the likelihood profile of a linear
model with Gaussian errors; deterministic, no resampling), and the law holds only where that interval resolves it:

    judge_interval(lo, hi, θ0, resolution, allowance)
        CONTRADICTED  the interval misses [θ0 − allowance, θ0 + allowance] (allowance 0: the interval excludes θ0)
        SUPPORTED     it meets that band and lies strictly inside (θ0 − resolution, θ0 + resolution): the
                      alternatives θ0 ± resolution are excluded
        INCONCLUSIVE  it meets the band but reaches an alternative: too wide to tell the law from its alternatives

`allowance` is a law's finite-horizon bias admitted by its own tolerance (0 where the law is exact at the horizon
reached; equal to the resolution: the interval must lie inside the tolerance band); beyond the resolution no interval
is supported (INCONCLUSIVE). `law_row` is the table row that
carries the fit to the
report: the claim page's resolution line is made from it (report/html.py, key LAW_KEY).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..errors import IbverifyError
from .rules import CONTRADICTED, INCONCLUSIVE, SUPPORTED, Decision

LEVEL = 0.95          # the profile interval's confidence level
LAW_KEY = "law parameter"   # the table-row key that marks a law's fit (report/html.py reads it)


@dataclass(frozen=True)
class Fit:
    """A fitted coefficient: estimate, its profile interval [lo, hi] at `level`, points and degrees of freedom."""

    estimate: float
    lo: float
    hi: float
    points: int
    dof: int
    level: float = LEVEL

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2


def _interval(estimate: float, resid: np.ndarray, sxx: float, dof: int, level: float) -> tuple[float, float]:
    if dof < 1 or not sxx > 0:
        return -math.inf, math.inf
    s2 = float(resid @ resid) / dof
    half = float(stats.t.ppf(0.5 + level / 2, dof)) * math.sqrt(s2 / sxx)
    return estimate - half, estimate + half


def common_slope(groups: list[tuple[np.ndarray, np.ndarray]], level: float = LEVEL) -> Fit:
    """The slope b of y = a_g + b·x with one intercept a_g per group (each group's x and y demeaned), over the groups
    with ≥ 2 distinct x; its profile interval from the residuals (dof = points − groups − 1)."""
    xs, ys = [], []
    for x, y in groups:
        x, y = np.asarray(x, float), np.asarray(y, float)
        if len(x) != len(y):
            raise IbverifyError(f"common_slope: x and y differ in length ({len(x)} ≠ {len(y)})")
        if len(np.unique(x)) >= 2:
            xs.append(x - x.mean())
            ys.append(y - y.mean())
    if not xs:
        return Fit(math.nan, -math.inf, math.inf, 0, 0, level)
    x, y = np.concatenate(xs), np.concatenate(ys)
    sxx = float(x @ x)
    b = float(x @ y) / sxx
    dof = len(x) - len(xs) - 1
    lo, hi = _interval(b, y - b * x, sxx, dof, level)
    return Fit(b, lo, hi, len(x), dof, level)


def origin_slope(x, y, level: float = LEVEL) -> Fit:
    """The slope b of y = b·x (no intercept) and its profile interval (dof = points − 1)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    sxx = float(x @ x)
    if len(x) < 1 or not sxx > 0:
        return Fit(math.nan, -math.inf, math.inf, len(x), 0, level)
    b = float(x @ y) / sxx
    lo, hi = _interval(b, y - b * x, sxx, len(x) - 1, level)
    return Fit(b, lo, hi, len(x), len(x) - 1, level)


def line_slope(x, y, level: float = LEVEL) -> Fit:
    """The slope b of y = a + b·x and its profile interval (dof = points − 2)."""
    return common_slope([(np.asarray(x, float), np.asarray(y, float))], level)


def judge_interval(lo: float, hi: float, predicted: float, resolution: float, allowance: float = 0.0) -> Decision:
    """The module docstring's rule on the interval [lo, hi] of a parameter the law predicts to be `predicted`."""
    if not (resolution > 0 and allowance >= 0):
        raise IbverifyError(f"a law's resolution ({resolution:g}) must be > 0 and its allowance ({allowance:g}) ≥ 0")
    if not lo <= hi:
        return Decision(INCONCLUSIVE, "no interval (too few points)")
    if allowance > resolution:
        return Decision(INCONCLUSIVE, f"the allowance ±{allowance:.3g} reaches the alternatives ±{resolution:g}: "
                                      "no interval can tell them apart")
    band = f"[{predicted - allowance:.4g}, {predicted + allowance:.4g}]" if allowance else f"{predicted:.4g}"
    where = f"interval [{lo:.4g}, {hi:.4g}]"
    if hi < predicted - allowance or lo > predicted + allowance:
        return Decision(CONTRADICTED, f"{where} excludes the law's {band}")
    alt = f"{predicted - resolution:.4g} and {predicted + resolution:.4g}"
    meets = f"contains the law's {band}" if not allowance else f"meets the law's band {band}"
    if lo > predicted - resolution and hi < predicted + resolution:
        if allowance == resolution:
            return Decision(SUPPORTED, f"{where} lies inside the band {band}: every value beyond it is excluded")
        return Decision(SUPPORTED, f"{where} {meets} and excludes the alternatives {alt}")
    return Decision(INCONCLUSIVE, f"{where} {meets} but also reaches an alternative ({alt}): too wide to tell them "
                                  "apart")


def law_row(name: str, fit: Fit, predicted: float, resolution: float, decision: Decision, method: str,
            allowance: float = 0.0, scope: str = "") -> dict:
    """The table row of a law's fit (LAW_KEY marks it; the report's resolution line is made from it)."""
    return {LAW_KEY: name, "scope": scope, "predicted": predicted, "fitted": fit.estimate,
            "interval": [fit.lo, fit.hi], "level": fit.level, "points": fit.points, "dof": fit.dof,
            "allowance": allowance, "resolution": resolution,
            "alternatives excluded": [predicted - resolution, predicted + resolution],
            "decision": decision.word, "reason": decision.reason, "method": method}
