"""The report index's "Reproduce the whole run" is the run's own command (issue 47 item 5a): its named claims, tier,
seed and --data, not the whole registry."""

import copy
import shlex

from ibverify.report import render_report
from ibverify.report.html import reproduce_run
from ibverify.report.schema import summarize

from .conftest import Dom


def _three(results, tier="fast", seed=0):
    r = copy.deepcopy(results)
    r["claims"] = r["claims"][:3]
    r["tier"], r["seed"] = tier, seed
    r["summary"] = summarize(r["claims"])
    return r


def test_three_named_claims_give_those_three(results):
    r = _three(results)
    (cmd,) = reproduce_run(r)
    argv = shlex.split(cmd)
    assert argv[:2] == ["ibverify", "verify"]
    assert argv[2:5] == [c["id"] for c in r["claims"]]
    assert argv[5:] == ["--tier", "fast"]          # seed 0 is the default


def test_tier_and_seed_are_the_runs(results):
    (cmd,) = reproduce_run(_three(results, "smoke", 3))
    assert shlex.split(cmd)[-4:] == ["--tier", "smoke", "--seed", "3"]


def test_data_rows_carry_their_file_and_intercept(results):
    r = _three(results)
    for c in r["claims"][:2]:
        c["data"] = {"file": "/tmp/my data.csv", "sha256": "ab" * 32, "intercept": True}
    data_cmd, plain_cmd = reproduce_run(r)
    argv = shlex.split(data_cmd)
    assert argv[2:4] == [r["claims"][0]["id"], r["claims"][1]["id"]]
    assert argv[4:7] == ["--data", "/tmp/my data.csv", "--intercept"]
    assert shlex.split(plain_cmd)[2:] == [r["claims"][2]["id"], "--tier", "fast"]
    r["claims"][1]["data"] = dict(r["claims"][1]["data"], intercept=False)   # another file setting: its own command
    assert len(reproduce_run(r)) == 3


def test_index_shows_the_runs_command(results, tmp_path):
    r = _three(results, "fast", 2)
    index = render_report(r, tmp_path).read_text(encoding="utf-8")
    dom = Dom(index)
    shown = dom.text_by_id["cmd-run"].strip()
    assert shown == reproduce_run(r)[0]
    assert shown != "ibverify verify --tier fast --seed 2" and "--seed 2" in shown
