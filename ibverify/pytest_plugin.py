"""pytest integration: every `claims/<id>.toml` is collected as a test item that runs the claim.

Options:
  --ibverify-tier {smoke,fast,full}   tier the claim items run (default: ini `ibverify_tier`, else fast)
  --ibverify-report DIR               also write results.json and the HTML report to DIR
                                      (or set $IBVERIFY_REPORT; CI does, so plain `pytest` reports)
  --ibverify-cache DIR                resume cache for claim items (off by default; see ibverify.cache)
An item passes when the claim's verdict is the expected one (paper/derived/reconstructed/law: holds;
control: refuted; beyond: a finding without error) and its outcome carries evidence series to plot.
Items are marked `claim` and `tier_<name>`; a claim without the selected tier is skipped.

Under pytest-xdist (`pytest -n auto`) each worker runs its share of the claim items and hands its rows
to the controller (xdist's `workeroutput`, collected in `pytest_testnodedown`); the controller writes
one results.json with every row, in registry order (claim file name order), at session end. Claims are
seeded from (claim id, seed 0) only, so a row does not depend on the worker that ran it. The workers' claim
items share one run store for the session ($IBVERIFY_RUNS, a temporary folder removed at the end), so a run that
two claims judge on different workers is made once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import tomllib
from datetime import datetime, timezone
from pathlib import Path

import pytest

from . import profiles
from .claims import load_claim

_rows: list[dict] = []


def pytest_addoption(parser):
    g = parser.getgroup("ibverify")
    g.addoption("--ibverify-tier", choices=("smoke", "fast", "full"), default=None,
                help="tier for claims/*.toml items (default: ini ibverify_tier or fast)")
    g.addoption("--ibverify-report", default=None, metavar="DIR",
                help="write results.json and the HTML report of the claim items to DIR")
    g.addoption("--ibverify-cache", default=None, metavar="DIR",
                help="reuse finished examples of claim items from this resume cache (default: no cache)")
    parser.addini("ibverify_tier", "default tier for claim items", default="fast")


def pytest_configure(config):
    profiles.load()
    config.addinivalue_line("markers", "claim: a registry claim collected as a test")
    for t in ("smoke", "fast", "full"):
        config.addinivalue_line("markers", f"tier_{t}: claim has a {t} tier")


def _tier(config) -> str:
    return config.getoption("--ibverify-tier") or config.getini("ibverify_tier")


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix == ".toml" and file_path.parent.name == "claims":
        try:
            data = tomllib.loads(file_path.read_text())
        except (tomllib.TOMLDecodeError, OSError):
            data = {}
        if "id" in data and "check" in data:
            return ClaimFile.from_parent(parent, path=file_path)
    return None


class ClaimFile(pytest.File):
    def collect(self):
        claim = load_claim(self.path)
        item = ClaimItem.from_parent(self, name=claim.id, claim=claim)
        item.add_marker(pytest.mark.claim)
        for t in claim.tiers:
            item.add_marker(getattr(pytest.mark, f"tier_{t}"))
        yield item


class ClaimFailed(Exception):
    pass


class ClaimItem(pytest.Item):
    def __init__(self, *, claim, **kw):
        super().__init__(**kw)
        self.claim = claim

    def runtest(self):
        from .runner.claim import run_claim  # start-up time: numpy (pytest loads this plugin in every session)
        from .runner.distributed import shared_runs

        tier = _tier(self.config)
        if tier not in self.claim.tiers:
            pytest.skip(f"claim has no '{tier}' tier")
        session = getattr(self.config, "workerinput", {}).get(_RUNS_KEY)   # xdist: the workers' one run store
        with shared_runs(session) if session else contextlib.nullcontext():
            row = run_claim(self.claim, tier, cache=self.config.getoption("--ibverify-cache"))
        _rows.append(row)
        if row["outcome"] is not None and not row["outcome"]["series"]:
            raise ClaimFailed(f"{self.claim.id}: the check returned no evidence series (the report needs a plot)")
        if not row["as_expected"]:
            fig = (row["outcome"] or {}).get("figure", "")
            if row["verdict"] == "inconclusive":  # not decided is not as expected: a test must decide
                raise ClaimFailed(f"{self.claim.id}: verdict 'inconclusive' (expected '{row['expect']}'): "
                                  f"{row['outcome']['inconclusive']}. {fig}")
            raise ClaimFailed(f"{self.claim.id}: verdict '{row['verdict']}', expected '{row['expect']}'. "
                              f"{fig} {row['error'] or (row['outcome'] or {}).get('details', '')}")

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ClaimFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"claim {self.claim.id} [{self.claim.status}]"


_WORKER_KEY = "ibverify_rows"
_RUNS_KEY = "ibverify_runs"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist controller: the claim items of every worker share one run store for the session, <folder>/runs
    (runner.distributed.shared_runs; a claim and the claims that judge its runs, e.g. its controls, may land on
    different workers: the runs are made once). The folder is removed at the end of the session."""
    config = node.config
    if not hasattr(config, "_ibverify_runs"):
        config._ibverify_runs = tempfile.mkdtemp(prefix="ibverify-runs-")
    node.workerinput[_RUNS_KEY] = config._ibverify_runs


def pytest_unconfigure(config):
    folder = getattr(config, "_ibverify_runs", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def _is_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist controller: collect the rows a worker ran (sent in its workeroutput)."""
    blob = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
    if blob:
        _rows.extend(json.loads(blob))


def pytest_sessionfinish(session, exitstatus):
    if _is_xdist_worker(session.config):  # the controller writes the report
        session.config.workeroutput[_WORKER_KEY] = json.dumps(_rows)
        return
    out = session.config.getoption("--ibverify-report") or os.environ.get("IBVERIFY_REPORT")
    if not out or not _rows:
        return
    from .report import SCHEMA, publish, summarize  # start-up time: only a session that reports needs them
    from .runner.claim import versions  # start-up time: numpy, as in runtest

    rows = sorted(_rows, key=lambda r: f"{r['id']}.toml")  # registry order: claims/<id>.toml sorted
    results = {"schema": SCHEMA, "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "tier": _tier(session.config), "seed": 0, "versions": versions(),
               "summary": summarize(rows), "claims": rows}
    publish(results, Path(out), replace=True)
