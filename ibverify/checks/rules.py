"""Evidence rules shared by every check: one implementation of each, tested in tests/unit/test_rules.py.

    falling(x, y, decades, min_drop)   y at the horizon ≤ (1 − min_drop) · y one `decades` earlier
    settled(x, y, decades, rise_max)   y at the horizon ≤ (1 + rise_max) · y one `decades` earlier
                                       (an invariant that stopped growing; `falling` with −rise_max)
    closeness(value, bound)            value ≤ bound (the other half of a direction rule)
    rate_fit(x, y, bound, decades)     power law y ≈ A x^s over the last decade(s) and the step at
                                       which it would cross `bound` (None when flat or rising)
    conditioning_bound(sens, rtol, factor), within_conditioning(err, sens, rtol, factor)
                                       a float64 result within max(rtol, factor·sens) of the exact one, where
                                       sens is how far a one-ulp change of the input moves the exact result

Three-valued decisions of an asymptotic statement at a finite horizon (one example):
    judge_gap(x, y, bound, …)          a quantity that must tend to 0 (a gap, a residual): SUPPORTED when
                                       within `bound` at the horizon and its fit over ≥ `decades` decades
                                       falls (and the last decade drops); CONTRADICTED by a stable plateau
                                       (or a rise) over ≥ `decades` decades at the largest horizon (`final`);
                                       INCONCLUSIVE otherwise ("on track" with the fitted crossing)
    judge_separation(x, own, others)   the own-geometry residual against every other: SUPPORTED when the
                                       ratio own/closest-other is < 1/guard and falls and the own residual
                                       falls; CONTRADICTED when another geometry is at or below the own one
                                       with no falling ratio over ≥ `decades` decades, or (at `final`) the
                                       own residual is a stable plateau while the ratio does not fall either
                                       (a falling ratio: the rivals recede, the run is still moving) and the
                                       run does not approach a certified own-geometry KKT point near its
                                       direction (`approach`: a residual is not a distance, and a run can
                                       near a KKT point while its residual rises); INCONCLUSIVE otherwise
    judge_invariant(x, y, …)           a quantity that must settle (K = (1 − cos)·‖w‖²): CONTRADICTED when it
                                       rises ≥ `rise` per decade over ≥ `decades` decades while above `floor`
    judge_rate_invariant(x, gap, scale, bound, …)
                                       a gap that must tend to 0 like 1/scale (scale → ∞, e.g. ‖w‖∞): judge_gap
                                       on the gap and judge_invariant on gap·scale; SUPPORTED needs both (and the
                                       scale growing), either contradiction CONTRADICTS at `final`
    judge_nondecreasing(x, y, rtol, …) a quantity that must never decrease (a monotone Lyapunov function):
                                       CONTRADICTED by one step down by more than rtol (relative) at any checkpoint,
                                       whatever the horizon; SUPPORTED when no step goes down and the judged
                                       checkpoints (≥ 3) span ≥ `decades` decades; INCONCLUSIVE otherwise
    all_of(decisions)                  several halves of one claim on one example: SUPPORTED when every half supports,
                                       CONTRADICTED when any half contradicts, else INCONCLUSIVE (reasons joined)
    tally(decisions, min_supported)    claim level: holds needs ≥ min_supported SUPPORTED, no CONTRADICTED and at
                                       most SET_ASIDE_SHARE_MAX of the examples set aside; does not hold needs a
                                       CONTRADICTED; else inconclusive
All fits use ≥ 3 points over ≥ `decades` decades (never two points).

A curve is a pair (x, y) of equal-length sequences at increasing steps x > 0. Non-finite or
non-positive y values are skipped by the fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

FLOOR = 1e-12  # a gap this small counts as reached: no trend is needed
# Power of these rules on fresh runs (false support / false contradiction per rule and tier): docs/power.md, made by
# benchmarks/power.py; each threshold below names the rows of that table that place it.


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


OUT_OF_REACH = 1e12  # steps: a fitted crossing beyond it is not called "on track" (10⁴ times the full tier's 10⁸)
# (wording only, never a verdict: no row of docs/power.md depends on it)


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
        if self.crossing > OUT_OF_REACH:
            return (f"falling too slowly to reach {bound:g} in any run: the fitted crossing is ≈ {self.crossing:.2g} "
                    f"steps (slope {self.slope:.3g})")
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


# ------------------------------------------------------------------------------------------ three-valued decisions

SUPPORTED, CONTRADICTED, INCONCLUSIVE, SET_ASIDE = "supported", "contradicted", "inconclusive", "set aside"
DECISIONS = (SUPPORTED, CONTRADICTED, INCONCLUSIVE, SET_ASIDE)
FLAT = -0.02  # a fitted log-log slope above this is not falling (< 5 % per decade)
# placed by docs/power.md: "judge_gap: slope gap" rows (wrong, same speed: precond-gd plateaus contradicted;
# right, slow: GD at u = 0.1 not contradicted) and "judge_gap: ℓ∞ gap alone" rows


@dataclass(frozen=True)
class Decision:
    word: str              # SUPPORTED | CONTRADICTED | INCONCLUSIVE | SET_ASIDE
    reason: str
    fit: RateFit | None = None   # the judged quantity's fit (slope, crossing of the bound)

    @property
    def decided(self) -> bool:
        return self.word in (SUPPORTED, CONTRADICTED)


def window_fit(x, y, bound: float, decades: float = 2.0, points: int = 3) -> RateFit | None:
    """rate_fit over the last `decades` decades, or None when the curve has fewer than `points` usable
    points there or does not reach `decades` decades back (a trend is never read off two points)."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    ok = (xa > 0) & (ya > 0) & np.isfinite(ya)
    if not ok.any() or not math.isfinite(float(ya[-1])):
        return None
    xs = xa[ok]
    lo = xs[-1] / 10 ** decades * (1 + 1e-9)
    if xs[0] > lo or int((xs >= lo / (1 + 2e-9)).sum()) < points:
        return None
    return rate_fit(xs, ya[ok], bound, decades)


