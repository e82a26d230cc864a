"""A PyTorch optimizer on the block models (matrix, two-layer): the block chain added to a `torch:` row of
`torchadapt` by `with_blocks` (called by `adapters.to_spec`, the one entry of every command and of the Python API).

The chain is `logframe.Unscale` (the plain gradient e^S ĝ of every block, exact while e^S is a float64 number; its
underflow is counted by Unscale as `gradient_underflow`) and `torch_block`: one float64 torch parameter per block,
set to θ's block, its grad to the block's gradient, the group lr to η_t = lr · t^(−lr_decay), then torch's own step.
The block chain's Schedule (appended by `optimizers.make_optimizer`) makes u = η_t d and the loop θ ← θ − u, so the
step s is returned as d = −s/η_t. Kept apart from `torchadapt` (which `OptimizerSpec` imports, so every claim's
check hash covers it): no claim runs a torch optimizer.
"""

from __future__ import annotations

import types
from dataclasses import replace
from typing import Any, Mapping

from ..errors import IbverifyError
from .table import OptimizerInfo
from .torchadapt import TorchChains, _torch, row


def with_blocks(r: OptimizerInfo) -> OptimizerInfo:
    """The torch row `r` (torchadapt.row) that also runs the block models."""
    if "block" in r.models or not isinstance(r.user, TorchChains):
        return r
    cls, kwargs, knobs = r.user._made
    name = r.name

    def block(spec):
        from .logframe import Unscale

        return [Unscale(), torch_block(cls, kwargs, spec.lr, spec.lr_decay, name)]

    chains = _BlockChains(r.user.source, r.user.sha256, r.vector, (cls, kwargs, knobs), block)
    chains.gd_step_scale = r.user.gd_step_scale   # bias's constant-step choice for a plain SGD (runner.bias)
    if _muon(cls):   # torch's Muon: 2-D blocks only, the block models only (optim/torchmuon.py)
        from . import torchmuon

        bare = torchmuon.matrices_only(cls)
        chains.matrices_only = bare   # its first steps are probed on a matrix only (userprobe)
        skips = {"two-layer": torchmuon.SKIP} if bare else {}
        return replace(r, models=("block",), implementations=types.MappingProxyType({"block": ("reference",)}),
                       user=chains, block=block, vector=None, skips=types.MappingProxyType(skips),
                       update=torchmuon.update_line(cls, kwargs))
    return replace(r, models=("vector", "block"),
                   implementations=types.MappingProxyType({"vector": ("reference",), "block": ("reference",)}),
                   user=chains, block=block)


def _muon(cls) -> bool:
    """torch's Muon (or a subclass, or ibverify's MuonPartition): without importing torchmuon for other rows."""
    import sys

    return any(getattr(c, "__name__", "") in ("Muon", "MuonPartition") and
               (c.__module__.startswith("torch.optim") or c.__module__ == "ibverify.optim.torchmuon")
               for c in getattr(cls, "__mro__", ())) and "torch" in sys.modules


class _BlockChains(TorchChains):
    def __init__(self, source, sha256, vector, made, block):
        super().__init__(source, sha256, vector, made)
        self.block = block

    def row_reduce(self):
        cls, kwargs, knobs = self._made
        return (_rebuilt, (cls, {**kwargs, **knobs}, self.source))

    def hybrid_c(self, spec, shapes):
        """The c of the hybrid norm a Muon pair implies on blocks of these shapes (torchmuon.hybrid_c, an
        optim.hybridc.ImpliedC); None for any other torch optimizer (no pair)."""
        cls, kwargs, _ = self._made
        if not (_muon(cls) and hasattr(cls, "ibverify_hyperparameters")):   # a MuonPartition (a bare Muon: none)
            return None
        from . import torchmuon

        return torchmuon.hybrid_c(kwargs, shapes)


def _rebuilt(cls, kwargs, source):
    return with_blocks(row(cls, kwargs, source))


