"""Smoke test: benchmarks/bench.py --quick runs and reports every section (no timing asserts: the
numbers of a quick run on a loaded machine mean nothing; only structure and agreement are checked)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("ibverify_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    bench = load_bench()
    assert bench.main(["--quick", "--quiet", "--json", str(tmp / "b.json"), "--markdown", str(tmp / "b.md")]) == 0
    return json.loads((tmp / "b.json").read_text()), (tmp / "b.md").read_text()


def positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def test_same_update_everywhere(result):
    res, _ = result
    agree = res["agreement"]
    assert agree["ok"] is True and agree["max_rel"] <= 1e-10
    assert {"compiled_vs_reference", "handwritten_vs_reference"} <= set(agree["paper_convention"])
    assert agree["max_rel"] == max(v for sec in ("paper_convention", "torch_convention") for v in agree[sec].values())


def test_every_section_reports_rates(result):
    res, _ = result
    assert res["schema"] == "ibverify.bench/2" and res["quick"] is True
    for row in res["scaling"]:
        assert positive(row["engine_steps_per_s"]) and positive(row["hand_steps_per_s"])
        assert positive(row["engine_over_hand"]) and len(row["seconds"]["engine"]) == res["config"]["rounds"]
    assert any("jax_steps_per_s" in row for row in res["scaling"]) or res["machine"]["jax"] is None
    assert [r["checkpoints"] for r in res["lanes"]] == [2, 30, 10] and all(positive(r["speedup"]) for r in res["lanes"])
    assert {r["optimizer"] for r in res["optimizers"]} >= {"inc-adam", "det-adam", "signum", "gd", "ngd", "adam-proxy"}
    assert "skipped" in res["torch"] or positive(res["torch"]["engine_over_torch"])
    h = res["horizon"]
    assert h["steps"] == res["config"]["horizon"] and positive(h["cpu_s"]) and positive(h["peak_rss_mb"])


def test_markdown_is_dated_with_the_load(result):
    res, md = result
    assert res["created"] in md and "load average" in md
    assert "| target (issue 12) | measured | goal | met |" in md
    assert len(res["targets"]) == 6
