"""The linear-model optimizers as chains of transforms (see `transforms`)."""

from __future__ import annotations

from .spec import OptimizerSpec
from .table import info
from .transforms import (Transform, add_decayed_weights, chain, normalize_l2, precondition_by_sample_rms,
                         scale_by_adagrad, scale_by_adam, scale_by_lion, scale_by_schedule, scale_by_sign,
                         steepest_l1, trace)


def build(spec: OptimizerSpec, xp) -> Transform:
    """Adam family:  scale_by_adam → schedule        Signum:  trace(β1) → sign → schedule
    GD:  schedule      NGD:  normalize_l2 → schedule      AdamProxy:  precondition_by_sample_rms → schedule
    AdamW:  scale_by_adam → add_decayed_weights(λ) → schedule      Lion:  scale_by_lion → schedule
    Adagrad:  scale_by_adagrad → schedule      steepest-l1:  steepest_l1 → schedule"""
    sched = scale_by_schedule(xp, spec.lr, spec.lr_decay)
    if spec.is_adam:
        adam = scale_by_adam(xp, spec.beta1, spec.beta2, spec.eps, spec.bias_correction)
        if info(spec.name).name == "adamw":
            return chain(adam, add_decayed_weights(xp, spec.weight_decay), sched)
        return chain(adam, sched)
    return {
        "signum": lambda: chain(trace(xp, spec.beta1), scale_by_sign(xp), sched),
        "gd": lambda: sched,
        "nsd-l2": lambda: chain(normalize_l2(xp), sched),
        "adam-proxy": lambda: chain(precondition_by_sample_rms(xp), sched),
        "lion": lambda: chain(scale_by_lion(xp, spec.beta1, spec.beta2), sched),
        "adagrad": lambda: chain(scale_by_adagrad(xp, spec.eps), sched),
        "steepest-l1": lambda: chain(steepest_l1(xp), sched),
    }[info(spec.name).name]()
