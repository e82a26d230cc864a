"""The claim-file schema: every key a claim file (`claims/<id>.toml`) may hold, declared once, checked at loading.

One `Key` per name: its type, its range or choices, and a one-line meaning. Sections: the top level, `[convention]`,
`[params]` (the vocabulary of every check's parameters; a `[tiers.smoke|fast|full]` table overrides params, so it
uses the same vocabulary, and so do the entries of the list-of-tables params `cases`, `runs`, `families` and
`datasets` and the table `run_overrides`), `[tolerances]` (the names; each value is a number or a table with the
keys of `TOLERANCE_FIELDS`) and the nested tables `run` and `lr_overrides`.

Types are small strings: `str`, `int`, `float` (an integer is a float too), `bool`, `list[T]`, `table` (its keys
checked against the params vocabulary), `map[T]` (free keys, values of type T), `A|B` (either). `lo`/`hi` bound
every number of the value (inclusive), `choices` every string of it.

`validate(data, path)` raises IbverifyError with one line naming the file, the section and the key, and for an
unknown key the closest valid one (difflib). A claim whose check is not one of ibverify's (`check` outside
`ibverify.`) may use parameter and tolerance names of its own: only the declared ones are type-checked there.
docs/gen_schema.py writes the key tables of docs/adding-a-claim.md from this module.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable

from .errors import IbverifyError


@dataclass(frozen=True)
class Key:
    name: str
    type: str
    meaning: str
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()

    def range_text(self) -> str:
        """`[lo, hi]`, `≥ lo`, `≤ hi` or ''."""
        if self.lo is not None and self.hi is not None:
            return f"[{self.lo:g}, {self.hi:g}]"
        return f"≥ {self.lo:g}" if self.lo is not None else f"≤ {self.hi:g}" if self.hi is not None else ""


def _table(*keys: Key) -> dict[str, Key]:
    out: dict[str, Key] = {}
    for k in keys:
        if k.name in out:
            raise ValueError(f"key {k.name!r} declared twice")
        out[k.name] = k
    return out


STATUSES = ("paper", "derived", "reconstructed", "law", "control", "beyond")
TIERS = ("smoke", "fast", "full")
DATASETS = ("gr", "gaussian", "gr-orthogonal", "shifted-diagonal", "sklearn", "spread", "teacher", "linear",
            "matrix", "digits")
PROBLEMS = ("vector", "matrix", "matrix-vector")
ORDERS = ("cyclic", "reshuffle", "replacement")
LOSSES = ("logistic", "exponential")

TOP = _table(
    Key("id", "str", "the claim id (= the file name without .toml), e.g. `baek.gr-inc-adam-l2`"),
    Key("paper", "str", "the paper (authors, venue) the claim comes from, or `ibverify` for the suite's own"),
    Key("result", "str", "the result of the paper (theorem, figure) in one line"),
    Key("status", "str", "what the suite expects: paper/derived/reconstructed hold; law (a measured law of the "
        "suite's own: a prediction with a tolerance, judged on fresh data) holds; control is refuted; beyond is a "
        "finding", choices=STATUSES),
    Key("statement", "str", "the claim in words, with what is measured and why it decides"),
    Key("check", "str", "the check function, `module:function`, e.g. "
        "`ibverify.checks.per_sample:direction_converges`"),
    Key("assumptions", "list[str]", "the assumptions the check makes, one per entry"),
    Key("controls", "list[str]", "ids of the negative controls of this claim"),
    Key("expect_verdict", "str", "a control whose rule can only withhold support: expect `inconclusive`",
        choices=("inconclusive",)),
    Key("convention", "table", "`[convention]`: the optimizer convention pinned by the claim (Adam claims)"),
    Key("params", "table", "`[params]`: the check's parameters (vocabulary below)"),
    Key("tolerances", "table", "`[tolerances]`: the decision thresholds, each `{ value, why }`"),
    Key("tiers", "table", "`[tiers.smoke|fast|full]`: parameter overrides per tier; a claim runs in the "
        "tiers it lists"),
)

CONVENTION = _table(
    Key("beta1", "float", "first-moment decay β1 of the convention", 0, 1),
    Key("beta2", "float", "second-moment decay β2 of the convention", 0, 1),
    Key("eps", "float", "Adam's ε added to √v (0 in the theorems)", 0),
    Key("bias_correction", "bool", "Adam's bias correction of m and v"),
    Key("note", "str", "why this convention (free text)"),
)

_PROB = dict(lo=0, hi=1)
PARAMS = _table(
    # the optimizer and its knobs (ibverify.optim.table.KNOBS)
    Key("optimizer", "str", "the optimizer's name (ibverify.optim table) or a file `path.py[:function]`, "
        "relative to the claim file"),
    Key("optimizers", "list[str]", "several optimizers compared on the same runs (own-norm ordering)"),
    Key("lr", "float", "base step size η0 of η_t = lr · t^(−lr_decay)", 0),
    Key("lr_decay", "float", "decay exponent p of η_t", 0),
    Key("lr_matrix", "float", "hybrids: base step size of the Muon part (matrix blocks)", 0),
    Key("lr_vector", "float", "hybrids: base step size of the Signum/Adam part (vector blocks)", 0),
    Key("lr_overrides", "map[float]", "optimizer name → its lr, instead of the table's default (own-norm ordering)"),
    Key("beta1", "float", "first-moment (momentum) decay β1", **_PROB),
    Key("beta2", "float", "Adam's second-moment decay β2", **_PROB),
    Key("eps", "float", "Adam's ε added to √v", 0),
    Key("bias_correction", "bool", "Adam's bias correction of m and v"),
    Key("weight_decay", "float", "AdamW's decoupled weight decay λ", 0),
    Key("batch_size", "int|str", "samples per step (vector model); `\"drawn\"`: drawn per example", 1),
    Key("batch", "int", "batch size of the geometry-law runs (checks.bias; default full batch)", 1),
    Key("full_batch", "bool", "run full batch instead of the optimizer's own batch size"),
    Key("order", "str", "sample order of mini-batches", choices=ORDERS),
    Key("orders", "list[str]", "several sample orders, one run each", choices=ORDERS),
    Key("seed", "int", "seed of the sample order (vector model)", 0),
    Key("loss", "str", "the loss", choices=LOSSES),
    Key("losses", "list[str]", "losses drawn per example", choices=LOSSES),
    Key("ratio", "float", "Muon-Adam: η_A/η_M (lr_vector = lr_matrix · ratio)", 0),
    Key("ratios", "list[float]", "Muon-Adam: one case per η_A/η_M ratio", 0),
    Key("name", "str", "an entry of `families`: the optimizer of that family"),
    # data
    Key("dataset", "str", "the data generator (the one data selector): gr, gaussian, gr-orthogonal, "
        "shifted-diagonal, sklearn (vector data); spread (explicit rows `spread_Z`); teacher, linear, matrix, "
        "digits (network data)", choices=DATASETS),
    Key("datasets", "list[table]", "several dataset groups, each a table overriding these keys (e.g. "
        "`{ dataset = \"teacher\", n = 60, d = 10 }` or `{ n = 10, d = 50, data_seeds = [1, 2] }`)"),
    Key("dataset_count", "int", "geometry law: the number of generated datasets judged (as `ibverify bias "
        "--datasets`; default 3)", 1),
    Key("problem", "str", "degree-1 claims: the model and its data — vector: linear model on separable vectors; "
        "matrix: matrix-linear model on matrix data; matrix-vector: both blocks on their sum", choices=PROBLEMS),
    Key("n", "int|list[int]", "samples: a number, or the range [lo, hi] drawn per example", 1),
    Key("d", "int|list[int]", "dimension: a number, or the range [lo, hi] drawn per example", 1),
    Key("extra_dims", "list[int]", "gaussian data: d = n + extra, extra drawn in [lo, hi]", 0),
    Key("rows", "int", "matrix data: rows of a sample (default 4)", 1),
    Key("cols", "int", "matrix data: columns of a sample (default 3)", 1),
    Key("teacher_width", "int", "teacher data: hidden width of the teacher (default 4)", 1),
    Key("teacher_q", "float", "teacher data: homogeneity q of the teacher's activation (default 2)", 0),
    Key("data_seed", "int", "seed of the dataset", 0),
    Key("data_seeds", "list[int]", "seeds of the datasets, one dataset each", 0),
    Key("fresh_stride", "int", "a law's fresh data: each data seed s is s + fresh_stride·(the verify seed), so every "
        "seed judges the law on new draws (0: the listed seeds at every seed)", 0),
    Key("law_order", "str", "the cyclic order the offset law assumes (`reversed`: the lags counted backwards, a wrong "
        "law for a control)", choices=("cyclic", "reversed")),
    Key("law_exponent", "float", "the exponent q of the threshold law 1 − β_c(m) = C/m^q (1: the law; a control "
        "states another)", 0),
    Key("metric_b", "int", "the batch size of the metric M_{N,b} whose fixed point predicts every b's run (default: "
        "the run's own b; a control states a wrong one)", 1),
    Key("data_file", "str", "a user's data file (set by `ibverify verify --data FILE`)"),
    Key("intercept", "bool", "with `data_file`: append a column of ones"),
    Key("sklearn", "str", "dataset sklearn: the shipped split, `name:a v b` (e.g. `iris:0v1`)"),
    Key("a", "list[float]", "shifted-diagonal data: the diagonal a"),
    Key("deltas", "list[float]", "shifted-diagonal data: the shifts δ, one dataset each"),
    Key("scale", "float", "multiply the generated rows by this factor", 0),
    Key("spread_Z", "list[list[float]]", "the explicit rows of dataset `spread`"),
    Key("discriminate", "str", "draw only data on which ŵ2 is measurably short of this geometry's margin (l1, l3)"),
    Key("cycle", "list[int]", "the sample order (indices) of the cyclic epoch", 0),
    Key("concentrations", "list[float]", "Dirichlet concentrations of the random starts of the fixed-point map", 0),
    Key("starts", "int", "random starts per concentration", 1),
    Key("reflect", "bool", "also run on the reflected (non-separable) data"),
    # model
    Key("model", "str", "the model: two-layer (default), deep, matrix(-linear); geometry law: checks.bias's model"),
    Key("width", "int", "hidden width of the network", 1),
    Key("depth", "int", "layers of a deep network (default 2)", 1),
    Key("q", "float", "homogeneity q of the activation max(0, x)^q (default 2; 1 = ReLU)", 0),
    Key("init_scale", "float", "scale of the random initialization", 0),
    Key("init_seeds", "list[int]", "seeds of the random initializations (besides θ0 = 0)", 0),
    Key("zero_init", "bool", "degree-1 models start at θ0 = 0 (default true)"),
    # what is judged
    Key("target", "str", "the claimed limit direction (a geometry l1/l2/l3/linf/box/ball, fixed-point, proxy, sign)"),
    Key("geometry", "str", "geometry law: the geometry judged (l2, linf, spectral, …)"),
    Key("expect", "str", "geometry law: `to` (the runs go to the geometry) or `not`", choices=("to", "not")),
    Key("judge", "str", "the geometry judged (default: the optimizer's own)"),
    Key("rival", "str", "the rival answer: only data on which it differs, contradicted when a run goes there"),
    Key("norm", "str", "the norm the margin is measured in"),
    Key("criterion", "str", "the decision rule of direction checks", choices=("falling", "invariant")),
    Key("refuted_by", "str", "a control: the half of the rule that must refute it", choices=("closeness", "trend")),
    Key("halves", "list[str]", "the halves of the rule that must hold (classic checks)"),
    Key("quantity", "str", "the measured quantity (cauchy_angle, cauchy_vector)"),
    Key("map", "str", "the claimed epoch map (c_inc, sign)"),
    Key("theory", "bool", "compare against the theory's answer (false: oracles only, on a user's data)"),
    Key("beats", "bool", "the fixed point must beat the ℓ2 direction (distinct answers)"),
    Key("trajectory", "str", "a synthetic trajectory instead of a run (spiral)"),
    Key("omega", "float", "spiral trajectory: angular speed", 0),
    Key("smoothness", "str", "the smoothness constant used for the step size (mean, per_sample)"),
    Key("examples_from", "str", "judge the very examples of this claim id (a control of that claim)"),
    Key("families", "list[str]|list[table]", "claim ids whose runs are judged, or tables of runs (`name`, knobs, "
        "`dataset`)"),
    Key("cases", "list[table]", "several run configurations (each a table overriding these keys)"),
    Key("runs", "list[table]", "the runs compared (each a table overriding these keys)"),
    Key("run", "table:run", "the Adam run's knobs (batch-size drift)"),
    Key("run_overrides", "table", "keys overriding the family claim's parameters"),
    Key("min_supported", "int", "examples that must be supported (default: all judged)", 0),
    # betas swept or drawn
    Key("beta1s", "list[float]", "β1 values swept", **_PROB),
    Key("beta2s", "list[float]", "β2 values swept", **_PROB),
    Key("betas", "list[list[float]]", "(β1, β2[, horizon]) pairs swept", 0),
    Key("numeric_betas", "list[list[float]]", "(β1, β2) pairs of the numeric identity check", **_PROB),
    Key("run_betas", "list[list[float]]", "(β1, β2) pairs of the runs", **_PROB),
    Key("beta1_max", "float", "Adam drawn: β1 = v · min(β2, beta1_max)", **_PROB),
    Key("beta2_range", "list[float]", "β2 drawn in [lo, hi]", **_PROB),
    Key("beta2_scale", "str", "how β2 is drawn in its range", choices=("linear", "log")),
    Key("beta_range", "list[float]", "Signum: β drawn in [lo, hi]", **_PROB),
    Key("beta_fixed", "float", "Signum: this β instead of a drawn one", **_PROB),
    Key("beta_one_minus_min", "float", "Signum: smallest 1 − β drawn", **_PROB),
    Key("c_beta", "float", "Signum: constant of the β envelope 1 − c/m", 0),
    Key("one_minus_beta2", "float", "1 − β2 of the proxy-limit check", **_PROB),
    Key("small_beta2", "float", "β2 below this counts as small (offset law)", **_PROB),
    Key("b_values", "list[int]", "batch sizes swept", 1),
    Key("c_lo", "float", "threshold bisection: lower end of c"),
    Key("c_hi", "float", "threshold bisection: upper end of c"),
    Key("bisections", "int", "threshold bisection: steps", 1),
    Key("c_draws", "int", "random c drawn for the invariance check", 1),
    # step sizes swept or drawn
    Key("lrs", "list[float]", "step sizes swept", 0),
    Key("lr_fraction", "list[float]", "step size drawn as a fraction [lo, hi] of the stable one", 0),
    Key("lr_eps", "float", "multiply the drawn step size by this", 0),
    # horizon and checkpoints
    Key("steps", "int", "the horizon: steps of a run", 1),
    Key("epochs", "int", "the horizon in epochs", 1),
    Key("base_steps", "int", "Signum: the horizon before the β factor", 1),
    Key("engine_steps", "int", "steps compared between engine and closed form", 1),
    Key("first_epoch", "int", "first epoch measured (default 10)", 1),
    Key("points", "int", "measurement points (log-spaced)", 1),
    Key("checkpoints", "int", "checkpoints of a run (log-spaced)", 1),
    Key("checkpoints_per_decade", "int", "checkpoints per decade of steps", 1),
    Key("start", "int", "first checkpoint step", 1),
    Key("decades", "float", "decades of steps the trend is fitted over", 0),
    Key("trend_decades", "float", "decades the trend half of the rule looks at (default 1)", 0),
    Key("trend_start", "int", "first step of the trend fit", 0),
    Key("late", "int", "the last rows that count as late", 1),
    Key("late_frac", "float", "fraction of the checkpoints that count as late", **_PROB),
    Key("extensions", "int", "×10 extensions of the horizon while undecided", 0),
    Key("sequential_from", "str", "start the ×10 horizons at this tier's horizon (most examples decide there) and "
        "extend only the undecided ones, up to this tier's horizon × 10^extensions", choices=TIERS),
    Key("cap", "int", "geometry law: the most steps of a run", 1),
    Key("first", "int", "geometry law: the first horizon", 1),
    Key("max_iter", "int", "iterations of the fixed-point map", 1),
    Key("dps", "int", "mpmath decimal digits", 1),
    Key("log_frame", "bool", "run in the log frame (false: naive float64)"),
    # examples and seeds
    Key("examples", "int", "hypothesis examples judged", 1),
    Key("solver_examples", "int", "examples checked against the conic solver", 1),
    Key("seeds", "int|list[int]", "seeds: a count (seed, seed + 1, …) or offsets", 0),
    Key("shrink", "bool", "let hypothesis shrink a failing example"),
    Key("until_contradicted", "bool", "stop at the first dataset that contradicts (a control's smoke tier)"),
    Key("resumable", "bool", "keep a resumable checkpoint of long runs in the cache"),
    Key("bound", "bool", "judge the late bound as well as the trend"),
    # thresholds read as params (not tolerances)
    Key("box_ball_min", "float", "only data whose box and ball optima differ by this", 0),
    Key("dual_min", "float", "only data whose smallest dual variable is ≥ this", 0),
    Key("slack_min", "float", "only data whose smallest slack is ≥ this", 0),
    Key("rate_min", "float", "only data whose rate is ≥ this", 0),
    Key("precond_cos_max", "float", "only data on which precond-gd's limit has cos ≤ this to ŵ2", **_PROB),
    Key("coordinate_scale", "float", "GR data with coordinate j scaled by 10^(a·(j/(d−1) − ½)), a = this "
        "(Thm 3.3's same-speed control: Inc-Adam's limit is then not ŵ2)", 0),
    Key("limit_gap", "list[float]", "with coordinate_scale: only data on which 1 − cos(Inc-Adam's limit, ŵ2) is "
        "in [lo, hi]", **_PROB),
    Key("input_scale", "float", "network controls: train on inputs scaled per coordinate by 10^(a·(j/(d−1) − ½)), "
        "a = this, and map the first layer back (the optimizer preconditioned by a fixed diagonal)", 0),
    Key("weighted_gap_min", "float", "only data on which every limit of precond-signum has ℓ∞ gap ≥ this", **_PROB),
    Key("rate_bound", "float", "the bound on the KKT-residual rate (default 0.05)", 0),
    Key("t2_dir_max", "float", "second-order direction tolerance (default checks.bias's)", 0),
    Key("settle_tol", "float", "relative change that counts as settled (default 0.1)", 0),
    Key("closed_form_rtol", "float", "relative tolerance of the closed form (default 1e-9)", 0),
    # symbolic sizes
    Key("symbolic_n", "list[int]", "sizes N proved symbolically", 1),
    Key("symbolic_sizes", "list[list[int]]", "(N, d) proved symbolically", 1),
    Key("numeric_n", "list[int]", "sizes N checked numerically", 1),
    Key("scales", "list[float]", "scales of the invariance check", 0),
)

# params.run: the Adam run of the batch-size drift check
RUN = _table(
    Key("beta1", "float", "first-moment decay β1 of the run", **_PROB),
    Key("beta2", "float", "second-moment decay β2 of the run", **_PROB),
    Key("lr", "float", "base step size of the run", 0),
)

TOLERANCE_FIELDS = _table(
    Key("value", "float", "the threshold"),
    Key("why", "str", "one line: where the value comes from"),
    Key("figure", "str", "the figure the regression gate tracks against it (ci/baseline-fast.json)"),
)

TOLERANCES = _table(*(Key(n, "float|table", m) for n, m in (
    ("align_max", "largest 1 − alignment at the horizon"),
    ("bound", "margin gap bound of the geometry law (checks.bias.BOUND / NET's)"),
    ("certificate", "feasibility and duality gap of a certified optimum"),
    ("conditioning_factor", "allowed growth of the condition number"),
    ("cos_gap", "1 − cos to the fixed-point direction"),
    ("cos_gap_max", "largest 1 − cos to a predicted direction at the horizon"),
    ("cos_min", "least cosine to the target direction"),
    ("dir_max", "largest direction change per decade"),
    ("discriminates", "least relative margin gap between the judged and the rival optimum"),
    ("dist_max", "largest distance to the target"),
    ("fp_tol", "residual ‖T(c*) − c*‖ of the fixed point"),
    ("gap_floor", "a margin gap below this counts as reached"),
    ("gap_max", "largest relative margin gap to the target"),
    ("guard", "network rule: own/closest-other ratio"),
    ("inv_rise", "largest rise of the inverse per decade"),
    ("inversions_max", "most order inversions allowed"),
    ("iso_tol", "spread of M(c) around a multiple of I"),
    ("k_rise_max", "largest rise of K over the last decade"),
    ("kkt_tol", "KKT residual"),
    ("lag_max", "largest lag"),
    ("max_decade_sum", "largest sum over the last decade"),
    ("max_inv_norm", "largest 1/‖w‖"),
    ("max_loss", "largest loss at the horizon"),
    ("max_value", "largest value of the measured quantity"),
    ("min_drop", "least relative drop per decade (falling)"),
    ("monotone_rtol", "floating-point allowance of a monotone step"),
    ("norm_drop", "least relative growth of ‖w‖"),
    ("approach_drop", "least relative drop per decade of 1 − cos(w, ŵ2) (a direction still approaching)"),
    ("offset_max", "largest |measured − predicted| offset of a law"),
    ("c_spread_max", "largest spread max/min of a law's constant over its range"),
    ("r_min", "least alignment r_t late in the run"),
    ("r_tol", "|1 − r_t| that counts as aligned"),
    ("resid_max", "largest residual at the horizon"),
    ("rho_rise_max", "largest rise of ρ over the last decade"),
    ("rtol", "relative tolerance of an identity"),
    ("rtol_solver", "relative accuracy of the conic solver"),
    ("signature_max", "structural KKT signature"),
    ("significance", "a weight or change below this is negligible"),
    ("slack", "allowed slack ε_r"),
    ("slope_gap_floor", "slope gap below this counts as reached"),
    ("slope_gap_max", "largest slope gap"),
    ("slope_max", "largest fitted slope of log(quantity)"),
    ("slope_tol", "allowed deviation of a fitted slope"),
    ("soft_max", "largest relative soft-margin gap"),
    ("theory_gap", "1 − cos to the theory's direction"),
    ("track_max", "largest tracking residual late in the run"),
    ("trend_drop", "least relative drop per decade of the residual (falling)"),
    ("w2_growth_min", "least growth of ‖w‖² over the last decade"),
)))

# the tables nested in params: their keys are params keys (`name` only in `families`)
SECTIONS = {"top": TOP, "convention": CONVENTION, "params": PARAMS, "run": RUN, "tolerances": TOLERANCES,
            "tolerance": TOLERANCE_FIELDS}

# old names (issue 32): the error names the new one, which difflib may not find. `data` was a generator name
# (now `dataset`) or a list of dataset groups (now `datasets`); `datasets = <count>` is now `dataset_count`.
RENAMED = {"data": "dataset", "kind": "problem"}
RENAMED_LIST = {"data": "datasets"}
RETYPED = {("datasets", "int"): "dataset_count"}


# ------------------------------------------------------------------------------------------ checking values

def _split(t: str) -> list[str]:
    """`A|B` at bracket depth 0."""
    parts, depth, cur = [], 0, ""
    for ch in t:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "|" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def _is(v: Any, t: str) -> bool:
    """v has type t (the grammar of the module docstring); nested tables are checked by `_walk`."""
    if "|" in t:
        return any(_is(v, a) for a in _split(t))
    if t == "str":
        return isinstance(v, str)
    if t == "bool":
        return isinstance(v, bool)
    if t == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if t == "table" or t.startswith("table:"):
        return isinstance(v, dict)
    m = re.fullmatch(r"(list|map)\[(.*)\]", t)
    if m:
        kind, inner = m.groups()
        if kind == "list":
            return isinstance(v, list) and all(_is(x, inner) for x in v)
        return isinstance(v, dict) and all(_is(x, inner) for x in v.values())
    raise ValueError(f"unknown schema type {t!r}")


def _leaves(v: Any) -> Iterable[Any]:
    if isinstance(v, list):
        for x in v:
            yield from _leaves(x)
    elif not isinstance(v, dict):
        yield v


def _show(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def _fail(path, where: str, msg: str):
    raise IbverifyError(f"{path}: [{where}] {msg}")


def _unknown(path, where: str, name: str, known: Iterable[str], value: Any = None):
    if name in RENAMED:
        new = RENAMED_LIST.get(name, RENAMED[name]) if isinstance(value, list) else RENAMED[name]
        hint = f" (renamed: did you mean {new!r}?)"
    else:
        close = difflib.get_close_matches(name, list(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
    _fail(path, where, f"unknown key {name!r}{hint}")


def _value(path, where: str, key: Key, v: Any):
    if not _is(v, key.type):
        other = RETYPED.get((key.name, type(v).__name__))
        hint = f" (did you mean {other!r}?)" if other else ""
        _fail(path, where, f"{key.name} = {_show(v)}: must be {key.type.replace('|', ' or ')}{hint}")
    for x in _leaves(v):
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            if (key.lo is not None and x < key.lo) or (key.hi is not None and x > key.hi):
                _fail(path, where, f"{key.name} = {_show(v)}: out of range (must be {key.range_text()})")
        if isinstance(x, str) and key.choices and x not in key.choices:
            close = difflib.get_close_matches(x, key.choices, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            _fail(path, where, f"{key.name} = {_show(v)}: must be one of {', '.join(key.choices)}{hint}")


def _walk(path, where: str, table: dict, section: dict[str, Key], strict: bool):
    """Check every key of `table` against `section`; tables nested in params against params (or their own)."""
    for name, v in table.items():
        key = section.get(name)
        if key is None:
            if strict:
                _unknown(path, where, name, section, v)
            continue
        _value(path, where, key, v)
        if section is PARAMS and ("table" in key.type):   # cases, runs, families, datasets, run, run_overrides
            inner = RUN if key.type == "table:run" else PARAMS
            items = [v] if isinstance(v, dict) else [x for x in v if isinstance(x, dict)]
            for i, x in enumerate(items):
                _walk(path, f"{where}.{name}" + (f"[{i}]" if isinstance(v, list) else ""), x, inner, strict)


def validate(data: dict, path) -> None:
    """Raise IbverifyError (one line: file, [section] key, the closest valid key) for an unknown or ill-typed key."""
    _walk(path, "top level", {k: v for k, v in data.items() if k not in ("params", "tiers", "convention",
                                                                          "tolerances")}, TOP, True)
    for name in ("params", "tiers", "convention", "tolerances"):
        if name in data:
            _value(path, "top level", TOP[name], data[name])
    strict = str(data.get("check", "")).startswith("ibverify.")   # a user's own check has its own vocabulary
    _walk(path, "convention", data.get("convention", {}), CONVENTION, True)
    _walk(path, "params", data.get("params", {}), PARAMS, strict)
    for tier, table in data.get("tiers", {}).items():
        if tier not in TIERS:
            _unknown(path, "tiers", tier, TIERS)
        if not isinstance(table, dict):
            _fail(path, f"tiers.{tier}", f"must be a table, got {_show(table)}")
        _walk(path, f"tiers.{tier}", table, PARAMS, strict)
    for name, t in data.get("tolerances", {}).items():
        key = TOLERANCES.get(name) or Key(name, "float|table", "")
        if name not in TOLERANCES and strict:
            _unknown(path, "tolerances", name, TOLERANCES)
        _value(path, "tolerances", key, t)
        if isinstance(t, dict):
            _walk(path, f"tolerances.{name}", t, TOLERANCE_FIELDS, True)
            if "value" not in t:
                _fail(path, f"tolerances.{name}", "lacks 'value'")
