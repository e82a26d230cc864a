"""The syntax of a user's optimizer file named where an optimizer name goes: `path/to/file.py[:function]`.

One rule for every place that reads an optimizer name (the command line's `--optimizer`, a claim file's
`optimizer` parameter, `OptimizerSpec`): a name that ends in `.py`, or in `.py:function`, names a Python file
whose `function` (default `make`) describes the optimizer (the protocol: `ibverify.optim.userfile`). This module
only parses and locates; loading is `ibverify.optim.userfile.load`. Plain Python (no numpy): the claim registry
(below the optimizers' layer) resolves a claim's relative file names with it, and hashes their content into the
claim's check hash, so an edited optimizer file never reuses a cached verdict.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

DEFAULT_FUNCTION = "make"
_SPEC = re.compile(r"^(?P<path>.+\.py)(?::(?P<func>[A-Za-z_][A-Za-z0-9_]*))?$")


def split(name: object) -> tuple[str, str] | None:
    """(path, function) of an optimizer-file name, None for anything else (a table name)."""
    if not isinstance(name, str):
        return None
    m = _SPEC.match(name.strip())
    return (m["path"], m["func"] or DEFAULT_FUNCTION) if m else None


def absolute(name: str, base: str | Path) -> str:
    """The optimizer-file name with a relative path made absolute from `base` (a claim file's folder); other
    names unchanged."""
    s = split(name)
    if s is None or Path(s[0]).expanduser().is_absolute():
        return name
    return f"{(Path(base) / s[0]).resolve()}:{s[1]}"


def content_hash(name: str) -> str:
    """sha256 of the optimizer file's bytes ("missing" for a file that cannot be read: the loader says why)."""
    s = split(name)
    try:
        return hashlib.sha256(Path(s[0]).expanduser().read_bytes()).hexdigest() if s else ""
    except OSError:
        return "missing"
