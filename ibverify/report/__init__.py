"""Results file (schema `ibverify.results/1`), HTML report and regression gate.

Everything here works from a results dict; nothing re-runs a claim.
"""

from .commands import compare_command, fresh_command, report_command
from .compare import CompareResult, compare
from .freshness import Freshness, freshness
from .html import render_report
from .publishing import merge_results, publish
from .schema import SCHEMA, load_results, summarize, validate_results, write_results

__all__ = ["SCHEMA", "CompareResult", "Freshness", "compare", "compare_command", "fresh_command", "freshness",
           "load_results", "merge_results",
           "publish", "render_report", "report_command", "summarize", "validate_results",
           "write_results"]
