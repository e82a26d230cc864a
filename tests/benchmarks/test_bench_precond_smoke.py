"""Smoke test: benchmarks/bench_precond.py --quick runs, checks agreement first and reports every size (no timing
asserts: a quick run's numbers on a loaded machine mean nothing)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_precond.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("ibverify_bench_precond", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_quick_run_agrees_and_reports_every_size(tmp_path, capsys):
    bench = load_bench()
    assert bench.main(["--quick", "--json", str(tmp_path / "b.json"), "--markdown", str(tmp_path / "b.md")]) == 0
    res = json.loads((tmp_path / "b.json").read_text())
    assert res["ok"] is True and res["rounds"] == 1
    assert [(r["n"], r["d"]) for r in res["sizes"]] == [(n, d) for n, d, _, _ in bench.SIZES]
    assert all(r["agree_rel"] <= 1e-12 and r["speedup_cpu"] > 0 for r in res["sizes"])
    md = (tmp_path / "b.md").read_text()
    assert md.count("\n| ") == len(bench.SIZES) + 1 and "speed-up (CPU)" in md
    capsys.readouterr()


def test_a_disagreement_exits_1(tmp_path, monkeypatch, capsys):
    """The agreement gate: a kernel that computes another update (plain GD's) is not timed as the same one."""
    bench = load_bench()
    monkeypatch.setattr(bench.KP, "precond_diagonal", lambda d: np.ones(d))
    assert bench.main(["--quick"]) == 1
    assert "disagreement above 1e-12" in capsys.readouterr().err
