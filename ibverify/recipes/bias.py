"""`ibverify bias`'s settings → recipes: the candidate datasets of a model drawn from a seed, a user's dataset as a
problem of a model, and the run of one (dataset, optimizer, horizon). checks.bias judges these runs, got from the run
store; checks.beyond_bias asks the same question of one configuration on the same draws.

Models: linear (netdata.linear_separable, the vector loop sample by sample from w = 0), matrix
(netdata.matrix_separable, the block loop from W = 0) and two-layer (netdata.teacher_two_layer, the block loop from
a θ0 drawn with the dataset's init seed at scale 0.5).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from ..data.files import refusals  # noqa: F401  (each bias model's own hypothesis on a dataset, for checks.bias)
from ..engine import log_checkpoints
from ..optim import OptimizerSpec
from .recipe import DataRecipe, ModelRecipe, Recipe

MODELS = ("linear", "matrix", "two-layer")
CHECKPOINTS = 13            # log-spaced over the last three decades (4 a decade), as the network claims
INIT_SCALE = 0.5            # the two-layer net's θ0 scale


def candidates(model: str, seed: int, count: int) -> Iterator[tuple[str, DataRecipe, ModelRecipe | None, int | None]]:
    """(tag, data, model, init seed) of the first `count` candidate datasets of `model` drawn from `seed` (sizes
    too); model None: the linear model's vector loop."""
    rng = np.random.default_rng([seed, MODELS.index(model)])
    for _ in range(count):
        s = int(rng.integers(0, 2**31 - 1))
        if model == "linear":
            n, d = int(rng.integers(10, 17)), int(rng.integers(6, 11))
            yield f"n={n},d={d},data{s}", DataRecipe.generated("linear", n=n, d=d, seed=s), None, None
        elif model == "matrix":
            n, p, r = int(rng.integers(10, 17)), int(rng.integers(3, 5)), int(rng.integers(3, 5))
            yield (f"n={n},p={p},r={r},data{s}", DataRecipe.generated("matrix", n=n, p=p, r=r, seed=s),
                   ModelRecipe.of("matrix-linear"), None)
        else:
            n, d, m = int(rng.integers(16, 25)), int(rng.integers(3, 6)), int(rng.choice([6, 8, 10]))
            i = int(rng.integers(0, 10_000))
            yield (f"n={n},d={d},m={m},data{s},init{i}", DataRecipe.generated("teacher", n=n, d=d, seed=s),
                   ModelRecipe.of("two-layer", width=m), i)


def file_model(model: str, width: int = 8) -> ModelRecipe | None:
    """The model recipe of `model` on a user's dataset (None: the linear model's vector loop)."""
    if model == "linear":
        return None
    if model == "matrix":
        return ModelRecipe.of("matrix-linear")
    return ModelRecipe.of("two-layer", width=width)


def checkpoints(T: int) -> tuple[int, ...]:
    """CHECKPOINTS log-spaced steps over the last three decades up to T."""
    return tuple(int(c) for c in log_checkpoints(T, CHECKPOINTS, max(1, T // 1000)))


def run_recipe(data: DataRecipe, model: ModelRecipe | None, init_seed: int | None, spec: OptimizerSpec, T: int,
               batch: int | None = None) -> Recipe:
    """One dataset's run at horizon T: the vector loop (model None) or the block loop (full batch, or cyclic
    mini-batches of `batch` samples)."""
    return Recipe(data, spec, int(T), model=model, checkpoints=checkpoints(T), init_seed=init_seed,
                  init_scale=INIT_SCALE, options=(() if batch is None else (("batch", batch),)))
