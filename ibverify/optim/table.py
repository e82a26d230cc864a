"""The optimizer table: one row per optimizer of both papers (in the spirit of PyTorch's `optim_db`).

Every generic consumer reads it: `OptimizerSpec` (knob defaults and validation), the chains
(`optimizers.build`, `optimizers.make_optimizer`), the engine (which implementation runs a model, which compiled
kernel), `ibverify train --help`, the optimizer table of docs/commands.md, the fuzz and compiled-equals-reference tests.

A row points at its implementations: `vector` (spec, xp) -> its linear-model chain of `transforms` (T below),
`block` (spec) -> its block chain of log-frame transforms of `logframe` (F below), both before the schedule
(appended by `optimizers`), `kernel` the compiled vector kernel's kind (`engine.vector.KERNELS`), `parts` a hybrid's
(matrix, vector) optimizers. Adding an optimizer = one row with its chains (docs/ARCHITECTURE.md).

One knob vocabulary for every model (`KNOBS`) and one schedule convention:
    η_t = lr · t^(−lr_decay),   t = 1, 2, …   (the step counter of the update being made)
Models: `vector` — a linear model run sample by sample (per-sample, mini-batch or full batch; samplers,
per-coordinate log frame: the `vector` kernels); `block` — any model over named parameter blocks, full
batch (per-group log frame: the `block` kernels). A linear model is the one-block, degree-1 case of both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

# knob → meaning (the only names: the CLI's options are these with '-' for '_')
KNOBS = MappingProxyType({
    "lr": "base step size η0 of η_t = lr · t^(−lr_decay)",
    "lr_decay": "decay exponent of η_t (vector default 0.5; block default 1 − 1/(2L), inside 1 − 1/L < p ≤ 1)",
    "beta1": "first-moment (momentum) decay β1",
    "beta2": "Adam's second-moment decay β2",
    "eps": "Adam's ε added to √v",
    "bias_correction": "Adam's bias correction of m and v",
    "weight_decay": "AdamW's decoupled weight decay λ (θ ← θ − η_t (d + λ θ)); adamw only",
    "batch_size": "samples per step (vector model)",
    "order": "sample order of mini-batches: cyclic, reshuffle or replacement (vector model)",
    "lr_matrix": "hybrids: base step size η_M of the Muon part (matrix blocks)",
    "lr_vector": "hybrids: base step size η_A of the Signum/Adam part (vector blocks)",
    "loss": "logistic or exponential",
    "seed": "seed of the sample order (vector model)",
})
# old knob names read with a one-line deprecation (claim files and scripts of earlier versions)
DEPRECATED = MappingProxyType({"eta0": "lr", "p": "lr_decay", "beta": "beta1", "eta_m": "lr_matrix",
                               "eta_a": "lr_vector"})
DEFAULTS = MappingProxyType({"lr": 0.1, "beta1": 0.9, "beta2": 0.999, "eps": 0.0, "bias_correction": False,
                             "weight_decay": 0.0, "order": "cyclic", "loss": "logistic", "seed": 0})
VECTOR_LR_DECAY = 0.5
ORDERS = ("cyclic", "reshuffle", "replacement")
MODELS = ("vector", "block")
ADAM_CONVENTION_PAPER1 = MappingProxyType({"eps": 0.0, "bias_correction": False})
ADAM_CONVENTION_PAPER2 = MappingProxyType({"eps": 0.0, "bias_correction": True})


@dataclass(frozen=True)
class OptimizerInfo:
    """One optimizer: its update, own geometry, models, implementations, convention and defaults."""

    name: str
    paper: str                      # "baek" (paper 1), "gronich" (paper 2) or "other" (known from other papers)
    update: str                     # the exact update (g the batch gradient, η_t as above)
    geometry: str                   # own geometry: l1 | l2 | linf | l3 | spectral | msp | hybrid | adaptive
    #                                 (adaptive: no fixed geometry, the limit depends on the data, θ0 or η)
    models: tuple[str, ...]         # of MODELS
    implementations: Mapping[str, tuple[str, ...]]  # model → engines: compiled, reference, mpmath, lanes
    defaults: Mapping[str, object] = field(default_factory=dict)  # knobs that differ from DEFAULTS
    batch: str = "any"              # vector model: "one" (batch size 1), "full" or "any" (default: full,
    #                                 or the row's batch_size default)
    moments: tuple[str, ...] = ()   # knobs of its moments (beta1, beta2, eps, bias_correction) and of its
    #                                 update beyond lr (weight_decay: only a row listing it accepts λ ≠ 0)
    aliases: tuple[str, ...] = ()
    skips: Mapping[str, str] = field(default_factory=dict)  # generic test → reason; "test:model": on that model
    #                                 only; "geometry": converges to its own geometry, "two-layer": engine agreement
    by_model: Mapping[str, Mapping[str, object]] = field(default_factory=dict)  # model → its own defaults
    user: object = None             # a user's optimizer file (`userfile.UserChains`: its file and sha256); None for
    #                                 the table's rows
    vector: Callable | None = field(default=None, repr=False, compare=False)  # (spec, xp) -> transforms.* (one or
    #                                 a list), the linear model's chain before the schedule
    block: Callable | None = field(default=None, repr=False, compare=False)   # (spec) -> logframe transforms (one or
    #                                 a list), the block models' chain before the schedule
    kernel: str | None = None       # the compiled vector kernel's kind (engine.vector.KERNELS); None: none
    parts: tuple[str, ...] = ()     # a hybrid: its (matrix, vector) optimizers, whose block chains it partitions
    owns_schedule: bool = False     # its vector chain makes the whole step, η_t included (a torch optimizer:
    #                                 optim/torchadapt.py): build appends no schedule

    def __reduce__(self):
        """Pickled by name (a table row), or by its file (a user's row: reloaded, refused if the file changed)."""
        return (info, (self.name,)) if self.user is None else self.user.row_reduce()

    def default(self, knob: str, model: str | None = None):
        """The knob's default on `model` (vector or block); None where it depends on the model and none is given."""
        if model is not None and knob in self.by_model.get(model, {}):
            return self.by_model[model][knob]
        if model is None and any(knob in d for d in self.by_model.values()):
            return None
        return self.defaults.get(knob, DEFAULTS.get(knob))

    def model_dependent(self, knob: str) -> bool:
        return any(knob in d for d in self.by_model.values())


class _Lazy:
    """A module imported on first use (the table stays plain Python: `--help` never imports numpy)."""

    def __init__(self, load: Callable):
        self._load = load

    def __getattr__(self, name: str):
        return getattr(self._load(), name)


def _transforms():
    from . import transforms
    return transforms


def _logframe():
    from . import logframe
    return logframe


T, F = _Lazy(_transforms), _Lazy(_logframe)   # the rows' chains: T.trace(xp, β), F.EMA(β), … (as in a user's file)


def _adam_v(s, xp):
    return T.scale_by_adam(xp, s.beta1, s.beta2, s.eps, s.bias_correction)


def _adam_b(s):
    return F.Adam(s.beta1, s.beta2, s.bias_correction, s.eps)


def _impl(vector=(), block=()) -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType({k: v for k, v in (("vector", vector), ("block", block)) if v})


VEC = ("compiled", "reference", "mpmath")
BLK = ("compiled", "reference")
REF = ("reference", "mpmath")   # vector model without a compiled kernel: the float64 chain and its mpmath oracle
ADAM_MOMENTS = ("beta1", "beta2", "eps", "bias_correction")
HYBRID_LR = {"lr_matrix": 0.1, "lr_vector": 0.1}

ROWS = (
    OptimizerInfo("inc-adam", "baek", "per-sample Adam (batch 1, cyclic): m, v EMAs of g, g²; w ← w − η_t m/√v",
                  "adaptive", ("vector",), _impl(VEC + ("lanes",)), ADAM_CONVENTION_PAPER1, "one", ADAM_MOMENTS,
                  vector=_adam_v, kernel="adam"),
    OptimizerInfo("det-adam", "baek", "full-batch Adam: m, v EMAs of g, g²; w ← w − η_t m/√v", "linf", ("vector",),
                  _impl(VEC + ("lanes",)), ADAM_CONVENTION_PAPER1, "full", ADAM_MOMENTS,
                  vector=_adam_v, kernel="adam"),
    OptimizerInfo("adam", "gronich", "Adam: m, v EMAs of g, g² (β1, β2); θ ← θ − η_t m̂/(√v̂ + ε) (m̂, v̂ bias-corrected "
                  "by default on block models: paper 2; not on the vector model: paper 1's mini-batch Adam)",
                  "linf", ("vector", "block"), _impl(VEC + ("lanes",), BLK), {"eps": 0.0, "batch_size": 1}, "any",
                  ADAM_MOMENTS, by_model={"vector": ADAM_CONVENTION_PAPER1, "block": ADAM_CONVENTION_PAPER2},
                  skips={"geometry:vector": "vector model with batch < N: the limit is data-adaptive (paper 1), "
                                            "not ℓ∞"},
                  vector=_adam_v, block=_adam_b, kernel="adam"),
    OptimizerInfo("adam-proxy", "baek", "AdamProxy: w ← w − η_t g ⊘ √(Σ_i g_i²) (per-sample gradients g_i)",
                  "adaptive", ("vector",), _impl(VEC), {}, "full",
                  vector=lambda s, xp: T.precondition_by_sample_rms(xp), kernel="proxy"),
    OptimizerInfo("gd", "baek", "gradient descent: θ ← θ − η_t g (block models: the numpy reference only; Lyu & Li "
                  "2020, Ji & Telgarsky 2020)", "l2", ("vector", "block"), _impl(VEC, ("reference",)),
                  skips={m: "plain GD on block models has the numpy reference only (slow) and approaches its limit "
                            "like 1/log t: `ibverify bias` judges GD on the linear model"
                         for m in ("matrix", "two-layer")},
                  vector=lambda s, xp: [], block=lambda s: F.Unscale(), kernel="gd"),
    OptimizerInfo("nsd-l2", "gronich", "normalized GD: θ ← θ − η_t g/‖g‖₂", "l2", ("vector", "block"),
                  _impl(VEC, BLK), aliases=("ngd",), by_model={"vector": {"lr": 0.1}, "block": {"lr": 0.5}},
                  vector=lambda s, xp: T.normalize_l2(xp), block=lambda s: F.NormalizeL2(), kernel="ngd"),
    OptimizerInfo("nsd-linf", "gronich", "sign descent: θ ← θ − η_t sign(g)", "linf", ("block",), _impl(block=BLK),
                  block=lambda s: F.Sign()),
    OptimizerInfo("nsd-spectral", "gronich", "spectral descent: W ← W − η_t polar(G) (one matrix)", "spectral",
                  ("block",), _impl(block=BLK), {"lr": 0.3},
                  skips={"two-layer": "spectral descent is the steepest descent of one matrix (a matrix model)"},
                  block=lambda s: F.Polar()),
    OptimizerInfo("nsd-msp", "gronich", "max-spectral descent: W_k ← W_k − η_t polar(G_k), every layer", "msp",
                  ("block",), _impl(block=BLK), {"lr": 0.3},
                  block=lambda s: F.Polar()),
    OptimizerInfo("momentum-gd", "gronich", "m ← β1 m + (1−β1) g; θ ← θ − η_t m/‖m‖₂", "l2", ("block",),
                  _impl(block=BLK), {"lr": 0.5}, moments=("beta1",),
                  block=lambda s: [F.EMA(s.beta1), F.NormalizeL2()]),
    OptimizerInfo("signum", "gronich", "m ← β1 m + (1−β1) g; θ ← θ − η_t sign(m)", "linf", ("vector", "block"),
                  _impl(VEC, BLK), {}, "any", ("beta1",),
                  vector=lambda s, xp: [T.trace(xp, s.beta1), T.scale_by_sign(xp)],
                  block=lambda s: [F.EMA(s.beta1), F.Sign()], kernel="signum"),
    OptimizerInfo("muon", "gronich", "M_k ← β1 M_k + (1−β1) G_k; W_k ← W_k − η_t polar(M_k)", "msp", ("block",),
                  _impl(block=BLK), {"lr": 0.3}, moments=("beta1",),
                  block=lambda s: [F.EMA(s.beta1), F.Polar()]),
    OptimizerInfo("muon-ns5", "gronich", "as muon with Newton–Schulz (5 quintic steps) for polar(M_k)", "msp",
                  ("block",), _impl(block=BLK), {"lr": 0.3}, moments=("beta1",),
                  skips={"geometry": "NS5 is not an LMO step: a practical variant, no theorem"},
                  block=lambda s: [F.EMA(s.beta1), F.NewtonSchulz5()]),
    OptimizerInfo("muon-signum", "gronich", "matrices: muon at lr_matrix; vectors: signum at lr_vector",
                  "hybrid", ("block",), _impl(block=BLK), HYBRID_LR, moments=("beta1",),
                  parts=("muon", "signum")),
    OptimizerInfo("muon-adam", "gronich", "matrices: muon at lr_matrix; vectors: adam at lr_vector", "hybrid",
                  ("block",), _impl(block=BLK), {**HYBRID_LR, **ADAM_CONVENTION_PAPER2}, moments=ADAM_MOMENTS,
                  parts=("muon", "adam")),
    # issue 22: optimizers whose implicit bias is known from other papers (none of the claims of the two papers)
    OptimizerInfo("steepest-l1", "other", "greedy coordinate descent (ℓ1 steepest descent): θ_i ← θ_i − η_t sign(g_i) "
                  "at i = argmax_j abs(g_j) only (exact ties: η_t split equally over the tied coordinates)", "l1",
                  ("vector", "block"), _impl(VEC, ("reference",)), {}, "any",
                  vector=lambda s, xp: T.steepest_l1(xp), block=lambda s: F.SteepestL1(), kernel="l1"),
    OptimizerInfo("steepest-l3", "other", "normalized ℓ3 steepest descent: θ ← θ − η_t sign(g) abs(g)^(1/2) / "
                  "‖g‖_(3/2)^(1/2) (the unit-ℓ3 d maximizing ⟨g, d⟩; ℓ_q dual norm, q = 3/2; Gunasekar et al. 2018)",
                  "l3", ("vector",), _impl(REF), {}, "any",
                  skips={"geometry": "the generic test measures l1, l2 and linf margins; claim gunasekar.steepest-l3 "
                                     "judges the ℓ3 margin (on Gaussian data the ℓ2 and ℓ3 optima are ~3 % apart)"},
                  vector=lambda s, xp: T.steepest_lp(xp, 3.0)),
    OptimizerInfo("lion", "other", "Lion (no weight decay): c ← β1 m + (1−β1) g; θ ← θ − η_t sign(c); "
                  "m ← β2 m + (1−β2) g", "linf", ("vector", "block"), _impl(VEC, ("reference",)), {"beta2": 0.99},
                  "any", ("beta1", "beta2"),
                  vector=lambda s, xp: T.scale_by_lion(xp, s.beta1, s.beta2),
                  block=lambda s: F.Lion(s.beta1, s.beta2), kernel="lion"),
    OptimizerInfo("adagrad", "other", "diagonal Adagrad: v ← v + g²; θ ← θ − η_t g/(√v + ε) (0/0 := 0)", "adaptive",
                  ("vector", "block"), _impl(VEC, ("reference",)), {}, "any", ("eps",),
                  skips={"geometry": "the limit depends on the initialization and the step size (Gunasekar et al. "
                                     "2018): no fixed geometry"},
                  vector=lambda s, xp: T.scale_by_adagrad(xp, s.eps), block=lambda s: F.Adagrad(s.eps),
                  kernel="adagrad"),
    OptimizerInfo("adamw", "other", "AdamW: Adam's d = m̂/(√v̂ + ε) (bias-corrected: paper 2's convention); "
                  "θ ← θ − η_t (d + λ θ) (decoupled weight decay λ = weight_decay)", "linf", ("vector", "block"),
                  _impl(VEC, ("reference",)), {**ADAM_CONVENTION_PAPER2, "weight_decay": 0.01}, "any",
                  ADAM_MOMENTS + ("weight_decay",),
                  vector=lambda s, xp: [_adam_v(s, xp), T.add_decayed_weights(xp, s.weight_decay)],
                  block=lambda s: [_adam_b(s), F.DecayedWeights(s.weight_decay)], kernel="adamw"),
    # issue 33: a same-speed wrong-limit control (the classical ℓ2 claims' control: GD's 1/log t rate, another limit)
    OptimizerInfo("precond-gd", "other", "diagonally preconditioned GD: θ ← θ − η_t D g, D = diag(10^(j/(d−1) − 1)), "
                  "j = 0 … d−1 (fixed, 0.1 … 1); limit: the D^(−1/2)-weighted ℓ2 max margin, at GD's rate 1/log t",
                  "adaptive", ("vector",), _impl(VEC), {}, "any",
                  skips={"geometry": "its limit is the max margin of the D^(−1/2)-weighted ℓ2 norm, none of the "
                                     "table's geometries (tests/unit/test_precond_gd.py checks it)"},
                  vector=lambda s, xp: [T.precondition_diagonal(xp)], kernel="precond"),
    # issue 33: Thm 5.1's same-speed wrong-limit control (Signum's speed, the weighted-ℓ∞ limit)
    OptimizerInfo("precond-signum", "other", "diagonally preconditioned Signum: m ← β1 m + (1−β1) g; θ ← θ − η_t D "
                  "sign(m), D as precond-gd's; = D ⊙ (Signum on the data Z·D) exactly; limit: the max margin of the "
                  "weighted norm ‖D^(−1) θ‖∞, at Signum's rate", "adaptive", ("vector",), _impl(REF), {}, "any",
                  ("beta1",),
                  skips={"geometry": "its limit is the max margin of the weighted norm ‖D^(−1) θ‖∞, none of the "
                                     "table's geometries (tests/unit/test_precond_signum.py checks it)"},
                  vector=lambda s, xp: [T.trace(xp, s.beta1), T.scale_by_sign(xp), T.precondition_diagonal(xp)]),
    OptimizerInfo("shampoo", "other", "Shampoo without accumulation, one block per matrix: W ← W − η_t "
                  "(GGᵀ)^(−1/4) G (GᵀG)^(−1/4) (pseudo-inverse roots on the nonzero spectrum: = polar(G))",
                  "spectral", ("block",), _impl(block=("reference",)), {"lr": 0.3},
                  skips={"two-layer": "Shampoo of one matrix block (a matrix model); no compiled kernel"},
                  block=lambda s: F.Shampoo()),
)
TABLE = MappingProxyType({r.name: r for r in ROWS})
ALIASES = MappingProxyType({a: r.name for r in ROWS for a in r.aliases})
NAMES = tuple(TABLE) + tuple(ALIASES)


def info(name: str) -> OptimizerInfo:
    """The row of `name` (an alias gives its optimizer's row); KeyError for an unknown name."""
    return TABLE[ALIASES.get(name, name)]


def names(model: str | None = None) -> tuple[str, ...]:
    """Every optimizer name (aliases too), or those that run `model` ("vector" or "block")."""
    return tuple(n for n in NAMES if model is None or model in info(n).models)


def markdown() -> str:
    """The optimizer table of docs/commands.md (tests/test_readme.py keeps the two in sync)."""
    lines = ["| optimizer | own geometry | models | update |", "|---|---|---|---|"]
    for r in ROWS:
        alias = f" (= `{'`, `'.join(r.aliases)}`)" if r.aliases else ""
        lines.append(f"| `{r.name}`{alias} | {r.geometry} | {', '.join(r.models)} | {r.update} |")
    return "\n".join(lines)
