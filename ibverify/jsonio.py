"""The one JSON cleaner: `plain(x)` turns numpy values, tuples and non-finite floats into JSON-ready Python.

Used for every results row (`evidence.Outcome.to_json`, the checks' tables), the `--json` output of the
commands and the benchmarks' JSON. numpy is not imported: arrays and numpy scalars are recognized by
their `tolist` method, so the command line's start-up stays light.
"""

from __future__ import annotations

import math
from typing import Any


def plain(x: Any, *, keep_nonfinite: bool = False) -> Any:
    """A JSON-ready copy of `x`: dicts (keys made str), lists and tuples (as lists), numpy arrays and
    numpy scalars (through `tolist`: float, int, bool, str) become plain Python; any other value is
    returned as it is. NaN and ±inf become None (JSON has no such numbers; the results schema wants
    null) unless `keep_nonfinite`, for output that `json.dumps` writes as NaN/Infinity."""
    if isinstance(x, dict):
        return {str(k): plain(v, keep_nonfinite=keep_nonfinite) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v, keep_nonfinite=keep_nonfinite) for v in x]
    if hasattr(x, "tolist"):  # numpy arrays and scalars (np.generic.tolist() is .item())
        return plain(x.tolist(), keep_nonfinite=keep_nonfinite)
    if isinstance(x, float) and not keep_nonfinite and not math.isfinite(x):
        return None
    return x
