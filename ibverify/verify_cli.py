"""`ibverify verify`: run claims, print verdicts, write the report (wired into ibverify.cli)."""

from __future__ import annotations

import sys
from pathlib import Path

from . import IbverifyError


def cmd_verify(args) -> int:
    from . import profiles
    from .claims import load_registry, select
    from .progress import Progress
    from .verify import verify

    profiles.load(args.profile)
    claims = select(load_registry(args.claims_dir), args.ids, args.tier)
    if not claims:
        raise IbverifyError(f"no claims in tier '{args.tier}'")
    bar = Progress(enabled=None if not args.quiet else False)
    quiet = args.quiet

    def start(c):
        bar.label = c.id
        bar.message("running")

    def done(r):
        bar.close()
        if not quiet:
            mark = "ok " if r["as_expected"] else "!! "
            fig = (r["outcome"] or {}).get("figure") or r["error"] or ""
            print(f"{mark}{r['id']:<40} {r['status']:<13} {r['verdict']:<13} {r['runtime_s']:7.1f}s  {fig}", flush=True)

    def progress(msg):
        if args.verbose:
            print(f"   {msg}", file=sys.stderr)
        else:
            bar.message(msg)

    results = verify(claims, args.tier, args.seed, start, done, progress)
    s = results["summary"]
    out = Path(args.report)
    _write_outputs(results, out, args.json)
    if not quiet:
        print(f"{s['as_expected']}/{s['total']} verdicts as expected, {s['unexpected']} unexpected "
              f"({s['errors']} errors); report: {out / 'index.html'}")
    return 0 if s["unexpected"] == 0 else 1


def _write_outputs(results: dict, out: Path, json_path: str | None) -> Path:
    """Merge the run into the report folder `out` (ibverify.report.publishing: other claims' rows and pages
    are kept; concurrent runs wait on a lock); returns the index.html showing this run."""
    from .cli import _dump
    from .report import publish

    index = publish(results, out, json_path if json_path and json_path != "-" else None)
    if json_path == "-":
        _dump(results)
    return index


def add_verify_parser(sub) -> None:
    v = sub.add_parser("verify", help="run claims and write the report")
    v.add_argument("ids", nargs="*", help="claim ids (or prefixes ending in '.', e.g. baek.)")
    v.add_argument("--tier", choices=("smoke", "fast", "full"), default="fast")
    v.add_argument("--report", default="reports", help="report folder (default reports/)")
    v.add_argument("--json", default=None, metavar="PATH", help="also write results JSON here ('-' for stdout)")
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--profile", choices=("ci", "dev"), default=None,
                   help="hypothesis profile (default $HYPOTHESIS_PROFILE or ci: deterministic)")
    v.add_argument("--quiet", "-q", action="store_true")
    v.add_argument("--verbose", "-v", action="store_true")
    v.set_defaults(func=cmd_verify)

