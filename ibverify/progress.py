"""Progress display (tqdm): a bar with steps, rate and ETA on a terminal; silent in CI / non-TTY.

Public API (used by `train`, `verify` and the network runs):
    Progress(label, enabled=None, stream=sys.stderr)   enabled=None: on iff stream is a TTY and $CI unset
    .steps(done, total, extra="")   advance the bar to `done` of `total` steps
    .message(msg)                   a one-line status (no bar)
    .close()                        erase the line
    .label                          settable; shown in front of the bar or message
tqdm is imported with this module; the commands import it only once their arguments are parsed.
"""

from __future__ import annotations

import os
import sys

from tqdm import tqdm


class Progress:
    def __init__(self, label: str = "", enabled: bool | None = None, stream=sys.stderr):
        if enabled is None:
            enabled = _isatty(stream) and not os.environ.get("CI")
        self.enabled, self.stream, self.label = bool(enabled), stream, label
        self._bar = None
        self._kind = None  # "steps" or "message"

    def _open(self, kind: str, total=None, initial: int = 0):
        self.close()
        fmt = "{desc}" if kind == "message" else None
        self._bar = tqdm(total=total, initial=initial, desc=self.label, file=self.stream, unit="step",
                         unit_scale=True, dynamic_ncols=True, leave=False, mininterval=0.2, bar_format=fmt)
        self._kind = kind
        return self._bar

    def steps(self, done: int, total: int, extra: str = "") -> None:
        if not self.enabled:
            return
        bar = self._bar
        if bar is None or self._kind != "steps" or bar.total != total:
            bar = self._open("steps", total=total, initial=done)  # a resumed run starts at `done`
        bar.set_description_str(self.label, refresh=False)
        if extra:
            bar.set_postfix_str(extra, refresh=False)
        bar.update(max(0, done - bar.n))
        if done >= total:
            bar.refresh()  # the last frame is drawn even inside tqdm's minimum interval

    def message(self, msg: str) -> None:
        if not self.enabled:
            return
        bar = self._bar if self._kind == "message" else self._open("message")
        bar.set_description_str(f"{self.label} {msg[:100]}".strip().replace("\n", " "))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar, self._kind = None, None


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
