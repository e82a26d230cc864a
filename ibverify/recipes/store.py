"""The run store: every run of a verification is made here, from its recipe, once.

`run(recipe)` returns the run a recipe describes, made once under the recipe's key (the hash of its whole
content, `Recipe.key`): in this process (memo) and, through `cache.shared_value` ($IBVERIFY_RUNS), in every
process of a cluster, so a claim and its controls train each run once. A block run continues the longest shorter
run of its lineage (the same recipe but for its horizon) that this process holds instead of repeating its steps
(the ×10 extensions of an undecided example; the engine's `extend`, bit-identical). `data(recipe)` and
`model(recipe)` give the built data and model a check scores a run against; `get(kind, key, make)` keeps a value
derived from data (references such as certified max margins) under a content key. `checkpoint` gives the
resumable checkpoint file of a long run under a cache root, so a killed claim continues where it stopped.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable

from ..cache import ContentMemo, fingerprint, shared_value
import numpy as np

from ..data import Dataset
from ..engine import Run, run as engine_run
from .recipe import DataRecipe, Recipe


class RunStore(ContentMemo):
    """The runs of one verification (the runner makes one per process; a check gets it as `ctx.store`)."""

    _process: "RunStore | None" = None

    def __init__(self):
        self._memo: dict[tuple, Any] = {}
        self._data: dict[str, Dataset] = {}
        self._lineage: dict[str, list[Run]] = {}   # block runs by lineage

    def __reduce__(self):
        """A store travels (in a pickled check context or example task, to a Dask worker) as a reference to the
        process store of the process it arrives in, never with its runs: runs cross processes through
        $IBVERIFY_RUNS, and a store another thread is filling cannot be pickled consistently."""
        return (RunStore.process, ())

    @classmethod
    def process(cls) -> "RunStore":
        """The store shared by every check of this process that was given none."""
        if cls._process is None:
            cls._process = cls()
        return cls._process

    def get(self, kind: str, key: Any, make: Callable[[], Any]) -> Any:
        """The value stored under (kind, key), made once by `make()` (in this process and across workers).
        `key` must determine the value exactly (content, not names)."""
        if (kind, key) not in self._memo:
            self._memo[kind, key] = shared_value(kind, key, make)
        return self._memo[kind, key]

    def data(self, recipe: DataRecipe) -> Dataset:
        """The dataset of a data recipe, built once per content."""
        key = fingerprint(recipe.identity())
        if key not in self._data:
            self._data[key] = recipe.build()
        return self._data[key]

    def model(self, recipe: Recipe):
        """The model of a recipe (None for the vector loop), built on its data."""
        return None if recipe.model is None else recipe.model.build(self.data(recipe.data))

    def run(self, recipe: Recipe, *, progress: Callable[[int, int], None] | None = None, **io) -> Run:
        """The run of `recipe`, made once. `progress` and `io` (warn; save_to, save_every, resume: a checkpoint
        file, see `checkpoint`) change how it is made, not what it is."""
        data = self.data(recipe.data)
        opts = dict(recipe.options)
        if recipe.model is None:
            return self.get("run", recipe.key(), lambda: engine_run(
                data.Z, recipe.spec, recipe.steps, checkpoints=_cps(recipe), engine=recipe.engine,
                progress=progress, **opts, **io))
        model = self.model(recipe)
        held = self._lineage.setdefault(recipe.lineage(), [])
        prev = max((r for r in held if r.horizon <= recipe.steps), key=lambda r: r.horizon, default=None)
        value = self.get("run", recipe.key(), lambda: engine_run(
            (data.X, data.y), recipe.spec, recipe.steps, model=model, theta0=recipe.theta0,
            init_seed=recipe.init_seed, init_scale=recipe.init_scale, checkpoints=_cps(recipe),
            engine=recipe.engine, progress=progress, extend=prev, **opts, **io))
        if all(r is not value for r in held):
            held.append(value)
        return value

    @staticmethod
    def checkpoint(root: str | Path, claim_id: str, identity: bytes) -> dict:
        """The engine options that checkpoint a run under root/claim_id/ and resume it if a file is there."""
        key = hashlib.sha256(identity).hexdigest()[:20]
        path = Path(root) / claim_id / f"{key}.ckpt"
        path.parent.mkdir(parents=True, exist_ok=True)
        return {"save_to": str(path), "resume": path.exists(), "save_every": 10.0}


def _cps(recipe: Recipe):
    c = recipe.checkpoints
    return c if c is None or isinstance(c, int) else np.asarray(c, dtype=np.int64)


def store_of(ctx) -> RunStore:
    """The run store of a check context (the process's store when the context was given none)."""
    return getattr(ctx, "store", None) or RunStore.process()
