"""Answers that say when (issue 36 item 2): which geometry each decade of a `bias` run supports, and where that
answer switches, read off the series the rules judged (each dataset's `curve` in a model's evidence: the margin gap
1 − γ_g/γ_g* on the linear and matrix models, the Fenchel KKT residual on the two-layer net).

A decade [10^k, 10^(k+1)] is read on a dataset whose curve has checkpoints at (or within 5 % below) both ends. Its
**leader** there is the geometry whose value at the decade's end is the smallest of the model's geometries (a tie:
none) and which falls over the decade: rules.falling's floor (a value ≤ rules.FLOOR is reached) or, over the
decade's checkpoints, a log-log slope fitted by rules.window_fit below rules.FLAT (−0.02: ≥ 5 % per decade).
Otherwise the decade has no leader on that dataset, nor where some geometry has no finite value at the decade's end
(a margin gap ≥ 1: the run did not separate the data there; a dataset set aside is not read at all). Over the
datasets that read it, a decade's **geometry** is the leader of ≥ 2/3 of them (the threshold of
checks.bias.tally_geometry), else null.

A **switch** is a change of geometry between consecutive decades that have one (null decades between them skipped):
from g (its last decade [a, ·]) to h (its run of decades up to b). Its fitted step on a dataset is where h's series
crosses below g's: the last sign change of log y_h − log y_g from > 0 to ≤ 0 over the checkpoints in [a, b],
interpolated linearly in log t between the two checkpoints around it; the model's step is the median of those steps
over the datasets whose curves cross there.
"""

from __future__ import annotations

import math

import numpy as np

from ..checks import rules

NEAR = 1.05     # a checkpoint within 5 % below a power of ten stands for it (a capped horizon's grid: 9967 for 1e4)
SHARE = 2 / 3   # datasets that must agree on a decade's leader (checks.bias.tally_geometry's threshold)


def _curves(model: dict) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """dataset tag → geometry → (steps, values) from a model entry's evidence (datasets without a curve, and those set
    aside, such as a run that does not separate its data, left out). A margin gap's checkpoints where the run did not
    separate the data (gap ≥ 1: min margin ≤ 0) are NaN, so no decade ending there is ranked."""
    out: dict[str, dict] = {}
    for g, ev in model.get("evidence", {}).items():
        for d in ev.get("datasets", []):
            c = d.get("curve")
            if not c or not c.get("steps") or d.get("decision") == rules.SET_ASIDE:
                continue
            y = np.asarray(c["values"], float)
            if "margin_gap" in d:
                y = np.where(y < 1.0, y, np.nan)
            out.setdefault(d["dataset"], {})[g] = (np.asarray(c["steps"], float), y)
    return out


def _end_index(x: np.ndarray, end: float) -> int | None:
    """The index of the checkpoint standing for step `end` (at it, or within NEAR below it), else None."""
    idx = np.nonzero((x <= end * (1 + 1e-9)) & (x >= end / NEAR))[0]
    return int(idx[-1]) if len(idx) else None


def decades_of(x: np.ndarray) -> list[int]:
    """The k of every decade [10^k, 10^(k+1)] a curve with checkpoints x reads."""
    if len(x) < 2 or x[0] <= 0:
        return []
    ks = range(math.floor(math.log10(x[0])) - 1, math.ceil(math.log10(x[-1])) + 1)
    return [k for k in ks if _end_index(x, 10.0 ** k) is not None and _end_index(x, 10.0 ** (k + 1)) is not None]


def falls(x, y) -> bool:
    """y falls over its last decade: at or below rules.FLOOR, or its fitted log-log slope (rules.window_fit over
    one decade) below rules.FLAT."""
    last = float(y[-1])
    if math.isfinite(last) and last <= rules.FLOOR:
        return True
    fit = rules.window_fit(x, y, rules.FLOOR, decades=1.0)
    return fit is not None and math.isfinite(fit.slope) and fit.slope < rules.FLAT


def leader(series: dict[str, tuple[np.ndarray, np.ndarray]], k: int) -> str | None:
    """The geometry leading decade [10^k, 10^(k+1)] on one dataset (module docstring), or None."""
    ends = {}
    for g, (x, y) in series.items():
        j = _end_index(x, 10.0 ** (k + 1))
        if j is not None and math.isfinite(float(y[j])):
            ends[g] = (j, float(y[j]))
    if len(ends) < len(series):   # a geometry without a value there (e.g. the run not separating): nothing ranked
        return None
    low = min(v for _, v in ends.values())
    best = [g for g, (_, v) in ends.items() if v == low]
    if len(best) != 1:
        return None
    g = best[0]
    x, y = series[g]
    j = ends[g][0]
    return g if falls(x[: j + 1], y[: j + 1]) else None


def crossing(series: dict, g: str, h: str, lo: float, hi: float) -> float | None:
    """The step in [lo, hi] where h's series last crosses below g's (log-log interpolation), or None."""
    if g not in series or h not in series:
        return None
    (xg, yg), (xh, yh) = series[g], series[h]
    if len(xg) != len(xh) or not np.array_equal(xg, xh):
        return None
    ok = (xg >= lo / NEAR) & (xg <= hi * (1 + 1e-9)) & (yg > 0) & (yh > 0)
    x, d = xg[ok], np.log(yh[ok]) - np.log(yg[ok])
    found = None
    for i in range(len(x) - 1):
        if d[i] > 0 >= d[i + 1]:
            a, b = math.log(x[i]), math.log(x[i + 1])
            found = math.exp(a + (b - a) * d[i] / (d[i] - d[i + 1]))
    return found


def by_decade(model: dict) -> tuple[list[dict], list[dict]]:
    """(by_decade, switches) of one model entry of `bias`'s answer (module docstring): per decade {"from", "to",
    "geometry" (null: none), "leaders": {dataset: geometry or null}}; per switch {"from_geometry", "to_geometry",
    "between": [from, to], "step" (median; null: no dataset's curves cross), "steps": {dataset: step}}."""
    curves = _curves(model)
    ks = sorted({k for series in curves.values() for x, _ in series.values() for k in decades_of(x)})
    rows = []
    for k in ks:
        leaders = {}
        for tag, series in curves.items():
            if any(k in decades_of(x) for x, _ in series.values()):
                leaders[tag] = leader(series, k)
        named = [g for g in leaders.values() if g is not None]
        need = max(1, math.ceil(SHARE * len(leaders)))
        top = max(set(named), key=named.count, default=None)
        geometry = top if top is not None and named.count(top) >= need else None
        rows.append({"from": 10 ** k, "to": 10 ** (k + 1), "geometry": geometry, "leaders": leaders})
    runs: list[list[dict]] = []   # consecutive decades with one geometry (null decades skipped)
    for row in rows:
        if row["geometry"] is None:
            continue
        if runs and runs[-1][-1]["geometry"] == row["geometry"]:
            runs[-1].append(row)
        else:
            runs.append([row])
    switches = []
    for before, after in zip(runs, runs[1:], strict=False):
        g, h = before[-1]["geometry"], after[0]["geometry"]
        lo, hi = before[-1]["from"], after[-1]["to"]
        steps = {tag: s for tag, series in curves.items() if (s := crossing(series, g, h, lo, hi)) is not None}
        switches.append({"from_geometry": g, "to_geometry": h, "between": [lo, hi],
                         "step": float(np.median(list(steps.values()))) if steps else None, "steps": steps})
    return rows, switches

