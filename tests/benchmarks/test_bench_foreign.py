"""benchmarks/bench_foreign.py: docs/benchmarks.md's table is the render of benchmarks/foreign.json (what `--check`
holds), a record measured with ibverify/ differing from its commit is marked dirty, and `--check` fails on a page
whose table differs (no timing: the figures are measured by the script, never here)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_foreign.py"


def load():
    spec = importlib.util.spec_from_file_location("ibverify_bench_foreign", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RECORD = {"case": "optax:lion@linear@fast", "optimizer": "optax:lion", "model": "linear", "tier": "fast",
          "path": "foreign loops", "cpu_s": 11.04, "wall_s": 61.6, "bias_cpu_s": 7.5, "supported": ["linf"],
          "horizon": 10_000_000,
          "created": "2026-12-07 19:54 UTC", "commit": "0db0abe", "clean": True, "machine": "x86_64, 2 CPUs",
          "load_average": 6.5}


def test_the_pages_table_is_the_jsons():
    assert load().main(["--check"]) == 0


def test_a_row_says_what_was_measured_and_a_dirty_one_says_so():
    bench = load()
    text = bench.render([RECORD, {**RECORD, "path": "per-step (before)", "cpu_s": 400.0, "clean": False}])
    rows = text.splitlines()
    assert rows[0] == bench.BEGIN and rows[-1] == bench.END
    assert rows[3] == ("| `optax:lion` | linear | fast | foreign loops | 11.0 | 61.6 | 1e7 | linf | "
                       "2026-12-07 19:54 UTC | 0db0abe | 6.5 |")
    assert rows[4].startswith("| `optax:lion` | linear | fast | per-step (before) | 400.0 | 61.6 | 1e7 |")
    old = bench.render([{k: v for k, v in RECORD.items() if k != "horizon"}]).splitlines()[3]   # before it was kept
    assert "| 61.6 | – | linf |" in old
    assert rows[4].endswith("| 0db0abe (dirty) | 6.5 |")


def test_the_longest_horizon_is_the_longest_dataset_run():
    bench = load()
    ds = [{"horizon": 1_000_000}, {"horizon": 10_000_000}]
    models = [{"evidence": {"l2": {"datasets": ds[:1]}, "linf": {"datasets": ds}}}, {"not_judged": "why"}]
    assert bench.longest(models) == 10_000_000
    assert bench.longest([{"not_judged": "why"}]) is None


def test_check_fails_on_a_page_whose_table_differs(tmp_path, monkeypatch, capsys):
    bench = load()
    page = tmp_path / "benchmarks.md"
    records = tmp_path / "foreign.json"
    records.write_text(json.dumps([RECORD]))
    page.write_text("# B\n\n" + bench.render([RECORD]) + "\n")
    monkeypatch.setattr(bench, "DOCS", page)
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    assert bench.main(["--check", "--json", str(records)]) == 0
    records.write_text(json.dumps([{**RECORD, "cpu_s": 12.0}]))
    assert bench.main(["--check", "--json", str(records)]) == 1
    assert "run python benchmarks/bench_foreign.py --docs" in capsys.readouterr().err


def test_a_split_case_writes_the_split_with_the_first_class_positive(tmp_path):
    import numpy as np
    from sklearn.datasets import load_iris

    argv = load().data_args("iris0v2", tmp_path)
    assert argv[0] == "--data" and argv[2:] == ["--standardize"]
    with np.load(argv[1]) as f:
        X, y = f["X"], f["y"]
    Xi, yi = load_iris(return_X_y=True)
    assert X.shape == (100, 4) and (y == 1).sum() == (y == -1).sum() == 50
    assert np.array_equal(X[y == 1], Xi[yi == 0]) and np.array_equal(X[y == -1], Xi[yi == 2])


def test_a_refusal_is_rendered_as_one_not_as_an_answer():
    mod = load()
    refused = {**RECORD, "case": "signum@two-layer@smoke@digits1v2", "supported": [], "refused": "ibverify: error: x"}
    row = [x for x in mod.render([refused]).splitlines() if x.startswith("| `")][0]
    assert "| refused (exit 2) |" in row and "| none |" not in row
    assert "| linf |" in [x for x in mod.render([RECORD]).splitlines() if x.startswith("| `")][0]
