"""`ibverify verify`: run claims, print verdicts, write the report (wired into ibverify.cli)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path

from .. import IbverifyError
from .. import claims as registry
from .output import dump


def cmd_verify(args) -> int:
    """Run the selected claims (in this process, on a LocalCluster or on --scheduler), print one line
    per claim as it finishes, write the report; exit 0 iff every verdict is the expected one, 3 when the only
    unexpected verdicts are inconclusive (not decided at the horizon reached), else 1."""
    from .. import profiles  # start-up time: hypothesis (the parser imports this module for --help)
    from ..runner.verify import verify  # start-up time: numpy, hypothesis

    profile = profiles.load(args.profile)
    claims = select_claims(args)
    args.report = args.report or "reports"
    workers = _workers(args)
    cache = _cache_root(args)
    if cache is not None:  # in-run checkpoints of resumable checks go to the same place
        os.environ["IBVERIFY_CACHE"] = str(cache)
    quiet = args.quiet
    bar = RunBar(claims, args.tier, enabled=not quiet)

    def line(r, note=""):
        if not quiet:
            mark = "ok " if r["as_expected"] else "?? " if r["verdict"] == "inconclusive" else "!! "
            fig = (r["outcome"] or {}).get("figure") or r["error"] or ""
            if r["verdict"] == "inconclusive":
                fig = f"{fig} [not decided: {r['outcome']['inconclusive']}]"
            bar.write(f"{mark}{r['id']:<40} {r['status']:<13} {r['verdict']:<13} {r['runtime_s']:7.1f}s{note}  {fig}")

    def done(r):
        line(r)
        bar.claim_done(r)

    def reused(r):
        line(r, " (cached)")
        bar.claim_done(r, reused=True)

    def progress(msg):
        if args.verbose:
            bar.write(f"   {msg}", err=True)
        else:
            bar.message(msg)

    def cluster(info):
        if not quiet:
            bar.write(info)

    if cache is not None and not quiet:
        bar.write(f"resume cache: {cache} (finished claims and evaluated examples are reused)")
    try:
        results = verify(claims, args.tier, args.seed, bar.claim_started, done, progress, workers=workers,
                         scheduler=args.scheduler, cache=cache, profile=profile, on_example=bar.example,
                         on_cluster=cluster, on_reused=reused, runtimes=_earlier_runtimes(args))
    finally:
        bar.close()
    s = results["summary"]
    out = Path(args.report)
    index = _write_outputs(results, out, args.json, replace=not args.ids)
    if not quiet:
        print(f"{s['as_expected']}/{s['total']} verdicts as expected, {s['unexpected']} unexpected "
              f"({s['inconclusive']} inconclusive, {s['errors']} errors) in {bar.elapsed():.0f}s; report: {index}")
    if s["unexpected"] == 0:
        return 0
    return 3 if s["unexpected"] == s["inconclusive"] else 1


DATA_PREFIX = "data."  # the claims that run on one dataset, a user's with --data


def select_claims(args) -> list:
    """The claims to run: `args.ids` (ids or prefixes; none: every claim) of `args.tier`, on the user's dataset with
    --data (on_user_data). `ibverify verify` and the Python API (`ibverify.verify`) both come here."""
    if args.data is not None:
        args.ids = args.ids or [DATA_PREFIX]
    elif args.intercept:
        raise IbverifyError("--intercept applies to --data FILE only")
    claims = registry.select(registry.load_registry(args.claims_dir), args.ids, args.tier)
    if args.data is not None:
        claims = on_user_data(claims, args)
    if not claims:
        raise IbverifyError(f"no claims in tier '{args.tier}'")
    return claims


def on_user_data(claims: list, args) -> list:
    """The data.* claims with their dataset replaced by the user's file (validated here first: a bad file is one
    line and exit 2 before anything runs: the recipe the claims build, recipes.settings.claim_datasets); the report
    goes to reports/data-<file stem>/ unless --report says."""
    from ..data.files import require_run_scale  # start-up time: the parser never loads data
    from ..recipes.cli import user_file

    other = [c.id for c in claims if not c.id.startswith(DATA_PREFIX)]
    if other:
        raise IbverifyError(f"--data runs the {DATA_PREFIX}* claims only (the others generate their own data): "
                            f"{', '.join(other[:3])}{' …' if len(other) > 3 else ''}")
    path = Path(args.data).resolve()
    D = require_run_scale(user_file(path, intercept=args.intercept).build(), 2, "Adam's moments and metric Σ c_i z_i²")
    if not args.quiet:
        print(f"data: {D.n} × {D.d} from {args.data}{' with an intercept column' if args.intercept else ''}",
              flush=True)
    if args.report is None:
        args.report = str(Path("reports") / f"data-{path.stem}")
    return [dataclasses.replace(c, params={**c.params, "data_file": str(path), "intercept": bool(args.intercept)})
            for c in claims]


def _workers(args) -> int:
    if args.sequential:
        return 1
    if args.workers is None:
        return os.cpu_count() or 1
    if args.workers < 1:
        raise IbverifyError(f"--workers must be >= 1, got {args.workers}")
    return args.workers


def _earlier_runtimes(args) -> dict[str, float]:
    """Claim runtimes of an earlier run of this tier: the report folder's results.json, else
    ci/baseline-<tier>.json, else the fast tier's baseline (a proxy: the full tier's long claims are the fast
    tier's long claims); {} when none exists or is readable (only the start order depends on it)."""
    tries = [(Path(args.report) / "results.json", args.tier), (Path("ci") / f"baseline-{args.tier}.json", args.tier),
             (Path("ci") / "baseline-fast.json", "fast")]
    for path, tier in tries:
        try:
            data = json.loads(path.read_text())
            if data.get("tier") == tier:
                return {r["id"]: float(r.get("runtime_s") or 0.0) for r in data.get("claims", [])}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue
    return {}


