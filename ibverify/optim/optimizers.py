"""The linear-model optimizers as chains of transforms (see `transforms`)."""

from __future__ import annotations

from .. import IbverifyError
from .spec import OptimizerSpec
from .table import info
from .transforms import (Transform, add_decayed_weights, chain, normalize_l2, precondition_by_sample_rms,
                         precondition_diagonal, scale_by_adagrad, scale_by_adam, scale_by_lion, scale_by_schedule,
                         scale_by_sign, steepest_l1, steepest_lp, trace)


def build(spec: OptimizerSpec, xp) -> Transform:
    """Adam family:  scale_by_adam → schedule        Signum:  trace(β1) → sign → schedule
    GD:  schedule      NGD:  normalize_l2 → schedule      AdamProxy:  precondition_by_sample_rms → schedule
    AdamW:  scale_by_adam → add_decayed_weights(λ) → schedule      Lion:  scale_by_lion → schedule
    Adagrad:  scale_by_adagrad → schedule      steepest-l1:  steepest_l1 → schedule
    steepest-l3:  steepest_lp(p = 3) → schedule      precond-gd:  precondition_diagonal → schedule
    A user's optimizer file (optim.userfile):  its vector chain → schedule"""
    sched = scale_by_schedule(xp, spec.lr, spec.lr_decay)
    if spec.user is not None:   # a user's optimizer file: its chain, then the schedule (optim.userfile)
        return chain(*user_chain(spec.user.user.vector(spec, xp)), sched)
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
        "steepest-l3": lambda: chain(steepest_lp(xp, 3.0), sched),
        "precond-gd": lambda: chain(precondition_diagonal(xp), sched),
    }[info(spec.name).name]()


def user_chain(out) -> list[Transform]:
    """A user's vector chain (optim.userfile) as a list of transforms: one Transform, or a list of them."""
    ts = [out] if isinstance(out, Transform) else list(out) if isinstance(out, (list, tuple)) else None
    if ts is None or not all(isinstance(t, Transform) for t in ts):
        raise IbverifyError(f"its vector chain must be ibverify.optim.transforms transforms (Transform(init, update)) "
                            f"or a list of them, got {type(out).__name__}")
    return ts
