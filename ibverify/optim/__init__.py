"""Optimizers: the table (one row per optimizer), specs, transforms (vector reference chains and the
log-frame block chains), samplers.

The table is imported eagerly (plain Python); specs, chains and samplers (numpy) on first use, so the command line's
parser and `--help` never import numpy (PEP 562 module __getattr__)."""

from importlib import import_module

from .table import NAMES, ORDERS, TABLE, info

__all__ = ["NAMES", "ORDERS", "TABLE", "OptimizerSpec", "Sampler", "build", "info"]
_LAZY = {"OptimizerSpec": ".spec", "Sampler": ".samplers", "build": ".optimizers"}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
