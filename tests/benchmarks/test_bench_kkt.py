"""benchmarks/bench_kkt.py: docs/benchmarks.md's KKT table is the render of benchmarks/kkt.json (what `--check`
holds), its ratios are computed from the record, and `--check` fails on a page whose table differs (no timing here:
the figures are measured by the script)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_kkt.py"


def load():
    spec = importlib.util.spec_from_file_location("ibverify_bench_kkt", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ROW = {"optimizer": "muon", "steps": 100000, "scored": [1000, 100000], "cpu_per_step": 2e-4,
       "between_checkpoints_s": 4.0, "kkt_new_s": 0.5, "kkt_old_s": 60.0, "new_each_s": [0.5], "old_each_s": [60.0],
       "max_F_difference": 3e-11}
META = {"created": "2026-12-07 22:30 UTC", "commit": "abc1234", "clean": False, "old": 1,
        "machine": "x86_64, 2 CPUs", "load_average": 9.5}


def test_the_pages_table_is_the_jsons():
    assert load().main(["--check"]) == 0


def test_a_row_gives_the_costs_and_their_ratios():
    text = load().render([ROW], META)
    assert "at commit abc1234 (dirty)" in text and "load average 9.5" in text and "1e+05 steps" in text
    assert text.splitlines()[-1] == "| `muon` | 0.50 | 60.0 | 120× | 4.00 | 0.12 | 3.0e-11 |"


def test_check_fails_on_a_page_whose_table_differs(tmp_path, monkeypatch, capsys):
    bench = load()
    page, record = tmp_path / "benchmarks.md", tmp_path / "kkt.json"
    record.write_text(json.dumps({"meta": META, "rows": [ROW]}))
    page.write_text("# B\n\n" + bench.section(bench.render([ROW], META)) + "\n")
    monkeypatch.setattr(bench, "DOCS", page)
    assert bench.main(["--check", "--json", str(record)]) == 0
    record.write_text(json.dumps({"meta": META, "rows": [{**ROW, "kkt_new_s": 0.6}]}))
    assert bench.main(["--check", "--json", str(record)]) == 1
    assert "bench_kkt section" in capsys.readouterr().err
