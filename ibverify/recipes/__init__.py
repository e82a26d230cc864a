"""Recipes: everything a run is made of, as content, and the run store that owns every run.

A `Recipe` (data source and arguments or arrays by content, model, optimizer spec, θ0, horizon, checkpoints,
engine options) is the identity of a run; `RunStore.run(recipe)` is the only way a check obtains one. Checks
describe their data and models as recipes (`DataRecipe`, `ModelRecipe`) and get the built objects from the store.
"""

from .recipe import DATA_SOURCES, MODEL_KINDS, DataRecipe, ModelRecipe, Recipe
from .store import RunStore, store_of
from . import linear  # noqa: F401  (registers its data sources)
from ..engine import log_checkpoints
from ..engine.vector import check_data, iterate_chain   # a chain stepped by hand (not a run): exact algebra checks

__all__ = ["DATA_SOURCES", "MODEL_KINDS", "DataRecipe", "ModelRecipe", "Recipe", "RunStore", "check_data",
           "iterate_chain", "log_checkpoints", "store_of"]