class _Blocks:
    """The torch parameters (one per block, float64), the torch optimizer and the step count t."""

    def __init__(self, ps, opt):
        self.ps, self.opt, self.t = ps, opt, 0


def torch_block(cls: type, kwargs: Mapping[str, Any], lr: float, lr_decay: float, name: str):
    """The block transform after `logframe.Unscale` (the plain gradient e^S ĝ of every block, exact while e^S is a
    float64 number; its underflow is counted by Unscale): one torch parameter per block set to θ's block, its grad to
    the block's gradient, the group lr to η_t, then torch's step. The block chain's Schedule (appended by
    `optimizers.make_optimizer`) makes u = η_t d and the loop θ ← θ − u, so the step s is returned as d = −s/η_t."""
    import numpy as np

    from .logframe import Transform

    torch = _torch()
    eta0, a = float(lr), float(lr_decay)
    one_thread = _muon(cls)

    class TorchStep(Transform):
        def init(self, params):
            ps = {k: torch.tensor(np.asarray(v, dtype=np.float64), dtype=torch.float64, requires_grad=True)
                  for k, v in params.items()}
            if _muon(cls) and any(v.ndim != 2 for v in ps.values()):
                from . import torchmuon

                if torchmuon.matrices_only(cls):
                    raise torchmuon.partner_error(name, ps)
            try:
                opt = cls(list(ps.values()), lr=eta0, **kwargs)
            except (TypeError, ValueError) as e:
                raise IbverifyError(f"{name}: torch.optim.{cls.__name__} refused its arguments: "
                                    f"{' '.join(str(e).split())}") from None
            return _Blocks(ps, opt)

        def update(self, x, st, params=None, **extra):
            st.t += 1
            eta = eta0 * float(st.t) ** (-a)
            with torch.no_grad():
                before = {}
                for k, p in st.ps.items():
                    if params is not None:
                        p.copy_(torch.from_numpy(np.asarray(params[k], dtype=np.float64)))
                    before[k] = p.detach().clone()
                    p.grad = torch.from_numpy(np.array(x[k], dtype=np.float64))
                for g in st.opt.param_groups:
                    g["lr"] = eta
            step = bare_step(st.opt)
            if one_thread:   # Muon's tiny matmuls: torch's thread pool costs ×5–100 on a busy machine
                n = torch.get_num_threads()
                torch.set_num_threads(1)
                try:
                    step()
                finally:
                    torch.set_num_threads(n)
            else:
                step()
            with torch.no_grad():
                return {k: -((p - before[k]).numpy() / eta) for k, p in st.ps.items()}, st

    return TorchStep()


def bare_step(opt):
    """opt's step without torch's wrapper (a profiler record around the step hooks) where no step hook is registered,
    globally or on the optimizer: the wrapper adds nothing to the update then (runner.torchloop._step_of, the same
    bits; ≈ 15 % of a two-layer Muon step). A MuonPartition (torchmuon) steps Muon, then its partner, each so."""
    from torch.optim import optimizer as topt

    parts = [o for o in (getattr(opt, "muon", None), getattr(opt, "partner", None)) if o is not None]
    if type(opt).__name__ != "MuonPartition" or not parts:
        parts = [opt]
    hooks = [topt._global_optimizer_pre_hooks, topt._global_optimizer_post_hooks]
    for o in {id(x): x for x in (opt, *parts)}.values():
        hooks += [getattr(o, "_optimizer_step_pre_hooks", None), getattr(o, "_optimizer_step_post_hooks", None)]
    inner = [getattr(type(o).step, "__wrapped__", None) for o in parts]
    if any(f is None for f in inner) or any(h is None or len(h) for h in hooks):
        return opt.step

    def step():
        for f, o in zip(inner, parts, strict=True):
            f(o)
    return step


__all__ = ["bare_step", "torch_block", "with_blocks"]
