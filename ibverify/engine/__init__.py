"""The engine: one entry `run` (engine/run.py) over two implementations — the vector loop (the linear model
sample by sample) and the block loop (any model over named blocks, full batch) — each with compiled
log-frame kernels and a numpy reference; sweeps of vector runs in lanes.

Kernels compile lazily, at their first call, and only those a run reaches: importing the engine compiles
nothing, and each optimizer family and network model has its own kernel variant (issue 21: a fast first run).
`kernels_compiled()` counts the kernel compilations of this process (numba cache misses), so a command can say
whether its first run compiled the kernels or loaded them from the cache.
"""

from ._kernel_cache import source_keyed_cache

with source_keyed_cache():  # every jitted module is imported here, so its kernels cache by source hash
    from . import kernels, lanes, network, polar  # noqa: F401
    from .lanes import run_lanes
    from .run import ENGINES, Run, log_checkpoints, run


def dispatchers() -> dict:
    """Every jitted kernel of the engine by name, each once: the closure variants, then the modules' functions."""
    from numba.core.registry import CPUDispatcher

    named = [(f"kernels.moment_chunk[adam={a},plain={p},single={one}]", f)
             for (a, p, one), f in kernels.MOMENT_CHUNKS.items()]
    named += [(f"network.advance[model={m},polar={p},ns5={n5},vec={v},adam={a}]", f)
              for (m, p, n5, v, a), f in network._ADVANCE.items()]
    for mod in (kernels, lanes, network, polar):
        short = mod.__name__.rsplit(".", 1)[-1]
        named += [(f"{short}.{name}", f) for name, f in vars(mod).items()
                  if isinstance(f, CPUDispatcher) and f.py_func.__module__ == mod.__name__]
    out, seen = {}, set()
    for name, f in named:
        if id(f) not in seen:   # (module-level aliases of a variant, e.g. kernels.adam_chunk, are listed once)
            seen.add(id(f))
            out[name] = f
    return out


def kernels_compiled() -> int:
    """How many kernel specializations this process has compiled (not loaded from numba's cache) so far."""
    return sum(sum(f.stats.cache_misses.values()) for f in dispatchers().values())


__all__ = ["ENGINES", "Run", "dispatchers", "kernels_compiled", "log_checkpoints", "run", "run_lanes"]
