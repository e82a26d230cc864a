"""Linear-model datasets: generators, file loading and validation, hypothesis strategies."""

from .dataset import Dataset
from .files import load_dataset
from .generators import gaussian, gr, shifted_diagonal

__all__ = ["Dataset", "gaussian", "gr", "load_dataset", "shifted_diagonal"]