STABLE = 0.1  # |slope of the window's second half − first half| at most this: one law over the window, not a bend
# placed by docs/power.md: the same judge_gap rows as FLAT (a plateau contradicts only when stable)


def _plateau(x, y, fit: RateFit, decades: float, min_drop: float, stable_fit: bool = True) -> bool:
    """Not falling over ≥ `decades` decades, with a stable fit: the fitted slope is flat or rising, the slopes of the
    window's two halves agree (STABLE; a saddle crossing bends), and neither the last decade nor the whole window
    drops by min_drop (a stable plateau or a rise, never a bumpy descent)."""
    stable = not stable_fit or not (fit.stability > STABLE)   # NaN (fewer than 4 points): no bend measurable
    return (fit.slope >= FLAT and stable and not falling(x, y, 1.0, min_drop)
            and not falling(x, y, decades, min_drop))


# min_drop 0.1, decades 2: docs/power.md, "judge_gap" rows of both families (right, slow: not contradicted)
def judge_gap(x, y, bound: float, *, decades: float = 2.0, min_drop: float = 0.1, final: bool = True,
              floor: float = FLOOR) -> Decision:
    """A quantity y that must tend to 0, `bound` its tolerance at the horizon (see the module docstring).
    `final`: this is the largest horizon the example will reach, so a plateau contradicts (before it, the
    run is extended instead)."""
    last = float(np.asarray(y, float)[-1])
    if not math.isfinite(last):
        return Decision(CONTRADICTED if final else INCONCLUSIVE, f"non-finite value {last} at the horizon")
    if last <= floor:
        return Decision(SUPPORTED, f"reached {last:.3g} ≤ {floor:g}")
    fit = window_fit(x, y, bound, decades)
    if fit is None:
        return Decision(INCONCLUSIVE, f"fewer than 3 points over the last {decades:g} decades")
    close = closeness(last, bound)
    falls = fit.slope < FLAT and falling(x, y, 1.0, min_drop)
    if close and falls:
        return Decision(SUPPORTED, f"{last:.3g} ≤ {bound:g}, falling (slope {fit.slope:.3g})", fit)
    if _plateau(x, y, fit, decades, min_drop):
        text = f"plateau at {last:.3g} (slope {fit.slope:.3g} over {decades:g} decades)"
        return Decision(CONTRADICTED if final else INCONCLUSIVE, text + ("" if final else ", to be extended"), fit)
    if not close:
        return Decision(INCONCLUSIVE, f"{last:.3g} > {bound:g}; {fit.describe(bound)}", fit)
    return Decision(INCONCLUSIVE, f"{last:.3g} ≤ {bound:g} but not falling by {min_drop:.0%} in the last decade "
                                  f"(slope {fit.slope:.3g})", fit)


