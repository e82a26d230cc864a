"""The first probe of a user's optimizer file (`ibverify.optim.userfile`): each of its chains is made, as a run makes
it (`optimizers.build`, `optimizers.make_optimizer`, with the run's knobs), and stepped twice on a small problem; the
update must be a finite numeric array of the gradient's shape. Every failure is one IbverifyError line naming the
option (`--optimizer`), before any run: the commands call `probe` on a spec that names a file."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import IbverifyError
from .backend import Float64
from .logframe import Scaled
from .optimizers import build, make_optimizer
from .spec import OptimizerSpec
from .userguard import UserChainError


class _Bad(Exception):
    pass


def probe(spec: OptimizerSpec, what: str = "--optimizer") -> None:
    """Refuse (IbverifyError) a user's optimizer whose chains fail a first step; nothing for a table optimizer."""
    if spec.user is None:
        return
    for model, step in (("vector", _vector), ("block", _block)):
        if model not in spec.row.models:
            continue
        try:
            step(spec)
        except _Bad as e:
            msg = f"the update {e}"
        except UserChainError as e:   # the user's code raised (under guard: userguard)
            msg = f"a probe step raised {e.detail}"
        except IbverifyError as e:
            msg = str(e)
        except Exception as e:   # the user's code raised
            text = " ".join(str(e).split())
            msg = f"a probe step raised {type(e).__name__}" + (f": {text}" if text else "")
        else:
            continue
        raise IbverifyError(f"{what} {spec.row.user.source}: {model} chain: {msg}")


def _vector(spec: OptimizerSpec) -> None:
    rng = np.random.default_rng(0)
    d = 4
    sp = spec.resolved(max(3, spec.batch_size or 3))   # 3 samples, or as many as the run's batch
    ch = build(sp, Float64())
    w = np.zeros(d)
    state = ch.init(w)
    for _ in range(2):
        G = rng.standard_normal((sp.batch_size, d))
        g = G.mean(axis=0)
        u, state = ch.update(g, state, w, per_sample=G)
        _check(u, (d,))
        w = w + u


def _block(spec: OptimizerSpec) -> None:
    rng = np.random.default_rng(0)
    theta = {"W": np.zeros((2, 3)), "a": np.zeros(3)}
    if getattr(spec.row.user, "matrices_only", False):   # torch's bare Muon: 2-D blocks only (optim/torchmuon.py)
        theta.pop("a")
    opt = make_optimizer(replace(spec, batch_size=None), params=theta, L=1.0, warn=False)   # full batch: no b
    opt.init(theta)
    for _ in range(2):
        u = opt.update(Scaled({k: rng.standard_normal(v.shape) for k, v in theta.items()}, 0.0), theta)
        if not isinstance(u, dict) or sorted(u) != sorted(theta):
            raise _Bad(f"must be a dict of the parameter blocks {sorted(theta)}, got "
                       f"{sorted(u) if isinstance(u, dict) else type(u).__name__}")
        for k, v in theta.items():
            _check(u[k], v.shape)
        theta = {k: v - u[k] for k, v in theta.items()}


def _check(u, shape) -> None:
    a = np.asarray(u)
    if a.dtype == object or not np.issubdtype(a.dtype, np.number):
        raise _Bad(f"is not numeric ({type(u).__name__} of dtype {a.dtype})")
    if a.shape != tuple(shape):
        raise _Bad(f"has shape {a.shape}, the gradient {tuple(shape)}")
    if np.isnan(a).any():
        raise _Bad("is NaN")
    if not np.isfinite(a).all():
        raise _Bad("is not finite (inf)")
