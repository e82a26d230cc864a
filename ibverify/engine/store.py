"""The run store: a run's identity, its reuse in this process, across Dask workers and on disk.

A run is identified by its key: the data and model settings (`RUN_KEYS`), the resolved optimizer spec,
the horizon, the checkpoints and θ0's seed. `get` returns the stored run or makes it once: in this
process (memo), shared by every process of a cluster through `cache.shared_value` ($IBVERIFY_RUNS),
so a claim and its controls train each run once. `extended` makes a longer run of the same lineage (the same
run but for its horizon and checkpoints) by continuing the longest shorter one this process holds, instead of
repeating its steps (the ×10 extensions of an undecided example). `checkpoint` gives the resumable checkpoint
file of a long run under a cache root, so a killed claim continues where it stopped.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable, Mapping

from ..cache import shared_value

# the settings of a block run besides its optimizer (data, model, horizon, start)
RUN_KEYS = ("dataset", "n", "d", "teacher_width", "teacher_q", "rows", "cols", "data_seed", "model", "width", "q",
            "depth", "steps", "checkpoints", "start", "init_scale", "zero_init")
HORIZON_KEYS = ("steps", "checkpoints", "start")   # what a lineage's runs may differ in


class RunStore:
    """The runs of one verification (the runner makes one per process; a check gets it as `ctx.store`)."""

    _process: "RunStore | None" = None

    def __init__(self):
        self._memo: dict[tuple, Any] = {}
        self._lineage: dict[tuple, list[Any]] = {}   # runs by lineage

    @classmethod
    def process(cls) -> "RunStore":
        """The store shared by every check of this process that was given none."""
        if cls._process is None:
            cls._process = cls()
        return cls._process

    @staticmethod
    def key(cfg: Mapping[str, Any], spec, seed: int | None) -> tuple:
        """The identity of a run: its RUN_KEYS settings, the resolved spec and θ0's seed."""
        settings = tuple(sorted((k, cfg[k]) for k in RUN_KEYS if k in cfg))
        return (seed, settings, tuple(sorted(spec.to_json().items())))

    def get(self, kind: str, key: tuple, make: Callable[[], Any]) -> Any:
        """The value stored under (kind, key), made once by `make()` (in this process and across workers)."""
        if (kind, key) not in self._memo:
            self._memo[kind, key] = shared_value(kind, key, make)
        return self._memo[kind, key]

    @staticmethod
    def lineage(cfg: Mapping[str, Any], spec, seed: int | None) -> tuple:
        """The identity of a run but for its horizon (HORIZON_KEYS): the runs one example is extended through."""
        return RunStore.key({k: v for k, v in cfg.items() if k not in HORIZON_KEYS}, spec, seed)

    def extended(self, kind: str, key: tuple, lineage: tuple, steps: int, make: Callable[[Any], Any]) -> Any:
        """`get` for a run of `steps` steps, made by make(prev): prev is the longest run of the same lineage (the same
        run but for its horizon, e.g. `lineage(cfg, …)`) with at most that many steps that this process already
        holds (None if none), for the engine to continue (`engine.run(..., extend=prev)`)."""
        held = self._lineage.setdefault((kind, lineage), [])
        prev = max((r for r in held if r.horizon <= steps), key=lambda r: r.horizon, default=None)
        value = self.get(kind, key, lambda: make(prev))
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