def _cache_root(args) -> Path | None:
    """--cache DIR, else the default root ($IBVERIFY_CACHE or .ibverify-cache) with --resume or the full tier."""
    if args.no_cache:
        return None
    if args.cache:
        return Path(args.cache)
    if args.resume or args.tier == "full":
        from ..cache import default_root  # start-up time: --help never loads the cache

        return default_root()
    return None


class RunBar:
    """Whole-run progress on a terminal (tqdm, stderr): claims done / total, examples, ETA, latest message.

    The ETA is tqdm's, from the rate of finished claims. Silent when stderr is not a TTY or $CI is set;
    lines written through `write` then go straight to stdout."""

    def __init__(self, claims, tier: str, enabled: bool = True):
        self.t0 = time.perf_counter()
        self.examples, self.total_examples = 0, sum(int(c.params_for(tier).get("examples", 0) or 0) for c in claims)
        self.running: list[str] = []
        self._last = 0.0
        self._msg = ""
        self.bar = None
        if enabled and sys.stderr.isatty() and not os.environ.get("CI"):
            from tqdm import tqdm  # start-up time: tqdm (only a run on a terminal shows the bar)

            self.bar = tqdm(total=len(claims), desc="claims", unit="claim", file=sys.stderr, dynamic_ncols=True,
                            leave=False, mininterval=0.5)

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def write(self, text: str, err: bool = False) -> None:
        stream = sys.stderr if err else sys.stdout
        if self.bar is not None:
            self.bar.write(text, file=stream)
        else:
            print(text, file=stream, flush=True)

    def _show(self, force: bool = False) -> None:
        if self.bar is None:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.5:
            return
        self._last = now
        ex = f"examples {self.examples}" + (f"/~{self.total_examples}" if self.total_examples else "")
        run = f" | {', '.join(self.running[:2])}" if self.running else ""
        self.bar.set_postfix_str(f"{ex}{run} {self._msg}"[:120], refresh=False)
        self.bar.refresh()

    def claim_started(self, claim) -> None:
        self.running = [r for r in self.running if r != claim.id] + [claim.id]
        self._show(force=True)

    def claim_done(self, row: dict, reused: bool = False) -> None:
        if row["id"] in self.running:
            self.running.remove(row["id"])
        if reused:
            self.examples += int((row.get("outcome") or {}).get("examples") or 0)
        if self.bar is not None:
            self.bar.update(1)
        self._show(force=True)

    def example(self) -> None:
        self.examples += 1
        self._show()

    def message(self, msg: str) -> None:
        self._msg = msg.replace("\n", " ")[:70]
        self._show()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _write_outputs(results: dict, out: Path, json_path: str | None, replace: bool = False) -> Path:
    """Merge the run into the report folder `out` (ibverify.report.publishing: other claims' rows and pages
    are kept, a run of another tier/seed goes to out/<tier>-seed<seed>/, concurrent runs wait on a lock;
    `replace`: a whole-tier run drops rows of claims it did not run); returns the index.html showing it."""
    from ..report import publish  # start-up time: the report package (only a finished run writes one)

    index = publish(results, out, json_path if json_path and json_path != "-" else None, replace=replace)
    if json_path == "-":
        dump(results)
    return index


def add_verify_parser(sub) -> None:
    v = sub.add_parser("verify", help="run claims and write the report")
    v.add_argument("ids", nargs="*", help="claim ids (or prefixes ending in '.', e.g. baek.)")
    v.add_argument("--tier", choices=("smoke", "fast", "full"), default="fast",
                   help="smoke: every claim at its smallest deciding sizes (about 2 min CPU); fast (default): "
                        "minutes; full: long horizons, resume cache on")
    v.add_argument("--report", default=None, help="report folder (default reports/; with --data reports/data-<stem>/)")
    v.add_argument("--data", default=None, metavar="FILE",
                   help=f"run the {DATA_PREFIX}* claims (Adam's, Signum's and per-sample Adam's limits, with their "
                        "controls) on this .npz/.csv dataset instead of their default (scikit-learn's iris)")
    v.add_argument("--intercept", action="store_true", help="with --data: append a column of ones (a bias)")
    v.add_argument("--json", default=None, metavar="PATH", help="also write results JSON here ('-' for stdout)")
    v.add_argument("--seed", type=int, default=0, help="seed of every generated example (default 0)")
    v.add_argument("--profile", choices=("ci", "dev"), default=None,
                   help="hypothesis profile (default $HYPOTHESIS_PROFILE or ci: deterministic)")
    g = v.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, default=None, metavar="N",
                   help="claims run as tasks on a local Dask cluster of N processes (default: all cores; "
                        "1 = in this process)")
    g.add_argument("--sequential", action="store_true", help="run in this process, one claim after the other")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on an existing Dask cluster, e.g. tcp://host:8786 (single-threaded workers)")
    c = v.add_mutually_exclusive_group()
    c.add_argument("--resume", action="store_true",
                   help="use the resume cache ($IBVERIFY_CACHE or .ibverify-cache/; always on for --tier full)")
    c.add_argument("--cache", default=None, metavar="DIR", help="use the resume cache in DIR")
    c.add_argument("--no-cache", action="store_true", help="no resume cache, not even for --tier full")
    v.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no verdict lines")
    v.add_argument("--verbose", "-v", action="store_true", help="every progress message on stderr")
    v.set_defaults(func=cmd_verify)
