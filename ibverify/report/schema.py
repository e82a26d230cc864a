"""The results file `ibverify.results/1`: validation, atomic writing, loading.

The schema is published as JSON Schema (draft 2020-12) in `results.schema.json` beside this module, so
other tools can read results.json; `validate_results` checks it with `jsonschema` (a number type that
excludes NaN/inf, as JSON does) and then the few cross-field rules JSON Schema cannot state (listed in
the schema's description). Every problem is one `IbverifyError` line naming the field, e.g.
`results: claims[2] (baek.x).outcome.series[0].y[3] must be a finite number or null, got nan`.
Unknown extra keys are allowed (forward compatibility); a baseline may carry `tracked` (see compare).
"""

from __future__ import annotations

import json
import math
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from ..errors import IbverifyError
from ..atomic import atomic_write
from ..evidence import decision_counts

SCHEMA = "ibverify.results/1"
SCHEMA_FILE = Path(__file__).with_name("results.schema.json")
NOT_APPLICABLE = "not applicable"   # a control the data cannot refute (runner.discern): neither pass nor unexpected
VERDICTS = ("holds", "does not hold", "refuted", "not refuted", "finding", "error", "inconclusive", NOT_APPLICABLE)
EXPECT_BY_STATUS = {"paper": "holds", "derived": "holds", "reconstructed": "holds", "law": "holds",
                    "control": "refuted", "beyond": "finding"}
_JSON_TYPE = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number",
              type(None): "null"}


_ARTICLE = {"number": "a finite number", "integer": "an integer", "string": "a string", "boolean": "a boolean",
            "object": "an object", "array": "an array"}


def _fail(where: str, msg: str) -> None:
    raise IbverifyError(f"results: {where} {msg}")


def json_schema() -> dict:
    """The published JSON Schema of results files (a fresh copy)."""
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator():
    cls = jsonschema.Draft202012Validator

    def finite_number(checker, v) -> bool:
        return (isinstance(v, (int, float)) and not isinstance(v, bool)
                and (not isinstance(v, float) or math.isfinite(v)))

    checker = cls.TYPE_CHECKER.redefine("number", finite_number)
    schema = json_schema()
    cls.check_schema(schema)
    return jsonschema.validators.extend(cls, type_checker=checker)(schema)


def _where(path, results: Any) -> str:
    """claims/2/outcome/series/0/y/3 -> `claims[2] (baek.x).outcome.series[0].y[3]`."""
    out, node = "", results
    for i, key in enumerate(path):
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            node = None
        if i == 1 and path[0] == "claims" and isinstance(node, dict) and isinstance(node.get("id"), str):
            out += f" ({node['id']})"
    return out or "top level"


def _type_name(v: Any) -> str:
    return _JSON_TYPE.get(type(v), type(v).__name__)


def _message(err, results: Any) -> str:
    """One line for a jsonschema error: the field, what it must be, what it is."""
    path, v, kind = list(err.absolute_path), err.instance, err.validator
    if kind == "required":
        missing = next(k for k in err.validator_value if not isinstance(v, dict) or k not in v)
        return f"results: {_where([*path, missing], results)} is missing"
    where = _where(path, results)
    if kind == "type":
        want = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        want = [_ARTICLE.get(w, w) for w in want]
        got = repr(v) if isinstance(v, float) else _type_name(v)  # a float failing "number" is nan/inf
        text = f"must be {' or '.join(want)}, got {got}"
    elif kind == "const":
        text = f"must be {err.validator_value!r}, got {v!r}"
    elif kind == "enum":
        text = f"must be one of {', '.join(map(str, err.validator_value))}, got {v!r}"
    elif kind == "minimum":
        text = f"must be >= {err.validator_value}, got {v!r}"
    else:
        text = err.message
    why = err.schema.get("description") if isinstance(err.schema, dict) else None
    return f"results: {where} {text}" + (f" ({why})" if why else "")


