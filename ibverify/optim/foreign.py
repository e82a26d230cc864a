"""The spec of a torch or optax optimizer: `ForeignSpec`, whose JSON lists the optimizer's own hyper-parameters, and
`foreign`, which `adapters.to_spec` applies to every spec (kept apart from userfile.py, which spec.py loads lazily:
no import cycle)."""

from __future__ import annotations

from dataclasses import fields

from .spec import OptimizerSpec


class ForeignSpec(OptimizerSpec):
    """The spec of a torch or optax optimizer (`adapters.to_spec`): its JSON lists the optimizer's own
    hyper-parameters (`hyperparameters`: torch's param_groups, optax's factory arguments or hyper-parameter state) and
    ibverify's run settings (the lr and lr_decay of the schedule it sets, batch size, order, loss, seed), never the
    table's knobs (beta1, eps, bias_correction, …), which such an optimizer does not read."""

    def to_json(self) -> dict:
        chains = self.user.user
        own = getattr(chains, "hyperparameters", None)
        if own is None:
            return super().to_json()
        out = {k: getattr(self, k) for k in ("name", "batch_size", "order", "lr", "lr_decay", "loss", "seed")}
        out.update({k: getattr(self, k) for k in ("lr_matrix", "lr_vector") if getattr(self, k) is not None})
        out.update(library=chains.library, hyperparameters=dict(own), source=chains.source,
                   source_sha256=chains.sha256)
        return out


def foreign(spec: OptimizerSpec) -> OptimizerSpec:
    """`spec` as a ForeignSpec when its row is a torch or optax optimizer's (its chains list hyperparameters)."""
    if spec.user is None or getattr(spec.user.user, "hyperparameters", None) is None or isinstance(spec, ForeignSpec):
        return spec
    return ForeignSpec(**{f.name: getattr(spec, f.name) for f in fields(spec)})
