"""`ibverify verify`: run claims, print verdicts, write the report (wired into ibverify.cli)."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import math
import os
import sys
import time
from pathlib import Path

from ..errors import IbverifyError
from .. import claims as registry
from .output import csv_lines_named, dump


def cmd_verify(args) -> int:
    """Run the selected claims (in this process, on a LocalCluster or on --scheduler), print one line
    per claim as it finishes, write the report; exit 0 iff every verdict is the expected one, 3 when the only
    unexpected verdicts are inconclusive (not decided at the horizon reached), else 1."""
    from .. import profiles  # start-up time: hypothesis (the parser imports this module for --help)

    profile = profiles.load(args.profile)
    check_budget(args)
    if args.stale is not None:
        return cmd_stale(args, profile)
    if args.allow_dirty:
        raise IbverifyError("--allow-dirty applies to --stale BASELINE only")
    claims = select_claims(args)   # a typo or a damaged --data file: one line before the engine and solvers load
    from ..runner.verify import verify  # start-up time: numpy, numba, cvxpy

    args.report = args.report or "reports"
    results, elapsed = _run(claims, args, profile, verify)
    s = results["summary"]
    out = Path(args.report)
    index = _write_outputs(results, out, args.json, replace=not args.ids)
    if not args.quiet:
        na = f", {s['not_applicable']} not applicable to this data" if s.get("not_applicable") else ""
        print(f"{s['as_expected']}/{s['total']} verdicts as expected, {s['unexpected']} unexpected "
              f"({s['inconclusive']} inconclusive, {s['errors']} errors){na} in {elapsed:.0f}s; report: {index}")
    return _status(s)


def _status(s: dict) -> int:
    """0: no unexpected verdict (a "not applicable" control is not one); 3: only inconclusive ones; else 1."""
    if s["unexpected"] == 0:
        return 0
    return 3 if s["unexpected"] == s["inconclusive"] else 1


def _run(claims: list, args, profile, verify, each=lambda row: None) -> tuple[dict, float]:
    """Run `claims` as `verify` does (workers, cache, progress bar, verdict lines); (results, seconds). `each(row)`
    is called with each finished or reused row, as it comes (before the next claim starts, in this process)."""
    workers = _workers(args)
    cache = _cache_root(args)
    if cache is not None:  # in-run checkpoints of resumable checks go to the same place
        os.environ["IBVERIFY_CACHE"] = str(cache)
    quiet = args.quiet
    bar = RunBar(claims, args.tier, enabled=not quiet)

    def line(r, note=""):
        if not quiet:
            mark = mark_of(r)
            fig = (r["outcome"] or {}).get("figure") or r["error"] or ""
            if r["verdict"] == "inconclusive":
                fig = f"{fig} [not decided: {r['outcome']['inconclusive']}]"
            bar.write(f"{mark}{r['id']:<40} {r['status']:<13} {r['verdict']:<13} {r['runtime_s']:7.1f}s{note}  {fig}")

    def done(r):
        line(r)
        bar.claim_done(r)
        each(r)

    def reused(r):
        line(r, " (cached)")
        bar.claim_done(r, reused=True)
        each(r)

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
    return results, bar.elapsed()


def mark_of(row: dict) -> str:
    """A verdict line's mark: ok as expected, -- not applicable to the data, ?? inconclusive, !! else."""
    if row["as_expected"]:
        return "ok "
    return {"not applicable": "-- ", "inconclusive": "?? "}.get(row["verdict"], "!! ")


@contextlib.contextmanager
def sole_writer(path: Path):
    """Hold an exclusive lock on `BASELINE.lock` for a whole `--stale` refresh: a second refresh of the same baseline
    (started before the first merged) would merge over it from the rows it read at its start."""
    lock = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise IbverifyError(f"cannot lock {path} for refreshing ({lock}: {e.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise IbverifyError(f"{path} is being refreshed by another `verify --stale` (it holds {lock}); let it finish "
                            "first") from None
    try:
        yield
    finally:
        os.close(fd)   # releases the lock


