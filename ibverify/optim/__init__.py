"""Optimizers: the table (one row per optimizer), specs, transforms (vector reference chains and the
log-frame block chains), samplers.

The table is imported eagerly (plain Python); specs, chains and samplers (numpy) on first use, so the command line's
parser and `--help` never import numpy (PEP 562 module __getattr__). The imports are written out (not by name
strings) so that ibverify.codehash's import closure still reaches those modules."""

from .table import NAMES, ORDERS, TABLE, info

__all__ = ["NAMES", "ORDERS", "TABLE", "OptimizerSpec", "Sampler", "build", "info"]


def __getattr__(name: str):
    if name == "OptimizerSpec":
        from .spec import OptimizerSpec as value
    elif name == "Sampler":
        from .samplers import Sampler as value
    elif name == "build":
        from .optimizers import build as value
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
