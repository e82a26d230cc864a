"""The `ibverify` command line.

Exit status: 0 success; 1 `verify` found an unexpected verdict or `compare` a regression; 2 bad
input of any kind (one line on stderr, never a traceback) and also an interrupt (Ctrl-C) in every
command (a `train --checkpoint` run saves first and says how to resume). Output cut short by its
reader (`ibverify claims | head -1`) ends quietly with status 0.
Start-up stays light: heavy modules (cvxpy, scipy, numba, sympy, sklearn, matplotlib, dask) are
imported inside the commands that use them.
"""

from __future__ import annotations

import argparse
import textwrap
import os
import sys
import warnings

from ..errors import IbverifyError
from ..version import __version__

from .output import (EXIT_BAD_INPUT, EXIT_INTERRUPTED, Parser, add_intercept_option, data_json, dump, load_data,
                     one_line)
from ..optim.table import names
from .bias import add_bias_parser
from .train import add_train_parser
from .verify import add_verify_parser


# ---------------------------------------------------------------- claims
def cmd_claims(args) -> int:
    from ..claims import load_registry  # late-bound, not start-up: tests patch ibverify.claims.load_registry

    claims = load_registry(args.claims_dir)
    if args.markdown:
        print(markdown_table(claims))
        return 0
    if args.json:
        dump([{"id": c.id, "paper": c.paper, "result": c.result, "status": c.status, "expect": c.expect,
                "tiers": list(c.tiers), "check": c.check, "statement": c.statement} for c in claims])
        return 0
    w = max(len(c.id) for c in claims)
    print(f"{'id':<{w}}  {'status':<13}  {'tiers':<16}  result")
    for c in claims:
        print(f"{c.id:<{w}}  {c.status:<13}  {','.join(c.tiers):<16}  {c.result}")
    return 0


def markdown_table(claims) -> str:
    """The registry as a Markdown table (id, status, result, tiers); the documentation's full catalogue is
    docs/claims.md (docs/gen_claims.py)."""
    rows = ["| id | status | result | tiers |", "|---|---|---|---|"]
    for c in claims:
        rows.append(f"| `{c.id}` | {c.status} | {c.result.replace('|', '/')} | {', '.join(c.tiers)} |")
    return "\n".join(rows)


# ---------------------------------------------------------------- train / margin / predict
def cmd_margin(args) -> int:
    from ..oracles import max_margin  # start-up time: --help never loads the oracles

    D = load_data(args.data, quiet=args.json, intercept=args.intercept)
    r = max_margin(D.Z, args.norm)
    out = {"data": data_json(args.data, D, args.intercept), "norm": r.norm, "direction": r.direction,
           "margin": r.margin,
           "duals": r.duals, "support": r.support, "inert_coordinates": r.inert, "certificate": r.certificate}
    if args.json:
        dump(out)
    else:
        print(f"{args.norm} max margin γ = {r.margin:.10g}; support vectors {r.support.tolist()}")
        if len(r.inert):
            print(f"inert coordinates (zero in every sample; direction 0 there): {r.inert.tolist()}")
    return 0


PREDICT_LABELS = {  # plain-language lines of `predict` (--json keeps the keys)
    "direction": "predicted direction p* of per-sample Adam (unit ℓ2 norm)",
    "c": "fixed point c* = T(c*) (weights of the data-adaptive metric)",
    "support": "samples with c*_i > 0",
    "support_vectors": "support vectors of P_Adam(c*) (active margins)",
    "inert_coordinates": "inert coordinates (zero in every sample; p* is 0 there)",
    "cos_l2": "cosine of p* to the ℓ2 max-margin direction ŵ2",
    "cos_linf": "cosine of p* to one ℓ∞ max-margin solution (ℓ∞ solutions may be many)",
    "cos_linf_bound": "upper bound of the cosine of p* to every ℓ∞ max-margin solution",
    "l2_margin": "ℓ2-normalized margin of p*",
    "gamma_l2": "ℓ2 max margin γ2",
    "linf_margin_gap": "relative ℓ∞ margin gap of p*, (γ∞ − γ∞(p*))/γ∞",
    "gamma_linf": "ℓ∞ max margin γ∞",
    "data_scale": "data scale max|z| (the oracles solve on Z/scale)",
    "iterations": "fixed-point iterations",
    "residual": "fixed-point residual ‖T(c) − c‖₁",
    "kkt_residual": "KKT residual of P_Adam(c*)",
    "unique_dual": "the dual c* is unique",
    "batch_size": "mini-batch size b of the metric M_{N,b}",
    "damping": "damping of the fixed-point iteration",
}


def cmd_predict(args) -> int:
    try:
        from ..theory import predict  # start-up time: the theory (sympy, cvxpy)
    except ImportError as e:
        raise IbverifyError(f"predict is not available: {e}") from None
    D = load_data(args.data, quiet=args.json, intercept=args.intercept)
    out = {"data": data_json(args.data, D, args.intercept), **predict(D.Z, b=args.batch_size)}
    if args.json:
        dump(out)
    else:
        for k, v in out.items():
            if k == "data":
                continue
            if isinstance(v, list) and len(v) > 12:
                v = f"[{len(v)} values; --json for all]"
            print(f"{PREDICT_LABELS.get(k, k)}: {v}")
    return 0