def cmd_stale(args, profile) -> int:
    """`verify --stale BASELINE`: run the claims of the baseline's tier whose row is missing, stale (check hash) or
    dirty (report.freshness), or with --budget-rows / --budget-cpu-min a slice of them, costliest first
    (`slice_plan`), and merge each row into BASELINE as soon as it is made, writing the file atomically each time
    (other rows left byte for byte as they are; rows of claims gone from the registry dropped, said so), so a killed
    refresh loses only the rows still running. Never merges a row made from uncommitted code unless --allow-dirty
    (a dirty checkout is refused before anything runs, one line, exit 2), nor an error row (the old row stays, the
    claim stays stale), nor a row finished after the checkout's commit changed (its code may be the old one: the
    refresh stops there, the row kept in BASELINE.unmerged.json, the rows merged before it stay). One refresh of a
    baseline at a time (`sole_writer`). Exit status as `verify`'s, over the claims run."""
    from ..report.schema import load_results  # start-up time: the report package

    path = Path(args.stale)
    if not path.exists():
        _start_record(args, path)
    load_results(path)   # a damaged baseline: its one-line error, before a lock file is made beside it
    with sole_writer(path):
        return _refresh(args, profile, path)


def _start_record(args, path: Path) -> None:
    """A baseline that does not exist yet (e.g. the full tier at seed 1): with --tier and --seed, an empty record of
    that tier and seed is written there, and the refresh makes its rows (all missing) in slices."""
    from datetime import datetime, timezone

    from ..report.schema import SCHEMA, summarize, write_results
    from ..runner.claim import versions

    if args.tier is None or args.seed is None:
        raise IbverifyError(f"--stale {path}: no such baseline; to start a new record there give its --tier and --seed "
                            f"(e.g. --tier full --seed 1)")
    if not path.parent.is_dir():
        raise IbverifyError(f"--stale {path}: no folder {path.parent}")
    write_results({"schema": SCHEMA, "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                   "tier": args.tier, "seed": int(args.seed), "versions": versions(), "summary": summarize([]),
                   "claims": []}, path)
    print(f"{path}: a new {args.tier}-tier record at seed {args.seed}, every row still to make", flush=True)


def _refuse_merge(results: dict, path: Path, why: str) -> None:
    """Keep a finished run that must not enter the baseline (hours of work) in BASELINE.unmerged.json, and refuse."""
    from ..report.schema import write_results

    saved = write_results(results, path.with_name(f"{path.stem}.unmerged.json"))
    raise IbverifyError(f"refusing to merge into {path}: {why}; the baseline is unchanged, the run is saved in {saved}")