def approaching(x, gap, *, decades: float = 2.0, min_drop: float = 0.05) -> bool:
    """A distance-like gap to a fixed target (e.g. the margin gap to a certified KKT point) falls: fitted slope
    over ≥ `decades` decades (≥ 3 points) below FLAT and the last decade drops by min_drop, or already ≤ FLOOR."""
    g = np.asarray(gap, float)
    if g.size and math.isfinite(g[-1]) and g[-1] <= FLOOR:
        return True
    fit = window_fit(x, g, 1.0, decades)
    return fit is not None and fit.slope < FLAT and falling(x, g, 1.0, min_drop)


# guard 1, min_drop 0.05: docs/power.md, "judge_separation" rows of the network KKT family (fast tier's caps only:
# right Signum/MomentumGD not contradicted; first-layer-preconditioned twins at the same speed and the right runs
# judged in wrong geometries never supported), gronich_nets' judgement and `ibverify bias`'s (judge_dataset)
def judge_separation(x, own, others: dict[str, list[float]], *, decades: float = 2.0, guard: float = 1.0,
                     min_drop: float = 0.05, final: bool = True, bound: float = 0.05,
                     approach=None) -> tuple[Decision, str]:
    """The own-geometry quantity against every other geometry's (see the module docstring); returns the
    decision and the closest competitor's name. guard ≥ 1: the ratio must also be < 1/guard to support.
    `approach`: called only before a plateau would contradict; returns (gap, what) — the run's gap at x to a
    certified own-geometry KKT point near its direction, and its description — or None (no such point found)."""
    xa = np.asarray(x, float)
    own_a = np.asarray(own, float)
    rivals = np.min(np.array([np.asarray(v, float) for v in others.values()]), axis=0) if others else None
    if rivals is None:
        return judge_gap(x, own, bound, decades=decades, min_drop=min_drop, final=final), ""
    ratio = own_a / np.where(rivals > 0, rivals, np.nan)
    rival = min(others, key=lambda k: others[k][-1] if math.isfinite(others[k][-1]) else math.inf)
    rho = float(ratio[-1])
    rfit, ofit = window_fit(xa, ratio, 1.0, decades), window_fit(xa, own_a, bound, decades)
    if rfit is None or ofit is None or not math.isfinite(rho):
        return Decision(INCONCLUSIVE, f"fewer than 3 separated points over the last {decades:g} decades"), rival
    r_falls = rfit.slope < FLAT and falling(xa, ratio, 1.0, min_drop)
    o_falls = ofit.slope < FLAT and falling(xa, own_a, 1.0, min_drop)
    head = f"ratio own/{rival} {rho:.3g} (slope {rfit.slope:.3g}), own slope {ofit.slope:.3g}"
    if rho < 1.0 / guard and r_falls and o_falls:
        return Decision(SUPPORTED, head, ofit), rival
    if rho >= 1.0 and _plateau(xa, ratio, rfit, decades, min_drop, stable_fit=False):   # a rival below: any shape
        return Decision(CONTRADICTED, head + f": {rival} at or below the own geometry, ratio not falling over "
                                             f"{decades:g} decades", ofit), rival
    if final and _plateau(xa, own_a, ofit, decades, min_drop) and not r_falls:   # nothing moves
        near = approach() if approach is not None else None
        if near is not None and approaching(xa, near[0], decades=decades, min_drop=min_drop):
            gfit = window_fit(xa, near[0], bound, decades)
            rate = f"; gap {gfit.describe(bound)}" if gfit is not None else ""
            return Decision(INCONCLUSIVE, head + f": own residual flat at the largest horizon, but the run approaches "
                                                 f"{near[1]} (gap {near[0][-1]:.3g}{rate})", ofit), rival
        why = ("" if approach is None else f"; {near[1]}, not approached" if near is not None
               else "; no certified KKT point near its direction")
        return Decision(CONTRADICTED, head + ": own residual a stable plateau at the largest horizon, and the "
                                             "ratio not falling" + why, ofit), rival
    return Decision(INCONCLUSIVE, head + ("" if final else ", to be extended"), ofit), rival


