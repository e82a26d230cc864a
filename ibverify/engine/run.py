"""The one engine entry: `run(data, spec, steps, model=…)` → `Run`, for every model and optimizer.

Which implementation runs follows the model and the optimizer table (`ibverify.optim.table`):
  model None    the linear model trained sample by sample on label-folded data Z (per-sample, mini-batch or
                full batch; `vector` kernels, per-coordinate log frame; engines compiled, reference, mpmath)
  a block model any model over named blocks (a linear model is the one-block degree-1 case), full batch on
                (X, y) (`block` kernels, per-group log frame; engines compiled, reference)
Both implementations are held to their numpy references (tests/engine, tests/networks).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import IbverifyError
from ..models import initial_point
from ..optim import OptimizerSpec
from ..optim.logframe import ScheduleWarning
from ..optim.optimizers import make_optimizer
from . import block, vector
from .trajectory import INTERRUPT_AT_ENV, KILL_AT_ENV, Run, log_checkpoints

ENGINES = vector.ENGINES
__all__ = ["ENGINES", "INTERRUPT_AT_ENV", "KILL_AT_ENV", "Run", "log_checkpoints", "run"]


def _xy(data) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(data, tuple):
        return data
    return data.X, data.y


def run(data, spec: OptimizerSpec, steps: int, *, model=None, theta0=None, init_seed: int | None = None,
        init_scale: float = 0.5, checkpoints=None, engine: str | None = None, warn: bool = True, **kw) -> Run:
    """Run `spec` for `steps` steps and record θ at `checkpoints` (a count or the step counts).

    model None: `data` is label-folded Z (or has `.Z`), θ0 = 0, checkpoints default 30; keyword options of
    `engine.vector.run` (log_frame, dps, progress, save_to, save_every, resume).
    A block model: `data` has X, y (or is (X, y)); θ0 is `theta0`, or `initial_point(model, init_seed,
    init_scale)` (zero without a seed); checkpoints default 16 (an int gives that many log-spaced ones);
    `warn=False` silences the schedule-range warning; options of `engine.block.run` (sig, progress,
    save_to, save_every, resume, chunk). The run records θ0 and its seed."""
    if model is None:
        Z = getattr(data, "Z", data)
        return vector.run(Z, spec, steps, checkpoints=30 if checkpoints is None else checkpoints,
                          engine=engine, **kw)
    X, y = _xy(data)
    if theta0 is None:
        theta0 = initial_point(model, init_seed, init_scale)
    elif init_seed is not None:
        raise IbverifyError("give theta0 or init_seed, not both")
    if np.isscalar(checkpoints):
        checkpoints = log_checkpoints(steps, int(checkpoints))
    with warnings.catch_warnings():
        if not warn:
            warnings.simplefilter("ignore", ScheduleWarning)
        opt = make_optimizer(spec, params=theta0, L=model.L, warn=warn)
    out = block.run(model, X, y, opt, steps, theta0, loss=opt.spec.loss, checkpoints=checkpoints, engine=engine,
                    **kw)
    out.init_seed = init_seed
    return out
