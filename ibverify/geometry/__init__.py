"""Steepest-descent geometries, one module per norm, behind the `Geometry` protocol (see base.py)."""

from __future__ import annotations

from ..errors import IbverifyError
from .base import Geometry, GeometryBase, nuclear, polar, spectral  # noqa: F401
from .hybrid import Hybrid
from .l1 import L1
from .l2 import L2
from .linf import Linf
from .msp import MaxSpectral
from .spectral import Spectral

NAMES = ("l1", "l2", "linf", "spectral", "msp", "hybrid")


def get(name: str, c: float = 1.0):
    """Geometry by name; 'hybrid' takes the weight c (η_A/η_M for Muon-Adam)."""
    if name == "l1":
        return L1()
    if name == "l2":
        return L2()
    if name == "linf":
        return Linf()
    if name == "spectral":
        return Spectral()
    if name == "msp":
        return MaxSpectral()
    if name.startswith("hybrid"):
        return Hybrid(c)
    raise IbverifyError(f"unknown geometry {name!r} ({', '.join(NAMES)})")
