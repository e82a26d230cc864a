"""Smoke test: benchmarks/bench.py runs with --quick tiny sizes and writes valid JSON (no timing asserts)."""

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
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    bench = load_bench()
    assert bench.main(["--quick", "--quiet", "--json", str(out)]) == 0
    return json.loads(out.read_text())


def positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def test_top_level_keys(result):
    assert result["schema"] == "ibverify.bench/1"
    for key in ("created", "quick", "config", "machine", "agreement", "rates", "baselines", "horizon", "tiers",
                "targets"):
        assert key in result, key
    assert result["quick"] is True
    assert result["tiers"] == {}  # --quick times no tier


def test_agreement_same_update(result):
    agree = result["agreement"]
    assert agree["ok"] is True
    assert agree["max_rel"] <= 1e-10
    assert set(agree["torch_convention"]) >= {"compiled_vs_reference", "handwritten_vs_reference"}
    assert set(agree["paper_convention"]) == {"compiled_vs_reference", "handwritten_vs_reference"}
    assert agree["max_rel"] == max(v for sec in ("torch_convention", "paper_convention")
                                   for v in agree[sec].values())


def test_no_proposed_kernel(result):
    # the prototype kernel was adopted by the engine (kernels._moment_chunk) and removed from the benchmark
    assert "proposed" not in json.dumps(result)
    assert not (BENCH.parent / "proposed_kernel.py").exists()


def test_rates_cover_every_optimizer_and_engine(result):
    rows = result["rates"]
    seen = {(r["dataset"], r["engine"], r["optimizer"]) for r in rows}
    for ds in ("gr-N50-d20", "gr-N10-d50"):
        for opt in ("inc-adam", "det-adam", "adam-b5-reshuffle", "signum", "gd", "ngd", "adam-proxy"):
            for eng in ("compiled", "reference", "mpmath"):
                assert (ds, eng, opt) in seen, (ds, eng, opt)
        for opt in ("inc-adam", "det-adam", "adam-b5-reshuffle"):
            assert (ds, "engine-kernel", opt) in seen, (ds, opt)
    for r in rows:
        assert positive(r["steps_per_s"]) and positive(r["us_per_step"]) and positive(r["sample_grads_per_s"])


def test_baselines_and_ratios(result):
    for ds, res in result["baselines"].items():
        for conv in ("torch_convention", "paper_convention"):
            for k in ("compiled", "engine_kernel", "handwritten"):
                assert positive(res[conv][k]["steps_per_s"]), (ds, conv, k)
        assert positive(res["ratios"]["compiled_over_handwritten"])
        if res["torch_loop"] is None:
            assert "torch not installed" in res["torch_note"]
        else:
            assert positive(res["torch_loop"]["steps_per_s"])
            assert positive(res["ratios"]["compiled_over_torch"])


def test_horizon(result):
    h = result["horizon"]
    assert positive(h["steps_per_cpu_minute"]) and h["finite"] is True
    assert h["steps"] == result["config"]["horizon_steps"]
