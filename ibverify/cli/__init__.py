"""The `ibverify` command line. `commands` parses and dispatches; `verify` is the `verify` command;
`network` runs `train --model ...` on a block model."""

from .commands import STILL_MOVING_RAD, build_parser, main, markdown_table

__all__ = ["STILL_MOVING_RAD", "build_parser", "main", "markdown_table"]
