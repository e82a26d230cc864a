"""The `ibverify` command line. `commands` parses and dispatches; `verify` is the `verify` command;
`network` runs `train --model ...` on a block model."""

from .commands import build_parser, main, markdown_table
from .train import STILL_MOVING_RAD

__all__ = ["STILL_MOVING_RAD", "build_parser", "main", "markdown_table"]
