"""What every run returns — one `Run` for every model — its log-spaced checkpoints, and the test hooks.

A run records θ at its checkpoints. A vector run (the linear model trained sample by sample) holds its
iterates as rows of `ws` (one block "w"); a block run holds named blocks in `thetas` and, per checkpoint,
the evidence the block loop measures on the way (`log_loss`, `q_min`, `align`, `track`, `adam_dev`).
Diagnostics use one vocabulary for every model (`DIAGNOSTICS`).
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import IbverifyError
from ..blocks import Params, flatten

DIAGNOSTICS = {
    "flushed_weights": "vector: steps whose every sample weight flushed to 0 (log frame re-based)",
    "frame_shifts": "vector: log-frame re-basings",
    "stalled_steps": "steps that left θ unchanged although the gradient was nonzero",
    "stalled_streak": "the longest final run of stalled steps",
    "frozen": "the run's last ≥ max(1000, 4 epochs) steps all stalled",
    "max_log_scale": "vector: the largest log-frame scale reached",
    "underflow": "block: counters of weights, momenta, v or directions that underflowed to 0",
    "diverged": "block: a non-finite θ stopped the run",
}

# Test hooks (documented, read once per run, honoured by every compiled loop): at the first chunk boundary
# ≥ the given step the run sends itself SIGINT (exactly what Ctrl-C does) or SIGKILL (a crash), so
# interrupt/resume tests choose the step instead of racing the engine's speed.
INTERRUPT_AT_ENV = "IBVERIFY_INTERRUPT_AT_STEP"
KILL_AT_ENV = "IBVERIFY_KILL_AT_STEP"


@dataclass
class Run:
    spec: Any                        # the OptimizerSpec (vector run) or the block Optimizer's spec
    engine: str                      # compiled | reference | mpmath
    checkpoints: Any                 # step counts at which θ was recorded (int64 array; a list for block runs)
    horizon: int                     # steps run
    ws: np.ndarray | None = None     # vector run: iterates, one row per checkpoint
    block_thetas: list[Params] | None = None  # block run: θ at each checkpoint
    theta0: Params | None = None     # the start (None: θ0 = 0)
    init_seed: int | None = None     # the seed θ0 was drawn with (None: given or zero)
    diagnostics: dict = field(default_factory=dict)
    records: dict[str, list[float]] = field(default_factory=dict)  # block run: per-checkpoint evidence
    optimizer: Any = None            # block run: the chain that ran (own geometry, rate ν_t)
    seconds: float = 0.0
    final_state: Any = None          # compiled block run: its state after the last step (`extend` continues it)

    @cached_property
    def thetas(self) -> list[Params]:
        return self.block_thetas if self.block_thetas is not None else [{"w": w} for w in self.ws]

    @property
    def theta(self) -> Params:
        return self.thetas[-1]

    @property
    def w(self) -> np.ndarray:
        return self.ws[-1] if self.ws is not None else flatten(self.theta)

    # block runs: the evidence at each checkpoint (block.RECORDS; empty for a vector run)
    log_loss = property(lambda self: self.records.get("log_loss", []))
    q_min = property(lambda self: self.records.get("q_min", []))
    align = property(lambda self: self.records.get("align", []))
    track = property(lambda self: self.records.get("track", []))
    adam_dev = property(lambda self: self.records.get("adam_dev", []))

    @property
    def underflow(self) -> dict:
        return self.diagnostics.get("underflow", {})

    @property
    def diverged(self) -> bool:
        return bool(self.diagnostics.get("diverged", False))


def log_checkpoints(steps: int, count: int = 30, start: int = 1) -> np.ndarray:
    """About `count` log-spaced step counts in [start, steps], always including `steps`."""
    if steps < 1:
        raise IbverifyError(f"number of steps must be >= 1, got {steps}")
    pts = np.round(np.logspace(np.log10(max(start, 1)), np.log10(steps), max(count, 2))).astype(np.int64)
    return np.unique(np.r_[pts[pts >= 1], steps])


def frozen(streak: int, n: int, b: int) -> bool:
    """A run is frozen when its last ≥ max(1000, 4 epochs) steps all left θ unchanged."""
    return streak >= max(1000, 4 * -(-n // b))


def hook_step(name: str) -> int | None:
    raw = os.environ.get(name)
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise IbverifyError(f"{name} must be an integer step, got {raw!r}") from None


class Hooks:
    """The interrupt/kill test hooks of one run, checked after each chunk."""

    def __init__(self):
        self.interrupt_at, self.kill_at = hook_step(INTERRUPT_AT_ENV), hook_step(KILL_AT_ENV)

    def after_chunk(self, t: int) -> None:
        if self.kill_at is not None and t >= self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.interrupt_at is not None and t >= self.interrupt_at:
            self.interrupt_at = None
            signal.raise_signal(signal.SIGINT)  # exactly a Ctrl-C, handled by the caller's saver
