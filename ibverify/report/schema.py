"""The results file `ibverify.results/1`: validation, atomic writing, loading.

Validation is hand-written (no dependency); every problem is one `IbverifyError` line naming the
field, e.g. `results: claims[2] (baek.x).outcome.series[0].y[3] must be a finite number or null`.
Unknown extra keys are allowed (forward compatibility); a baseline may carry `tracked` (see compare).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from .. import IbverifyError
from ..claims import STATUSES

SCHEMA = "ibverify.results/1"
VERDICTS = ("holds", "does not hold", "refuted", "not refuted", "finding", "error")
EXPECT_BY_STATUS = {"paper": "holds", "derived": "holds", "reconstructed": "holds", "control": "refuted", "beyond": "finding"}
_NUM = (int, float)


def _fail(where: str, msg: str) -> None:
    raise IbverifyError(f"results: {where} {msg}")


def _need(d: dict, key: str, types: type | tuple, where: str, nullable: bool = False) -> Any:
    if key not in d:
        _fail(f"{where}.{key}" if where else key, "is missing")
    v = d[key]
    if v is None and nullable:
        return v
    ok = isinstance(v, types) and not (isinstance(v, bool) and bool not in _as_tuple(types))
    if not ok:
        names = "/".join(t.__name__ for t in _as_tuple(types)) + (" or null" if nullable else "")
        _fail(f"{where}.{key}" if where else key, f"must be {names}, got {type(v).__name__}")
    return v


def _as_tuple(t: type | tuple) -> tuple:
    return t if isinstance(t, tuple) else (t,)


def _number(v: Any, where: str, nullable: bool = True) -> None:
    if v is None and nullable:
        return
    if isinstance(v, bool) or not isinstance(v, _NUM) or not math.isfinite(v):
        _fail(where, "must be a finite number" + (" or null" if nullable else "") + f", got {v!r}")


def _check_series(s: Any, where: str) -> None:
    if not isinstance(s, dict):
        _fail(where, "must be an object")
    _need(s, "name", str, where)
    xs, ys = _need(s, "x", list, where), _need(s, "y", list, where)
    if len(xs) != len(ys):
        _fail(where, f"has len(x)={len(xs)} != len(y)={len(ys)}")
    for axis, vals in (("x", xs), ("y", ys)):
        for i, v in enumerate(vals):
            _number(v, f"{where}.{axis}[{i}]")
    for key in ("xlabel", "ylabel", "group"):
        if key in s:
            _need(s, key, str, where)
    for key in ("log_x", "log_y"):
        if key in s:
            _need(s, key, bool, where)


def _check_outcome(o: dict, where: str) -> None:
    _need(o, "holds", bool, where, nullable=True)
    _need(o, "figure", str, where)
    for name, v in _need(o, "figures", dict, where).items():
        _number(v, f"{where}.figures.{name}")
    for i, s in enumerate(_need(o, "series", list, where)):
        _check_series(s, f"{where}.series[{i}]")
    if "details" in o:
        _need(o, "details", str, where)
    if "examples" in o:
        _need(o, "examples", int, where)
    if "counterexample" in o:
        _need(o, "counterexample", dict, where, nullable=True)
    table = _need(o, "table", list, where, nullable=True) if "table" in o else None
    for i, row in enumerate(table or []):
        if not isinstance(row, dict):
            _fail(f"{where}.table[{i}]", "must be an object")


def _check_claim(c: Any, i: int) -> str:
    if not isinstance(c, dict):
        _fail(f"claims[{i}]", "must be an object")
    cid = _need(c, "id", str, f"claims[{i}]")
    w = f"claims[{i}] ({cid})"
    for key in ("paper", "result", "statement", "tier", "check", "check_hash", "reproduce"):
        _need(c, key, str, w)
    status = _need(c, "status", str, w)
    if status not in STATUSES:
        _fail(f"{w}.status", f"must be one of {', '.join(STATUSES)}, got {status!r}")
    for key in ("expect", "verdict"):
        if _need(c, key, str, w) not in VERDICTS:
            _fail(f"{w}.{key}", f"must be a verdict word ({', '.join(VERDICTS)}), got {c[key]!r}")
    if c["expect"] != EXPECT_BY_STATUS[status]:
        _fail(f"{w}.expect", f"must be {EXPECT_BY_STATUS[status]!r} for status {status!r}, got {c['expect']!r}")
    if _need(c, "as_expected", bool, w) != (c["verdict"] == c["expect"]):
        _fail(f"{w}.as_expected", f"is {c['as_expected']} but verdict {c['verdict']!r} vs expect {c['expect']!r}")
    _need(c, "params", dict, w)
    _need(c, "tolerances", dict, w)
    if "assumptions" in c:
        for j, a in enumerate(_need(c, "assumptions", list, w)):
            if not isinstance(a, str):
                _fail(f"{w}.assumptions[{j}]", "must be a string")
    if "convention" in c:
        _need(c, "convention", dict, w)
    _number(_need(c, "runtime_s", _NUM, w, nullable=True), f"{w}.runtime_s")
    _need(c, "seed", int, w)
    _need(c, "error", str, w, nullable=True)
    outcome = _need(c, "outcome", dict, w, nullable=True)
    if outcome is not None:
        _check_outcome(outcome, f"{w}.outcome")
    if outcome is None and c["verdict"] != "error":
        _fail(f"{w}.outcome", f"is null but the verdict is {c['verdict']!r}")
    return cid


def validate_results(results: Any) -> dict:
    """Raise `IbverifyError` (one line, naming the field) unless `results` follows the schema."""
    if not isinstance(results, dict):
        _fail("top level", f"must be an object, got {type(results).__name__}")
    schema = _need(results, "schema", str, "")
    if schema != SCHEMA:
        _fail("schema", f"must be {SCHEMA!r}, got {schema!r} (unsupported results version)")
    _need(results, "created", str, "")
    _need(results, "tier", str, "")
    _need(results, "seed", int, "")
    for k, v in _need(results, "versions", dict, "").items():
        if v is not None and not isinstance(v, str):
            _fail(f"versions.{k}", f"must be a string or null, got {type(v).__name__}")
    summary = _need(results, "summary", dict, "")
    claims = _need(results, "claims", list, "")
    if _need(summary, "total", int, "summary") != len(claims):
        _fail("summary.total", f"is {summary['total']} but there are {len(claims)} claims")
    for key in ("as_expected", "unexpected", "errors"):
        if not 0 <= _need(summary, key, int, "summary") <= len(claims):
            _fail(f"summary.{key}", f"is out of range 0..{len(claims)}: {summary[key]}")
    seen: set[str] = set()
    for i, c in enumerate(claims):
        cid = _check_claim(c, i)
        if cid in seen:
            _fail(f"claims[{i}].id", f"duplicates {cid!r}")
        seen.add(cid)
    if "tracked" in results:
        _check_tracked(results["tracked"])
    return results


def _check_tracked(tracked: Any) -> None:
    if not isinstance(tracked, dict):
        _fail("tracked", "must be an object {claim: {figure: {rtol, atol, better}}}")
    for cid, figs in tracked.items():
        if not isinstance(figs, dict):
            _fail(f"tracked.{cid}", "must be an object {figure: {...}}")
        for fig, spec in figs.items():
            w = f"tracked.{cid}.{fig}"
            if not isinstance(spec, dict):
                _fail(w, "must be an object {rtol, atol, better}")
            if spec.get("better", "higher") not in ("higher", "lower"):
                _fail(f"{w}.better", f"must be 'higher' or 'lower', got {spec.get('better')!r}")
            for key in ("rtol", "atol"):
                if key in spec:
                    _number(spec[key], f"{w}.{key}", nullable=False)
                    if spec[key] < 0:
                        _fail(f"{w}.{key}", "must be >= 0")


def error_line(error: str | None) -> str:
    """The last non-empty line of an error text: the exception message, not 'Traceback ...'."""
    lines = [ln for ln in (error or "").strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def dumps(results: dict) -> str:
    try:
        return json.dumps(results, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    except (TypeError, ValueError) as e:
        raise IbverifyError(f"results: cannot be written as JSON: {e}") from None


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` via a temp file in the same directory, fsync, os.replace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_results(results: dict, path: str | os.PathLike) -> Path:
    """Validate and write `results` atomically; returns the path."""
    validate_results(results)
    write_atomic(Path(path), dumps(results))
    return Path(path)


def load_results(path: str | os.PathLike) -> dict:
    """Read and validate a results file; any problem is a one-line `IbverifyError`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise IbverifyError(f"{p}: cannot read results file: {e.strerror or e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise IbverifyError(f"{p}: not valid JSON: {e}") from None
    try:
        return validate_results(data)
    except IbverifyError as e:
        raise IbverifyError(f"{p}: {e}") from None
