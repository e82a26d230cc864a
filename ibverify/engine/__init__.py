"""Run loop and engines (compiled log-frame kernels, numpy reference, mpmath); sweeps in lanes."""

from .lanes import run_lanes
from .run import ENGINES, Run, log_checkpoints, run

__all__ = ["ENGINES", "Run", "log_checkpoints", "run", "run_lanes"]
