"""Test-only claim checks: `kill_once` kills its own Dask worker process the first time it runs;
`pure_property` is a hypothesis property whose evaluate only returns a value; `impure_property` one
whose evaluate also collects evidence on the side (for even seeds), which must never be lost.

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


def pure_property(ctx):
    """For drawn (seed, size): the mean of `size` uniform draws lies in [0, 1] (always true)."""
    import numpy as np
    from hypothesis import strategies as st

    from ibverify.checks.prop import Example, run_property

    def evaluate(ex):
        s, n = ex
        m = float(np.random.default_rng(s).uniform(size=n).mean())
        return Example(0.0 <= m <= 1.0, {"mean": m}, description=f"seed {s}, n {n}")

    res = run_property(ctx, st.tuples(st.integers(0, 2**31), st.integers(1, 50)), evaluate)
    means = [e.figures["mean"] for e in res.examples]
    return Outcome(holds=res.holds, figure=f"{len(means)} means, max {max(means)!r}", figures={"max": max(means)},
                   series=[Series("mean", list(range(len(means))), means, log_x=False, log_y=False)],
                   examples=len(means))


def impure_property(ctx):
    """As pure_property, but evaluate appends (seed, mean) to a list of the check for even seeds, and
    the outcome is built from that list too."""
    import numpy as np
    from hypothesis import strategies as st

    from ibverify.checks.prop import Example, run_property

    collected = []

    def evaluate(ex):
        s, n = ex
        m = float(np.random.default_rng(s).uniform(size=n).mean())
        if s % 2 == 0:
            collected.append((s, m))
        return Example(0.0 <= m <= 1.0, {"mean": m}, description=f"seed {s}, n {n}")

    res = run_property(ctx, st.tuples(st.integers(0, 2**31), st.integers(1, 50)), evaluate)
    side = [m for _, m in collected]
    return Outcome(holds=res.holds, figure=f"{len(res.examples)} examples, {len(side)} collected: {side!r}",
                   figures={"collected": float(len(side))},
                   series=[Series("collected", list(range(len(side))), side, log_x=False, log_y=False)],
                   examples=len(res.examples))


def failing_property(ctx):
    """As pure_property, but an example fails when its size n is `params["fail_from"]` or more (0: every example
    fails): the property stops at its first counterexample."""
    import numpy as np
    from hypothesis import strategies as st

    from ibverify.checks.prop import Example, run_property

    fail_from = int(ctx.params.get("fail_from", 0))

    def evaluate(ex):
        s, n = ex
        m = float(np.random.default_rng(s).uniform(size=n).mean())
        return Example(n < fail_from, {"mean": m}, description=f"seed {s}, n {n}")

    res = run_property(ctx, st.tuples(st.integers(0, 2**31), st.integers(1, 50)), evaluate)
    means = [e.figures["mean"] for e in res.examples]
    return Outcome(holds=res.holds, figure=f"{len(means)} means, last {means[-1]!r}", figures={"last": means[-1]},
                   series=[Series("mean", list(range(len(means))), means, log_x=False, log_y=False)],
                   examples=len(means))