def validate_results(results: Any) -> dict:
    """Raise `IbverifyError` (one line, naming the field) unless `results` follows the schema."""
    err = jsonschema.exceptions.best_match(_validator().iter_errors(results))
    if err is not None:
        raise IbverifyError(_message(err, results))
    claims, summary = results["claims"], results["summary"]
    seen: set[str] = set()
    for i, c in enumerate(claims):
        w = f"claims[{i}] ({c['id']})"
        for j, s in enumerate((c["outcome"] or {}).get("series", [])):
            if len(s["x"]) != len(s["y"]):
                _fail(f"{w}.outcome.series[{j}]", f"has len(x)={len(s['x'])} != len(y)={len(s['y'])}")
        out = c["outcome"] or {}
        derived = _counts_of(out.get("decisions") or {})
        if "counts" in out and out["counts"] != derived:
            _fail(f"{w}.outcome.counts", f"is {out['counts']} but outcome.decisions gives {derived}")
        if c["as_expected"] != (c["verdict"] == c["expect"]):
            _fail(f"{w}.as_expected", f"is {c['as_expected']} but verdict {c['verdict']!r} vs expect {c['expect']!r}")
        if c["id"] in seen:
            _fail(f"claims[{i}].id", f"duplicates {c['id']!r}")
        seen.add(c["id"])
    recomputed = summarize(claims)  # the summary is derived data: it must be what the rows say
    for key in ("total", "as_expected", "unexpected", "not_applicable", "errors", "inconclusive", "examples"):
        if key in summary and summary[key] != recomputed[key]:
            _fail(f"summary.{key}", f"is {summary[key]} but the claim rows give {recomputed[key]}")
    return results


def _counts_of(decisions: dict) -> dict | None | str:
    try:
        return decision_counts(decisions)
    except ValueError as e:
        return str(e)


def summarize(rows: list[dict]) -> dict:
    """The `summary` of a results dict from its claim rows: claims (total, as expected, unexpected, not applicable,
    errors, unexpected inconclusive verdicts; total = as expected + unexpected + not applicable: a "not applicable"
    row is never as expected and never unexpected) and `examples`, the per-example decisions summed over the rows
    (outcome.counts, else what an older row's outcome.decisions gives; rows with neither add nothing)."""
    examples = dict.fromkeys(("supported", "contradicted", "inconclusive", "set_aside"), 0)
    for r in rows:
        counts = row_counts(r)
        for k in examples:
            examples[k] += int((counts or {}).get(k, 0))
    return {"total": len(rows), "as_expected": sum(r["as_expected"] for r in rows),
            "unexpected": sum(not r["as_expected"] and r["verdict"] != NOT_APPLICABLE for r in rows),
            "not_applicable": sum(r["verdict"] == NOT_APPLICABLE for r in rows),
            "errors": sum(r["verdict"] == "error" for r in rows),
            "inconclusive": sum(r["verdict"] == "inconclusive" and not r["as_expected"] for r in rows),
            "examples": examples}


def row_counts(row: dict) -> dict | None:
    """A row's per-example counts: outcome.counts, else (an older row) the same summary of outcome.decisions; None
    when the row has neither (no outcome, or a check that judges no examples three-valued)."""
    out = row.get("outcome") or {}
    if "counts" in out:
        return out["counts"]
    counts = _counts_of(out.get("decisions") or {})
    return counts if isinstance(counts, dict) else None


def error_line(error: str | None) -> str:
    """The last non-empty line of an error text: the exception message, not 'Traceback ...'."""
    lines = [ln for ln in (error or "").strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def dumps(results: dict) -> str:
    try:
        return json.dumps(results, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    except (TypeError, ValueError) as e:
        raise IbverifyError(f"results: cannot be written as JSON: {e}") from None


def write_results(results: dict, path: str | os.PathLike) -> Path:
    """Validate and write `results` atomically; returns the path."""
    validate_results(results)
    atomic_write(path, dumps(results))
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
