"""Entry points for the CLI (`ibverify report`, `ibverify compare [--fresh]`) and the pytest plugin."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

from .compare import compare
from .freshness import freshness
from .publishing import render_file
from .schema import load_results


def report_command(results_path: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """`ibverify report RESULTS.json --out DIR`: render DIR/index.html from the file alone (kept as
    DIR/results.json); refuses a DIR whose report has claims the file lacks (see publishing.render_file)."""
    return render_file(results_path, out_dir)


def compare_command(baseline_path: str | os.PathLike, results_path: str | os.PathLike,
                    out: TextIO | None = None) -> int:
    """`ibverify compare BASELINE.json RESULTS.json`: print what changed; 0 if no regression, else 1."""
    out = out or sys.stdout
    result = compare(load_results(baseline_path), load_results(results_path))
    for line in result.lines:
        print(line, file=out)
    print(result.summary(), file=out)
    return 0 if result.ok else 1


def fresh_command(baseline_path: str | os.PathLike, claims: list, report_only: bool = False,
                  out: TextIO | None = None, partial: bool = False) -> int:
    """`ibverify compare --fresh BASELINE.json`: one line per claim whose row is missing, stale (check hash, with the
    commit it was made at), dirty, unexpected (not as expected, but for an inconclusive row with a published fitted
    crossing) or of a claim gone from the registry (report.freshness); 1 if any row fails (all but stale ones),
    else 0 (always 0 with report_only); `partial`: a record still being built, its missing rows named NOT YET and
    not failing."""
    out = out or sys.stdout
    res = freshness(load_results(baseline_path), claims, partial)
    for line in res.lines():
        print(line, file=out)
    print(res.summary().replace("BASELINE", str(baseline_path))
          + (" (report only: not failing)" if report_only and not res.ok else ""), file=out)
    return 0 if res.ok or report_only else 1
