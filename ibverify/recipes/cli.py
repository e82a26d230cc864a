"""Command-line settings → recipes: the data, model and run of `ibverify train` (the linear model sample by sample,
or a block model full batch), the user's dataset of `ibverify bias` and of `ibverify verify --data`. The CLI parses
and validates its options, calls these, and hands the recipe to a `RunStore` (its progress bar and --checkpoint /
--resume files are the store's `io` options, not recipe content).

The same vocabulary as the claims (recipes.settings): a generated network dataset is `settings.network_data`'s, a
block model `settings.network_model`'s, the vector loop `settings.vector`; a user's file is `DataRecipe.file`, known
by its sha256.
"""

from __future__ import annotations

from pathlib import Path

from ..optim import OptimizerSpec
from . import settings
from .recipe import DataRecipe, ModelRecipe, Recipe


def user_file(path: str | Path, intercept: bool = False, network: bool = False) -> DataRecipe:
    """A user's .csv/.npz file (validated as `load_dataset`: separable by its model, a homogeneous network when
    `network`, else linearly; `intercept` appends a column of ones), known by its sha256."""
    return DataRecipe.file(path, intercept=bool(intercept), network=network)


def generated_data(kind: str, n: int | None, d: int, seed: int) -> DataRecipe:
    """`train --model`'s generated datasets (digits, teacher, linear), as the network claims' `dataset`."""
    return settings.network_data({"dataset": kind, "n": n, "d": d}, seed)


def bias_data(D) -> DataRecipe:
    """`ibverify bias --data`'s dataset, loaded and validated by the CLI, as arrays known by their bytes (they travel
    with a Dask task, on a cluster that cannot read the user's file)."""
    return DataRecipe.of_dataset(D)


def train_model(kind: str, width: int, q: float, depth: int) -> ModelRecipe:
    """`train --model KIND` with --width, --q, --depth (those the kind reads), as the network claims' `model`."""
    return settings.network_model({"model": kind, "width": width, "q": q, "depth": depth})


def vector_run(data: DataRecipe, spec: OptimizerSpec, steps: int, checkpoints: int, engine: str | None) -> Recipe:
    """`train` without --model: the linear model sample by sample (the vector loop) from w = 0."""
    return settings.vector(data, spec, steps, checkpoints, engine=engine)


def block_run(data: DataRecipe, model: ModelRecipe, spec: OptimizerSpec, steps: int, checkpoints,
              init_seed: int | None, init_scale: float, engine: str | None) -> Recipe:
    """`train --model`: the block model full batch from θ0 drawn with `init_seed` at `init_scale` (zero when
    None: a degree-1 model)."""
    return Recipe(data, spec, int(steps), model=model, checkpoints=checkpoints, init_seed=init_seed,
                  init_scale=init_scale, engine=engine)
