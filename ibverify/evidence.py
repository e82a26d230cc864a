"""Evidence records: what a claim's check returns and what the report draws.

A check never renders anything; it returns an `Outcome` holding numbers (`figures`), curves
(`series`) and optional tables. Verdicts are derived from `Outcome.holds` and the claim's status
(see `ibverify.claims.verdict`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from .jsonio import plain


THRESHOLD = "threshold:"  # a series named so is a check's threshold for the plotted quantity: drawn dashed


@dataclass
class Series:
    """One curve of evidence, e.g. the gap 1 - cos(w_t, w2) at log-spaced steps t."""

    name: str
    x: list[float]
    y: list[float]
    xlabel: str = "step"
    ylabel: str = ""
    log_x: bool = True
    log_y: bool = True
    group: str = ""  # series with the same group are drawn in one plot

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["x"] = [_finite_or_none(v) for v in self.x]
        d["y"] = [_finite_or_none(v) for v in self.y]
        return d


@dataclass
class Outcome:
    """The result of running a claim's check.

    holds: truth value of the claim's predicate on the evidence (None for `beyond` findings,
           which report a measurement rather than pass/fail).
    inconclusive: non-empty when the evidence decides neither way at the horizon reached (no example
           contradicted, too few supported): the reason, with the fitted crossing where there is one.
           It overrides `holds` (the verdict is "inconclusive").
    decisions: per-example counts (supported / contradicted / inconclusive / set aside), as the check counted them;
           the row also carries them as `counts` (`decision_counts`: all four, zeros included; None when the check
           records no per-example decision), which `ibverify compare` gates on.
    figure: the key figure, one line for the index table.
    figures: named numbers (tracked by `ibverify compare`).
    """

    holds: bool | None
    figure: str
    figures: dict[str, float] = field(default_factory=dict)
    series: list[Series] = field(default_factory=list)
    details: str = ""
    examples: int = 0
    counterexample: dict[str, Any] | None = None
    table: list[dict[str, Any]] | None = None
    inconclusive: str = ""
    decisions: dict[str, int] = field(default_factory=dict)

    def __post_init__(self):
        decision_counts(self.decisions)   # a decision word that is not one fails the check here (an error verdict)

    def to_json(self) -> dict[str, Any]:
        return {
            "holds": self.holds,
            "inconclusive": self.inconclusive,
            "decisions": dict(self.decisions),
            "counts": decision_counts(self.decisions),
            "figure": self.figure,
            "figures": {k: _finite_or_none(float(v)) for k, v in self.figures.items()},
            "series": [s.to_json() for s in self.series],
            "details": self.details,
            "examples": self.examples,
            "counterexample": plain(self.counterexample),
            "table": plain(self.table),
        }


COUNT_KEYS = {"supported": "supported", "contradicted": "contradicted", "inconclusive": "inconclusive",
              "set aside": "set_aside"}   # a decision word (checks.rules) → its key in a row's outcome.counts


def decision_counts(decisions: dict[str, int]) -> dict[str, int] | None:
    """The uniform per-row summary of per-example decisions: {supported, contradicted, inconclusive, set_aside}, every
    key present (0 when the check's `decisions` leaves it out); None when there are no decisions at all (the check
    judges no examples three-valued). A word that is not a decision is an error, never silently dropped."""
    if not decisions:
        return None
    unknown = sorted(set(decisions) - set(COUNT_KEYS))
    if unknown:
        raise ValueError(f"decisions {unknown} are not per-example decision words ({', '.join(COUNT_KEYS)})")
    return {key: int(decisions.get(word, 0)) for word, key in COUNT_KEYS.items()}


def _finite_or_none(v: float) -> float | None:
    v = float(v)
    return v if math.isfinite(v) else None


def log_slope(x: list[float], y: list[float]) -> float:
    """Least-squares slope of log(y) against log(x); the trend of a gap curve (negative: falling)."""
    import numpy as np  # start-up time: numpy (pytest loads the plugin, and with it this module, in every session)

    xa, ya = np.asarray(x, float), np.asarray(y, float)
    ok = (xa > 0) & (ya > 0) & np.isfinite(ya)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(xa[ok]), np.log(ya[ok]), 1)[0])


def bound_text(v: float, bound: float, digits: int = 3) -> str:
    """v with `digits` significant digits, or more where fewer would put it on the other side of `bound` (or onto
    it): a ratio 0.796 judged against < 0.8 reads 0.796, never 0.80."""
    text = f"{v:.{digits}g}"
    if not (math.isfinite(v) and math.isfinite(bound)):
        return text
    while digits < 17 and ((float(text) < bound) != (v < bound) or (float(text) == bound) != (v == bound)):
        digits += 1
        text = f"{v:.{digits}g}"
    return text


def beta_text(b: float) -> str:
    """A decay rate β ∈ [0, 1) as text with enough digits that it never reads as 1 (0.9999, not "1")."""
    if not 0.99 < b < 1:
        return f"{b:.3g}"
    return f"{b:.{math.ceil(-math.log10(1 - b)) + 2}g}"