def _refresh(args, profile, path: Path) -> int:
    from ..report.freshness import freshness  # start-up time: the report package
    from ..report.schema import load_results, summarize, write_results
    from ..runner.claim import provenance, versions
    from ..runner.verify import verify

    base = load_results(path)
    if args.data is not None:
        raise IbverifyError("--stale refreshes a baseline of the registry's claims; it does not take --data")
    if args.tier is not None and args.tier != base["tier"]:
        raise IbverifyError(f"--stale {path} is a {base['tier']}-tier baseline; --tier {args.tier} differs "
                            f"(leave --tier out: --stale runs the baseline's tier)")
    if args.seed is not None and args.seed != base["seed"]:
        raise IbverifyError(f"--stale {path} holds seed {base['seed']}; --seed {args.seed} differs")
    args.tier, args.seed = base["tier"], base["seed"]
    everything = registry.load_registry(args.claims_dir)
    fresh = freshness(base, everything)
    wanted = fresh.rerun
    if args.ids:   # only these (ids or prefixes) of the claims to run
        named = {c.id for c in registry.select(everything, args.ids, args.tier)}
        wanted = [i for i in wanted if i in named]
    todo = [c for c in everything if c.id in set(wanted)]

    def say(line: str) -> None:   # what runs, is dropped, was merged: the command's output, also with --quiet
        print(line, file=sys.stderr if args.json == "-" else sys.stdout, flush=True)

    for line in fresh.lines():
        if not line.startswith(("MISSING", "STALE", "DIRTY")) or line.split()[1].rstrip(":") in set(wanted):
            say(line)
    if not todo and not fresh.dropped:
        say(f"{path}: every {args.tier}-tier row is current; nothing to run")
        return 0
    estimates = row_estimates(base["claims"], load_results(args.costs)["claims"] if args.costs is not None else [])
    todo, left = slice_plan(todo, estimates, args.budget_rows, _budget_s(args))
    if args.budget_rows is not None or args.budget_cpu_min is not None:
        say(plan_line(todo, left, estimates))
    start = provenance() if todo else {}
    if todo and not args.allow_dirty:
        state = start["dirty"]
        if state is not False:
            why = ("the checkout has uncommitted changes" if state else
                   "cannot tell whether the code is committed (not a git checkout)")
            raise IbverifyError(f"refusing to refresh {path}: {why}, so every row would be dirty and a dirty row "
                                "never enters a baseline; commit first (or --allow-dirty)")
    dropped = set(fresh.dropped)
    book = {"claims": [r for r in base["claims"] if r["id"] not in dropped], "merged": 0, "errors": []}

    def write() -> None:
        out = {**base, "claims": book["claims"], "summary": summarize(book["claims"])}
        if book.get("run"):
            out.update(created=book["run"], versions=book["versions"])
        write_results(out, path)   # atomic: a kill leaves the file as it was before or after this row

    def land(row: dict) -> None:
        """Merge one finished row into the baseline now (a later kill loses only the rows still running)."""
        one = {**base, "created": row.get("created") or base["created"], "claims": [row],
               "summary": summarize([row])}
        now = getattr(provenance, "__wrapped__", provenance)()["commit"]   # not the per-process cached one
        if now != start["commit"]:   # e.g. the worktree was re-made at another commit under the run
            _refuse_merge(one, path, f"the checkout moved from commit {start['commit'][:12] or '?'} to "
                                     f"{now[:12] or '?'} while {row['id']} ran, so its row may come from the old "
                                     f"code ({book['merged']} row(s) merged before it stay)")
        if row.get("dirty") is not False and not args.allow_dirty:
            _refuse_merge(one, path, f"{row['id']}: its row was made from uncommitted code (reused from the resume "
                                     f"cache of an earlier run? run again with --no-cache; {book['merged']} row(s) "
                                     "merged before it stay)")
        if row["verdict"] == "error":
            book["errors"].append(row["id"])
            return
        ids = [r["id"] for r in book["claims"]]
        if row["id"] in ids:
            book["claims"][ids.index(row["id"])] = row
        else:
            book["claims"].append(row)
        book["merged"] += 1
        book.update(run=row.get("created") or base["created"], versions=book.get("versions") or versions())
        write()

    results, elapsed = _run(todo, args, profile, verify, each=land) if todo else (None, 0.0)
    rows = results["claims"] if results else []
    if not book["merged"] and dropped:
        write()
    if args.report is not None and results:   # the run's own rows, merged into that report folder
        _write_outputs(results, Path(args.report), args.json)
    elif args.json == "-" and results:
        dump(results)
    elif args.json and results:
        write_results(results, args.json)
    for i in fresh.dropped:
        say(f"dropped {i}: no claim with a {args.tier} tier in the registry")
    for i in book["errors"]:
        say(f"not merged {i}: error verdict (its old row, if any, stays; the claim stays stale)")
    say(f"{path}: {book['merged']} row(s) merged, {len(fresh.dropped)} dropped, {len(book['errors'])} error(s) not "
        f"merged, {len(book['claims'])} rows in all ({elapsed:.0f}s)"
        + (f"; {len(left)} still to refresh (run again)" if left else ""))
    return _status(summarize(rows)) if rows else 0


def row_estimates(rows: list[dict], other: list[dict]) -> dict[str, float | None]:
    """Claim id → the CPU seconds a refresh expects its row to cost: its row's `cpu_s`, else (no row, or none recorded)
    the same claim's in `other` (`--costs`: another record of the tier, e.g. seed 0's for seed 1), else None."""
    own = {r["id"]: r.get("cpu_s") for r in rows}
    theirs = {r["id"]: r.get("cpu_s") for r in other}
    return {i: own[i] if own.get(i) is not None else theirs.get(i) for i in {**theirs, **own}}


def _budget_s(args) -> float | None:
    return None if args.budget_cpu_min is None else 60.0 * args.budget_cpu_min


