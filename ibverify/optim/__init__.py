"""Optimizers: the table (one row per optimizer), specs, transforms (vector reference chains and the
log-frame block chains), samplers."""

from .optimizers import build
from .samplers import Sampler
from .spec import OptimizerSpec
from .table import NAMES, ORDERS, TABLE, info

__all__ = ["NAMES", "ORDERS", "TABLE", "OptimizerSpec", "Sampler", "build", "info"]
