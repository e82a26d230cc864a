"""Paper 1's claim settings → recipes (checks.proxy, checks.paper1_laws, checks.symbolic): the linear model trained
sample by sample (the vector loop) on generated data, a user's file or a scikit-learn split.

    spec_of, steps_of   a run table of a claim (`optimizer`, its settings, `steps` or `epochs`) → spec, horizon
    listed_run          such a run on data of n samples → Recipe
    gaussian            Gaussian data (n, d, seed) → DataRecipe
    first_gr            the first GR draw of a seed that passes a condition (e.g. ℓ2 and ℓ∞ differ) → DataRecipe

The claim's list of datasets is `settings.claim_datasets`; runs on data given as arrays go through
`settings.vector(Z, …)`.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from ..optim import OptimizerSpec
from .recipe import DataRecipe, Recipe
from .settings import vector
from .store import RunStore

TRIES = 200   # GR draws of one seed tried before giving up on a condition


def spec_of(r: Mapping[str, Any], seed: int = 0) -> OptimizerSpec:
    """The optimizer of a run table (its own `seed`, else the given one: the sampling order's seed)."""
    return OptimizerSpec.from_params(r, seed=r.get("seed", seed))


def steps_of(r: Mapping[str, Any], n: int) -> int:
    """`steps`, or `epochs` × batches per epoch."""
    if "steps" in r:
        return int(r["steps"])
    b = r.get("batch_size") or spec_of(r).resolved(n).batch_size   # the row's batch size on n samples
    return int(r["epochs"]) * max(1, n // int(b))


def listed_run(data: DataRecipe | np.ndarray, r: Mapping[str, Any], n: int, seed: int = 0,
               checkpoints=None) -> Recipe:
    """The run of a run table `r` (spec_of, steps_of) on data of n samples."""
    return vector(data, spec_of(r, seed), steps_of(r, n), checkpoints)


def gaussian(n: int, d: int, seed: int) -> DataRecipe:
    """Gaussian data (spec §5.8): N(0, I_d) samples with uniform ±1 labels, drawn from default_rng(seed)."""
    return DataRecipe.generated("gaussian", n=int(n), d=int(d), seed=int(seed))


def first_gr(n: int, d: int, seed: int, accept: Callable[[np.ndarray], bool], store: RunStore | None = None,
             tries: int = TRIES) -> DataRecipe:
    """The first of the GR datasets (n, d) drawn in turn from default_rng(seed) whose label-folded Z passes
    `accept` (source "gr-draw": the seed and the draw's index)."""
    store = store or RunStore.process()
    for k in range(int(tries)):
        rec = DataRecipe.generated("gr-draw", n=int(n), d=int(d), seed=int(seed), draw=k)
        if accept(store.data(rec).Z):
            return rec
    raise RuntimeError(f"no accepted GR data for n={n}, d={d}, seed={seed} in {tries} draws")
