"""Linear-model claim settings → recipes (checks.per_sample, checks.classic, checks.numerics).

Data sources defined here (they need the oracles, so they are not in `ibverify.data.generators`) are registered in
`DATA_SOURCES` when this module is imported (`ibverify.recipes` imports it):
    gaussian-l1   label-folded Gaussian data, redrawn from (seed, 1, 2, …) until ŵ2 is ≥ gap_min short of γ1 in
                  ℓ1 margin (`l1_gap_of_l2`): Gunasekar et al.'s Adagrad finding (checks.classic.adagrad_init)
The recipes:
    gr_data(n, d, seed)               the GR data of a seed (data source "gr")
    gaussian_l1_data(n, d, seed)      source gaussian-l1 at the ℓ1 discrimination threshold L1_GAP_MIN
    adagrad(data, lr, steps, w0)      diagonal Adagrad (ε = 0, constant step) on the linear model (block loop, sum
                                      loss) from θ0 = {"w": w0} for steps + 1 steps, recorded at steps/10 + 1 and
                                      steps + 1
    checkpoint_identity(recipe)       what a resumable run's checkpoint file is named by: the recipe's key (its whole
                                      content, horizon and checkpoints included), so a resumed run is never another's
"""

from __future__ import annotations

import numpy as np

from ..errors import IbverifyError
from ..data import Dataset
from ..optim import OptimizerSpec
from .recipe import DATA_SOURCES, DataRecipe, ModelRecipe, Recipe

# ---- ℓ1 discrimination: ŵ2 (and so GD's limit) measurably short of the ℓ1 max margin (strategies.discriminating_l1)

L1_GAP_MIN = 0.1


def l1_gap_of_l2(Z: np.ndarray) -> float:
    """(γ1 − γ1(ŵ2)) / γ1: how far the ℓ2 max-margin direction is from the ℓ1 max margin, by ℓ1 margin."""
    from ..oracles import max_margin, normalized_margin   # start-up time: the oracles only when data are drawn

    l1, l2 = max_margin(Z, "l1"), max_margin(Z, "l2")
    return float((l1.margin - normalized_margin(Z, l2.direction, "l1")) / l1.margin)


def gaussian_l1(n: int, d: int, seed: int, gap_min: float = L1_GAP_MIN) -> Dataset:
    """Label-folded Gaussian data z_i = y_i x_i (x_i ~ N(0, I_d), y_i = ±1) from `seed`, redrawn (seed, 1, 2, …) until
    ŵ2 is ≥ gap_min short of γ1 in ℓ1 margin (`l1_gap_of_l2`) and the data are separable (d ≥ n). The Dataset
    holds Z with labels 1 (X = Z), as the check has always trained on (Z, 1)."""
    n, d, seed = int(n), int(d), int(seed)
    for k in range(100):
        rng = np.random.default_rng([seed, k])
        X = rng.standard_normal((n, d))
        y = rng.choice([-1.0, 1.0], size=n)
        Z = y[:, None] * X
        if l1_gap_of_l2(Z) >= gap_min:
            return Dataset(Z, np.ones(n), f"gaussian-l1 N={n} d={d} seed={seed}")
    raise IbverifyError(f"no ℓ1-discriminating Gaussian dataset n={n} d={d} from seed {seed}")


DATA_SOURCES.setdefault("gaussian-l1", gaussian_l1)


def gr_data(n: int, d: int, seed: int) -> DataRecipe:
    """GR data of size n × d drawn from `seed` (`data.gr` with `default_rng(seed)`)."""
    return DataRecipe.generated("gr", n=int(n), d=int(d), seed=int(seed))


def gaussian_l1_data(n: int, d: int, seed: int) -> DataRecipe:
    return DataRecipe.generated("gaussian-l1", n=int(n), d=int(d), seed=int(seed), gap_min=L1_GAP_MIN)


def adagrad(data: DataRecipe, lr: float, steps: int, w0: np.ndarray) -> Recipe:
    """Diagonal Adagrad (ε = 0, no step decay) on the linear model from θ0 = {"w": w0}, `steps` + 1 block steps,
    recorded at steps // 10 + 1 and steps + 1 (T/10 and T)."""
    steps = int(steps)
    return Recipe(data, OptimizerSpec("adagrad", lr=float(lr), lr_decay=0.0, eps=0.0), steps + 1,
                  model=ModelRecipe.of("linear"), checkpoints=(steps // 10 + 1, steps + 1), theta0={"w": w0})


def checkpoint_identity(recipe: Recipe) -> bytes:
    """The identity a resumable run's checkpoint file is named by (RunStore.checkpoint): the recipe's key."""
    return recipe.key().encode()
