"""Open the rendered report in real headless Chromium from file:// and check what a reviewer sees.

Screenshot-free: the DOM after scripts ran (`--dump-dom`), the page's own JS-error flag
(`data-jserror`, set by a window error listener) and console errors from Chromium's log.
CI installs Chromium with `.ci/browser-deps.sh`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ibverify.report import render_report
from ibverify.report.html import page_names

from .conftest import RESULTS, Dom
from _hang_guard import HANG_GUARD_S

CHROMIUM = next((p for p in (os.environ.get("IBVERIFY_CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium",
                             shutil.which("chromium-browser")) if p and Path(p).exists()), None)
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (run .ci/browser-deps.sh)")]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=2000"]
FILTERS = {"control": "#status=control", "fails": "#verdict=does+not+hold",
           "unexpected-paper": "#status=paper&expected=no", "none": "#status=beyond&verdict=refuted"}


def dump_dom(url: str) -> tuple[str, list[str]]:
    """The DOM after the page's scripts ran, and the console errors Chromium logged."""
    with tempfile.TemporaryDirectory(prefix="ibverify-chromium-") as profile:
        run = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
                             capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)
    assert run.returncode == 0 and "</html>" in run.stdout, f"chromium failed on {url}: {run.stderr[-2000:]}"
    errors = [ln for ln in run.stderr.splitlines() if "CONSOLE" in ln and ("Uncaught" in ln or "Error" in ln)]
    return run.stdout, errors


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """url key -> (DOM, console errors) for the index, each filter URL and every claim page."""
    index = render_report(RESULTS, tmp_path_factory.mktemp("browser") / "report")
    names = page_names(RESULTS["claims"])
    urls = {"index": index.as_uri()}
    urls.update({f"filter:{k}": index.as_uri() + h for k, h in FILTERS.items()})
    urls.update({cid: (index.parent / "claims" / name).as_uri() for cid, name in names.items()})
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(urls, pool.map(dump_dom, urls.values()), strict=True))


def _ran_cleanly(dom: str, errors: list[str]) -> Dom:
    assert not errors, errors
    parsed = Dom(dom)
    body = parsed.find("body")[0]
    assert body.get("data-js") == "ok" and "data-jserror" not in body, body
    return parsed


def test_index_loads_and_lists_every_claim(pages):
    dom = _ran_cleanly(*pages["index"])
    rows = dom.find("tr", class_="claim")
    assert len(rows) == len(RESULTS["claims"]) and not [r for r in rows if "hidden" in r]
    assert dom.find("body")[0]["data-shown"] == str(len(RESULTS["claims"]))
    assert dom.text_by_id["shown"] == f"{len(RESULTS['claims'])} of {len(RESULTS['claims'])} claims shown"


@pytest.mark.parametrize("cid", [c["id"] for c in RESULTS["claims"]])
def test_claim_page_loads_and_shows_its_plot(pages, cid):
    claim = next(c for c in RESULTS["claims"] if c["id"] == cid)
    dom = _ran_cleanly(*pages[cid])
    assert dom.text_by_id["cmd"] == claim["reproduce"]
    assert dom.find("a", href="../index.html")
    series = (claim["outcome"] or {}).get("series") or []
    if not series:  # an error claim shows its error instead of plots
        assert claim["verdict"] == "error" and dom.find("pre", class_="error")
        return
    assert dom.find("svg", class_="plot")
    stem = Path(page_names(RESULTS["claims"])[cid]).stem
    drawn = {g["id"] for g in dom.find("g") if re.fullmatch(rf"{re.escape(stem)}-\d+-s\d+", g.get("id", ""))}
    assert len(drawn) == sum(any(y is not None and y > 0 for y in s["y"]) for s in series)


@pytest.mark.parametrize("key,visible", [("control", {"baek.control.gr-inc-adam-linf",
                                                     "baek.control.signum-no-momentum"}),
                                         ("fails", {"zhang.det-adam-linf"}),
                                         ("unexpected-paper", {"zhang.det-adam-linf", "gronich.muon-msp"}),
                                         ("none", set())])
def test_filters_from_the_url_hash(pages, key, visible):
    dom = _ran_cleanly(*pages[f"filter:{key}"])
    shown = {Path(a["href"]).stem for t, a in _rows_links(dom) if "hidden" not in t}
    assert shown == visible
    assert dom.find("body")[0]["data-shown"] == str(len(visible))
    groups = dom.find("tbody", class_="group")
    papers_shown = {c["paper"] for c in RESULTS["claims"] if c["id"] in visible}
    assert sum("hidden" not in g for g in groups) == len(papers_shown)  # empty paper groups are hidden


def _rows_links(dom: Dom):
    """(row attrs, link attrs) for each claim row, in order."""
    out, row = [], None
    for tag, attrs in dom.elements:
        if tag == "tr" and attrs.get("class") == "claim":
            row = attrs
        elif tag == "a" and row is not None and attrs.get("href", "").startswith("claims/"):
            out.append((row, attrs))
            row = None
    return out
