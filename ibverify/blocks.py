"""Helpers for parameters held as named blocks (``dict[str, ndarray]``)."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

Params = dict[str, np.ndarray]


def bmap(fn: Callable[[np.ndarray], np.ndarray], *trees: Params) -> Params:
    """Apply ``fn`` blockwise (same keys, same order as the first tree)."""
    return {k: fn(*(t[k] for t in trees)) for k in trees[0]}


def inner(a: Params, b: Params) -> float:
    return float(sum(np.vdot(a[k], b[k]) for k in a))


def flatten(p: Params) -> np.ndarray:
    return np.concatenate([np.ravel(v) for v in p.values()]) if p else np.zeros(0)


def unflatten(vec: np.ndarray, like: Params) -> Params:
    out, i = {}, 0
    for k, v in like.items():
        out[k] = np.asarray(vec[i:i + v.size], dtype=float).reshape(v.shape)
        i += v.size
    return out


def copy(p: Params) -> Params:
    return {k: np.array(v, dtype=float, copy=True) for k, v in p.items()}


def scale(p: Params, a: float) -> Params:
    return {k: a * v for k, v in p.items()}


def add(p: Params, q: Params, a: float = 1.0) -> Params:
    return {k: p[k] + a * q[k] for k in p}


def fro(p: Params) -> float:
    return float(np.sqrt(sum(float(np.sum(v * v)) for v in p.values())))


def all_finite(p: Params) -> bool:
    return all(bool(np.all(np.isfinite(v))) for v in p.values())


def cosine(a: Params, b: Params) -> float:
    """cos∠(a, b) over all blocks."""
    return inner(a, b) / math.sqrt(inner(a, a) * inner(b, b))
