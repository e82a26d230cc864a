"""The linear-model optimizers as chains of transforms (see `transforms`)."""

from __future__ import annotations

from .spec import OptimizerSpec
from .table import info
from .transforms import (Transform, chain, normalize_l2, precondition_by_sample_rms, scale_by_adam,
                         scale_by_schedule, scale_by_sign, trace)


def build(spec: OptimizerSpec, xp) -> Transform:
    """Adam family:  scale_by_adam → schedule        Signum:  trace(β1) → sign → schedule
    GD:  schedule      NGD:  normalize_l2 → schedule      AdamProxy:  precondition_by_sample_rms → schedule"""
    sched = scale_by_schedule(xp, spec.lr, spec.lr_decay)
    if spec.is_adam:
        return chain(scale_by_adam(xp, spec.beta1, spec.beta2, spec.eps, spec.bias_correction), sched)
    return {
        "signum": lambda: chain(trace(xp, spec.beta1), scale_by_sign(xp), sched),
        "gd": lambda: sched,
        "nsd-l2": lambda: chain(normalize_l2(xp), sched),
        "adam-proxy": lambda: chain(precondition_by_sample_rms(xp), sched),
    }[info(spec.name).name]()
