"""Hook for `ibverify train --model ...` (paper 2 networks); filled in by `ibverify.networks.cli`."""

from __future__ import annotations


def add_network_arguments(parser) -> None:
    try:
        from .networks.cli import add_arguments
    except ImportError:
        return
    add_arguments(parser)


def is_network_run(args) -> bool:
    return getattr(args, "model", None) not in (None, "linear-vector")


def train_network(args) -> dict:
    from .networks.cli import train

    return train(args)