def check_budget(args) -> None:
    """--budget-rows K (an integer ≥ 1) and --budget-cpu-min M (a finite number > 0) go with --stale only."""
    if args.stale is None:
        for flag, v in (("--budget-rows", args.budget_rows), ("--budget-cpu-min", args.budget_cpu_min),
                        ("--costs", getattr(args, "costs", None))):
            if v is not None:
                raise IbverifyError(f"{flag} applies to --stale BASELINE only")
    if args.budget_rows is not None and args.budget_rows < 1:
        raise IbverifyError(f"--budget-rows must be a whole number ≥ 1, got {args.budget_rows}")
    m = args.budget_cpu_min
    if m is not None and not (math.isfinite(m) and m > 0):
        raise IbverifyError(f"--budget-cpu-min must be a finite number of minutes > 0, got {m:g}")


def slice_plan(todo: list, estimates: dict, rows: int | None = None,
               cpu_s: float | None = None) -> tuple[list, list]:
    """(to run now, left for a later slice): `todo` costliest-first by each claim's estimate (its baseline row's
    recorded `cpu_s`; ties and rows without one in registry order, those without one after every estimated row),
    within the budget: at most `rows` claims, and claims whose estimates add up to at most `cpu_s` (a claim whose
    estimate does not fit the budget left is skipped, a cheaper one may still fit; a claim without an estimate, a
    missing row, counts 0 but runs only while some of the budget is left)."""
    def est(c) -> float | None:
        v = estimates.get(c.id)
        return None if v is None else float(v)

    order = sorted(todo, key=lambda c: (est(c) is None, -(est(c) or 0.0)))   # stable: registry order within
    run, left, spent = [], [], 0.0
    for c in order:
        e = est(c)
        fits = (rows is None or len(run) < rows) and (
            cpu_s is None or (spent + e <= cpu_s if e is not None else spent < cpu_s))
        if fits:
            run.append(c)
            spent += e or 0.0
        else:
            left.append(c)
    return run, left


def plan_line(run: list, left: list, estimates: dict) -> str:
    """What a budgeted refresh runs now and leaves, with the CPU minutes their rows last cost."""
    def minutes(cs) -> str:
        known = [float(estimates[c.id]) for c in cs if estimates.get(c.id) is not None]
        unknown = len(cs) - len(known)
        return f"{sum(known) / 60:.1f} CPU-min recorded" + (f", {unknown} without an estimate" if unknown else "")

    return (f"budget: {len(run)} row(s) now, costliest first ({minutes(run)}): {', '.join(c.id for c in run) or '-'}; "
            f"{len(left)} left for later ({minutes(left)})")


DATA_PREFIX = "data."  # the claims that run on one dataset, a user's with --data


def select_claims(args) -> list:
    """The claims to run: `args.ids` (ids or prefixes; none: every claim) of `args.tier` (default fast; seed default
    0), on the user's dataset with --data (on_user_data). `ibverify verify` and the Python API (`ibverify.verify`)
    both come here."""
    args.tier = args.tier or "fast"
    args.seed = 0 if args.seed is None else args.seed
    if args.data is not None:
        args.ids = args.ids or [DATA_PREFIX]
    elif args.intercept:
        raise IbverifyError("--intercept applies to --data FILE only")
    everything = registry.load_registry(args.claims_dir)
    claims = registry.select(everything, args.ids, args.tier)
    if args.data is not None:
        claims = on_user_data(claims, args, everything)
    if not claims:
        raise IbverifyError(f"no claims in tier '{args.tier}'")
    return claims


