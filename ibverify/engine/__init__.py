"""Run loop and engines (compiled log-frame kernels, numpy reference, mpmath); sweeps in lanes."""

from ._kernel_cache import source_keyed_cache

with source_keyed_cache():  # every jitted module is imported here, so its kernels cache by source hash
    from . import kernels, network, polar  # noqa: F401
    from .lanes import run_lanes
    from .run import ENGINES, Run, log_checkpoints, run

__all__ = ["ENGINES", "Run", "log_checkpoints", "run", "run_lanes"]
