"""Publishing a run into a report folder without losing anything already there.

`publish(results, out_dir)` merges the run into `out_dir/results.json` and re-renders the HTML, so
`ibverify verify ID` (the reproduce command of a claim page) replaces that claim's row and keeps every
other claim's row and page. Rules:
- same tier and seed as the folder's results.json: merge; a re-run claim's row replaces its old row
  in place, new claims are appended, the summary is recomputed, `created`/`versions` are this run's;
- a different tier or seed: the run is written beside, to `out_dir/<tier>-seed<seed>/` (merged the same
  way there), and a note says so; the folder's own report is left as it is;
- an existing results.json that cannot be read as a results file is never overwritten: this run is
  saved to `out_dir/results.<tier>-seed<seed>.<UTC stamp>.json` and an `IbverifyError` says where;
- concurrent writers serialize on an exclusive `fcntl.flock` of `out_dir/.ibverify.lock` held over
  read-merge-write-render, so two runs into one folder both end up in it (the second waits).
`render_file` (`ibverify report FILE --out DIR`) renders a results file as it is, keeps a copy as
DIR/results.json, and refuses to render over a folder whose report has claims the file lacks.
"""

from __future__ import annotations

import fcntl
import os
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from ..errors import IbverifyError
from .html import render_report
from .schema import load_results, summarize, validate_results, write_results

LOCK_NAME = ".ibverify.lock"


@contextmanager
def report_lock(folder: Path):
    """Hold an exclusive advisory lock on `folder/.ibverify.lock` (released on exit or process death)."""
    path = folder / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as e:
        raise IbverifyError(f"cannot create the report lock {path}: {e.strerror or e}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits for another writer of this folder to finish
        except OSError as e:
            raise IbverifyError(f"cannot lock {path} ({e.strerror or e}); is the folder on a file system "
                                "without locks? use a local --report folder") from None
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def merge_results(old: dict, new: dict) -> dict:
    """`new`'s rows over `old`'s by claim id (replaced in place, new ones appended); summary recomputed."""
    fresh = {c["id"]: c for c in new["claims"]}
    claims = [fresh.pop(c["id"], c) for c in old["claims"]] + list(fresh.values())
    merged = {**old, **{k: v for k, v in new.items() if k != "claims"}}
    merged.update(claims=claims, summary=summarize(claims))
    return merged


def _prior(path: Path, results: dict, out: Path) -> dict | None:
    """The folder's results dict, or None when there is none; refuse (saving the run) if it is unreadable."""
    if not path.exists():
        return None
    try:
        return load_results(path)
    except IbverifyError as e:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        saved = write_results(results, out / f"results.{results['tier']}-seed{results['seed']}.{stamp}.json")
        raise IbverifyError(f"not merging into {path}: {e}; this run was saved to {saved} "
                            f"(move the old file away, then `ibverify report {saved} --out {out}`)") from None


def _mkdir(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise IbverifyError(f"cannot create report folder {folder}: {e.strerror or e}") from None


def publish(results: dict, out_dir: str | os.PathLike, json_path: str | os.PathLike | None = None,
            note=lambda line: print(line, file=sys.stderr), replace: bool = False) -> Path:
    """Merge `results` into the report in `out_dir` (see the module docstring) and render it.

    Each row of the run is stamped with the run's `created` (so a merged report tells old rows from new).
    `replace=True` (a run of a whole tier) drops the folder's other rows instead of keeping them.
    Also writes this run's own results (not merged) to `json_path` if given. Returns the index.html
    that now shows the run: `out_dir/index.html`, or `out_dir/<tier>-seed<seed>/index.html`.
    """
    validate_results(results)
    results = {**results, "claims": [{**c, "created": c.get("created", results["created"])}
                                     for c in results["claims"]]}
    out = Path(out_dir)
    _mkdir(out)
    with report_lock(out):
        target, prior = out, _prior(out / "results.json", results, out)
        if prior is not None and (prior["tier"], prior["seed"]) != (results["tier"], results["seed"]):
            target = out / f"{results['tier']}-seed{results['seed']}"
            note(f"note: {out} holds the {prior['tier']}-tier seed-{prior['seed']} report; this {results['tier']}-tier "
                 f"seed-{results['seed']} run goes to {target}")
            _mkdir(target)
        with report_lock(target) if target != out else _nothing():
            if target != out:
                prior = _prior(target / "results.json", results, target)
            merged = merge_results(prior, results) if prior is not None and not replace else results
            write_results(merged, target / "results.json")
            index = render_report(merged, target)
    if json_path is not None:
        write_results(results, Path(json_path))
    return index


@contextmanager
def _nothing():
    yield


def render_file(results_path: str | os.PathLike, out_dir: str | os.PathLike, stale: dict | None = None) -> Path:
    """Render the results file into `out_dir` (copied there as results.json); returns index.html. `stale`: claim id
    → why its row is stale, marked on its page and in the index (html.render_report).

    Refuses (one line) when `out_dir` holds a report with claims the file does not have, since rendering
    would delete their pages; a folder holding the same claims (or none) is re-rendered."""
    src = Path(results_path)
    results = load_results(src)
    out = Path(out_dir)
    _mkdir(out)
    with report_lock(out):
        here = out / "results.json"
        same = here.exists() and src.exists() and here.samefile(src)
        if here.exists() and not same:
            try:
                kept = {c["id"] for c in load_results(here)["claims"]}
            except IbverifyError as e:
                raise IbverifyError(f"{out} holds an unreadable results.json ({e}); choose another --out "
                                    "folder or move it away") from None
            lost = sorted(kept - {c["id"] for c in results["claims"]})
            if lost:
                raise IbverifyError(f"{out} holds a report with {len(lost)} claim(s) that {src} lacks (e.g. "
                                    f"{lost[0]}); rendering would delete their pages: choose another --out folder")
        if not same:
            write_results(results, here)
        return render_report(results, out, stale)
