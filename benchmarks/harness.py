"""The benchmarks' shared harness (`bench.py`, `bench_networks.py`).

  * agreement first: `vs_reference` gives each contender's relative difference to a reference result, which a
    script checks against its tolerance before it times anything;
  * interleaved rounds: `rounds` runs every contender once per round on the same fixed work, the order rotated
    from round to round, so a change of machine load hits all of them alike; wall and CPU seconds;
  * medians: `rate` (median of the per-round rates), `ratio` (median of the per-round ratios);
  * the record of a run: `created` (date, UTC), `uptime` and `load_average` (machine load), `machine`;
  * output: `table` (markdown rows), `write_json` (through ibverify's one JSON cleaner).

Import it after putting the repository root on sys.path (the scripts do).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numba
import numpy as np

from ibverify.jsonio import plain


def created() -> str:
    """The date and minute of a measurement, UTC."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def git(*args: str) -> str:
    """`git ARGS` in this checkout, its output stripped; "" where git or the checkout is unavailable."""
    try:
        return subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent.parent, capture_output=True,
                              text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def load_average(sep: str = ", ") -> str:
    """The 1, 5 and 15 minute load averages, e.g. `3.50, 4.20, 4.10`."""
    return sep.join(f"{x:.2f}" for x in os.getloadavg())


def uptime() -> str:
    """`uptime`'s line (time, up, users, load average), or the load average alone where it cannot run."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average: " + load_average()


def machine(**peers: str | None) -> dict:
    """Python, platform, CPU count, numpy and numba versions, then the given peers' versions (None: absent)."""
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "numpy": np.__version__, "numba": numba.__version__, **peers}


def rel_diff(x: Any, ref: Any) -> float:
    """max |x − ref| / max |ref|: arrays, or dicts of arrays (named blocks; the largest block's value)."""
    if isinstance(ref, dict):
        return max(rel_diff(x[k], ref[k]) for k in ref)
    a, b = np.asarray(x, float), np.asarray(ref, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def vs_reference(reference: Any, results: dict[str, Any]) -> dict[str, float]:
    """{"<name>_vs_reference": rel_diff(result, reference)} for each contender's result of the same work."""
    return {f"{name}_vs_reference": rel_diff(x, reference) for name, x in results.items()}


@dataclass
class Timing:
    """Seconds per round of each contender: wall clock and CPU time of this process."""

    wall: dict[str, list[float]]
    cpu: dict[str, list[float]]


def rounds(contenders: dict[str, Callable[[], Any]], n_rounds: int) -> Timing:
    """contenders: name -> zero-argument callable (fixed work). Each round runs every contender once
    (interleaved, order rotated per round)."""
    names = list(contenders)
    t = Timing({k: [] for k in names}, {k: [] for k in names})
    for r in range(n_rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            w0, c0 = time.perf_counter(), time.process_time()
            contenders[k]()
            t.wall[k].append(time.perf_counter() - w0)
            t.cpu[k].append(time.process_time() - c0)
    return t


def rate(work: float, seconds: list[float]) -> float:
    """Median over rounds of work per second."""
    return statistics.median(work / s for s in seconds)


def ratio(times: dict[str, list[float]], a: str, b: str) -> float:
    """Median over rounds of time(b)/time(a): how many times faster a is than b."""
    return statistics.median(tb / ta for ta, tb in zip(times[a], times[b], strict=True))


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """A markdown table's lines: the header, the rule, one line per row (cells as given, str()-ed)."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write the results as JSON (indent 1; numpy values made plain, NaN/inf written as JSON's NaN/Infinity)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(plain(obj, keep_nonfinite=True), indent=1))
    return path
