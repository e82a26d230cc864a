"""torch.optim.Muon on the block models, as torch ships it, with the partner torch requires for the other blocks.

torch's Muon (torch 2.13, `torch/optim/_muon.py`) takes 2-D parameters only; every other block (the two-layer net's
output vector a, a bias) needs another optimizer, its *partner*. ibverify names the pair in one string:

    torch:Muon[:k=v,...]+PARTNER[:k=v,...]       e.g. torch:Muon:weight_decay=0+Adam:eps=0, torch:Muon+SGD:momentum=0.9

(or the row's own name `torch:Muon(weight_decay=0)+Adam(eps=0)`): the keys after `Muon` are torch.optim.Muon's,
those after the partner the partner's (a class of torch.optim), each key under its own part and one name only. The
matrix blocks (2-D) go to Muon, every other block to the partner, as torch's Muon documentation prescribes. Both
groups' lr is set to ibverify's η_t = lr · t^(−lr_decay) before every step (`--lr`, `--lr-decay`; a Muon `lr=` key is
the `--lr` default; the partner takes no `lr=` key: its step size is the same η_t). Then torch's Muon step runs as
shipped: its momentum (lerp, Nesterov by default), its Newton–Schulz iteration **in bfloat16** (torch casts the
momentum matrix to bfloat16 for the quintic iteration and adds the bfloat16 result to the float64 parameter), its
learning-rate adjustment (`adjust_lr_fn`: by default η·√max(1, A/B) for a block of shape (A, B)) and its decoupled
weight decay (default 0.1: give `weight_decay=0` for a margin-maximizing run), and the partner's step. A bare
`torch:Muon` runs models whose blocks are all matrices (the matrix model); on a model with other blocks it is one
error line naming the partner syntax (`partner_error`).

`ns_float64=True` (a key of the Muon part, ibverify's, not torch's) runs `MuonNS64`: torch's step with its
Newton–Schulz iteration in float64 instead of bfloat16, everything else torch's own (its `_adjust_lr`, lerp, weight
decay), so that the two separate the approximate polar factor (NS, 5 quintic steps: singular values in ≈ [0.7, 1.2])
from the precision it is computed in. With `ns_coefficients=(1.5,-0.5,0.0)` (the cubic Newton–Schulz iteration) and
enough `ns_steps` (≤ 99, torch's limit) the float64 iteration converges to the exact polar factor UVᵀ: then torch's
step is the table's `muon` (nesterov=False, momentum = β1, weight_decay=0, a block with A ≤ B so that the lr
adjustment is 1; tests/test_muon_shipped.py).

From Python: `functools.partial(MuonPartition, muon={"weight_decay": 0.0}, partner="Adam",
partner_kwargs={"eps": 0.0})` (a torch.optim.Optimizer subclass, so ibverify.train / ibverify.bias take it as any
torch optimizer), `torch.optim.Muon` itself or `MuonNS64`. The geometry each pair implies (paper 2, Gronich & Vardi):
Muon with Adam at ε = 0 on the vectors is the Muon–Adam hybrid max{c‖W‖_msp, ‖a‖∞}, c = η_A/η_M', where η_M' is
Muon's step after torch's adjustment √max(1, A/B), so c = 1/√max(1, A/B) (c = 1 only where A ≤ B; optim.hybridc
derives it from the norm's LMO); `ibverify bias` judges the hybrid at that c, computed from the model's block shapes
(`hybrid_c`; none where the matrix blocks' c differ). Muon with a plain or momentum SGD partner is no steepest descent
of one norm (the vector's step is not normalized and vanishes with the loss gradient). Imported only when such an
optimizer is named (it imports torch).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import torch
from torch.optim import Muon
from torch.optim._muon import _adjust_lr   # torch's own learning-rate adjustment, as shipped

from ..errors import IbverifyError

NS_FLOAT64 = "ns_float64"
SYNTAX = "torch:Muon:weight_decay=0+Adam:eps=0 (or +AdamW:eps=0,weight_decay=0, +SGD:momentum=0.9)"
SKIP = (f"torch.optim.Muon takes 2-D parameters only and the two-layer net also has its output vector a; name a "
        f"partner for it: {SYNTAX}")
_PLUS = re.compile(r"\+(?=\s*[A-Za-z_])")   # a `+` before a class name, not the exponent of 1e+3


def _ns_float64(grad: torch.Tensor, ns_coefficients, ns_steps: int, eps: float) -> torch.Tensor:
    """torch's `_zeropower_via_newtonschulz` (torch/optim/_muon.py, 2.13) with the iteration in float64, not
    bfloat16: the same checks, the same normalization (by max(‖G‖_F, eps)) and the same quintic steps."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    X = grad.to(torch.float64)
    tall = grad.size(0) > grad.size(1)
    if tall:
        X = X.T
    X = X / X.norm().clamp(min=eps)
    for _ in range(ns_steps):
        A = X @ X.T
        B = torch.addmm(A, A, A, beta=b, alpha=c)
        X = torch.addmm(X, B, X, beta=a)
    return X.T if tall else X