def on_user_data(claims: list, args, everything: list | None = None) -> list:
    """The data.* claims with their dataset replaced by the user's file (validated here first: a bad file is one
    line and exit 2 before anything runs: the recipe the claims build, recipes.settings.claim_datasets); the report
    goes to reports/data-<file stem>/ unless --report says. Before any run, how far apart ŵ2, the ℓ∞ max margin and
    p* are on the file (runner.discern): a control whose target is within its own tolerance of the answer of the
    claim it controls (in `everything`, the registry) gets `not_applicable` (its verdict "not applicable",
    runner.run_claim), said on stderr."""
    from ..data import load_dataset   # start-up time: the parser never loads data
    from ..data.files import require_run_scale

    other = [c.id for c in claims if not c.id.startswith(DATA_PREFIX)]
    if other:
        raise IbverifyError(f"--data runs the {DATA_PREFIX}* claims only (the others generate their own data): "
                            f"{', '.join(other[:3])}{' …' if len(other) > 3 else ''}")
    path = Path(args.data).resolve()
    with csv_lines_named(path):   # a ragged or damaged file: one line before the engine (numba) loads
        load_dataset(path, require_separable=False, intercept=args.intercept)
    from ..recipes.cli import user_file   # start-up time: the engine

    with csv_lines_named(path):   # a ragged CSV: the error names its line
        D = require_run_scale(user_file(path, intercept=args.intercept).build(), 2,
                              "Adam's moments and metric Σ c_i z_i²")
    if not args.quiet:
        print(f"data: {D.n} × {D.d} from {args.data}{' with an intercept column' if args.intercept else ''}",
              flush=True)
    if args.report is None:
        args.report = str(Path("reports") / f"data-{path.stem}")
    claims = [dataclasses.replace(c, params={**c.params, "data_file": str(path), "intercept": bool(args.intercept)})
              for c in claims]
    return mark_not_applicable(claims, D.Z, everything or claims, args.tier, args.data)


