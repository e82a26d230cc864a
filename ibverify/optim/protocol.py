"""The one transform protocol of every optimizer chain (optax's `GradientTransformationExtraArgs`):

    init(params)                              -> state
    update(updates, state, params=None, **extra) -> (updates, state)

`updates` is the running direction (the gradient at the start of a chain), `params` the iterate θ_t the gradient was
taken at (decoupled weight decay reads it), `extra` keyword information a transform may read and must otherwise
ignore (the vector chains: `per_sample`, the batch's per-sample gradients; the block chains: `ctr`, the run's
underflow `Counter`). A transform that counts steps keeps its count in its state: t = 1, 2, … for the update being
made (the table's one convention, η_t = lr · t^(−lr_decay)).

Two families of implementations follow it: the vector (linear-model) transforms of `transforms` (closures over a
backend `xp`: float64 or mpmath) and the block transforms of `logframe` (classes over named parameter blocks in the
log frame). `chain` composes either.
"""

from __future__ import annotations

import inspect
from typing import Any


class Chain:
    """Transforms applied in order; its state is the tuple of theirs (optax.chain)."""

    def __init__(self, *ts):
        self.ts = ts

    def init(self, params) -> tuple:
        return tuple(t.init(params) for t in self.ts)

    def update(self, updates, state, params=None, **extra) -> tuple[Any, tuple]:
        new = []
        for tr, s in zip(self.ts, state, strict=True):
            updates, s = tr.update(updates, s, params, **extra)
            new.append(s)
        return updates, tuple(new)


def chain(*ts) -> Chain:
    """The transforms `ts` in order, as one transform (vector or block transforms alike)."""
    return Chain(*ts)


def old_protocol(tr) -> bool:
    """A transform of a protocol before issue 32 (a user's file): an `update` of four required positional arguments
    and no `**extra` (vector: `update(u, grad, state, t)`; block: `update(x, state, t, ctr)`)."""
    try:
        ps = inspect.signature(tr.update).parameters.values()
    except (TypeError, ValueError, AttributeError):
        return False
    req = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    return len(req) == 4 and not any(p.kind == p.VAR_KEYWORD for p in ps)
