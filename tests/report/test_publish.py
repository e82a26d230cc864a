"""Publishing into a report folder never loses a run or another claim's page (ibverify.report.publishing)."""

from __future__ import annotations

import copy
import fcntl
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ibverify import IbverifyError
from ibverify.report import load_results, publish
from ibverify.report import publishing as publish_module
from ibverify.report.html import page_names
from ibverify.report.schema import summarize

from .conftest import claim_of
from _hang_guard import HANG_GUARD_S
from _isolation import subprocess_env

REAL_CLAIM = "baek.control.gaussian-v-isotropic"  # a real claim that runs in well under a second


@pytest.fixture
def results(results):
    """The fixture without evidence series: publishing is about rows and pages, and drawing is slow."""
    for c in results["claims"]:
        if c["outcome"]:
            c["outcome"]["series"] = []
    return results


def one_claim_run(results, cid, **changes):
    """A run of one claim of the fixture (as `ibverify verify CID` would produce), its row changed."""
    run = copy.deepcopy(results)
    row = {**claim_of(run, cid), **changes}
    run.update(claims=[row], summary=summarize([row]), created="2026-11-30T10:00:00Z")
    return run


def pages(folder: Path) -> set[str]:
    return {p.name for p in (folder / "claims").glob("*.html")}


def test_rerunning_one_claim_keeps_every_other_claims_row_and_page(results, tmp_path):
    out = tmp_path / "reports"
    publish(results, out)
    before = pages(out)
    publish(one_claim_run(results, "zhang.det-adam-linf", runtime_s=99.0), out)
    merged = load_results(out / "results.json")
    assert pages(out) == before and len(before) == len(results["claims"])
    assert [c["id"] for c in merged["claims"]] == [c["id"] for c in results["claims"]]  # replaced in place
    assert claim_of(merged, "zhang.det-adam-linf")["runtime_s"] == 99.0
    assert merged["summary"] == summarize(results["claims"]) and merged["created"] == "2026-11-30T10:00:00Z"
    assert claim_of(merged, "zhang.det-adam-linf")["created"] == "2026-11-30T10:00:00Z"  # which run a row is from
    assert claim_of(merged, "baek.gr-inc-adam-l2")["created"] == results["created"]
    assert "2026-11-30T10:00:00Z" in (out / "claims" / "zhang.det-adam-linf.html").read_text()
    assert f">{len(results['claims'])}</b>claims" in (out / "index.html").read_text()


def test_a_whole_tier_run_can_replace_the_folder(results, tmp_path):
    out = tmp_path / "reports"
    publish(results, out)
    publish(one_claim_run(results, "gronich.muon-msp"), out, replace=True)
    assert [c["id"] for c in load_results(out / "results.json")["claims"]] == ["gronich.muon-msp"]
    assert pages(out) == {"gronich.muon-msp.html"}


def test_two_runs_of_different_claims_into_one_folder_both_stay(results, tmp_path):
    out = tmp_path / "reports"
    publish(one_claim_run(results, "baek.gr-inc-adam-l2"), out)
    publish(one_claim_run(results, "gronich.muon-msp"), out)
    merged = load_results(out / "results.json")
    assert [c["id"] for c in merged["claims"]] == ["baek.gr-inc-adam-l2", "gronich.muon-msp"]
    assert merged["summary"] == {"total": 2, "as_expected": 1, "unexpected": 1, "not_applicable": 0,
                                 "errors": 1, "inconclusive": 0,
                                 "examples": {"supported": 5, "contradicted": 0, "inconclusive": 0, "set_aside": 1}}
    assert pages(out) == {"baek.gr-inc-adam-l2.html", "gronich.muon-msp.html"}


def test_the_reproduce_command_of_a_claim_page_keeps_the_other_pages(results, tmp_path, capsys):
    """End to end: `ibverify verify ID --tier fast --report DIR` into a folder holding other claims."""
    from ibverify.cli import main

    out = tmp_path / "reports"
    publish(results, out)
    assert main(["verify", REAL_CLAIM, "--tier", "fast", "--report", str(out), "-q"]) == 0
    merged = load_results(out / "results.json")
    ids = [c["id"] for c in merged["claims"]]
    assert ids == [c["id"] for c in results["claims"]] + [REAL_CLAIM]
    assert pages(out) == set(page_names(merged["claims"]).values())
    assert claim_of(merged, REAL_CLAIM)["verdict"] == "refuted"


