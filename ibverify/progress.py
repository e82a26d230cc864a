"""Progress display of the long commands (`train`, `bias`, `verify`'s network runs), wherever they run.

Three front ends, chosen from where the stream goes (issue 53 item 3):
    terminal   a tqdm bar with steps, rate and ETA (stream a TTY, $CI unset)
    notebook   tqdm.auto's notebook bar (an IPython kernel is loaded; std tqdm where ipywidgets is missing)
    log        plain lines (anything else: a log file, a pipe, CI): one when a horizon is reached, one a minute
               (LOG_EVERY_S) while a run goes on, and each status message once
The label names what runs (the command's optimizer and model), `message` the dataset, and each line or bar the
horizon: "bias gd · two-layer: dataset 1/3 (teacher-0) · horizon 1e5: 100000/100000 steps (100 %), 12 s".
enabled=False (`--quiet`) shows nothing.

Public API:
    Progress(label, enabled=None, stream=None)   stream None: sys.stderr as it is when made; enabled=None: on, in
                                                 the front end the stream calls for
    .steps(done, total, extra="")   advance to `done` of `total` steps (a new total: a new horizon)
    .message(msg)                   a one-line status (the context of the next steps: dataset, model)
    .close()                        erase the bar
    .label                          settable; shown in front of the bar, message or line
tqdm is imported with this module; the commands import it only once their arguments are parsed.
"""

from __future__ import annotations

import os
import sys
import time

from tqdm import tqdm

LOG_EVERY_S = 60.0   # a log line at least this often while a horizon runs (and one when it is reached)


def horizon_text(total: int) -> str:
    """A step count as the horizons are named: 1e5, 3e6 (a power of ten times 1–9), else the number."""
    s = f"{total:.0e}".replace("e+0", "e").replace("e+", "e")
    return s if float(s) == total else str(total)


def front_end(stream) -> str:
    """"terminal", "notebook" or "log": where a run's progress goes (module docstring)."""
    if _isatty(stream) and not os.environ.get("CI"):
        return "terminal"
    if "ipykernel" in sys.modules and stream in (sys.stderr, sys.stdout, sys.__stderr__):
        return "notebook"
    return "log"


class Progress:
    def __init__(self, label: str = "", enabled: bool | None = None, stream=None):
        stream = sys.stderr if stream is None else stream   # the stderr of now (a notebook or pytest swaps it)
        self.enabled, self.stream, self.label = enabled is not False, stream, label
        self.mode = front_end(stream) if self.enabled else "off"
        self.context = ""   # the latest message: the dataset (and model) the next steps belong to
        self._bar = None
        self._kind = None  # "steps" or "message"
        self._total, self._t0, self._last = None, 0.0, 0.0

    def _desc(self, total: int | None = None) -> str:
        parts = [p for p in (self.label, self.context) if p]
        if total is not None:
            parts.append(f"horizon {horizon_text(total)}")
        return " · ".join(parts)

    def _open(self, kind: str, total=None, initial: int = 0):
        self.close()
        fmt = "{desc}" if kind == "message" else None
        bar_class = tqdm
        if self.mode == "notebook":
            from tqdm.auto import tqdm as bar_class   # the notebook front end where ipywidgets is installed
        self._bar = bar_class(total=total, initial=initial, desc=self._desc(total if kind == "steps" else None),
                              file=self.stream, unit="step", unit_scale=True, dynamic_ncols=True, leave=False,
                              mininterval=0.2, bar_format=fmt)
        self._kind = kind
        return self._bar

    def steps(self, done: int, total: int, extra: str = "") -> None:
        if not self.enabled:
            return
        if self.mode == "log":
            self._log_steps(done, total, extra)
            return
        bar = self._bar
        if bar is None or self._kind != "steps" or bar.total != total:
            bar = self._open("steps", total=total, initial=done)  # a resumed run starts at `done`
        bar.set_description_str(self._desc(total), refresh=False)
        if extra:
            bar.set_postfix_str(extra, refresh=False)
        bar.update(max(0, done - bar.n))
        if done >= total:
            bar.refresh()  # the last frame is drawn even inside tqdm's minimum interval

    def _log_steps(self, done: int, total: int, extra: str) -> None:
        now = time.monotonic()
        if total != self._total:   # a new horizon (or a new run): its clock starts
            self._total, self._t0, self._last = total, now, now
        if done < total and now - self._last < LOG_EVERY_S:
            return
        self._last = now
        pct = f" ({100 * done / total:.0f} %)" if total else ""
        self._print(f"{self._desc(total)}: {done}/{total} steps{pct}, {now - self._t0:.0f} s"
                    + (f" ({extra})" if extra else ""))
        if done >= total:
            self._total = None   # the next call (even of the same horizon: the next dataset) starts anew

    def message(self, msg: str) -> None:
        if not self.enabled:
            return
        self.context = msg[:100].replace("\n", " ").strip()
        if self.mode == "log":
            self._print(self._desc())
            return
        bar = self._bar if self._kind == "message" else self._open("message")
        bar.set_description_str(self._desc())

    def _print(self, line: str) -> None:
        try:
            print(line, file=self.stream, flush=True)
        except (OSError, ValueError):   # a closed log: progress is never worth an error
            pass

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar, self._kind = None, None


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
