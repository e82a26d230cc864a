"""Which geometry does an optimizer prefer? (`ibverify bias`, issue 22 point 1.)

Runs one optimizer (a row of the optimizer table with its knobs) on generated discriminating data for every model
its row supports, scores every geometry of the model with the project's three-valued rules, and answers per model:
the geometries whose KKT conditions the run's limit satisfies (supported), those it does not (contradicted), the
rest (inconclusive); and the model's outcome worded as what is known (`outcome_of`).

Models (from the row's `models`: vector → linear; block → matrix and two-layer, unless the row skips one):
    linear     f(x; w) = ⟨w, x⟩ on Gaussian points labelled by a random hyperplane (netdata.linear_separable), the
               vector implementation (sample by sample, as `ibverify train`); geometries l1, l2, linf, each with its
               certified max-margin oracle (oracles.maxmargin: a primal–dual certificate; ℓ1 and ℓ∞ cross-checked by
               HiGHS). Data are drawn until every pair of optima is ≥ DISCRIMINATES apart: each geometry's optimum
               is ≥ 10 % short of every other geometry's optimum in that geometry's margin.
    matrix     f(X; W) = ⟨W, X⟩ on Gaussian matrices labelled by a rank-1 teacher (netdata.matrix_separable), the
               block implementation from W = 0; geometries l2 (Frobenius), linf (entrywise) and spectral (= msp for
               one matrix), certified by kkt.certified_max_margin (an SDP for spectral); same discrimination.
    two-layer  f = Σ_j a_j max(0, w_j·x)² (L = 3) on teacher data (netdata.teacher_two_layer), drawn width and
               initialization, as the gronich network claims; geometries gronich_score.applicable (l2, linf, msp,
               hybrid): no certified optimum exists (KKT points are local), so each is scored by its Fenchel KKT
               residual and judged by the cross-geometry rule (gronich_score.judge → rules.judge_separation).

Rules per dataset and geometry g (no private rule: rules.py and gronich_score.py decide):
    linear, matrix   the margin gap 1 − γ_g(θ_t)/γ_g* over the last two decades of checkpoints:
                     rules.judge_gap(gap, BOUND, min_drop=MIN_DROP): ≤ 1 % and falling ≥ 30 % in the last decade
                     supports (the rates of steepest descent, t^−0.3…−0.8), a stable plateau at the tier's largest
                     horizon contradicts; or rules.judge_rate_invariant(gap, ‖θ‖_g, SLOW_BOUND) supports (a gap
                     ≤ 5 % falling like 1/‖θ‖_g with ‖θ‖_g → ∞: gradient descent's 1/log t approach, Soudry et al.
                     2018, which no bound of 1 % can see at a reachable horizon; its contradiction half is not used,
                     since a fast gap under a fast-growing norm would trip it), read only where ‖θ‖_g grows like a
                     log (`growth`: the run's own rate, never the optimizer's name). Cross-geometry (as
                     gronich_linear's `rival`): a run supported in h contradicts g when h's certified optimum is
                     > BOUND short of g's in g's margin (the limit is h's optimum, not g's). A run that does not
                     separate the data (min margin ≤ 0 at the horizon) is judged in no geometry: inconclusive, set
                     aside at the cap (replaced by the next dataset).
    two-layer        gronich_score.judge(scores, g) with the network claims' tolerances (guard 1, min_drop 5 %),
                     always with final=False: a geometry is contradicted only when another is at or below it with no
                     falling ratio, never by its own residual's plateau at the tier's cap (KKT points of a network
                     are local, and a saddle crossing holds a residual flat for decades: signum at the table's
                     lr_decay 0.83 sat at ℓ∞/ℓ2 ratio 0.89, own residual rising, at 3e6 steps on one teacher set,
                     that run's direction still turning); a support needs (T2), the direction settling
                     (gronich_score.judge_direction), as in gronich_nets; a run whose direction does not settle at the
                     cap, or that never separates the data, is set aside and replaced by the next dataset (before the
                     cap when inert samples alone hold its margin at 0, gronich_score.unseparated: no step acts on
                     them any more).
A run whose ‖θ‖ stops growing (`bounded_norm`, read off the measured ‖θ‖₂ series at each horizon: ≤ 1 % over the last
decade, or ≤ 5 % while that rise is below ¼ of the decade before's) has no margin limit: every geometry is set aside
there, not extended, and the model answered "bounded-norm" after that dataset, with the settings that bound it
(`bounding_settings`: a weight decay, lr_decay > 1). Each model's `outcome` (`outcome_of`): supported, contradicted
(every geometry: "none of these"), undecided (the closest geometry, its δ and the horizon to extend to) or
bounded-norm.
Every geometry on every dataset carries its `resolution` (the largest limit gap, or limit residual on the two-layer
net, the run still allows: the measured value, tightened by the measured rate; none, or the measured value widened,
where the series is not monotone; none on a degree-1 gap falling < 10 % over its last step, a plateau); a support is
stated with it ("g to within δ") and never without a finite one.
On the degree-1 models δ is estimated twice (`stated_resolution`): from the iterate's gap series and from the
increments θ(t) − θ(t/10) (`increments`): the iterate's δ is stated, raised to the increments' measured gap where
their series does not fall; the increments' δ is reported beside it as a point estimate, with whether the two agree.
An undecided dataset is extended ×10 (prop.sequential) up to the tier's cap, where `final` lets a plateau
contradict. Per geometry, the datasets are tallied by rules.tally (≥ 2/3 supported and none contradicted:
supported; any contradicted: contradicted; else inconclusive).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ..errors import IbverifyError
from .. import geometry as geo
from ..blocks import fro
from ..optim import OptimizerSpec, hybridc, info
from ..oracles import kkt, maxmargin
from ..recipes import DataRecipe, ModelRecipe, RunStore
from ..recipes import bias as recipes
from ..recipes.bias import CHECKPOINTS, MODELS  # noqa: F401  (checks.bias.MODELS, CHECKPOINTS: the public names)
from . import gronich_score as S
from . import rules
from .prop import Example, sequential

GEOMETRIES = ("l1", "l2", "linf", "spectral", "msp", "hybrid")
TIERS = ("smoke", "fast")
# (first horizon, cap) in steps per model and tier; an undecided dataset is extended ×10 up to the cap
HORIZONS = {
    "smoke": {"linear": (100_000, 100_000), "matrix": (100_000, 100_000), "two-layer": (100_000, 100_000)},
    "fast": {"linear": (1_000_000, 10_000_000), "matrix": (100_000, 1_000_000), "two-layer": (300_000, 3_000_000)},
}
BOUND = 0.01                # margin gap at the horizon (judge_gap)
MIN_DROP = 0.3              # ... falling ≥ 30 % over the last decade (degree-1 claims: measured t^−0.4…−0.8)
SLOW_BOUND = 0.05           # margin gap of the 1/‖θ‖ route (judge_rate_invariant)
SLOW_DROP = 0.1
DISCRIMINATES = 0.1         # generated data: every optimum ≥ 10 % short of every other geometry's, in its margin
#                             (twice SLOW_BOUND: a wrong geometry's gap tends to ≥ 10 %, never within the 1/‖θ‖ route)
NET = {"guard": 1.0, "min_drop": 0.05, "decades": 2.0, "bound": 0.05, "t2_dir_max": 0.1, "t2_drop": 0.05}
MAX_DRAWS = 200             # candidate datasets drawn per model before giving up on discrimination
BOUNDED_RISE = 0.01        # ‖θ‖ that rose ≤ 1 % over the last decade is bounded (weight decay, a summable step):
#                             no margin limit exists (GD's log t growth rises ln 10/ln T ≈ 14 % a decade at 1e7)
SLOWING_RISE, SLOWING = 0.05, 0.25   # ... or ≤ 5 % while its rise fell below ¼ of the decade before's (growth dying
#                             out toward a bound: AdamW at λ = 1 rose 4 %, ×0.19; a log or a power rises ×1 or more)
LOG_GROWTH = 1.5            # the 1/‖θ‖ route needs log-like growth: ‖θ‖_g's rise over the last decade ≤ 1.5× the
#                             decade before's (a log: ×1; a power t^α: ×10^α, √t ×3.2; refused from α ≈ 0.18)

# geometry name → the max-margin oracle's norm (linear model) / the Geometry object (matrix model); tests swap these
# to check that a wrong pairing is caught
LINEAR_NORMS = {"l1": "l1", "l2": "l2", "linf": "linf"}
MATRIX_GEOMETRIES = {"l2": "l2", "linf": "linf", "spectral": "spectral"}


def models_for(name) -> tuple[list[str], dict[str, str]]:
    """(models run, {model: why skipped}) for an optimizer of the table (a name) or a row (a user's optimizer)."""
    row = info(name) if isinstance(name, str) else name
    out, skipped = [], {}
    if "vector" in row.models:
        out.append("linear")
    if "block" in row.models:
        for m in ("matrix", "two-layer"):
            if m in row.skips:
                skipped[m] = row.skips[m]
            elif m == "matrix" and row.geometry == "hybrid":
                skipped[m] = ("a hybrid optimizer partitions matrix and vector blocks; the matrix model has one "
                              "matrix block only")
            else:
                out.append(m)
    return out, skipped


def resolved_spec(spec: OptimizerSpec, model: str, n: int) -> OptimizerSpec:
    """The spec validated for `model`: the vector implementation for linear, the block one (degree L) else (a batch
    size there is the block loop's cyclic mini-batches, `judge_problem`'s `batch`, not a knob of the spec)."""
    if model == "linear":
        return spec.resolved(n)
    if spec.batch_size is not None and spec.batch_size < 1:
        raise IbverifyError(f"batch size must be ≥ 1, got {spec.batch_size}")
    return replace(spec, batch_size=None).for_block(3.0 if model == "two-layer" else 1.0)


# ------------------------------------------------------------------------------------------------ datasets

@dataclass
class Problem:
    """One dataset of a model, as recipes: the data, the model (None: the linear model's vector loop), θ0's seed;
    `n` the sample count, the geometries' optima (degree-1 models) and how far apart they are."""
    tag: str
    data: DataRecipe
    model: ModelRecipe | None = None
    init_seed: int | None = None
    n: int = 0
    optima: dict = field(default_factory=dict)     # g → (θ*, γ*) with γ* the certified margin (upper bound)
    offsets: dict = field(default_factory=dict)    # (g, h) → 1 − γ_g(θ_h*)/γ_g*

    @property
    def discrimination(self) -> float:
        return min(self.offsets.values()) if self.offsets else float("nan")


def _store(store: RunStore | None) -> RunStore:
    return store if store is not None else RunStore.process()


def _linear_problem(data: DataRecipe, tag: str, store: RunStore) -> Problem:
    D = store.data(data)
    Z = D.Z
    mm = {g: maxmargin.max_margin(Z, LINEAR_NORMS[g]) for g in LINEAR_NORMS}
    pr = Problem(tag, data, n=D.n, optima={g: (mm[g].direction, mm[g].margin) for g in mm})
    pr.offsets = {(g, h): 1.0 - linear_margin(Z, mm[h].direction, g) / mm[g].margin
                  for g in mm for h in mm if g != h}
    return pr


def linear_margin(Z, w, g: str) -> float:
    return maxmargin.normalized_margin(Z, np.asarray(w, float), LINEAR_NORMS[g])


def _matrix_problem(data: DataRecipe, mrec: ModelRecipe, tag: str, store: RunStore) -> Problem:
    D = store.data(data)
    model = mrec.build(D)
    G = {g: geo.get(MATRIX_GEOMETRIES[g]) for g in MATRIX_GEOMETRIES}
    opt = {g: kkt.certified_max_margin(G[g], model, D.X, D.y) for g in G}
    pr = Problem(tag, data, mrec, n=D.n, optima={g: (opt[g][0], opt[g][1].upper) for g in G})
    pr.offsets = {(g, h): 1.0 - G[g].margin(model, opt[h][0], D.X, D.y) / opt[g][1].upper
                  for g in G for h in G if g != h}
    return pr


def draws(model: str, seed: int, say: Callable[[str], None] = lambda s: None, store: RunStore | None = None):
    """Datasets of `model` drawn from `seed` (sizes too, recipes.bias.candidates), one after another; degree-1 ones
    only where every pair of optima is ≥ DISCRIMINATES apart (at most MAX_DRAWS candidates are drawn)."""
    store = _store(store)
    for tag, data, mrec, init in recipes.candidates(model, seed, MAX_DRAWS):
        if model == "linear":
            pr = _linear_problem(data, tag, store)
        elif model == "matrix":
            pr = _matrix_problem(data, mrec, tag, store)
        else:
            yield Problem(tag, data, mrec, init_seed=init, n=store.data(data).n)
            continue
        if pr.discrimination >= DISCRIMINATES:
            say(f"{model}: drew {pr.tag} (optima ≥ {pr.discrimination:.3g} apart)")
            yield pr
    raise IbverifyError(f"{model}: too few usable datasets in {MAX_DRAWS} draws")


def generated(model: str, seed: int, k: int, say: Callable[[str], None] = lambda s: None,
              store: RunStore | None = None) -> list[Problem]:
    """The first k datasets of `draws`."""
    it = draws(model, seed, say, store)
    return [next(it) for _ in range(k)]


def from_file(model: str, data: DataRecipe, name: str, width: int = 8, seed: int = 0,
              store: RunStore | None = None) -> Problem:
    """The user's dataset (a data recipe) as a problem of `model` (no discrimination required; the offsets are
    reported)."""
    store = _store(store)
    if model == "linear":
        return _linear_problem(data, name, store)
    if model == "matrix":
        return _matrix_problem(data, recipes.file_model(model), name, store)
    return Problem(name, data, recipes.file_model(model, width), init_seed=seed, n=store.data(data).n)


def file_models(D, name: str) -> list[str]:
    """Models a data file can feed: matrix inputs (n, p, r) the matrix model, vectors the linear and two-layer."""
    return ["matrix"] if D.X.ndim == 3 else ["linear", "two-layer"]


# ------------------------------------------------------------------------------------------------ one dataset

@dataclass
class Judged:
    """One geometry on one dataset."""
    word: str
    reason: str
    value: float          # final margin gap (degree 1) or Fenchel residual (two-layer)
    slope: float          # fitted log-log slope of the value over the last decade(s)
    horizon: int
    quantity: str         # what `value` is
    curve: tuple | None = None   # (steps, values) of the judged quantity at the horizon's scored checkpoints
    resolution: float = math.nan  # the largest limit value the run still allows (`resolution`; inf: unresolved)
    bounded: dict | None = None   # `bounded_norm`'s reading where ‖θ‖ stopped growing (the dataset not judged)
    units: tuple | None = None    # two-layer net: (units alive on the data at the horizon, width)
    estimates: dict | None = None  # degree 1: the two estimates behind `resolution` (Stated.to_json)
    increment_curve: tuple | None = None  # degree 1: (steps, gaps) of the increments θ(t) − θ(t/10) (`increments`)

    def to_json(self) -> dict:
        return {"decision": self.word, "reason": self.reason, self.quantity: self.value, "slope": self.slope,
                "horizon": self.horizon, "resolution": _finite_or_none(self.resolution),
                **({"resolution_estimates": self.estimates} if self.estimates else {}),
                **({"bounded_norm": self.bounded} if self.bounded else {}),
                **({"units_alive": self.units[0], "width": self.units[1]} if self.units else {})}

    def curve_json(self) -> dict:
        """The judged series as plain lists ({} when none was scored): {"curve": {"steps": [...], "values": [...]}}."""
        if self.curve is None:
            return {}
        steps, values = self.curve
        return {"curve": {"steps": [int(s) for s in steps], "values": [float(v) for v in values]}}


def _slope(fit) -> float:
    return float(fit.slope) if fit is not None else float("nan")


def _finite_or_none(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def _at(lx: np.ndarray, y: np.ndarray, t: float) -> float | None:
    """y at step t, linear in log t between the checkpoints around it (None outside the curve)."""
    lt = math.log(t)
    if lt < lx[0] - 1e-9 or lt > lx[-1] + 1e-9:
        return None
    return float(np.interp(lt, lx, y))


@dataclass(frozen=True)
class Resolution:
    """`resolution`'s answer: `value`, the largest limit the run still allows (floor ≤ value ≤ the measured value when
    the run falls monotonically; inf: none can be given), how it was found (`method`: "extrapolated", "measured",
    "widened", "floor" or "unresolved") and `estimates`, the values read at each end point."""
    value: float
    method: str
    estimates: tuple = ()

    def describe(self) -> str:
        if not math.isfinite(self.value):
            return "unresolved"
        return f"to within {self.value:.3g} ({self.method})"


# The extrapolation of `resolution` continues a falling gap at RATE_SAFETY times the fastest per-decade rate measured,
# not at that rate itself: at the measured rate, 3 of 77 fast-tier supports of the power table's linear family stated a
# resolution below their certified true gap (ℓ1 on a Gaussian set, rates 0.303, 0.311 and then 0.287 per decade:
# a rate that moves by a few % moves a geometric tail's sum by far more); at half of it, none (docs/power.md).
RATE_SAFETY = 0.5


def largest_rise(y) -> float:
    """The largest upward excursion of a series, max over i < j of y_j − y_i (0 for a series that never rises)."""
    y = np.asarray(y, float)
    if len(y) < 2:
        return 0.0
    return max(0.0, float(np.max(y[1:] - np.minimum.accumulate(y)[:-1])))


def resolution(x, y, step: float = 1.0, floor: float = rules.FLOOR, min_drop: float = 0.0) -> Resolution:
    """The largest limit value lim y(t) that the series y (a margin gap 1 − γ_g(θ_t)/γ_g*, or any quantity falling to
    its limit) still allows at its horizon T: the run's limit could have a gap up to `value` in that geometry and
    have given these checkpoints, at the rate measured on them. The plain function H1b's power table and `ibverify
    bias` both call (checks.bias.judge_degree1, judge_network). `step`: the spacing, in decades, of the four points
    read (1: T/1000 … T, the iterate's three decades; 1/2 for the increments' two, `increment_gaps`). `floor`: the
    rounding floor of y (a gap at or below it is not told from 0). `min_drop`: the least fall over the last step
    [T/10^step, T] that shows the series approaching its limit (degree-1 gaps: PLATEAU_DROP; 0: any fall).

    Floor ("floor"): y(T) ≤ floor (reached, or negative by rounding): δ = floor, never 0.
    Not monotone over the window [T/10^(3·step), T] (a rise > floor anywhere in it): no extrapolation. Above its own
    minimum over the last step [T/10^step, T] (dipped and risen, or rising): inf ("unresolved"), the limit may lie
    above every value measured; else (a rise before the last step, which then fell to y(T)): the measured band widened
    by the largest rise, y(T) + rise ("widened"), the series having shown it can turn by that much.
    Not falling over its last step (or over what there is): inf ("unresolved"). Falling by less than `min_drop` of
    its value at T/10^step (y(T) > (1 − min_drop)·y(T/10^step); the rise branch too): inf ("plateau"): a series that
    creeps down may be at a turn and approach its limit from below (on ℓp steepest descent's ℓ∞ gap and preconditioned
    GD's ℓ1 and ℓ∞ gaps in the power table, 6–15 % under the value at T), so no value measured bounds it.
    Fallback, y(T) ("measured"): a series falling monotonically approaches its limit from above, so the limit is
    ≤ y(T) (and ≥ 0: a margin gap to a certified optimum is never negative).
    Fit ("extrapolated"): with a, b, c, e the values at T/10^(3·step), T/10^(2·step), T/10^step, T (log-linear
    between checkpoints), the decrements d1 = b − a, d2 = c − b, d3 = e − c and their per-step rates ρ2 = d2/d1,
    ρ3 = d3/d2 (a power law y∞ + C t^s gives ρ = 10^(s·step) every step; GD's 1/log t a rate rising to 1). Falling
    every step at rates 0 < ρ2 ≤ ρ3 < 1 (an approach that does not speed up in log t), the limit is at most the
    geometric extrapolation at a rate below the faster measured one, e + d3·ρ/(1 − ρ) with ρ = RATE_SAFETY·ρ2 (above
    the limit of a power law and of any approach slowing down, and of one whose rate drifts down by less than that
    factor), kept within [floor, y(T)]. A rate that speeds up (ρ3 < ρ2, a transient still bending down, as normalized
    steepest descent's early phase) or less than 3·step decades of checkpoints: the fallback.
    `ibverify bias` states no support without a finite value (printed "(to within δ)" for a supported geometry)."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    if len(ya) < 2 or not math.isfinite(float(ya[-1])):
        return Resolution(math.inf, "unresolved")
    ok = (xa > 0) & np.isfinite(ya)
    xa, ya = xa[ok], ya[ok]
    lx, T, last = np.log(xa), float(xa[-1]), float(ya[-1])
    if last <= floor:   # reached, or below 0 by rounding: the floor, never 0
        return Resolution(floor, "floor")
    span = math.log(10) * step
    window = ya[lx >= lx[-1] - 3 * span - 1e-9]
    rise = largest_rise(window)
    vals = [_at(lx, ya, T / 10 ** (k * step)) for k in (3, 2, 1)] + [last]
    prev = vals[2] if vals[2] is not None else (float(ya[0]) if len(ya) > 1 else None)

    def plateau() -> bool:
        return min_drop > 0 and prev is not None and last > (1.0 - min_drop) * prev

    if rise > floor:   # not monotone over the decades used: no extrapolation
        tail = ya[lx >= lx[-1] - span - 1e-9]
        if last - float(np.min(tail)) > floor:
            return Resolution(math.inf, "unresolved", (float(np.min(tail)), last))
        if plateau():
            return Resolution(math.inf, "plateau", (prev, last))
        return Resolution(last + rise, "widened", (last, rise))
    if prev is None or not last < prev:
        return Resolution(math.inf, "unresolved", tuple(v for v in vals if v is not None))
    if plateau():
        return Resolution(math.inf, "plateau", (prev, last))
    if any(v is None for v in vals):
        return Resolution(last, "measured", tuple(v for v in vals if v is not None))
    a, b, c, e = vals
    d1, d2, d3 = b - a, c - b, e - c
    if d1 < 0 and d2 < 0:
        r2, r3 = d2 / d1, d3 / d2
        if 0 < r2 <= r3 < 1:
            r = RATE_SAFETY * r2   # future decades assumed to fall no faster than this (placed by the power table)
            est = e + d3 * r / (1 - r)
            return Resolution(min(last, max(floor, est)), "extrapolated", tuple(vals))
    return Resolution(last, "measured", tuple(vals))


# ------------------------------------------------------------------------------------------------ two estimates

INCREMENT_LAG = recipes.CHECKPOINTS // 3   # checkpoints one decade apart (4 a decade over the three decades)
INCREMENT_STEP = 0.5   # the increments span two decades (T/100 … T): `resolution` reads them at half-decade steps
GAP_FLOOR = 1e-7       # a degree-1 margin gap at or below the oracles' certificate tolerance (oracles.base.CERT_RTOL)
#                        is rounding: δ is floored there, never 0
PLATEAU_DROP = SLOW_DROP   # a degree-1 gap series falling < 10 % over its last step is a plateau: no δ (`resolution`);
#                            the least fall any support needs (SLOW_DROP), so no support loses its δ to it; at 5 %,
#                            1 δ of the power table's linear family stays below its certified gap (docs/power.md)


def _minus(a, b):
    if isinstance(a, dict):
        return {k: np.asarray(a[k], float) - np.asarray(b[k], float) for k in a}
    return np.asarray(a, float) - np.asarray(b, float)


def increments(x, thetas, lag: int = INCREMENT_LAG) -> tuple[list[int], list]:
    """(steps t, θ(t) − θ(t/10)) at every checkpoint t whose checkpoint `lag` places before is a decade earlier
    (ratio within 10^(±0.1)): the second estimate of the limit direction. For fixed-step GD, θ(t) = ŵ·log t + ρ + o(1):
    the iterate's direction approaches ŵ like 1/log t, the increment cancels ρ."""
    x = [int(s) for s in x]
    out_x, out = [], []
    for i in range(lag, len(x)):
        if x[i - lag] > 0 and abs(math.log10(x[i] / x[i - lag]) - 1.0) <= 0.1:
            out_x.append(x[i])
            out.append(_minus(thetas[i], thetas[i - lag]))
    return out_x, out


@dataclass(frozen=True)
class Stated:
    """The δ an answer states (`stated_resolution`): `value`, from the estimate `used` ("iterate" since the held-out
    draw; "increment" is read back from records made before, and still rendered);
    `agree`: the finer estimate's measured gap within the coarser one's δ (None: not compared, either not finite or
    absent); `raised`: the iterate's δ raised to the increments' measured gap (their series not falling); each
    estimate's Resolution and measured gap at T."""
    value: float
    used: str
    agree: bool | None
    iterate: Resolution
    iterate_gap: float
    increment: Resolution | None = None
    increment_gap: float = math.nan
    raised: bool = False

    def estimate_text(self) -> str:
        """The other estimate as the answer says it beside the δ stated ("" where there is none)."""
        if self.used == "increment":
            return f"the iterate's bound {self.iterate.value:.3g} agrees"
        if self.raised:
            return (f"the iterate's {self.iterate.value:.3g} raised to the increments' measured gap "
                    f"{self.increment_gap:.3g}, their series not falling")
        if self.increment is None or not math.isfinite(self.increment.value):
            return ""
        inc = self.increment.value
        if self.agree is False:
            return f"the increments estimate {inc:.3g}: the estimates disagree"
        return f"the increments estimate {inc:.3g}"

    def describe(self) -> str:
        extra = self.estimate_text()
        if not math.isfinite(self.value):
            return "unresolved" + (f"; {extra}, unconfirmed" if extra else "")
        head = (f"to within {self.value:.3g} (increments, {self.increment.method})" if self.used == "increment" else
                f"to within {self.value:.3g} (iterate, {self.iterate.method})")
        return head + (f"; {extra}" if extra else "")

    def to_json(self) -> dict:
        return {"used": self.used, "agree": self.agree, "raised": self.raised,
                "iterate": _finite_or_none(self.iterate.value), "iterate_method": self.iterate.method,
                "iterate_gap": _finite_or_none(self.iterate_gap),
                "increment": None if self.increment is None else _finite_or_none(self.increment.value),
                "increment_method": None if self.increment is None else self.increment.method,
                "increment_gap": _finite_or_none(self.increment_gap)}


def stated_resolution(it: Resolution, it_gap: float, inc: Resolution | None = None,
                      inc_gap: float = math.nan) -> Stated:
    """The δ an answer states from the iterate's estimate (`it`, its measured gap `it_gap` at T) and the increments'
    (`inc`, `inc_gap`), both read by `resolution` with PLATEAU_DROP.
    Both finite: the iterate's δ is stated; they agree when the finer estimate's measured gap lies within the
    coarser one's δ (`agree` False: the estimates disagree), and a finer increments' δ is reported beside it as a
    point estimate. Stating the finer where they agree gave 0 false supports on the power table's 1020 rows, on
    which PLATEAU_DROP was chosen, and 1 on a held-out draw of 510 (docs/power.md: ℓ2.2 steepest descent at smoke,
    the increments' δ below the certified gap), so it is not stated.
    The iterate's finite, the increments' not (their series not falling by PLATEAU_DROP, or rising) with their
    measured gap above the iterate's δ: the iterate's δ is raised to that gap (`raised`). The iterate is the sum of
    the increments, its limit theirs: a heading whose gap stays above the iterate's pulls the iterate's gap up (ℓp
    steepest descent's ℓ∞ gap at the smoke tier: iterate 0.0761, increments 0.0890, certified 0.0878).
    The iterate's not finite: unresolved, never rescued by the increments. Without the increments: the iterate's.
    In the power table's linear family (docs/power.md): 0 false supports and 0 δ below the certified gap on the
    rows the rule was chosen on; the held-out draw's counts are on the page."""
    if inc is None or not math.isfinite(it.value):
        return Stated(it.value, "iterate", None, it, it_gap, inc, inc_gap)
    if not math.isfinite(inc.value):
        raise_ = math.isfinite(inc_gap) and inc_gap > it.value
        return Stated(inc_gap if raise_ else it.value, "iterate", None, it, it_gap, inc, inc_gap, raised=raise_)
    if inc.value < it.value:   # finer: reported beside the bound, never stated (a held-out draw: a false support)
        agree = math.isfinite(inc_gap) and inc_gap <= it.value
        return Stated(it.value, "iterate", agree, it, it_gap, inc, inc_gap)
    agree = math.isfinite(it_gap) and it_gap <= inc.value
    return Stated(it.value, "iterate", agree, it, it_gap, inc, inc_gap)


def growth(x, scale) -> tuple[bool, str]:
    """(log-like, text): whether the norm ‖θ‖_g (`scale`) grows like a log over the last two decades, the rate at
    which the 1/‖θ‖ route (rules.judge_rate_invariant) is valid: its rise over the last decade is > 0 and at most
    LOG_GROWTH times its rise over the decade before (a log a·ln t + b: ×1; a power t^α: ×10^α, ×3.2 for the √t of a
    normalized method, whose gap·‖θ‖ settles over a window while its limit is another geometry's)."""
    xa, sa = np.asarray(x, float), np.asarray(scale, float)
    ok = (xa > 0) & np.isfinite(sa)
    xa, sa = xa[ok], sa[ok]
    if len(xa) < 3:
        return False, "‖θ‖ growth unknown (fewer than 3 checkpoints)"
    lx, T = np.log(xa), float(xa[-1])
    s0, s1, s2 = _at(lx, sa, T / 100), _at(lx, sa, T / 10), float(sa[-1])
    if s0 is None or s1 is None:
        return False, "‖θ‖ growth unknown (less than two decades of checkpoints)"
    r1, r2 = s1 - s0, s2 - s1
    if r1 <= 0 or r2 <= 0:
        return False, "‖θ‖ not growing over each of the last two decades"
    ratio = r2 / r1
    if ratio > LOG_GROWTH:
        return False, (f"‖θ‖ grows like a power (its rise ×{ratio:.3g} from one decade to the next > {LOG_GROWTH:g}, "
                       f"t^{math.log10(ratio):.2g})")
    return True, f"‖θ‖ grows like log t (its rise ×{ratio:.3g} from one decade to the next ≤ {LOG_GROWTH:g})"


def bounded_norm(x, norms) -> dict | None:
    """{"norm", "rise", "from", "to"} where ‖θ‖ (`norms` at the checkpoints x) stops growing: over the last decade
    [T/10, T] it rose by at most BOUNDED_RISE of its value (or fell), or by at most SLOWING_RISE while that rise is
    below SLOWING times the decade before's (a growth dying out; needs two decades of checkpoints). A run whose norm
    stays bounded (weight decay, a step whose sum converges) has no margin limit, since the theorems' limits are
    those of θ/‖θ‖ as ‖θ‖ → ∞. None while it grows, or with less than a decade of checkpoints. Read off the measured
    series alone, never the optimizer's name."""
    xa, sa = np.asarray(x, float), np.asarray(norms, float)
    ok = (xa > 0) & np.isfinite(sa)
    xa, sa = xa[ok], sa[ok]
    if len(xa) < 2 or not sa[-1] > 0:
        return None
    T, last = float(xa[-1]), float(sa[-1])
    lx = np.log(xa)
    before, earlier = _at(lx, sa, T / 10), _at(lx, sa, T / 100)
    if before is None:
        return None
    rise = (last - before) / last
    slowing = earlier is not None and before > earlier and last - before < SLOWING * (before - earlier)
    if rise > BOUNDED_RISE and not (rise <= SLOWING_RISE and slowing):
        return None
    return {"norm": last, "rise": rise, "from": int(round(T / 10)), "to": int(T)}


def bounded_text(b: dict) -> str:
    """`bounded_norm`'s reading as a reason: "‖θ‖ stopped growing: …"."""
    moved = f"{'rose' if b['rise'] >= 0 else 'fell'} {100 * abs(b['rise']):.2g} %"
    return (f"‖θ‖ stopped growing: it {moved} over steps {b['from']:.3g}–{b['to']:.3g} (‖θ‖₂ = {b['norm']:.4g}): a "
            f"bounded norm has no margin limit to judge")


def _bounded(geoms, b: dict, horizon: int, quantity: str, curves: dict | None = None) -> dict[str, Judged]:
    """Every geometry set aside (decided: no extension) with the bounded-norm reading `b`."""
    curves = curves or {}
    return {g: Judged(rules.SET_ASIDE, bounded_text(b), float(curves[g][1][-1]) if g in curves else math.nan,
                      math.nan, horizon, quantity, curves.get(g), math.inf, bounded=b) for g in geoms}


def judge_degree1(x, gaps: dict, scales: dict, offsets: dict, final: bool, horizon: int,
                  min_margin: float | None = None, increments: tuple | None = None) -> dict[str, Judged]:
    """The margin-gap rules on one degree-1 run (module docstring): own decisions, then the cross-geometry one. Every
    geometry carries its resolution δ, `stated_resolution` of the iterate's gap series and, where `increments`
    ((steps, {g: gaps of θ(t) − θ(t/10)}), `increment_gaps`) is given, the increments'; both floored at GAP_FLOOR,
    a plateau (a fall < PLATEAU_DROP over the last step) unresolved.
    The 1/‖θ‖ route is read only where ‖θ‖_g grows like a log (`growth`), and no support stands without a finite
    resolution. `min_margin` (the smallest z_i·θ at the horizon; None: read off the
    gaps, ≥ 1 exactly when it is ≤ 0): a run that does not separate the data is judged in no geometry (inconclusive,
    to be extended, or set aside at the largest horizon)."""
    x = np.asarray(x, float)
    last = {g: float(np.asarray(v, float)[-1]) for g, v in gaps.items()}
    unseparated = (min_margin is not None and not min_margin > 0) or (
        min_margin is None and bool(last) and all(not v < 1.0 for v in last.values()))
    if unseparated:
        m = min_margin if min_margin is not None else float("nan")
        why = f"not separated at T = {horizon:.2g} (min margin {m:.3g})" + ("" if final else ", to be extended")
        return {g: Judged(rules.SET_ASIDE if final else rules.INCONCLUSIVE, why, last[g], float("nan"), horizon,
                          "margin_gap", (x.tolist(), np.asarray(gaps[g], float).tolist()), math.inf)
                for g in gaps}
    norm = scales.get("l2", next(iter(scales.values()), None)) if scales else None
    held = bounded_norm(x, norm) if norm is not None else None
    if held is not None:   # a bounded ‖θ‖: no margin limit (weight decay); said at once, never extended
        return _bounded(gaps, held, horizon, "margin_gap",
                        {g: (x.tolist(), np.asarray(v, float).tolist()) for g, v in gaps.items()})
    decades = min(2.0, math.log10(x[-1] / x[0]))
    own: dict[str, Judged] = {}
    for g, gap in gaps.items():
        gap = np.asarray(gap, float)
        res, inc_curve = resolution(x, gap, floor=GAP_FLOOR, min_drop=PLATEAU_DROP), None
        if increments is not None and g in increments[1] and len(increments[0]) >= 2:
            ig = np.asarray(increments[1][g], float)
            inc_curve = ([int(s) for s in increments[0]], ig.tolist())
            res = stated_resolution(res, float(gap[-1]),
                                    resolution(increments[0], ig, INCREMENT_STEP, GAP_FLOOR, PLATEAU_DROP),
                                    float(ig[-1]))
        else:
            res = stated_resolution(res, float(gap[-1]))
        d = rules.judge_gap(x, gap, BOUND, decades=decades, min_drop=MIN_DROP, final=final)
        reason = d.reason
        if d.word != rules.SUPPORTED:
            logish, grow = growth(x, scales[g])
            if logish:
                slow = rules.judge_rate_invariant(x, gap, scales[g], SLOW_BOUND, decades=decades, min_drop=SLOW_DROP,
                                                  final=final)
                if slow.word == rules.SUPPORTED:
                    d, reason = slow, f"gap ∝ 1/‖θ‖_{g} ({grow}): {slow.reason}"
                elif d.word == rules.INCONCLUSIVE:
                    reason += f" (the 1/‖θ‖_{g} route, bound {SLOW_BOUND:g}: {slow.reason})"
            elif d.word == rules.INCONCLUSIVE:
                reason += f" (no 1/‖θ‖_{g} route: {grow})"
        if d.word == rules.SUPPORTED and not math.isfinite(res.value):
            d, reason = rules.Decision(rules.INCONCLUSIVE, reason, d.fit), reason + "; no resolution: not stated"
        elif d.word == rules.SUPPORTED:
            reason += f"; limit's gap {res.describe()}"
        fit = d.fit or rules.window_fit(x, gap, BOUND, decades)
        own[g] = Judged(d.word, reason, float(gap[-1]), _slope(fit), horizon, "margin_gap", (x.tolist(), gap.tolist()),
                        res.value, estimates=res.to_json(), increment_curve=inc_curve)
    out = dict(own)
    for g in own:
        if own[g].word == rules.CONTRADICTED:
            continue
        for h, jh in own.items():
            off = offsets.get((g, h), 0.0)
            if h != g and jh.word == rules.SUPPORTED and off > BOUND:
                out[g] = Judged(rules.CONTRADICTED, f"the run goes to the certified {h} optimum ({jh.reason}), whose "
                                f"{g} margin gap is {off:.3g} > {BOUND:g}; own gap {own[g].reason}",
                                own[g].value, own[g].slope, horizon, "margin_gap", own[g].curve, own[g].resolution,
                                estimates=own[g].estimates, increment_curve=own[g].increment_curve)
                break
    return out


def run_linear(pr: Problem, spec: OptimizerSpec, T: int, progress=None, store: RunStore | None = None):
    store = _store(store)
    Z = store.data(pr.data).Z
    r = store.run(recipes.run_recipe(pr.data, None, None, spec, T), progress=progress)
    gaps = {g: [1.0 - linear_margin(Z, w, g) / pr.optima[g][1] for w in r.ws] for g in pr.optima}
    scales = {g: [maxmargin.norm_of(w, LINEAR_NORMS[g]) for w in r.ws] for g in pr.optima}
    xi, du = increments(r.checkpoints, r.ws)
    inc = (xi, {g: [1.0 - linear_margin(Z, u, g) / pr.optima[g][1] for u in du] for g in pr.optima})
    return r.checkpoints, gaps, scales, float(np.min(Z @ np.asarray(r.ws[-1], float))), inc


def run_matrix(pr: Problem, spec: OptimizerSpec, T: int, progress=None, store: RunStore | None = None,
               batch: int | None = None):
    store = _store(store)
    rec = recipes.run_recipe(pr.data, pr.model, None, spec, T, batch)
    D, model = store.data(pr.data), store.model(rec)
    r = store.run(rec, progress=progress, warn=False)
    G = {g: geo.get(MATRIX_GEOMETRIES[g]) for g in pr.optima}
    gaps = {g: [1.0 - G[g].margin(model, th, D.X, D.y) / pr.optima[g][1] for th in r.thetas] for g in G}
    scales = {g: [G[g].norm(th) for th in r.thetas] for g in G}
    xi, du = increments(r.checkpoints, r.thetas)
    inc = (xi, {g: [1.0 - G[g].margin(model, u, D.X, D.y) / pr.optima[g][1] for u in du] for g in G})
    return r.checkpoints, gaps, scales, float(np.min(D.y * model.outputs(r.thetas[-1], D.X))), inc


def judge_network(pr: Problem, spec: OptimizerSpec, T: int, final: bool, progress=None,
                  batch: int | None = None, store: RunStore | None = None) -> dict[str, Judged]:
    """Every geometry of the two-layer net on one dataset at horizon T (module docstring); `batch`: cyclic
    mini-batches of that many samples per step (engine.block.run), else full batch."""
    store = _store(store)
    rec = recipes.run_recipe(pr.data, pr.model, pr.init_seed, spec, T, batch)
    D, model = store.data(pr.data), store.model(rec)
    r = store.run(rec, progress=progress, warn=False)
    if not r.q_min or r.q_min[-1] <= 0:
        word, inert = (S.unseparated(model, r.thetas[-1], D.X, D.y, final) if r.q_min else
                       (rules.SET_ASIDE if final else rules.INCONCLUSIVE, 0))
        dead = inert == len(D.y)   # every unit dead on every sample: the loss gradient is exactly 0
        units = units_alive(r.thetas[-1], D.X)
        alive = f"; {units[0]} of {units[1]} units alive" if units else ""
        why = (f"the data are not separated at T = {T:.2g} (min margin {r.q_min[-1] if r.q_min else float('nan'):.3g}"
               + (", f ≡ 0 with a zero gradient: every unit dead on every sample" if dead else
                  f", f = 0 with a zero gradient on {inert} of {len(D.y)} samples" if inert else "") + alive + ")")
        return {g: Judged(word, why, float("nan"), float("nan"), T, "residual", units=units)
                for g in S.applicable(model)}
    units = units_alive(r.thetas[-1], D.X)
    held = bounded_norm(r.checkpoints, [fro(th) for th in r.thetas])
    if held is not None:   # a bounded ‖θ‖ (weight decay): no KKT point of a margin problem to approach
        return {g: replace(j, units=units) for g, j in _bounded(S.applicable(model), held, T, "residual").items()}
    c = hybridc.implied(spec, model.blocks)   # the c its pair implies (None: the hybrid not judged), said in the answer
    t2, _, _ = S.judge_direction(r.checkpoints, r.thetas, NET["t2_dir_max"], NET["t2_drop"], final)
    names = [g for g in S.applicable(model) if c.value is not None or g != "hybrid"]
    sc = S.score(r, model, D, c.value or 1.0, NET["decades"], names)
    out = {}
    for g in sc.residual:
        j = S.judge(sc, g, guard=NET["guard"], min_drop=NET["min_drop"], decades=NET["decades"], bound=NET["bound"],
                    final=False)   # an own plateau never contradicts a network here (module docstring)
        word = j.decision
        reason = "; ".join(j.reasons) or (f"ratio own/closest-other {j.figures['residual_ratio']:.3g} < "
                                          f"{1 / NET['guard']:g}, own residual falling")
        res = resolution(sc.steps, sc.residual[g])
        if t2.word == rules.CONTRADICTED:
            word, reason = (rules.SET_ASIDE if final else rules.INCONCLUSIVE), f"outside (T2): {t2.reason}"
        elif word == rules.SUPPORTED and t2.word != rules.SUPPORTED:
            word, reason = rules.INCONCLUSIVE, f"(T2) not yet shown: {t2.reason}"
        elif word == rules.SUPPORTED and not math.isfinite(res.value):
            word, reason = rules.INCONCLUSIVE, reason + "; no resolution of the limit's residual: not stated"
        elif word == rules.SUPPORTED:
            reason += f"; limit's residual {res.describe()}"
        out[g] = Judged(word, reason, float(j.figures["residual"]), float(j.rates["residual"].slope), T, "residual",
                        (list(sc.steps), list(sc.residual[g])), res.value, units=units)
    return out


def units_alive(theta, X) -> tuple[int, int] | None:
    """(units of the two-layer net alive on the data, width): unit j is alive when w_j·x_i > 0 on some sample, else
    σ = σ' = 0 on every sample and it never moves again; None for a model without a first-layer matrix W."""
    W = theta.get("W") if hasattr(theta, "get") else None
    if W is None:
        return None
    h = np.asarray(X, float).reshape(len(X), -1) @ np.asarray(W, float).T
    return int(np.sum(np.any(h > 0, axis=0))), int(h.shape[1])


def judge_dataset(model: str, pr: Problem, spec: OptimizerSpec, tier: str,
                  progress=None, batch: int | None = None, horizons: tuple[int, int] | None = None,
                  store: RunStore | None = None) -> dict[str, Judged]:
    """Every geometry of `model` on one dataset, extended ×10 while any is undecided (prop.sequential); `horizons`
    (first, cap) instead of the tier's; `batch` (block models): cyclic mini-batches (engine.block.run). The runs
    come from `store` (default: the process's run store)."""
    first, cap = horizons or HORIZONS[tier][model]
    if batch is not None and model == "linear":
        raise IbverifyError("batch applies to the block models here (the linear model's is the spec's batch_size)")
    seen = {}

    def at(T: int, final: bool) -> Example:
        if model == "two-layer":
            out = judge_network(pr, spec, T, final, progress, batch, store)
        else:
            x, gaps, scales, qmin, inc = (run_matrix(pr, spec, T, progress, store, batch) if model == "matrix" else
                                          run_linear(pr, spec, T, progress, store))
            out = judge_degree1(x, gaps, scales, pr.offsets, final, T, qmin, inc)
        seen["out"] = out
        undecided = any(j.word == rules.INCONCLUSIVE for j in out.values())
        return Example(True, {}, decision=rules.INCONCLUSIVE if undecided else rules.SUPPORTED)

    sequential(at, first, cap)
    return seen["out"]


# ------------------------------------------------------------------------------------------------ the answer

def tally_geometry(words: list[str]) -> str:
    """rules.tally over the datasets: ≥ 2/3 supported and none contradicted → supported."""
    need = len([w for w in words if w != rules.SET_ASIDE])
    holds, _ = rules.tally(words, max(1, math.ceil(2 * need / 3)))
    return rules.SUPPORTED if holds is True else rules.CONTRADICTED if holds is False else rules.INCONCLUSIVE


def _pool(per: list[Judged]) -> list[Judged]:
    judged = [j for j in per if j.word != rules.SET_ASIDE]
    return [j for j in judged if j.word == rules.SUPPORTED] or judged


def model_resolution(per: list[Judged]) -> float | None:
    """A geometry's resolution on a model: the largest of its supported datasets' (of its judged datasets' when none
    is supported); None (JSON null) when that is not finite (some dataset unresolved) or none was judged."""
    pool = _pool(per)
    if not pool:
        return None
    return _finite_or_none(max(j.resolution for j in pool))


def increment_estimate(per: list[Judged]) -> dict | None:
    """The two estimates behind a geometry's stated δ on a model, over the datasets `model_resolution` reads:
    {"used": "increment" (every dataset states the increments' δ), "iterate" (none does) or "both"; "increments":
    datasets stating the increments' δ; "value": the largest increment δ (None: some dataset's increments
    unresolved); "iterate": the largest iterate δ (None: some unresolved); "disagree": datasets whose estimates
    disagree; "raised": datasets whose iterate δ was raised to the increments' gap; "datasets": n}; None where no
    dataset carries two estimates (the two-layer net)."""
    pool = [j for j in _pool(per) if j.estimates]
    if not pool:
        return None
    vals = [j.estimates.get("increment") for j in pool]
    its = [j.estimates.get("iterate") for j in pool]
    k = sum(j.estimates.get("used") == "increment" for j in pool)
    return {"used": "increment" if k == len(pool) else "both" if k else "iterate", "increments": k,
            "value": None if any(v is None for v in vals) else max(vals),
            "iterate": None if any(v is None for v in its) else max(its),
            "disagree": sum(j.estimates.get("agree") is False for j in pool),
            "raised": sum(bool(j.estimates.get("raised")) for j in pool), "datasets": len(pool)}


def _evidence_line(per: list[Judged]) -> str:
    """One line: the judged value's range at the horizon, the fitted slopes, the horizons."""
    ok = [j for j in per if j.word != rules.SET_ASIDE] or per
    q = "margin gap" if ok[0].quantity == "margin_gap" else "KKT residual"
    vals = [j.value for j in ok if math.isfinite(j.value)]
    slopes = [j.slope for j in ok if math.isfinite(j.slope)]
    def span(v, f):
        lo, hi = format(min(v), f), format(max(v), f)
        return lo if lo == hi else f"{lo}…{hi}"

    val = span(vals, ".3g") if vals else "n/a"
    sl = f"slope {span(slopes, '.2g')}" if slopes else "no slope"
    hz = sorted({j.horizon for j in ok})
    return f"{q} {val} at T = " + "/".join(f"{h:.2g}" for h in hz) + f" ({sl})"


@dataclass
class Judgement:
    """One (optimizer, model, dataset): the spec resolved for the dataset, every geometry judged, and the CPU
    seconds spent elsewhere (a Dask worker's; 0 when judged in this process, whose own time is counted)."""
    spec: OptimizerSpec
    results: dict
    cpu_elsewhere: float = 0.0


def judge_problem(model: str, pr: Problem, spec: OptimizerSpec, tier: str, progress=None, batch: int | None = None,
                  horizons: tuple[int, int] | None = None, store: RunStore | None = None) -> Judgement:
    """The unit of work of `ibverify bias` (a task with --workers): `spec` resolved for the dataset (the vector
    model's full batch is its n; a block model's batch size: cyclic mini-batches), then judge_dataset."""
    if model != "linear" and batch is None and spec.batch_size is not None:
        batch = spec.batch_size
    sp = resolved_spec(spec, model, pr.n)
    return Judgement(sp, judge_dataset(model, pr, sp, tier, progress, batch, horizons, store))


class NotJudged(IbverifyError):
    """A model none of whose datasets could be judged; `entry` is its answer entry, with the reason."""

    def __init__(self, model: str, reason: str = "", aside=(), cpu: float = 0.0):
        super().__init__(f"{model}: {reason}")
        self.entry = {"model": model, "supported": [], "contradicted": [], "inconclusive": [], "datasets": 0,
                      "evidence": {}, "none_of_these": True, "outcome": "not-judged", "not_judged": reason,
                      "set_aside": list(aside),
                      "cpu_seconds": cpu}


def answer_model(model: str, problems, spec: OptimizerSpec, tier: str, k: int | None = None, say=lambda s: None,
                 progress=None, batch: int | None = None, horizons: tuple[int, int] | None = None,
                 judge: Callable[[str, Problem, OptimizerSpec], Judgement] | None = None,
                 store: RunStore | None = None) -> dict:
    """The per-model answer: supported / contradicted / inconclusive geometries with their evidence. `problems` is
    a list or an iterator (`draws`): k datasets are judged, a dataset set aside in every geometry (a network that
    never separates its data) being replaced by the next one, at most k times. `batch`, `horizons`: as
    judge_dataset. `judge(model, problem, spec)`: how one dataset is judged (default judge_problem here; the
    runner's Dask path hands in results computed by its workers, judged by the same judge_problem)."""
    problems = iter(problems)
    used, results, specs, aside, bounded = [], [], [], [], None
    t0, elsewhere = time.process_time(), 0.0
    k = k or 1
    if judge is None:
        def judge(m, pr, sp):
            return judge_problem(m, pr, sp, tier, progress, batch, horizons, store)
    while len(used) < k:
        pr = next(problems, None)
        if pr is None:
            break
        say(f"{model}: dataset {len(used) + 1}/{k} ({pr.tag})")
        done = judge(model, pr, spec)
        sp, res = done.spec, done.results
        elsewhere += done.cpu_elsewhere
        if all(j.bounded for j in res.values()):   # ‖θ‖ bounded: said at once, no further dataset drawn
            used.append(pr), specs.append(sp), results.append(res)
            bounded = {**next(iter(res.values())).bounded, "dataset": pr.tag}
            say(f"{model}: {pr.tag}: {bounded_text(bounded)}")
            break
        if all(j.word == rules.SET_ASIDE for j in res.values()) and len(aside) < k:
            first = next(iter(res.values()))
            aside.append({"dataset": pr.tag, "reason": first.reason,
                          **({"units_alive": first.units[0], "width": first.units[1]} if first.units else {})})
            say(f"{model}: {pr.tag} set aside ({aside[-1]['reason']}); drawing another")
            continue
        used.append(pr), specs.append(sp), results.append(res)
    if not results:   # this model gives no answer; identify keeps the other models' (NotJudged.entry)
        raise NotJudged(model, "no dataset could be judged" + "".join(f"; {a['dataset']}: {a['reason']}"
                                                                      for a in aside), aside,
                        round(time.process_time() - t0 + elsewhere, 2))
    problems = used
    out = {"model": model, "supported": [], "contradicted": [], "inconclusive": [], "datasets": len(problems),
           "evidence": {}}
    for g in results[0]:
        per = [res[g] for res in results]
        word = tally_geometry([j.word for j in per])
        out[word].append(g)
        counts = {w: sum(j.word == w for j in per) for w in rules.DECISIONS}
        out["evidence"][g] = {
            "decision": word, "line": _evidence_line(per), "resolution": model_resolution(per),
            **({"increment_estimate": est} if (est := increment_estimate(per)) else {}),
            "tally": ", ".join(f"{v} {w}" for w, v in counts.items() if v),
            "datasets": [{"dataset": pr.tag, **j.to_json(), **j.curve_json()}
                         for pr, j in zip(problems, per, strict=True)]}
    out["meanings"] = {g: MEANINGS[g] for g in out["evidence"] if g in MEANINGS}
    out["none_of_these"] = not out["supported"]   # no geometry supported (what `outcome` tells apart, below)
    out.update(outcome_of(out, results, bounded, specs[0], tier, model))
    held_by = bounding_settings(specs[0].to_json())
    if held_by and bounded is None:   # still growing at this horizon, but bounded in the limit: said with the answer
        out["bounding_settings"] = held_by
    units = [(pr.tag, *j.units) for pr, res in zip(problems, results, strict=True)
             for j in list(res.values())[:1] if j.units]
    if units:   # the two-layer net: its units alive on the data at the horizon, per dataset
        out["units_alive"] = [{"dataset": t, "alive": a, "width": w} for t, a, w in units]
    if aside:
        out["set_aside"] = aside
    out["spec"] = specs[0].to_json()
    if len({s.batch_size for s in specs}) > 1:
        out["spec"]["batch_size"] = {pr.tag: s.batch_size for pr, s in zip(problems, specs, strict=True)}
    disc = [pr.discrimination for pr in problems if pr.offsets]
    if disc:   # how far apart the optima are: 1 − γ_g(θ_h*)/γ_g*, "g at the h optimum", per dataset
        out["discrimination"] = min(disc)
        out["offsets"] = [{f"{g} at the {h} optimum": v for (g, h), v in pr.offsets.items()} for pr in problems]
    out["cpu_seconds"] = round(time.process_time() - t0 + elsewhere, 2)
    return out


OUTCOMES = ("supported", "contradicted", "undecided", "bounded-norm")

# what each geometry's answer means, one short line each (`ibverify bias` prints them with the answer)
MEANINGS = {
    "l1": "max ℓ1-norm margin (Σ|θ_k| ≤ 1: steepest descent in ℓ1, coordinate descent)",
    "l2": "max ℓ2-norm margin (Euclidean; Frobenius on matrices: gradient descent)",
    "linf": "max ℓ∞-norm margin (max|θ_k| ≤ 1: sign methods, Adam)",
    "spectral": "max spectral-norm margin (largest singular value of W ≤ 1: spectral descent)",
    "msp": "max spectral norm margin: max over layers of ‖W_k‖_sp ≤ 1 (Muon on every layer)",
    "hybrid": "the Muon–partner norm max{c·‖W‖_msp, ‖u‖_∞} at c = η_vector/η_matrix (Muon on matrices, a sign "
              "method on vectors)",
}


def outcome_of(entry: dict, results: list[dict], bounded: dict | None, spec: OptimizerSpec, tier: str,
               model: str) -> dict:
    """A model's answer as what is known: {"outcome": …} and its details. "supported": a geometry's KKT conditions
    hold (with δ); "contradicted": every geometry is contradicted (none of these); "undecided": none supported, some
    still inconclusive, with the closest geometry (smallest median judged value among those not contradicted), its δ,
    the horizon T and the next one to extend to; "bounded-norm": ‖θ‖ stopped growing (`bounded_norm`), with the
    settings that can bound it (`bounding_settings`)."""
    if bounded is not None:
        return {"outcome": "bounded-norm", "bounded_norm": {**bounded, "settings": bounding_settings(spec.to_json())}}
    if entry["supported"]:
        return {"outcome": "supported"}
    if not entry["inconclusive"]:
        return {"outcome": "contradicted"}
    def median_value(g):
        vals = [res[g].value for res in results if res[g].word != rules.SET_ASIDE and math.isfinite(res[g].value)]
        return float(np.median(vals)) if vals else math.inf

    closest = min(entry["inconclusive"], key=median_value)
    T = max(j.horizon for res in results for j in res.values())
    nxt = [t for t in TIERS if HORIZONS[t][model][1] > T]   # a tier that reaches further, else ×10 beyond them
    return {"outcome": "undecided", "undecided": {
        "horizon": int(T), "closest": closest, "value": _finite_or_none(median_value(closest)),
        "resolution": entry["evidence"][closest]["resolution"],
        "extend_to": int(HORIZONS[nxt[0]][model][1] if nxt else 10 * T), "tier": nxt[0] if nxt else None}}


def bounding_settings(spec_json: dict) -> list[str]:
    """The settings of a spec's JSON that hold ‖θ‖ bounded, as "key = value": a nonzero weight decay anywhere in it
    (the table's knob, a torch or optax optimizer's hyper-parameters, each part's of a composite) and a step whose sum
    converges (lr_decay > 1). Empty when none is recorded."""
    out = []

    def walk(d, where):
        for k, v in d.items():
            if isinstance(v, dict):
                walk(v, f"{where}{k}.")
            elif (("weight_decay" in k or k in ("wd", "decay")) and isinstance(v, (int, float))
                  and not isinstance(v, bool) and v != 0):
                out.append(f"{where}{k} = {v:g}")
    walk(spec_json, "")
    decay = spec_json.get("lr_decay")
    if isinstance(decay, (int, float)) and decay > 1:
        out.append(f"lr_decay = {decay:g} > 1 (Σ η_t converges)")
    return out


def plan(spec: OptimizerSpec, *, tier: str = "fast", datasets: int = 3, data: DataRecipe | None = None,
         data_name: str = "", models: list[str] | None = None, store: RunStore | None = None
         ) -> tuple[list[str], dict[str, str]]:
    """(models to run, {model: why not run}) for `identify`, every argument and knob checked before any run: the
    models the optimizer's row supports, or those of them a user's dataset (`data`, a data recipe) can feed, or
    those of `models`."""
    if tier not in TIERS:
        raise IbverifyError(f"unknown tier {tier!r}; use one of {', '.join(TIERS)}")
    if not 1 <= datasets <= 100:
        raise IbverifyError(f"--datasets must be in 1..100, got {datasets}")
    spec._check_name()
    names, skipped = models_for(spec.row)
    D = _store(store).data(data) if data is not None else None
    if D is not None:
        fits = file_models(D, data_name)
        skipped.update({m: f"{data_name} cannot feed the {m} model" for m in names if m not in fits})
        names = [m for m in names if m in fits]
        if not names:
            raise IbverifyError(f"{spec.name} runs {'/'.join(spec.row.models)} models; {data_name} feeds only "
                                f"the {', '.join(fits)} model(s)")
        refused = recipes.refusals(D, [m for m in names if not models or m in models])  # each model's own hypothesis
        skipped.update(refused)
        names = [m for m in names if m not in refused]
        if refused and (not names or (models and not any(m in names for m in models))):
            raise IbverifyError("; ".join(f"{m}: {why}" for m, why in refused.items()))
    if models:
        bad = [m for m in models if m not in MODELS]
        if bad:
            raise IbverifyError(f"unknown model {bad[0]!r}; use {', '.join(MODELS)}")
        if not any(m in names for m in models):
            raise IbverifyError(f"{spec.name} runs none of {', '.join(models)} (it runs {', '.join(names) or 'none'}"
                                + "".join(f"; {m}: {why}" for m, why in skipped.items()) + ")")
        names = [m for m in names if m in models]
        skipped = {m: why for m, why in skipped.items() if m in models}
    for m in names:   # every knob validated before any run
        resolved_spec(spec, m, D.n if D is not None else 10)
    return names, skipped


def problem_source(model: str, seed: int, data: DataRecipe | None = None, data_name: str = "",
                   say: Callable[[str], None] = lambda s: None, store: RunStore | None = None, width: int = 8):
    """The datasets `identify` judges for `model`: the user's one (`data`, a data recipe; the two-layer net of
    `width` hidden units on it), else the generated ones (`draws`, their widths drawn)."""
    return ([from_file(model, data, data_name, width=width, seed=seed, store=store)] if data is not None
            else draws(model, seed, say, store))


def identify(spec: OptimizerSpec, *, tier: str = "fast", seed: int = 0, datasets: int = 3,
             data: DataRecipe | None = None, data_name: str = "", models: list[str] | None = None,
             say: Callable[[str], None] = lambda s: None, progress=None,
             problems: Callable[[str], object] | None = None,
             judge: Callable[[str, Problem, OptimizerSpec], Judgement] | None = None,
             store: RunStore | None = None, width: int = 8) -> dict:
    """The answer for every model of `plan`. `problems(model)`: its datasets (default problem_source; the runner
    shares one draw among several optimizers); `judge`: as answer_model; `store`: where the data are built and the
    runs made (default: the process's run store); `width`: the two-layer net's on a user's dataset."""
    names, skipped = plan(spec, tier=tier, datasets=datasets, data=data, data_name=data_name, models=models,
                          store=store)
    models_out = []
    for m in names:
        source = (problems(m) if problems is not None
                  else problem_source(m, seed, data, data_name, say, store, width))
        try:
            models_out.append(answer_model(m, source, spec, tier, 1 if data is not None else datasets, say,
                                           progress, judge=judge, store=store))
        except NotJudged as e:   # one model's failure never discards another's answer
            models_out.append(e.entry)
    out = {"optimizer": spec.name, "tier": tier, "seed": seed, "models": models_out, "skipped": skipped}
    if spec.user is not None:   # a user's optimizer file: which file, which version
        out["source"], out["source_sha256"] = spec.user.user.source, spec.user.user.sha256
    return out