def test_a_run_of_another_tier_or_seed_goes_beside_and_says_so(results, tmp_path):
    out = tmp_path / "reports"
    publish(results, out)
    before = (out / "results.json").read_bytes()
    notes = []
    run = one_claim_run(results, "baek.gr-inc-adam-l2")
    run["seed"] = 3
    index = publish(run, out, note=notes.append)
    assert index == out / "fast-seed3" / "index.html" and index.is_file()
    assert (out / "results.json").read_bytes() == before and len(pages(out)) == len(results["claims"])
    assert notes == [f"note: {out} holds the fast-tier seed-0 report; this fast-tier seed-3 run goes to "
                     f"{out / 'fast-seed3'}"]
    assert load_results(out / "fast-seed3" / "results.json")["seed"] == 3


def test_an_unreadable_results_file_is_not_overwritten_and_the_run_is_saved(results, tmp_path):
    out = tmp_path / "reports"
    out.mkdir()
    (out / "results.json").write_text("{half a file")
    with pytest.raises(IbverifyError) as e:
        publish(results, out)
    msg = str(e.value)
    assert "\n" not in msg and "not merging into" in msg and "not valid JSON" in msg
    assert (out / "results.json").read_text() == "{half a file"
    saved = [p for p in out.glob("results.fast-seed0.*.json")]
    assert len(saved) == 1 and str(saved[0]) in msg
    assert load_results(saved[0])["claims"] == [{**c, "created": results["created"]} for c in results["claims"]]


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_results_json_gets_the_same_permissions_as_index_html(results, tmp_path, umask):
    old = os.umask(umask)
    try:
        publish(results, tmp_path / "reports")
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    want = 0o666 & ~umask
    assert mode(tmp_path / "reports" / "results.json") == mode(tmp_path / "reports" / "index.html") == want


def test_the_folder_is_locked_from_reading_to_rendering(results, tmp_path, monkeypatch):
    """A second writer cannot read results.json until the first has rendered: no lost update."""
    out = tmp_path / "reports"
    real_render, probes = publish_module.render_report, []

    def render_and_probe(res, folder):
        fd = os.open(out / publish_module.LOCK_NAME, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            probes.append("free")
        except BlockingIOError:
            probes.append("held")
        finally:
            os.close(fd)
        return real_render(res, folder)
    monkeypatch.setattr(publish_module, "render_report", render_and_probe)
    publish(results, out)
    assert probes == ["held"]


def test_concurrent_writers_both_end_up_in_the_report(results, tmp_path):
    out = tmp_path / "reports"
    runs = []
    for cid in ("baek.gr-inc-adam-l2", "zhang.det-adam-linf", "baek.beyond.reshuffling"):
        path = tmp_path / f"{cid}.json"
        path.write_text(json.dumps(one_claim_run(results, cid)))
        runs.append(path)
    code = ("import json, sys; from ibverify.report import publish; "
            "publish(json.load(open(sys.argv[1])), sys.argv[2])")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(p), str(out)], env=subprocess_env()) for p in runs]
    assert [p.wait(timeout=HANG_GUARD_S) for p in procs] == [0, 0, 0]
    merged = load_results(out / "results.json")
    assert sorted(c["id"] for c in merged["claims"]) == sorted(
        ["baek.gr-inc-adam-l2", "zhang.det-adam-linf", "baek.beyond.reshuffling"])
    assert len(pages(out)) == 3


def test_report_command_never_renders_over_a_bigger_report(results, tmp_path):
    from ibverify.report import write_results
    from ibverify.report.commands import report_command

    out = tmp_path / "reports"
    publish(results, out)
    before = pages(out)
    small = write_results(one_claim_run(results, "zhang.det-adam-linf"), tmp_path / "one.json")
    with pytest.raises(IbverifyError, match=r"holds a report with 7 claim\(s\) that .*one.json lacks") as e:
        report_command(small, out)
    assert "\n" not in str(e.value) and pages(out) == before
    index = report_command(out / "results.json", out)  # re-rendering a folder from its own file is fine
    assert index == out / "index.html" and pages(out) == before
    fresh = report_command(small, tmp_path / "fresh")
    assert load_results(fresh.parent / "results.json") == load_results(small)
