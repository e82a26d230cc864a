"""A test-only claim check that kills its own Dask worker process the first time it runs.

The first attempt creates the marker file `params["marker"]` and sends SIGKILL to its own process;
the scheduler then reschedules the task (the worker died), and the retry, seeing the marker, returns
a fixed outcome. Outside a Dask worker (the sequential reference run) it never kills anything.
"""

import os
import signal
from pathlib import Path

from ibverify.evidence import Outcome, Series


def _in_dask_worker() -> bool:
    try:
        from distributed import get_worker

        get_worker()
        return True
    except (ImportError, ValueError):
        return False


def kill_once(ctx):
    marker = Path(ctx.params["marker"])
    if _in_dask_worker() and not marker.exists():
        marker.write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    value = 0.5 + ctx.seed + len(ctx.claim.id) / 100
    return Outcome(holds=True, figure=f"survived a killed worker: {value}", figures={"value": value},
                   series=[Series("constant", [1.0, 2.0], [value, value], log_x=False, log_y=False)], examples=1)
