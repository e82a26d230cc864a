"""`pytest -n 2`: claim items run in two xdist workers and the controller writes one results.json with
every row, in registry order, each equal to the row of an in-process run."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from ibverify import profiles
from ibverify.claims import load_registry
from ibverify.runner.claim import run_claim
from _hang_guard import HANG_GUARD_S
from _isolation import subprocess_env

ROOT = Path(__file__).resolve().parents[2]
IDS = ["gronich.dual-norms", "gronich.homogeneity"]


def test_xdist_workers_rows_are_merged_into_one_report(tmp_path):
    claims = tmp_path / "claims"
    claims.mkdir()
    for cid in IDS:
        shutil.copy(ROOT / "claims" / f"{cid}.toml", claims)
    out = tmp_path / "report"
    env = subprocess_env(without=("PYTEST_ADDOPTS", "CI"))  # no $IBVERIFY_REPORT either: --ibverify-report only
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "load",
                        "--ibverify-tier", "smoke", "--ibverify-report", str(out), str(claims)],
                       capture_output=True, text=True, timeout=HANG_GUARD_S, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 passed" in r.stdout
    rows = json.loads((out / "results.json").read_text())["claims"]
    assert [row["id"] for row in rows] == sorted(IDS)
    profiles.load("ci")
    registry = {c.id: c for c in load_registry(claims)}
    for row in rows:
        here = run_claim(registry[row["id"]], "smoke")
        assert json.dumps(row["outcome"], sort_keys=True) == json.dumps(here["outcome"], sort_keys=True), row["id"]
        assert row["verdict"] == here["verdict"] == "holds"


def test_worker_rows_reach_the_controller_hooks():
    """The hook path without xdist: a worker stores its rows in workeroutput, the controller collects them."""
    from types import SimpleNamespace

    from ibverify import pytest_plugin as P

    saved = list(P._rows)
    try:
        P._rows[:] = [{"id": "b"}, {"id": "a"}]
        cfg = SimpleNamespace(workerinput={}, workeroutput={})
        P.pytest_sessionfinish(SimpleNamespace(config=cfg), 0)
        P._rows[:] = []
        P.pytest_testnodedown(SimpleNamespace(workeroutput=cfg.workeroutput), None)
        assert P._rows == [{"id": "b"}, {"id": "a"}]
    finally:
        P._rows[:] = saved