def mark_not_applicable(claims: list, Z, everything: list, tier: str, name: str) -> list:
    """`claims` with `not_applicable` = {reason, figures} in the params of each control that Z cannot refute: a run
    at the answer of a claim that lists it among its controls passes the control's closeness test, by the control's
    own tolerances (runner.discern; for the ℓ∞ answer, the directions within that claim's gap_max of γ∞). Those
    controls, and the measures that could not be made, are said on stderr, one line each."""
    from ..runner import discern  # start-up time: the oracles

    controls = [c for c in claims if c.status == "control" and "target" in c.params_for(tier)]
    if not controls:
        return claims
    pairs = {c.id: [(p, p.params_for(tier).get("target")) for p in everything
                    if c.id in p.controls and tier in p.tiers and p.params_for(tier).get("target")] for c in controls}
    # one measure per ℓ∞ radius (the gap_max of a claim whose answer is ℓ∞; the other measures do not depend on it)
    def radius(p, answer):   # a claim without gap_max: its control is judged (the near-ℓ∞ cosines not computed)
        return p.tol("gap_max") if answer == "linf" and "gap_max" in p.tolerances else None

    radii = {radius(p, a) for ps in pairs.values() for p, a in ps if radius(p, a) is not None} or {None}
    seps = {r: discern.measure(Z, r) for r in radii}
    said = {f"{name}: {what} not measured ({why}); the controls that need it are judged"
            for sep in seps.values() for what, why in sep.missing.items()}
    for line in sorted(said):
        print(line, file=sys.stderr)
    out = []
    for c in claims:
        reason, figures = "", None
        for p, answer in pairs.get(c.id, []):
            sep = seps[radius(p, answer)] if radius(p, answer) is not None else next(iter(seps.values()))
            reason = discern.not_applicable(sep, answer, c, tier)
            if reason:
                figures = sep.figures()
                break
        if reason:
            print(f"{c.id}: {reason}", file=sys.stderr)
            c = dataclasses.replace(c, params={**c.params, "not_applicable": {"reason": reason,
                                                                               "figures": figures}})
        out.append(c)
    return out


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
    tries = [(Path(args.report or "reports") / "results.json", args.tier),
             (Path("ci") / f"baseline-{args.tier}.json", args.tier),
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
    """Whole-run progress (stderr): claims done / total, examples, ETA, the claims running and the latest message.

    On a terminal a tqdm bar (the ETA is tqdm's, from the rate of finished claims); in a notebook tqdm.auto's; in a
    log (stderr not a TTY, or $CI set) one line a minute (`progress.LOG_EVERY_S`) while claims run; lines written
    through `write` then go straight to stdout. `enabled=False` (--quiet): none."""

    def __init__(self, claims, tier: str, enabled: bool = True):
        self.t0 = time.perf_counter()
        self.total = len(claims)
        self.done = 0
        self.examples, self.total_examples = 0, sum(int(c.params_for(tier).get("examples", 0) or 0) for c in claims)
        self.running: list[str] = []
        self._last = 0.0
        self._logged = time.monotonic()
        self._msg = ""
        self.bar = None
        self.log = False
        if enabled:
            from ..progress import front_end   # start-up time: tqdm (only once the claims are known)

            where = front_end(sys.stderr)
            if where == "log":
                self.log = True
            else:
                if where == "notebook":
                    from tqdm.auto import tqdm
                else:
                    from tqdm import tqdm
                self.bar = tqdm(total=len(claims), desc="claims", unit="claim", file=sys.stderr,
                                dynamic_ncols=True, leave=False, mininterval=0.5)

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def write(self, text: str, err: bool = False) -> None:
        stream = sys.stderr if err else sys.stdout
        if self.bar is not None:
            self.bar.write(text, file=stream)
        else:
            print(text, file=stream, flush=True)

    def _log_line(self) -> None:
        from ..progress import LOG_EVERY_S

        now = time.monotonic()
        if not self.log or now - self._logged < LOG_EVERY_S:
            return
        self._logged = now
        ex = f"examples {self.examples}" + (f"/~{self.total_examples}" if self.total_examples else "")
        run = f"; running {', '.join(self.running[:3])}" if self.running else ""
        msg = f" ({self._msg})" if self._msg else ""
        print(f"verify: {self.done}/{self.total} claims done, {ex}{run}{msg}, {self.elapsed() / 60:.0f} min",
              file=sys.stderr, flush=True)

    def _show(self, force: bool = False) -> None:
        self._log_line()
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
        self.done += 1
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
    v.add_argument("--tier", choices=("smoke", "fast", "full"), default=None,
                   help="smoke: every claim at its smallest deciding sizes (about 2 min CPU); fast (default): "
                        "minutes; full: long horizons, resume cache on (with --stale: the baseline's tier)")
    v.add_argument("--report", default=None, help="report folder (default reports/; with --data reports/data-<stem>/)")
    v.add_argument("--data", default=None, metavar="FILE",
                   help=f"run the {DATA_PREFIX}* claims (Adam's, Signum's and per-sample Adam's limits, with their "
                        "controls) on this .npz/.csv dataset instead of their default (scikit-learn's iris)")
    v.add_argument("--intercept", action="store_true", help="with --data: append a column of ones (a bias)")
    v.add_argument("--json", default=None, metavar="PATH", help="also write results JSON here ('-' for stdout)")
    v.add_argument("--seed", type=int, default=None, help="seed of every generated example (default 0; with --stale "
                   "the baseline's)")
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
    v.add_argument("--stale", default=None, metavar="BASELINE",
                   help="refresh a baseline (e.g. ci/baseline-full.json) in place: run, in its tier and seed, only the "
                        "claims whose row is missing or whose check hash differs from the code's, merge each row as "
                        "soon as it is made (the others stay byte for byte), drop rows of claims gone from the "
                        "registry; refused while "
                        "the checkout has uncommitted changes (a dirty row never enters a baseline); writes no "
                        "report folder unless --report DIR")
    v.add_argument("--budget-rows", type=int, default=None, metavar="K",
                   help="with --stale: re-make at most K of the rows to refresh, costliest first (each row's "
                        "recorded cpu_s), each merged as soon as it is made; run again for the next slice")
    v.add_argument("--costs", default=None, metavar="BASELINE",
                   help="with --stale: the estimate of a row the refreshed record lacks (or that records no cpu_s) "
                        "is the same claim's cpu_s in this record (e.g. ci/baseline-full.json for seed 1's)")
    v.add_argument("--budget-cpu-min", type=float, default=None, metavar="M",
                   help="with --stale: re-make, costliest first, the rows whose recorded CPU minutes add up to at "
                        "most M (a row that does not fit is left for a later slice), each merged as soon as made")
    v.add_argument("--allow-dirty", action="store_true",
                   help="with --stale: merge rows made from uncommitted code anyway (never for a committed baseline)")
    v.add_argument("--quiet", "-q", action="store_true", help="no progress (bar or log lines) and no verdict lines")
    v.add_argument("--verbose", "-v", action="store_true", help="every progress message on stderr")
    v.set_defaults(func=cmd_verify)
