"""Hook for `ibverify train --model ...` (paper 2 networks), implemented by `ibverify.networks.cli`."""

from __future__ import annotations

import json
import sys


def add_network_arguments(parser) -> None:
    try:
        from .networks.cli import add_arguments
    except ImportError:
        return
    add_arguments(parser)


def is_network_run(args) -> bool:
    return getattr(args, "model", None) not in (None, "linear-vector")


def train_network(args) -> dict:
    """The JSON-ready result of a network run."""
    from .networks.cli import train

    return train(args)


def run_network(args, stream=sys.stdout) -> int:
    """The whole `train --model ...` command: a progress bar on a terminal, then a plain summary, or the
    result as JSON with --json. Returns the exit status."""
    from .networks.cli import summary, train

    out = train(args)
    if getattr(args, "json", False):
        json.dump(out, stream, indent=1)
        stream.write("\n")
    else:
        print(summary(out), file=stream)
    return 0
