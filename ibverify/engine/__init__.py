"""The engine: one entry `run` (engine/run.py) over two implementations — the vector loop (the linear model
sample by sample) and the block loop (any model over named blocks, full batch) — each with compiled
log-frame kernels and a numpy reference; sweeps of vector runs in lanes."""

from ._kernel_cache import source_keyed_cache

with source_keyed_cache():  # every jitted module is imported here, so its kernels cache by source hash
    from . import kernels, network, polar  # noqa: F401
    from .lanes import run_lanes
    from .run import ENGINES, Run, log_checkpoints, run

__all__ = ["ENGINES", "Run", "log_checkpoints", "run", "run_lanes"]