# rise ×2: docs/power.md, "judge_invariant: K" rows (wrong, same speed: precond-gd K rises below ×2, never
# contradicted, only inconclusive: the same-speed power is the slope half's; wrong, control: sign GD ×100);
# rise_max: the claims' k_rise_max / rho_rise_max ("right, slow" rows)
def judge_invariant(x, y, *, floor: float, rise: float = 2.0, decades: float = 2.0,
                    rise_max: float = 0.1) -> Decision:
    """A quantity that must settle to a constant: CONTRADICTED when it rises ≥ `rise`× per decade over each of
    the last `decades` decades while above `floor`; SUPPORTED when the last decade rises ≤ rise_max (settled);
    else INCONCLUSIVE."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    last = float(ya[-1])
    steps = [value_before(xa, ya, k) for k in range(int(math.ceil(decades)) + 1)]
    if any(v is None or not math.isfinite(v) for v in steps):
        return Decision(INCONCLUSIVE, f"fewer than {decades:g} decades of values")
    per = [steps[k] / steps[k + 1] if steps[k + 1] > 0 else math.inf for k in range(len(steps) - 1)]
    if last > floor and all(g >= rise for g in per):
        return Decision(CONTRADICTED, f"rises ×{min(per):.3g}+ per decade over {decades:g} decades to {last:.3g}")
    if settled(xa, ya, 1.0, rise_max):
        return Decision(SUPPORTED, f"settled at {last:.3g} (×{per[0]:.3g} over the last decade)")
    return Decision(INCONCLUSIVE, f"×{per[0]:.3g} over the last decade")


# rise ×2 (the claims' inv_rise): docs/power.md, "judge_rate_invariant" rows (wrong, same speed: preconditioned
# Signum; right, slow: per-sample Signum at the envelope's edge)
def judge_rate_invariant(x, gap, scale, bound: float, *, rise: float = 2.0, decades: float = 2.0,
                         min_drop: float = 0.1, final: bool = True, floor: float = FLOOR) -> Decision:
    """A gap that must tend to 0 at the rate 1/scale, where scale → ∞ (a margin gap of a run whose ‖w‖ grows):
    the invariant I = gap·scale must settle. Two halves, each able to decide alone:
        gap half        judge_gap(x, gap, bound): within `bound` and falling, or a stable plateau;
        invariant half  judge_invariant(x, I, rise, decades): I settled over the last decade, or rising ≥ `rise`×
                        per decade over each of the last `decades` decades (the gap falls slower than 1/scale by
                        that factor: a slow approach to a plateau, which the gap half alone would count as falling).
    SUPPORTED: the gap half and the invariant half both support, and the scale grows (1/scale falls by min_drop over
    the last decade; an invariant that settles only because the run froze supports nothing). CONTRADICTED: either
    half contradicts at the largest horizon (`final`; before it the example is extended instead), while the gap is
    above `floor`. INCONCLUSIVE otherwise, with both halves' reasons."""
    g = np.asarray(gap, float)
    sc = np.asarray(scale, float)
    last = float(g[-1])
    if math.isfinite(last) and last <= floor:
        return Decision(SUPPORTED, f"reached {last:.3g} ≤ {floor:g}")
    gd = judge_gap(x, g, bound, decades=decades, min_drop=min_drop, final=True, floor=floor)
    inv = judge_invariant(x, g * sc, floor=floor * float(sc[-1]), rise=rise, decades=decades)
    grows = falling(x, 1.0 / np.where(sc > 0, sc, np.nan), 1.0, min_drop)
    text = f"gap: {gd.reason}; gap·scale: {inv.reason}" + ("" if grows else "; scale not growing")
    if gd.word == SUPPORTED and inv.word == SUPPORTED and grows:
        return Decision(SUPPORTED, text, gd.fit)
    if CONTRADICTED in (gd.word, inv.word):
        return Decision(CONTRADICTED if final else INCONCLUSIVE, text + ("" if final else ", to be extended"), gd.fit)
    return Decision(INCONCLUSIVE, text, gd.fit)


