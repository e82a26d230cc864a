"""Issue 53 item 4: a report keeps its lines. The power table ships inside the package (an installed copy renders the
same "Resolution of the rule …" line as a checkout: checked on a wheel built from this tree), and the index header
names each distinct code that made rows once, with its row count."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from ibverify.claims import default_claims_dir, load_claim
from ibverify.report import html, render_report
from ibverify.report.schema import summarize

from .conftest import RESULTS, Dom, claim_record

ROOT = Path(__file__).resolve().parents[2]
RULE = "all_of: Soudry (K, ρ, slope)"


def _soudry_results() -> dict:
    """A one-row results dict whose row is soudry.gd-l2 at the fast tier, at the claim's own tolerances (no series:
    nothing to draw)."""
    claim = load_claim(default_claims_dir() / "soudry.gd-l2.toml")
    row = claim_record("soudry.gd-l2", "paper", None, paper="Soudry et al.")
    row.update(check=claim.check, params=claim.params_for("fast"), tolerances=claim.tolerances, tier="fast",
               verdict="error", as_expected=False, error="not run here")
    results = json.loads(json.dumps({**RESULTS, "claims": [row]}))
    results["summary"] = summarize(results["claims"])
    return results


def _expected_parts(power: dict) -> list[str]:
    """The counts the line must state, tallied here from the JSON itself (fast tier, Soudry's rule)."""
    runs = [r for r in power["runs"] if r["rule"] == RULE and r["tier"] == "fast"]
    kinds = list(dict.fromkeys(r["kind"] for r in runs))
    out = []
    for kind in kinds:
        n = Counter(r["decision"] for r in runs if r["kind"] == kind)
        total = sum(n.values())
        if kind.startswith("wrong"):
            out.append(f"{kind}: supported {n['supported']} of {total} (contradicted {n['contradicted']}, "
                       f"undecided {n['inconclusive']}")
        else:
            out.append(f"{kind}: contradicted {n['contradicted']} of {total} (supported {n['supported']}, "
                       f"undecided {n['inconclusive']}")
    return out


def _resolution_text(page: str) -> str:
    lines = [x for x in page.splitlines() if "Resolution of the rule" in x]
    assert len(lines) == 1, lines
    return lines[0]


def test_the_power_table_is_package_data_read_through_importlib_resources():
    shipped = ROOT / "ibverify" / "report" / "power.json"
    assert html.power_table() == json.loads(shipped.read_text(encoding="utf-8"))
    assert not (ROOT / "benchmarks" / "power.json").exists()   # one source: benchmarks/power.py writes the shipped file
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import power
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert power.JSON == shipped


def test_a_rendered_claim_page_states_the_power_line_with_the_tables_numbers(tmp_path):
    power = html.power_table()
    parts = _expected_parts(power)
    assert len(parts) == 3 and sum(int(p.split(" of ")[1].split(" ")[0]) for p in parts) == 24  # the table's 24 runs
    index = render_report(_soudry_results(), tmp_path / "r")
    line = _resolution_text((tmp_path / "r" / "claims" / "soudry.gd-l2.html").read_text(encoding="utf-8"))
    assert f"Resolution of the rule {RULE} on fresh runs no claim judges, at the fast tier" in line
    assert f"commit {power['commit']}, {power['date']}" in line
    for p in parts:
        assert p in line, (p, line)
    assert index.is_file()


def _wheel(tmp_path: Path) -> Path:
    """A wheel built from a copy of this tree (no build folder left in the checkout; no network)."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "ibverify", src / "ibverify", ignore=ignore)
    shutil.copytree(ROOT / "claims", src / "claims", ignore=ignore)
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, src / f)
    out = tmp_path / "wheel"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(src),
                        "-w", str(out)], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {r.stderr.strip().splitlines()[-1:]}")
    (whl,) = out.glob("ibverify-*.whl")
    return whl


@pytest.mark.slow
def test_an_installed_wheel_renders_the_same_resolution_line(tmp_path):
    whl = _wheel(tmp_path)
    assert "ibverify/report/power.json" in zipfile.ZipFile(whl).namelist()
    site = tmp_path / "site"
    zipfile.ZipFile(whl).extractall(site)   # the wheel's files as pip lays them into site-packages
    results = tmp_path / "results.json"
    results.write_text(json.dumps(_soudry_results()), encoding="utf-8")
    script = ("import sys, json, ibverify; from ibverify.report import render_report; "
              "print(ibverify.__file__); render_report(json.load(open(sys.argv[1])), sys.argv[2])")
    env = {**os.environ, "PYTHONPATH": str(site)}
    r = subprocess.run([sys.executable, "-c", script, str(results), str(tmp_path / "out")], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).is_relative_to(site)   # the installed copy ran, not this checkout
    installed = _resolution_text((tmp_path / "out" / "claims" / "soudry.gd-l2.html").read_text(encoding="utf-8"))
    render_report(_soudry_results(), tmp_path / "here")
    here = _resolution_text((tmp_path / "here" / "claims" / "soudry.gd-l2.html").read_text(encoding="utf-8"))
    assert installed == here


def _row(commit: str, created: str, *, source: str = "s" * 64, dirty: bool = False, cid: str = "x") -> dict:
    return {**claim_record(cid, "paper", None), "commit": commit, "dirty": dirty, "created": created,
            "source_hash": source, "version": "0.1.0"}


def test_rows_of_the_same_code_at_different_times_are_one_provenance_entry():
    rows = [_row("a" * 40, f"2026-12-0{1 + k % 5}T10:00:00Z", cid=f"c{k}") for k in range(45)]
    assert html.provenance_groups(rows) == [{"code": "a" * 12, "dirty": False, "source": "s" * 64, "rows": 45,
                                             "first": "2026-12-01T10:00:00Z", "last": "2026-12-05T10:00:00Z"}]


def test_distinct_commits_sources_and_dirty_flags_are_separate_entries_with_their_counts():
    rows = ([_row("a" * 40, "2026-12-01T00:00:00Z")] * 3 + [_row("b" * 40, "2026-12-02T00:00:00Z")]
            + [_row("a" * 40, "2026-12-03T00:00:00Z", dirty=True)] * 2
            + [_row("", "2026-12-04T00:00:00Z", source="t" * 64)] + [{**_row("", ""), "source_hash": "t" * 64}])
    got = [(g["code"], g["dirty"], g["source"][:1], g["rows"], g["first"], g["last"])
           for g in html.provenance_groups(rows)]
    assert got == [("a" * 12, False, "s", 3, "2026-12-01T00:00:00Z", "2026-12-01T00:00:00Z"),
                   ("b" * 12, False, "s", 1, "2026-12-02T00:00:00Z", "2026-12-02T00:00:00Z"),
                   ("a" * 12, True, "s", 2, "2026-12-03T00:00:00Z", "2026-12-03T00:00:00Z"),
                   ("ibverify 0.1.0", False, "t", 2, "2026-12-04T00:00:00Z", "2026-12-04T00:00:00Z")]


def test_the_index_header_lists_each_code_once_with_its_row_count():
    rows = ([_row("a" * 40, f"2026-12-0{1 + k % 3}T10:00:00Z", cid=f"a{k}") for k in range(44)]
            + [_row("b" * 40, "2026-12-04T10:00:00Z", cid="b0")])
    results = {**RESULTS, "claims": rows, "summary": summarize(rows)}
    page = html.index_page(results, html.page_names(rows))
    header = page[page.index("<header>"):page.index("</header>")]
    assert len(Dom(header).find("span", class_="provenance-group")) == 2
    assert header.count("a" * 12) == 1 and header.count("b" * 12) == 1
    assert ("<code>aaaaaaaaaaaa</code> (source <code>ssssssssssss</code>) 2026-12-01T10:00:00Z – 2026-12-03T10:00:00Z "
            '(<span class="rows">44</span> rows)') in header
    assert ('<code>bbbbbbbbbbbb</code> (source <code>ssssssssssss</code>) 2026-12-04T10:00:00Z '
            '(<span class="rows">1</span> row)') in header
