"""Can a dataset tell the geometries apart? Measured before `verify --data` runs anything.

The data.* claims send a run to one answer (ŵ2, the ℓ∞ max margin, Adam's proxy fixed point p*) and their controls
judge the same run against another answer, which they must refute. Where the two answers coincide on the user's data,
a run at its own answer passes the control's check too, so no run can refute the control: its verdict is then
"not applicable" (runner.claim), never a pass and never unexpected.

How far apart two answers are is measured the way the control's check judges its target:
- target ℓ2 or p* (judged by cos ≥ cos_min): the largest cosine to that direction of the run's answer — for the ℓ∞
  answer, of any direction within NEAR_LINF of γ∞ (the ℓ∞ solutions need not be unique: compared by margin, exactly,
  theory.linf_set.max_cos_near_linf);
- target ℓ∞ (judged by the ℓ∞ margin gap ≤ 3 %): the ℓ∞-margin loss (γ∞ − γ∞(u))/γ∞ of the run's answer u.
The thresholds are those every generated dataset of the direction claims meets (strategies.linear.discriminating):
cos ≤ COS_MAX and ℓ∞ loss ≥ LINF_GAP_MIN; a pair closer than that coincides for the controls.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import IbverifyError
from ..oracles import max_margin, normalized_margin
from ..strategies.linear import COS_MAX, LINF_GAP_MIN, NEAR_LINF
from ..theory import fixed_point
from ..theory.linf_set import max_cos_near_linf

NAMES = {"l2": "ŵ2", "linf": "the ℓ∞ max margin", "fixed-point": "p*"}


@dataclass(frozen=True)
class Separation:
    """How far apart ŵ2, the ℓ∞ max margin and p* are on one dataset; None: not computed (`missing` says why)."""
    linf_loss_l2: float | None          # (γ∞ − γ∞(ŵ2)) / γ∞
    cos_l2_near_linf: float | None      # max cos(ŵ2, v) over v with ℓ∞ loss ≤ NEAR_LINF
    linf_loss_fp: float | None          # (γ∞ − γ∞(p*)) / γ∞
    cos_fp_near_linf: float | None      # max cos(p*, v) over v with ℓ∞ loss ≤ NEAR_LINF
    cos_fp_l2: float | None             # cos(p*, ŵ2)
    missing: dict[str, str] = field(default_factory=dict)

    def figures(self) -> dict[str, float | None]:
        return {"linf_loss_l2": self.linf_loss_l2, "cos_l2_near_linf": self.cos_l2_near_linf,
                "linf_loss_fp": self.linf_loss_fp, "cos_fp_near_linf": self.cos_fp_near_linf,
                "cos_fp_l2": self.cos_fp_l2}


def measure(Z: np.ndarray) -> Separation:
    """The separation of the three answers on label-folded Z (rows scaled by max|Z|: directions are unchanged). A
    measure whose solver fails is None, with its reason in `missing` (the controls that need it stay judged)."""
    Z = np.asarray(Z, dtype=np.float64)
    Z = Z / np.max(np.abs(Z))
    missing: dict[str, str] = {}

    def attempt(name, f):
        try:
            return f()
        except IbverifyError as e:
            missing[name] = str(e)
            return None

    li = attempt("linf", lambda: max_margin(Z, "linf"))
    l2 = attempt("l2", lambda: max_margin(Z, "l2"))
    fp = attempt("fixed-point", lambda: fixed_point.iterate(Z, damping=None))
    u2 = None if l2 is None else l2.direction / np.linalg.norm(l2.direction)
    up = None if fp is None else fp.direction / np.linalg.norm(fp.direction)

    def loss(u):
        return None if u is None or li is None else float((li.margin - normalized_margin(Z, u, "linf")) / li.margin)

    def near(u, name):
        if u is None or li is None:
            return None
        return attempt(name, lambda: max_cos_near_linf(Z, u, li.margin, NEAR_LINF))

    return Separation(loss(u2), near(u2, "cos_l2_near_linf"), loss(up), near(up, "cos_fp_near_linf"),
                      None if u2 is None or up is None else float(u2 @ up), missing)


def gauge(sep: Separation, answer: str, target: str) -> tuple[float | None, bool | None, str]:
    """How far a run at `answer` is from passing a check of `target`: (the measure, whether the two coincide — None
    when not measured —, one phrase saying it against its threshold)."""
    if target == "linf":
        v = {"l2": sep.linf_loss_l2, "fixed-point": sep.linf_loss_fp}.get(answer)
        if v is None:
            return None, None, ""
        same = v < LINF_GAP_MIN
        return v, same, (f"{NAMES[answer]}'s ℓ∞ margin is {v:.1%} below γ∞ "
                         f"({'<' if same else '≥'} {LINF_GAP_MIN:.0%})")
    v = {("linf", "l2"): sep.cos_l2_near_linf, ("linf", "fixed-point"): sep.cos_fp_near_linf,
         ("fixed-point", "l2"): sep.cos_fp_l2, ("l2", "fixed-point"): sep.cos_fp_l2}.get((answer, target))
    if v is None:
        return None, None, ""
    same = v >= COS_MAX
    who = (f"a direction within {NEAR_LINF:.0%} of γ∞ has cos {v:.4f} to {NAMES[target]}" if answer == "linf"
           else f"cos({NAMES[answer]}, {NAMES[target]}) = {v:.4f}")
    return v, same, f"{who} ({'≥' if same else '<'} {COS_MAX:g})"


PAIRS = {("l2", "linf"): (("linf", "l2"), ("l2", "linf")),
         ("fixed-point", "linf"): (("fixed-point", "linf"), ("linf", "fixed-point")),
         ("fixed-point", "l2"): (("fixed-point", "l2"),)}


def coinciding(sep: Separation) -> list[str]:
    """One line per pair of answers that coincide on this data (either way round), with the measures."""
    out = []
    for (a, b), ways in PAIRS.items():
        said = [text for _, same, text in (gauge(sep, *w) for w in ways) if same]
        if said:
            out.append(f"{NAMES[a]} and {NAMES[b]} coincide: {'; '.join(said)}")
    return out


def not_applicable(sep: Separation, answer: str, target: str) -> str:
    """Why a control judging a run that goes to `answer` against `target` cannot be refuted on this data; "" when it
    can (or when that was not measured: the control is then judged)."""
    _, same, text = gauge(sep, answer, target)
    if not same:
        return ""
    return (f"not applicable to this data: {NAMES[answer]} (where the run goes) and {NAMES[target]} (the control's "
            f"target) coincide: {text}; a run at its own answer passes the control's check")
