"""benchmarks/bench_netspeed.py: docs/benchmarks.md's section is the render of benchmarks/netspeed.json (what `--check`
holds), the render's figures are the record's (speed-up, the two rows' estimate), and `--check` fails on a page whose
table differs (no timing here: the figures are measured by the script)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_netspeed.py"


def load():
    spec = importlib.util.spec_from_file_location("ibverify_bench_netspeed", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RES = {"created": "2026-12-07 22:30 UTC", "base": "ecebe54", "commit": "b9fe7fe", "q": 2.0, "rounds": 3,
       "quick": False, "cpus": 2, "load_before": "9.00, 9.00, 9.00", "load_after": "8.00, 8.00, 8.00", "ok": True,
       "rows": [{"case": "digits/muon", "steps": 1000, "before_ms": 4.0, "after_ms": 1.6, "speedup": 2.5,
                 "agree_rel": 3e-14, "tolerance": 1e-3},
                {"case": "digits/signum", "steps": 2000, "before_ms": 0.4, "after_ms": 0.2, "speedup": 2.0,
                 "agree_rel": 0.0, "tolerance": 1e-9}]}


def test_the_pages_table_is_the_jsons():
    assert load().main(["--check"]) == 0


def test_the_render_shows_the_records_figures_and_the_rows_estimate():
    bench = load()
    lines = bench.render(RES).splitlines()
    assert lines[0] == bench.BEGIN and lines[-1] == bench.END
    assert "| digits/muon | 1000 | 4.000 | 1.600 | 2.50× | 3.0e-14 |" in lines
    assert "| digits/signum | 2000 | 0.400 | 0.200 | 2.00× | 0.0e+00 |" in lines
    # (4.4 ms before, 1.8 ms after) × 3 seeds × 100,000 steps: 22 and 9 CPU-min
    assert any("cost 22 CPU-min before and 9 after" in line for line in lines)


def test_check_fails_on_a_page_whose_table_differs(tmp_path, monkeypatch, capsys):
    bench = load()
    page, record = tmp_path / "benchmarks.md", tmp_path / "netspeed.json"
    record.write_text(json.dumps(RES))
    page.write_text("# B\n\n" + bench.render(RES) + "\n")
    monkeypatch.setattr(bench, "DOCS", page)
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    assert bench.main(["--check", "--json", str(record)]) == 0
    record.write_text(json.dumps({**RES, "rows": RES["rows"][:1]}))
    assert bench.main(["--check", "--json", str(record)]) == 1
    assert "run python benchmarks/bench_netspeed.py --docs" in capsys.readouterr().err
