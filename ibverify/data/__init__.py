"""Linear-model datasets: generators, file loading and validation, hypothesis strategies."""

from .dataset import Dataset, inert_coordinates
from .files import load_dataset
from .generators import gaussian, gr, shifted_diagonal

__all__ = ["Dataset", "gaussian", "gr", "inert_coordinates", "load_dataset", "shifted_diagonal"]
