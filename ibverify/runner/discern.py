"""Can a dataset tell the geometries apart? Measured before `verify --data` runs anything.

The data.* claims send a run to one answer (ŵ2, the ℓ∞ max margin, Adam's proxy fixed point p*) and their controls
judge the same run against another answer, which they must refute. Where the claim's answer is within the control's
own tolerance of the control's target on the user's data, a run at that answer passes the control's closeness test:
the control's verdict is then "not applicable" (runner.claim), never a pass and never unexpected. Elsewhere the control
runs and its check judges it.

The tolerances are read from the claims themselves (one source of truth, never a copy of their numbers), and each
measure is the quantity the control's check (checks.proxy.proxy_direction) judges, taken at the claim's answer:
- control target ℓ2 or p* (judged by 1 − cos(w, target) ≤ 1 − cos_min, the control's cos_min): the cosine of the
  answer to the target — for the ℓ∞ answer, the largest cosine of any direction within the claim's gap_max of γ∞
  (a run the ℓ∞ claim supports; the ℓ∞ solutions need not be unique: compared by margin, exactly,
  theory.linf_set.max_cos_near_linf);
- control target ℓ∞ (judged by the ℓ∞ margin gap (γ∞ − γ∞(w))/γ∞ ≤ gap_max, the control's gap_max): the ℓ∞-margin
  loss of the answer. A control whose `rival` is the answer contradicts exactly when that loss exceeds gap_max (the
  same test); a control with another rival is always judged (not measured here).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..checks.rules import closeness
from ..errors import IbverifyError
from ..oracles import max_margin, normalized_margin
from ..theory import fixed_point
from ..theory.linf_set import max_cos_near_linf

NAMES = {"l2": "ŵ2", "linf": "the ℓ∞ max margin", "fixed-point": "p*"}


@dataclass(frozen=True)
class Separation:
    """How far apart ŵ2, the ℓ∞ max margin and p* are on one dataset; None: not computed (`missing` says why).
    near_linf: the ℓ∞ gap within which the near-ℓ∞ cosines look (None: not computed)."""
    linf_loss_l2: float | None          # (γ∞ − γ∞(ŵ2)) / γ∞
    cos_l2_near_linf: float | None      # max cos(ŵ2, v) over v with ℓ∞ loss ≤ near_linf
    linf_loss_fp: float | None          # (γ∞ − γ∞(p*)) / γ∞
    cos_fp_near_linf: float | None      # max cos(p*, v) over v with ℓ∞ loss ≤ near_linf
    cos_fp_l2: float | None             # cos(p*, ŵ2)
    missing: dict[str, str] = field(default_factory=dict)
    near_linf: float | None = None

    def figures(self) -> dict[str, float | None]:
        return {"linf_loss_l2": self.linf_loss_l2, "cos_l2_near_linf": self.cos_l2_near_linf,
                "linf_loss_fp": self.linf_loss_fp, "cos_fp_near_linf": self.cos_fp_near_linf,
                "cos_fp_l2": self.cos_fp_l2, "near_linf": self.near_linf}


def measure(Z: np.ndarray, near_linf: float | None = None) -> Separation:
    """The separation of the three answers on label-folded Z (rows scaled by max|Z|: directions are unchanged), the
    near-ℓ∞ cosines within ℓ∞ gap `near_linf` (None: not computed). A measure whose solver fails is None, with its
    reason in `missing` (the controls that need it stay judged)."""
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
        if u is None or li is None or near_linf is None:
            return None
        return attempt(name, lambda: max_cos_near_linf(Z, u, li.margin, near_linf))

    return Separation(loss(u2), near(u2, "cos_l2_near_linf"), loss(up), near(up, "cos_fp_near_linf"),
                      None if u2 is None or up is None else float(u2 @ up), missing, near_linf)


def _tol(tol, name: str) -> float | None:
    try:
        return tol(name)
    except KeyError:   # a control without this tolerance: not measured here, its check says what is missing
        return None


def gauge(sep: Separation, answer: str, target: str, tol) -> tuple[float | None, bool | None, str]:
    """Whether a run at `answer` passes the closeness test of a control of `target` whose tolerances `tol(name)`
    gives (a claims.Claim's tol): (the measure, True when it passes — None when not measured —, one phrase saying
    it against the control's threshold)."""
    if target == "linf":
        v = {"l2": sep.linf_loss_l2, "fixed-point": sep.linf_loss_fp}.get(answer)
        bound = _tol(tol, "gap_max")
        if v is None or bound is None:
            return None, None, ""
        same = closeness(max(v, 0.0), bound)
        return v, same, (f"{NAMES[answer]}'s ℓ∞ margin is {v:.2%} below γ∞ "
                         f"({'≤' if same else '>'} the control's gap_max {bound:.2%})")
    v = {("linf", "l2"): sep.cos_l2_near_linf, ("linf", "fixed-point"): sep.cos_fp_near_linf,
         ("fixed-point", "l2"): sep.cos_fp_l2, ("l2", "fixed-point"): sep.cos_fp_l2}.get((answer, target))
    cos_min = _tol(tol, "cos_min")
    if v is None or cos_min is None:
        return None, None, ""
    same = closeness(max(1.0 - v, 0.0), 1.0 - cos_min)
    who = (f"a direction within {sep.near_linf:.0%} of γ∞ has cos {v:.5f} to {NAMES[target]}" if answer == "linf"
           else f"cos({NAMES[answer]}, {NAMES[target]}) = {v:.5f}")
    return v, same, f"{who} ({'≥' if same else '<'} the control's cos_min {cos_min:g})"


def not_applicable(sep: Separation, answer: str, control, tier: str) -> str:
    """Why `control` (a claims.Claim judging a run that goes to `answer` against its own target, with its own
    tolerances) cannot be refuted on this data; "" when it can, or when that was not measured (it is then judged)."""
    p = control.params_for(tier)
    target, rival = p.get("target"), p.get("rival")
    if rival and rival != answer:   # the run at the answer may be judged going to a third answer: not modelled
        return ""
    _, same, text = gauge(sep, answer, target, control.tol)
    if not same:
        return ""
    return (f"not applicable to this data: {NAMES[answer]} (where the run goes) is within the control's tolerance of "
            f"{NAMES[target]} (its target): {text}; a run at its own answer passes the control's closeness test")
