"""Claims as Dask tasks: a 2-worker LocalCluster loses a worker mid-run (a test claim kills its own worker
process on its first attempt), the task is retried, and every row equals the sequential run's.

Rows are compared field by field, exactly (json dumps): verdict, figure, figures, series, details,
counterexample, examples, and the table without wall-clock columns; only runtimes may differ.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ibverify import profiles
from ibverify.claims import load_registry, select
from ibverify.runner.verify import verify
from _hang_guard import HANG_GUARD_S
from _isolation import subprocess_env

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SMOKE = ["baek.gr-v-isotropic", "baek.proxy-scale-invariance", "gronich.dual-norms", "gronich.homogeneity"]
KILLER = "test.kill-once"

KILLER_TOML = f"""
id = "{KILLER}"
paper = "ibverify test"
result = "a check whose worker dies once"
status = "paper"
statement = "the claim's task survives the death of its worker"
check = "kill_once:kill_once"
[params]
marker = "{{marker}}"
[tiers.smoke]
"""


def comparable(row: dict) -> str:
    """Everything a run decides (verdict and evidence), without wall-clock times."""
    out = dict(row["outcome"] or {})
    if out.get("table"):
        out["table"] = [{k: v for k, v in r.items() if "second" not in k and k != "time"} for r in out["table"]]
    return json.dumps({"id": row["id"], "verdict": row["verdict"], "as_expected": row["as_expected"],
                       "error": row["error"], "check_hash": row["check_hash"], "outcome": out}, sort_keys=True)


@pytest.fixture(scope="module")
def claims_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("claims")
    for cid in SMOKE:
        shutil.copy(ROOT / "claims" / f"{cid}.toml", d)
    marker = d.parent / "killed.marker"
    (d / f"{KILLER}.toml").write_text(KILLER_TOML.replace("{marker}", str(marker)))
    return d


def test_killed_worker_task_is_retried_and_rows_equal_sequential(claims_dir, tmp_path, monkeypatch):
    marker = claims_dir.parent / "killed.marker"
    assert not marker.exists()
    env = subprocess_env(without=("CI",), HYPOTHESIS_PROFILE="ci", IBVERIFY_CACHE=str(tmp_path / "unused-cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    out = tmp_path / "dask.json"
    r = subprocess.run([sys.executable, "-m", "ibverify", "--claims-dir", str(claims_dir), "verify", "--tier", "smoke",
                        "--workers", "2", "--report", str(tmp_path / "rep"), "--json", str(out)],
                       capture_output=True, text=True, timeout=HANG_GUARD_S, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Dask cluster tcp://" in r.stdout and "2 workers" in r.stdout and "dashboard http" in r.stdout
    killed_pid = int(marker.read_text())  # the first attempt ran in a worker and killed it
    assert killed_pid != os.getpid()
    dask_rows = json.loads(out.read_text())["claims"]

    monkeypatch.syspath_prepend(str(HERE))
    profiles.load("ci")
    claims = select(load_registry(claims_dir), None, "smoke")
    seq_rows = verify(claims, "smoke", workers=1)["claims"]
    assert [r["id"] for r in dask_rows] == [c.id for c in claims] == sorted(SMOKE + [KILLER])  # registry order
    assert all(r["verdict"] == "holds" for r in seq_rows)
    for a, b in zip(seq_rows, dask_rows, strict=True):
        assert comparable(a) == comparable(b), a["id"]


def test_existing_scheduler_runs_claims_and_examples_as_tasks(monkeypatch):
    """--scheduler ADDRESS: tasks go to a cluster that is already running (here a 1-worker in-process one).
    A hypothesis property evaluates its examples as tasks of their own, with the sequential result, also
    when its evaluate collects evidence on the side (those evaluations are redone in the claim)."""
    from distributed import Client, LocalCluster, get_task_stream

    from ibverify.claims import Claim

    monkeypatch.syspath_prepend(str(HERE))
    profiles.load("ci")
    tests = [Claim(id=f"test.{kind}-property", paper="ibverify test", result="-", status="paper", statement="-",
                   check=f"kill_once:{kind}_property", tiers={"smoke": {"examples": 6}}) for kind in ("pure", "impure")]
    claims = tests + select(load_registry(ROOT / "claims"), ["baek.gr-v-isotropic", "gronich.dual-norms"], "smoke")
    seq = verify(claims, "smoke")["claims"]
    assert 0 < seq[1]["outcome"]["figures"]["collected"] < 6  # the impure check collects on some examples
    info = []
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client, get_task_stream(client) as ts:
        rows = verify(claims, "smoke", scheduler=cluster.scheduler_address, on_cluster=info.append)["claims"]
    assert info and cluster.scheduler_address in info[0] and "1 workers" in info[0]
    assert [comparable(r) for r in rows] == [comparable(r) for r in seq]
    keys = [str(t["key"]) for t in ts.data]
    assert sum("test.pure-property-ex" in k for k in keys) == 6, keys
    assert sum("baek.gr-v-isotropic-ex" in k for k in keys) == seq[2]["outcome"]["examples"] >= 2, keys
    assert sum(k.startswith("ibverify-gronich.dual-norms-smoke") for k in keys) == 1


def test_examples_drawn_after_a_counterexample_are_not_evaluated_as_tasks(monkeypatch):
    """The property stops at its first counterexample, so map_examples sends no example after one: a first example
    that fails is the only example task; a failure later in the draws leaves the row equal to the sequential run's."""
    from distributed import Client, LocalCluster, get_task_stream

    from ibverify.claims import Claim

    monkeypatch.syspath_prepend(str(HERE))
    profiles.load("ci")
    claims = [Claim(id=f"test.fail-{k}", paper="ibverify test", result="-", status="paper", statement="-",
                    check="kill_once:failing_property", params={"fail_from": k}, tiers={"smoke": {"examples": 8}})
              for k in (0, 40)]
    seq = verify(claims, "smoke")["claims"]
    assert [r["verdict"] for r in seq] == ["does not hold", "does not hold"]
    assert seq[0]["outcome"]["examples"] == 1 and seq[1]["outcome"]["examples"] > 1   # 40: not the first draw
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client, get_task_stream(client) as ts:
        rows = verify(claims, "smoke", scheduler=cluster.scheduler_address)["claims"]
    assert [comparable(r) for r in rows] == [comparable(r) for r in seq]
    keys = [str(t["key"]) for t in ts.data]
    assert sum("test.fail-0-ex" in k for k in keys) == 1, keys          # the probe was the counterexample
    assert sum("test.fail-40-ex" in k for k in keys) >= 2, keys
