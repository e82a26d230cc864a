"""Progress display: a one-line bar with steps and ETA on a terminal; silent in CI / non-TTY."""

from __future__ import annotations

import os
import sys
import time


class Progress:
    def __init__(self, label: str = "", enabled: bool | None = None, stream=sys.stderr):
        if enabled is None:
            enabled = stream.isatty() and not os.environ.get("CI")
        self.enabled, self.stream, self.label = enabled, stream, label
        self.t0 = time.perf_counter()
        self.last = 0.0

    def steps(self, done: int, total: int, extra: str = "") -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.last < 0.2 and done < total:
            return
        self.last = now
        frac = done / total if total else 1.0
        eta = (now - self.t0) * (1 - frac) / frac if frac > 0 else float("nan")
        bar = "#" * int(30 * frac)
        self.stream.write(f"\r{self.label} [{bar:<30}] {frac:6.1%} {done:.3g}/{total:.3g} steps ETA {eta:5.1f}s {extra}")
        self.stream.flush()

    def message(self, msg: str) -> None:
        if self.enabled:
            self.stream.write(f"\r\033[K{self.label} {msg[:100]}")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()
