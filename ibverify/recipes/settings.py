"""Claim settings → recipes: the one place a claim's (tier-resolved) parameters and a seed become data, a model,
an optimizer spec, θ0 and a horizon. Checks call these and hand the recipe to the run store.

Data selector vocabulary (claim files): `dataset` names a source of `DATA_SOURCES` (its arguments are the
claim's `n`, `d`, `data_seed`/`data_seeds`, …); `data_file` is a user's file (`ibverify verify --data`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..engine import log_checkpoints
from ..optim import OptimizerSpec, info
from .recipe import DataRecipe, ModelRecipe, Recipe


def network_spec(cfg: Mapping[str, Any]) -> OptimizerSpec:
    """The optimizer of a block-run configuration (Muon-Adam's `ratio` sets lr_vector = lr_matrix · ratio)."""
    if cfg["optimizer"] == "muon-adam" and "ratio" in cfg:
        lm = cfg.get("lr_matrix") or info("muon-adam").default("lr_matrix")
        cfg = {**cfg, "lr_matrix": lm, "lr_vector": lm * cfg["ratio"]}
    return OptimizerSpec.from_params(cfg)


def network_data(cfg: Mapping[str, Any], seed: int) -> DataRecipe:
    """The data of a block-run configuration (`dataset`: teacher, linear, matrix or digits)."""
    kind = cfg.get("dataset", "teacher")
    n, d = cfg.get("n"), cfg.get("d", 6)
    if kind == "teacher":
        return DataRecipe.generated("teacher", n=n or 30, d=d, m_teacher=cfg.get("teacher_width", 4),
                                    q=cfg.get("teacher_q", 2.0), seed=seed)
    if kind == "linear":
        return DataRecipe.generated("linear", n=n or 20, d=d, seed=seed)
    if kind == "matrix":
        return DataRecipe.generated("matrix", n=n or 20, p=cfg.get("rows", 4), r=cfg.get("cols", 3), seed=seed)
    if kind == "digits":
        return DataRecipe.generated("digits", n=n, seed=seed)
    raise ValueError(f"unknown data kind {kind!r}")


def network_model(cfg: Mapping[str, Any]) -> ModelRecipe:
    kind = cfg.get("model", "two-layer")
    if kind == "matrix-linear":
        return ModelRecipe.of("matrix-linear")
    if kind == "linear":
        return ModelRecipe.of("linear")
    if kind == "two-layer":
        return ModelRecipe.of("two-layer", width=cfg.get("width", 16), q=cfg.get("q", 2.0))
    if kind == "deep-linear":
        return ModelRecipe.of("deep-linear", width=cfg.get("width", 16), depth=cfg.get("depth", 2))
    return ModelRecipe.of(kind, width=cfg.get("width", 16), q=cfg.get("q", 2.0), depth=cfg.get("depth", 2))


def network(cfg: Mapping[str, Any], seed: int) -> Recipe:
    """A block run of a configuration and seed: θ0 = 0 for a degree-1 model unless `zero_init` is false, else
    drawn with the example's seed; `checkpoints` log-spaced from `start` (default steps/20) to `steps`."""
    model = network_model(cfg)
    degree_one = model.kind in ("linear", "matrix-linear", "deep-linear") and (
        model.kind != "deep-linear" or dict(model.args).get("depth", 2) == 1)
    init = None if degree_one and cfg.get("zero_init", True) else seed
    steps = int(cfg["steps"])
    cps = log_checkpoints(steps, int(cfg.get("checkpoints", 10)), int(cfg.get("start", max(10, steps // 20))))
    return Recipe(network_data(cfg, cfg.get("data_seed", seed)), network_spec(cfg), steps, model=model,
                  checkpoints=cps, init_seed=init, init_scale=cfg.get("init_scale", 0.5))


def degree_one_problem(ex: Mapping[str, Any]) -> tuple[DataRecipe, ModelRecipe]:
    """(data, model) of a degree-1 example (`kind`: vector, matrix or matrix-vector)."""
    if ex["kind"] == "vector":
        return DataRecipe.generated("linear", n=ex["n"], d=ex["d"], seed=ex["data_seed"]), ModelRecipe.of("linear")
    if ex["kind"] == "matrix":
        return (DataRecipe.generated("matrix", n=ex["n"], p=ex["p"], r=ex["r"], seed=ex["data_seed"]),
                ModelRecipe.of("matrix-linear"))
    return (DataRecipe.generated("matrix-vector", n=ex["n"], p=ex["p"], r=ex["r"], k=ex["k"], seed=ex["data_seed"]),
            ModelRecipe.of("matrix-vector-linear", p=ex["p"], r=ex["r"], k=ex["k"]))


def degree_one(ex: Mapping[str, Any], p: Mapping[str, Any], steps: int | None = None) -> Recipe:
    """A degree-1 example trained from θ = 0 to `steps` (default the tier's)."""
    data, model = degree_one_problem(ex)
    steps = int(p["steps"] if steps is None else steps)
    cps = log_checkpoints(steps, int(p.get("checkpoints", 5)), max(1, steps // 100))
    return Recipe(data, OptimizerSpec.from_params(p), steps, model=model, checkpoints=cps)


def claim_datasets(p: Mapping[str, Any]) -> list[tuple[str, DataRecipe]]:
    """(label, data) for a paper-1 claim: gaussian/gr with `data_seeds`, shifted-diagonal with `deltas`, a user's
    file (`data_file`, set by `ibverify verify --data FILE`; `intercept` appends a column of ones; known by its
    sha256) or else a shipped scikit-learn split (`sklearn = "iris:0v1"`); `datasets` = a list of such tables (each
    overriding the claim's keys) gives several families."""
    if "datasets" in p:
        return [x for q in p["datasets"] for x in claim_datasets({**{k: v for k, v in p.items() if k != "datasets"},
                                                                   **q})]
    if p.get("data_file"):
        f = DataRecipe.file(p["data_file"], intercept=bool(p.get("intercept", False)))
        D = f.build()
        return [(f"{Path(p['data_file']).name} (N={D.n}, d={D.d}{', + intercept' if p.get('intercept') else ''})",
                 f)]
    kind = p["dataset"]
    if kind == "sklearn":
        src = DataRecipe.generated("sklearn", split=p["sklearn"])
        D = src.build()
        return [(f"scikit-learn {p['sklearn']} (N={D.n}, d={D.d})", src)]
    if kind == "shifted-diagonal":
        return [(f"shifted-diagonal a={p['a']} δ={dl}", DataRecipe.generated("shifted-diagonal", a=p["a"], delta=dl))
                for dl in p["deltas"]]
    n, d = int(p.get("n", 10)), int(p.get("d", 50))
    return [(f"{kind} N={n} d={d} seed={s}", DataRecipe.generated(kind, n=n, d=d, seed=int(s)))
            for s in p.get("data_seeds", [1])]


def vector(data: DataRecipe | Any, spec: OptimizerSpec, steps: int, checkpoints=None, **options) -> Recipe:
    """A run of the linear model sample by sample (the vector loop) on `data` (a DataRecipe, or label-folded Z
    as an array)."""
    if not isinstance(data, DataRecipe):
        data = DataRecipe.of_arrays(data)
    return Recipe(data, spec, int(steps), checkpoints=checkpoints, engine=options.pop("engine", None),
                  options=tuple(options.items()))
