"""A torch optimizer's linear-model run without ibverify's transform round trip (issue 36: `bias` on `torch:NAME`).

The engine's reference loop (engine.vector.iterate_chain) calls a torch optimizer through ibverify's transform
protocol (a numpy step out of a torch step, added to the engine's own w, copied back in): ≈ 60 µs a step. `run` makes
the same run in ≈ 37 µs (measured on 14 × 9 data, torch imported): the same sample order (optim.Sampler), the engine's
log-domain batch gradient −(1/b) Σ e^{l_i} z_i computed in numpy on a view of the torch parameter and handed to torch
as its .grad without a copy, the group lr set to η_t = lr·t^(−lr_decay) before each step, the same checkpoints, the
same diagnostics (stalled steps: w unchanged while the gradient is not 0) and the same one-line error for a non-finite
iterate. Its iterates equal the engine's to rounding (tests/test_torchloop.py: ≤ 1e-12 relative over 2000 steps for
Adam at ε = 0, SGD with momentum, Adagrad, mini-batch SGD): the engine adds the torch step to its own float64 w, this
loop keeps torch's. `ForeignStore` is a run store that makes a torch optimizer's vector runs here and every other run
as RunStore does; `bias` uses it (runner.bias).
"""

from __future__ import annotations

import time

import numpy as np

from .. import IbverifyError
from ..engine.trajectory import Run, frozen, log_checkpoints
from ..optim import Sampler
from ..optim.backend import Float64
from ..recipes import RunStore


def eligible(spec) -> bool:
    """A torch optimizer (torch:NAME, a torch.optim class) on the logistic or exponential loss."""
    made = getattr(getattr(spec.user, "user", None), "_made", None) if spec.user is not None else None
    return (str(spec.name).startswith("torch:") and isinstance(made, tuple) and len(made) == 3
            and isinstance(made[0], type) and spec.loss in ("logistic", "exponential"))


def run(Z: np.ndarray, spec, steps: int, checkpoints=30, progress=None) -> Run:
    """The run of torch optimizer `spec` (eligible) for `steps` steps on label-folded data Z (module docstring)."""
    import torch

    Z = np.ascontiguousarray(Z, dtype=np.float64)
    n, d = Z.shape
    spec = spec.resolved(n)
    cls, kwargs, _ = spec.user.user._made
    cps = log_checkpoints(steps, checkpoints) if np.isscalar(checkpoints) else np.asarray(checkpoints, np.int64)
    t0 = time.perf_counter()
    p = torch.zeros(d, dtype=torch.float64, requires_grad=True)
    w = p.detach().numpy()   # a view of p: the torch step updates it in place
    try:
        opt = cls([p], lr=float(spec.lr), **kwargs)
    except (TypeError, ValueError) as e:
        raise IbverifyError(f"{spec.name}: torch.optim.{cls.__name__} refused its arguments: "
                            f"{' '.join(str(e).split())}") from None
    group, eta0, a = opt.param_groups[0], float(spec.lr), float(spec.lr_decay)
    b = spec.batch_size
    sampler = Sampler(n, b, spec.order, spec.seed)
    ws = np.empty((len(cps), d))
    stalled = streak = j = 0
    last = int(cps[-1])
    for t in range(1, last + 1):
        zb = Z[sampler.next(1)[0]]
        g = -(np.exp(Float64.log_weights(zb @ w, spec.loss))[:, None] * zb).sum(axis=0) / b   # engine.vector's
        before = w.copy()
        p.grad = torch.from_numpy(g)
        group["lr"] = eta0 * float(t) ** (-a)
        opt.step()
        if not np.all(np.isfinite(w)):
            raise IbverifyError(f"{spec.name}: non-finite iterate by step {t} (overflow: reduce --lr or check the "
                                f"knobs and the data scale)")
        still = bool(np.array_equal(w, before) and np.any(g != 0))
        stalled += still
        streak = streak + 1 if still else 0
        if progress and t % 1000 == 0:
            progress(t, last)
        while j < len(cps) and cps[j] == t:
            ws[j] = w
            j += 1
    diag = {"stalled_steps": stalled, "stalled_streak": streak, "frozen": frozen(streak, n, b)}
    return Run(spec, "reference", cps, last, ws=ws, diagnostics=diag, seconds=time.perf_counter() - t0)


class ForeignStore(RunStore):
    """A run store whose torch optimizers' linear-model runs are made by `run` (under the same content key, so a
    claim and its judge share them); every other run as RunStore makes it. Sent to a Dask worker it becomes that
    worker's process store (RunStore.__reduce__), which makes every run the engine's way."""

    def run(self, recipe, *, progress=None, **io):
        if recipe.model is None and not io and not recipe.options and recipe.engine in (None, "reference") \
                and eligible(recipe.spec):
            Z = self.data(recipe.data).Z
            cps = recipe.checkpoints if recipe.checkpoints is not None else 30
            return self.get("run", recipe.key(), lambda: run(Z, recipe.spec, recipe.steps, cps, progress))
        return super().run(recipe, progress=progress, **io)
