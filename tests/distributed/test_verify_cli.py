"""`ibverify verify` options for workers and the resume cache, and the whole-run progress bar."""

import argparse

import pytest

from ibverify.cli import verify as verify_cli
from ibverify.cache import default_root
from ibverify.cli import main
from ibverify.claims import load_registry, select


def parse(*argv):
    p = argparse.ArgumentParser()
    verify_cli.add_verify_parser(p.add_subparsers())
    return p.parse_args(["verify", *argv])


@pytest.mark.parametrize("argv", [["--workers", "0"], ["--workers", "2", "--sequential"],
                                  ["--resume", "--no-cache"], ["--cache", "x", "--resume"]])
def test_bad_worker_and_cache_options_are_one_line_errors(argv, capsys):
    assert main(["verify", "gronich.dual-norms", "--tier", "smoke", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ibverify: error:") and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_workers_default_to_all_cores_and_sequential_means_one(monkeypatch):
    monkeypatch.setattr(verify_cli.os, "cpu_count", lambda: 7)
    assert verify_cli._workers(parse()) == 7
    assert verify_cli._workers(parse("--sequential")) == 1
    assert verify_cli._workers(parse("--workers", "3")) == 3


def test_cache_is_on_for_the_full_tier_and_on_request(monkeypatch, tmp_path):
    monkeypatch.setenv("IBVERIFY_CACHE", str(tmp_path / "c"))
    assert default_root() == tmp_path / "c"
    assert verify_cli._cache_root(parse("--tier", "fast")) is None
    assert verify_cli._cache_root(parse("--tier", "full")) == tmp_path / "c"
    assert verify_cli._cache_root(parse("--tier", "full", "--no-cache")) is None
    assert verify_cli._cache_root(parse("--resume")) == tmp_path / "c"
    assert verify_cli._cache_root(parse("--cache", "elsewhere")).name == "elsewhere"


def test_run_bar_counts_claims_and_examples_and_prints_lines(capsys):
    claims = select(load_registry(), ["baek.gr-v-isotropic", "gronich.dual-norms"], "smoke")
    bar = verify_cli.RunBar(claims, "smoke", enabled=False)
    assert bar.total_examples == sum(int(c.params_for("smoke").get("examples", 0)) for c in claims) > 0
    bar.example()
    bar.example()
    bar.claim_done({"id": "gronich.dual-norms", "outcome": {"examples": 5}}, reused=True)
    assert bar.examples == 7
    bar.write("a line")
    bar.close()
    assert capsys.readouterr().out == "a line\n"


def test_earlier_runtimes_come_from_the_last_report_of_the_same_tier(tmp_path, monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "results.json").write_text(json.dumps({"tier": "smoke", "claims": [{"id": "a", "runtime_s": 2.5}]}))
    assert verify_cli._earlier_runtimes(parse("--tier", "smoke", "--report", str(rep))) == {"a": 2.5}
    assert verify_cli._earlier_runtimes(parse("--tier", "fast", "--report", str(rep))) == {}
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "baseline-fast.json").write_text(json.dumps({"tier": "fast", "claims": [{"id": "b",
                                                                                             "runtime_s": 7.0}]}))
    assert verify_cli._earlier_runtimes(parse("--tier", "full", "--report", str(rep))) == {"b": 7.0}  # proxy
    (tmp_path / "ci" / "baseline-full.json").write_text(json.dumps({"tier": "full", "claims": [{"id": "c",
                                                                                             "runtime_s": 9.0}]}))
    assert verify_cli._earlier_runtimes(parse("--tier", "full", "--report", str(rep))) == {"c": 9.0}