class MuonNS64(Muon):
    """torch.optim.Muon with its Newton–Schulz iteration in float64 (`_ns_float64`); the rest is torch's step
    (`_single_tensor_muon`, torch 2.13): momentum by lerp, Nesterov, torch's `_adjust_lr`, decoupled weight decay."""

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params, grads, bufs = [], [], []
            self._init_group(group, params, grads, bufs)
            lr, wd, mu = float(group["lr"]), group["weight_decay"], group["momentum"]
            for p, g, buf in zip(params, grads, bufs, strict=True):
                buf.lerp_(g, 1 - mu)
                update = g.lerp(buf, mu) if group["nesterov"] else buf
                update = _ns_float64(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
                p.mul_(1 - lr * wd)
                p.add_(update, alpha=-_adjust_lr(lr, group["adjust_lr_fn"], p.shape))
        return loss

    @classmethod
    def ibverify_name(cls, kwargs: Mapping[str, Any]) -> str:
        return "torch:" + _part("Muon", {NS_FLOAT64: True, **kwargs})


def _partner_class(partner: Any):
    cls = getattr(torch.optim, partner, None) if isinstance(partner, str) and partner.isidentifier() else partner
    if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)) or cls is torch.optim.Optimizer \
            or issubclass(cls, (Muon, MuonPartition)):
        raise ValueError(f"partner {partner!r} is not an optimizer of torch.optim other than Muon")
    return cls


class MuonPartition(torch.optim.Optimizer):
    """torch.optim.Muon (or MuonNS64, `ns_float64`) on the 2-D parameters, `partner` (a class of torch.optim, or its
    name) on the others, each with its own keyword arguments (`muon`, `partner_kwargs`). `param_groups` are the two
    optimizers' own groups (ibverify sets each group's lr to η_t), `step` steps Muon, then the partner."""

    def __init__(self, params, lr: float = 1e-3, muon: Mapping[str, Any] | None = None, partner: Any = "AdamW",
                 partner_kwargs: Mapping[str, Any] | None = None, ns_float64: bool = False):
        params = list(params)
        mats = [p for p in params if p.ndim == 2]
        rest = [p for p in params if p.ndim != 2]
        pcls = _partner_class(partner)
        if "lr" in dict(partner_kwargs or {}) or "lr" in dict(muon or {}):
            raise ValueError("give lr to MuonPartition itself (ibverify sets both groups' lr to η_t)")
        super().__init__(params, {"lr": lr})
        self.muon = (MuonNS64 if ns_float64 else Muon)(mats, lr=lr, **dict(muon or {})) if mats else None
        self.partner = pcls(rest, lr=lr, **dict(partner_kwargs or {})) if rest else None
        self.param_groups = [g for o in (self.muon, self.partner) if o is not None for g in o.param_groups]

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for o in (self.muon, self.partner):
            if o is not None:
                o.step()
        return loss

    @classmethod
    def ibverify_hyperparameters(cls, kwargs: Mapping[str, Any], plain) -> dict:
        """Both parts' own hyper-parameters (their param_groups but params and lr, made on a 2-D and a 1-D float64
        parameter; `plain`: userfile.plain_value), the partner's name, and the c the pair implies (C_NOTE)."""
        made = cls([torch.zeros(2, 2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64)], lr=1.0, **kwargs)
        muon, partner = ({k: plain(v) for k, v in sorted(o.param_groups[0].items()) if k not in ("params", "lr")}
                         for o in (made.muon, made.partner))
        if kwargs.get(NS_FLOAT64):
            muon[NS_FLOAT64] = True
        name = type(made.partner).__name__
        return {"muon": muon, "partner": name, "partner_hyperparameters": partner, "c": implied_c(name, muon)}

    @classmethod
    def ibverify_name(cls, kwargs: Mapping[str, Any]) -> str:
        muon = {**dict(kwargs.get("muon") or {}), **({NS_FLOAT64: True} if kwargs.get(NS_FLOAT64) else {})}
        partner = kwargs.get("partner", "AdamW")
        pname = partner if isinstance(partner, str) else partner.__name__
        return f"torch:{_part('Muon', muon)}+{_part(pname, dict(kwargs.get('partner_kwargs') or {}))}"


