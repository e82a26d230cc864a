"""Linear-model optimizers: specs, transforms, samplers."""

from .optimizers import build
from .samplers import Sampler
from .spec import NAMES, ORDERS, OptimizerSpec

__all__ = ["NAMES", "ORDERS", "OptimizerSpec", "Sampler", "build"]