# docs/power.md, "judge_nondecreasing" rows (smoothed margin: GD right, Signum and Muon wrong, fast and full
# horizons); rtol is the claim's floating-point allowance
def judge_nondecreasing(x, y, rtol: float, *, decades: float = 2.0, points: int = 3) -> Decision:
    """y must not decrease from one checkpoint to the next (a pointwise, horizon-free inequality).
    CONTRADICTED when some y[k+1] < y[k] − rtol·max(|y[k]|, |y[k+1]|) (rtol: the floating-point allowance of
    evaluating y), at any horizon (a decrease is a counterexample however early); SUPPORTED when there is none and the
    ≥ `points` finite checkpoints span ≥ `decades` decades of steps; INCONCLUSIVE otherwise. Non-finite values are
    skipped."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(ya) & (xa > 0)
    xa, ya = xa[ok], ya[ok]
    if len(ya) >= 2:
        allow = rtol * np.maximum(np.abs(ya[:-1]), np.abs(ya[1:]))
        drop = ya[:-1] - ya[1:] - allow
        k = int(np.argmax(drop))
        if drop[k] > 0:
            rel = (ya[k + 1] - ya[k]) / abs(ya[k])
            return Decision(CONTRADICTED, f"decreases {ya[k]:.6g} → {ya[k + 1]:.6g} (relative {rel:.3g}) "
                                          f"between steps {xa[k]:.3g} and {xa[k + 1]:.3g}")
    if len(ya) < points or xa[-1] < xa[0] * 10 ** decades * (1 - 1e-9):
        span = math.log10(xa[-1] / xa[0]) if len(ya) else 0.0
        return Decision(INCONCLUSIVE, f"{len(ya)} checkpoint(s) over {span:.2g} decades (needs ≥ {points} over "
                                      f"≥ {decades:g})")
    return Decision(SUPPORTED, f"non-decreasing at all {len(ya)} checkpoints over {math.log10(xa[-1] / xa[0]):.2g} "
                               f"decades ({ya[0]:.4g} → {ya[-1]:.4g})")


def all_of(decisions: dict[str, Decision]) -> Decision:
    """The halves of one example's rule, by name: SUPPORTED only when every half supports, CONTRADICTED when any half
    contradicts, INCONCLUSIVE otherwise; the reason names each half's word and reason, the fit is the first half's."""
    if not decisions:
        raise ValueError("all_of needs at least one decision")
    words = [d.word for d in decisions.values()]
    text = "; ".join(f"{k}: {d.word} ({d.reason})" for k, d in decisions.items())
    word = (CONTRADICTED if CONTRADICTED in words else SUPPORTED if all(w == SUPPORTED for w in words)
            else INCONCLUSIVE)
    return Decision(word, text, next(iter(decisions.values())).fit)


# A holding claim may have at most this share of its drawn examples set aside (outside the hypotheses): more, and
# what was judged may not stand for the claim's hypotheses (inconclusive). Measured on the fast baseline at
# aba1407: the largest share among holding claims is 2 of 8 (gronich.momentum-gd-l2-deep); the network claims'
# typical rate is 1 in 7 to 1 in 12.
SET_ASIDE_SHARE_MAX = 1 / 3


def tally(words, min_supported: int, set_aside: int = 0) -> tuple[bool | None, str]:
    """Claim level from per-example decisions: (True, …) holds, (False, …) does not hold, (None, …) inconclusive.
    SET_ASIDE examples (outside the hypotheses) count toward neither side, but a claim with more than
    SET_ASIDE_SHARE_MAX of its drawn examples set aside (`set_aside`: further ones its check rejected before judging)
    cannot hold."""
    words = list(words)
    n = {w: words.count(w) for w in DECISIONS}
    text = ", ".join(f"{n[w]} {w}" for w in DECISIONS if n[w])
    if n[CONTRADICTED]:
        return False, text
    aside, drawn = n[SET_ASIDE] + set_aside, len(words) + set_aside
    if aside > SET_ASIDE_SHARE_MAX * drawn:
        return None, text + (f" ({aside} of {drawn} drawn examples set aside, above the cap of "
                             f"{SET_ASIDE_SHARE_MAX:.0%})")
    if n[SUPPORTED] >= max(1, min_supported):
        return True, text
    return None, text + f" (holds needs ≥ {max(1, min_supported)} supported)"