def implied_c(partner: str, muon: Mapping[str, Any]) -> str:
    """The rule of the c of the hybrid max{c‖W‖_msp, ‖a‖∞} the pair implies, as recorded with its hyper-parameters:
    c = η_A/η_M' per 2-D block of shape (A, B), with both groups' lr η_t and η_M' = η_t times torch's `_adjust_lr` for
    the block's shape, so c = 1/adjust(A, B) (optim.hybridc). Its number, from the model's block shapes, is the run's
    (`hybrid_c`), stated by `ibverify bias` with its answer."""
    fn = muon.get("adjust_lr_fn") or "original"
    adjust = ADJUST.get(fn, f"{fn}(A, B)")
    pair = ("the Muon–Adam hybrid's steepest descent at ε = 0" if partner in ("Adam", "AdamW") else
            f"with {partner} no steepest descent of one norm (the vectors' step is not normalized)")
    return (f"c = η_A/η_M' = 1/({adjust}) per 2-D block of shape (A, B) (both lr η_t; torch's adjust_lr_fn {fn!r}; "
            f"c = 1 where A ≤ B): {pair}; its number per run stated by bias")


ADJUST = {"original": "√max(1, A/B)", "match_rms_adamw": "0.2·√max(A, B)"}


def hybrid_c(kwargs: Mapping[str, Any], shapes: Mapping[str, tuple]):
    """The c (optim.hybridc.ImpliedC) a MuonPartition of these keyword arguments implies on a model with these block
    shapes: both groups step at η_t (torchblock), Muon's matrix step is η_t·a(A, B) by torch's own `_adjust_lr`, so
    c = 1/a(A, B) per 2-D block (optim.hybridc; one c only where every block's agrees)."""
    from .hybridc import single

    muon = dict(kwargs.get("muon") or {})
    partner = kwargs.get("partner", "AdamW")
    pname = partner if isinstance(partner, str) else partner.__name__
    fn = muon.get("adjust_lr_fn") or "original"
    per = {k: (tuple(s), 1.0 / _adjust_lr(1.0, fn, tuple(s))) for k, s in shapes.items() if len(s) == 2}
    eps = float(dict(kwargs.get("partner_kwargs") or {}).get("eps", 1e-8))
    if pname in ("Adam", "AdamW") and eps == 0.0:
        note = f"{pname} at ε = 0 on the vectors: the pair is the hybrid's steepest descent"
    else:
        why = f"{pname} at ε = {eps:g}" if pname in ("Adam", "AdamW") else f"a {pname} partner"
        note = f"with {why} the pair is no steepest descent of this norm: the hybrid judged at its lr ratio"
    return single(per, f"torch's Muon adjust_lr_fn {fn!r}: matrix step η_t·{ADJUST.get(fn, fn)}, the {pname} step "
                       f"η_t, c = η_vector/η_matrix = 1/({ADJUST.get(fn, fn)})", note)


def _part(name: str, kwargs: Mapping[str, Any]) -> str:
    args = ",".join(f"{k}={repr(v).replace(' ', '')}" for k, v in sorted(kwargs.items()))
    return name + (f"({args})" if args else "")


def is_muon(cls: Any) -> bool:
    """torch's Muon, MuonNS64 or a MuonPartition (a row that runs the block models only)."""
    return isinstance(cls, type) and issubclass(cls, (Muon, MuonPartition))


def matrices_only(cls: Any) -> bool:
    """A bare Muon (no partner): it runs models whose blocks are all matrices."""
    return isinstance(cls, type) and issubclass(cls, Muon)


def split(body: str) -> list[str]:
    """The parts of `Muon[:k=v]+PARTNER[:k=v]` (one part: no partner)."""
    return [p.strip() for p in _PLUS.split(body)]