# ---------------------------------------------------------------- report / compare
def cmd_report(args) -> int:
    from ..report import report_command  # start-up time: the report package (jsonschema)

    path = report_command(args.results, args.out)
    print(f"report written: {path}")
    return 0


def cmd_compare(args) -> int:
    from ..report import compare_command, fresh_command  # start-up time: the report package (jsonschema)

    if args.fresh:
        if args.results is not None:
            raise IbverifyError("compare --fresh takes the baseline only (it is compared with the code, not a run)")
        from ..claims import load_registry  # late-bound, as in cmd_claims

        return fresh_command(args.baseline, load_registry(args.claims_dir), report_only=args.report_only,
                             partial=args.partial)
    if args.report_only or args.partial:
        raise IbverifyError(f"{'--report-only' if args.report_only else '--partial'} applies to compare --fresh only")
    if args.results is None:
        raise IbverifyError("compare needs BASELINE and RESULTS (or --fresh BASELINE)")
    return compare_command(args.baseline, args.results)


# ---------------------------------------------------------------- parser
class _Raw(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's line breaks (names are not broken at their hyphens)."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    epilog = ("optimizers (train --optimizer; `ibverify train --help` gives each one's own geometry): "
              + ", ".join(names()) + ".\nExit status: 0 ok, 1 unexpected verdict/regression, 2 bad input or "
              "interrupted.")
    p = Parser(prog="ibverify", description=__doc__.split("\n\n")[0], formatter_class=_Raw,
               epilog="\n".join(textwrap.fill(par, 100, break_on_hyphens=False) for par in epilog.split("\n")))
    p.add_argument("--version", action="version", version=f"ibverify {__version__}")
    p.add_argument("--claims-dir", default=None, help="claim registry folder (default ./claims)")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=Parser, metavar="COMMAND")

    c = sub.add_parser("claims", help="list the claim registry")
    c.add_argument("--json", action="store_true", help="the registry as JSON")
    c.add_argument("--markdown", action="store_true", help="the registry as a Markdown table")
    c.set_defaults(func=cmd_claims)

    add_verify_parser(sub)
    add_train_parser(sub, Parser)
    add_bias_parser(sub)

    m = sub.add_parser("margin", help="certified max margin of a dataset")
    m.add_argument("--data", required=True, metavar="FILE", help=".npz (X, y) or .csv (label ±1 last column)")
    m.add_argument("--norm", choices=("l2", "linf", "l1"), default="l2", help="the geometry (default l2)")
    add_intercept_option(m)
    m.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    m.set_defaults(func=cmd_margin)

    pr = sub.add_parser("predict", help="predicted per-sample Adam direction (AdamProxy fixed point)")
    pr.add_argument("--data", required=True, metavar="FILE", help=".npz (X, y) or .csv (label ±1 last column)")
    pr.add_argument("--batch-size", type=int, default=1, metavar="B",
                    help="mini-batch size b < n of the Adam metric M_{N,b} (default 1: per-sample Adam)")
    add_intercept_option(pr)
    pr.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    pr.set_defaults(func=cmd_predict)

    r = sub.add_parser("report", help="render the HTML report from a results.json")
    r.add_argument("results", help="results.json written by ibverify verify")
    r.add_argument("--out", default="reports", help="report folder (default reports/)")
    r.set_defaults(func=cmd_report)

    cp = sub.add_parser("compare", help="regression gate: compare results against a baseline")
    cp.add_argument("baseline", help="baseline results JSON (e.g. ci/baseline-fast.json)")
    cp.add_argument("results", nargs="?", default=None, help="results JSON of this run")
    cp.add_argument("--fresh", action="store_true",
                    help="freshness gate instead: fail (exit 1), naming the claims, when the baseline lacks a claim "
                         "of its tier, holds a row made from uncommitted code, a row of a claim no longer in the "
                         "registry, or a row not as expected (but an inconclusive one with a published fitted "
                         "crossing); a row whose check hash differs from the code's is named stale, with its commit, "
                         "and does not fail")
    cp.add_argument("--report-only", action="store_true", help="with --fresh: print the same lines, exit 0")
    cp.add_argument("--partial", action="store_true",
                    help="with --fresh: a record still being built (the full tier at seeds 1 and 2): its missing rows "
                         "are named NOT YET and do not fail; stale, dirty, dropped and unexpected rows as without it")
    cp.set_defaults(func=cmd_compare)
    return p


def _quiet_stdout() -> None:
    """After a broken pipe: send further output (and the interpreter's final flush) to /dev/null."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # overflow etc.: every result is checked finite
            warnings.simplefilter("ignore", UserWarning)     # solver chatter: statuses are checked instead
            args = build_parser().parse_args(argv)
            args.argv = list(sys.argv[1:] if argv is None else argv)   # the command line, for provenance
            rc = args.func(args)
            sys.stdout.flush()  # a reader that went away shows up here, not in the interpreter's last flush
            return rc
    except IbverifyError as e:
        print(f"ibverify: error: {one_line(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("ibverify: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except (OSError, ValueError, ArithmeticError, MemoryError) as e:
        print(one_line(f"ibverify: error: {type(e).__name__}: {e}"), file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
