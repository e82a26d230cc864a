"""Run loop and engines (compiled log-frame kernels, numpy reference, mpmath)."""

from .run import ENGINES, Run, log_checkpoints, run

__all__ = ["ENGINES", "Run", "log_checkpoints", "run"]