def resolve(cls: type, kwargs: dict, parts: list[tuple[type, dict]], name: str, what: str) -> tuple[type, dict]:
    """(class, keyword arguments) of a parsed Muon name: `parts` the (class, kwargs) of each `+` part, the first
    being torch.optim.Muon. One part: Muon, or MuonNS64 for `ns_float64=True`; two: a MuonPartition."""
    first, mk = parts[0]
    if first is not Muon:
        raise IbverifyError(f"{what} {name!r}: only torch:Muon takes a partner (torch:Muon+PARTNER[:k=v,...], e.g. "
                            f"{SYNTAX})")
    mk = dict(mk)
    ns64 = mk.pop(NS_FLOAT64, False)
    if ns64 not in (True, False):
        raise IbverifyError(f"{what} {name!r}: {NS_FLOAT64} is True or False, got {ns64!r}")
    lr = mk.pop("lr", None)
    if len(parts) == 1:
        return (MuonNS64 if ns64 else Muon), {**mk, **({"lr": lr} if lr is not None else {})}
    if len(parts) > 2:
        raise IbverifyError(f"{what} {name!r}: one partner only (torch:Muon+PARTNER, e.g. {SYNTAX})")
    pcls, pk = parts[1]
    if is_muon(pcls):
        raise IbverifyError(f"{what} {name!r}: the partner of Muon's 2-D blocks takes the other blocks and cannot be "
                            f"Muon (torch's Muon takes 2-D parameters only)")
    if "lr" in pk:
        raise IbverifyError(f"{what} {name!r}: the partner's step size is ibverify's η_t (--lr, --lr-decay), the "
                            f"same as Muon's: drop its lr= key (a Muon lr= key is the --lr default)")
    out = {"muon": mk, "partner": pcls.__name__, "partner_kwargs": dict(pk), **({NS_FLOAT64: True} if ns64 else {})}
    return MuonPartition, {**out, **({"lr": lr} if lr is not None else {})}


def check_keys(cls: type, kwargs: Mapping[str, Any], label: str) -> None:
    """A MuonPartition's keys, each part against its class's signature (one line for an unknown key)."""
    import inspect

    if not (isinstance(cls, type) and issubclass(cls, MuonPartition)):
        return
    for part, kw in ((Muon, kwargs.get("muon") or {}), (_partner_class(kwargs.get("partner", "AdamW")),
                                                        kwargs.get("partner_kwargs") or {})):
        sig = inspect.signature(part.__init__).parameters
        bad = [k for k in kw if k not in sig or k in ("self", "params", "lr")]
        if bad:
            keys = [k for k in sig if k not in ("self", "params", "lr")]
            raise IbverifyError(f"{label}: unknown key{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))} of "
                                f"torch.optim.{part.__name__}; its keys are {', '.join(keys)}")


def partner_error(name: str, blocks: Mapping[str, Any]) -> IbverifyError:
    """The one line for a bare Muon on a model with non-2-D blocks."""
    other = ", ".join(f"{k} {tuple(v.shape)}" for k, v in blocks.items() if v.ndim != 2)
    return IbverifyError(f"{name}: torch.optim.Muon takes 2-D parameters only and this model also has {other}; name "
                         f"a partner for them: {SYNTAX}")


def update_line(cls: type, kwargs: Mapping[str, Any]) -> str:
    """The row's update line: what runs on which blocks, and the geometry the pair implies."""
    ns = "Newton–Schulz in float64 (MuonNS64)" if kwargs.get(NS_FLOAT64) or issubclass(cls, MuonNS64) else \
        "Newton–Schulz in bfloat16 as torch ships it"
    muon = kwargs if not issubclass(cls, MuonPartition) else dict(kwargs.get("muon") or {})
    adjust = ADJUST.get(muon.get("adjust_lr_fn") or "original", str(muon.get("adjust_lr_fn")))
    if not issubclass(cls, MuonPartition):
        return (f"torch.optim.Muon on every block (2-D only), {ns}, torch's lr adjustment {adjust}; the group lr "
                f"set to η_t each step")
    partner = kwargs.get("partner", "AdamW")
    pname = partner if isinstance(partner, str) else partner.__name__
    pk = dict(kwargs.get("partner_kwargs") or {})
    if pname in ("Adam", "AdamW") and float(pk.get("eps", 1e-8)) == 0.0:
        implied = f"implied geometry: the Muon–Adam hybrid max{{c‖W‖_msp, ‖a‖∞}}, c = η_A/η_M' = 1/{adjust}"
    elif pname == "SGD":
        implied = "implied geometry: none of one norm (the vector step is not normalized)"
    else:
        implied = "implied geometry: not one of paper 2's"
    return (f"torch.optim.Muon on the 2-D blocks ({ns}, torch's lr adjustment {adjust}), torch.optim.{pname} on "
            f"the others, both groups' lr set to η_t each step; {implied}")


__all__ = ["MuonNS64", "MuonPartition", "NS_FLOAT64", "SYNTAX", "check_keys", "hybrid_c", "implied_c", "is_muon",
           "matrices_only", "partner_error", "resolve", "split", "update_line"]
