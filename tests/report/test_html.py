import copy
import os
import re

import pytest

from ibverify import IbverifyError
from ibverify.report import render_report, write_results
from ibverify.report.commands import report_command
from ibverify.report.html import page_names
from .conftest import RESULTS, Dom, claim_of


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The fixture's report, rendered once for the read-only tests of this module."""
    index = render_report(RESULTS, tmp_path_factory.mktemp("html") / "report")
    return index, RESULTS


def small(results, *ids):
    """The results restricted to a few claims (cheaper to render)."""
    from ibverify.report.schema import summarize

    results["claims"] = [c for c in results["claims"] if c["id"] in ids]
    results["summary"] = summarize(results["claims"])
    return results


def series_ids(svg_html: str, prefix: str) -> set[str]:
    return set(re.findall(rf'<g id="({re.escape(prefix)}-s\d+)"', svg_html))


def _claim_links(index_html):
    return [a["href"] for a in Dom(index_html).find("a") if a.get("href", "").startswith("claims/")]


def test_index_links_every_claim_and_groups_by_paper(report):
    index, results = report
    html = index.read_text()
    dom = Dom(html)
    links = _claim_links(html)
    assert len(links) == len(results["claims"])
    for link in links:
        assert (index.parent / link).is_file()
    rows = dom.find("tr", class_="claim")
    papers = list(dict.fromkeys(c["paper"] for c in results["claims"]))
    grouped = sorted(results["claims"], key=lambda c: papers.index(c["paper"]))
    assert [(r["data-status"], r["data-verdict"]) for r in rows] == [(c["status"], c["verdict"]) for c in grouped]
    assert len(dom.find("tbody", class_="group")) == 3
    assert 'class="badge s-reconstructed">reconstructed<' in html
    for word in ("8</b>claims", "5</b>as expected", "3</b>unexpected", "1</b>errors"):
        assert word in html
    assert "solver failed &lt;inaccurate&gt;" in html  # key figure of an error: the exception message


def test_every_claim_page_has_plot_reproduce_and_labels(report):
    index, results = report
    for c in results["claims"]:
        page = index.parent / "claims" / page_names(results["claims"])[c["id"]]
        html = page.read_text()
        dom = Dom(html)
        assert dom.text_by_id["cmd"] == c["reproduce"]
        assert dom.find("a", href="../index.html")
        assert f'badge s-{c["status"]}' in html and c["verdict"] in html
        series = (c["outcome"] or {}).get("series") or []
        groups = list(dict.fromkeys(x.get("group") or x["name"] for x in series))
        assert len(dom.find("figure")) == len(groups)
        for k, group in enumerate(groups, start=1):
            members = [x for x in series if (x.get("group") or x["name"]) == group]
            drawable = [x for x in members if any(y is not None and y > 0 for y in x["y"])]
            assert len(series_ids(html, f"{page.stem}-{k}")) == len(drawable)
            for ext in ("svg", "pdf", "csv"):   # a PDF only for the published (full) tier
                linked = bool(dom.find("a", href=f"../figures/{page.stem}-{k}.{ext}"))
                written = (index.parent / "figures" / f"{page.stem}-{k}.{ext}").is_file()
                assert linked == written == (ext != "pdf" or c["tier"] == "full")
                if written:
                    assert (index.parent / "figures" / f"{page.stem}-{k}.{ext}").stat().st_size > 0
        assert "<script>alert" not in html and "&lt;b&gt;not bold&lt;/b&gt;" in html  # statement escaped
    recon = (index.parent / "claims" / "baek.inc-adam-near-proxy.html").read_text()
    assert 'class="note reconstructed"' in recon and "Reconstructed claim" in recon


def test_special_sections(report):
    index, _ = report
    page = lambda cid: (index.parent / "claims" / f"{cid}.html").read_text()
    err = page("gronich.muon-msp")
    assert 'class="error"' in err and "ValueError: solver failed &lt;inaccurate&gt;" in err
    assert "no evidence series recorded" in err
    cx = page("zhang.det-adam-linf")
    assert "Counterexample (shrunk)" in cx and "[3.0, -4.0]" in cx
    seeds = Dom(page("baek.beyond.reshuffling"))
    assert seeds.find("table", class_="per-seed")
    assert "no plottable values" in page("gronich.own-norm-wins")
    assert "tolerance" in page("baek.gr-inc-adam-l2") and "starting tolerance" in page("baek.gr-inc-adam-l2")


def test_grouped_series_share_one_plot_with_legend(report):
    index, _ = report
    html = (index.parent / "claims" / "baek.gr-inc-adam-l2.html").read_text()
    assert len(Dom(html).find("svg", class_="plot")) == 2  # gap alone, two cosines together
    assert len(series_ids(html, "baek.gr-inc-adam-l2-2")) == 2
    assert html.count(">cos to w_inf</text>") == 1  # one legend entry (SVG text is kept as text)


def test_missing_and_non_positive_values_are_counted_under_the_plot(results, tmp_path):
    c = claim_of(results, "zhang.det-adam-linf")
    c["outcome"]["series"][0]["y"][1] = None  # one missing, one zero (already there): 2 on a log axis
    html = (render_report(small(results, c["id"]), tmp_path / "r").parent / "claims" / f"{c['id']}.html").read_text()
    assert Dom(html).find("i", class_="skipped") and "2 missing or non-positive value(s) not drawn" in html
    low = html.lower().replace("nano", "")
    assert "nan" not in low, low[max(0, low.find("nan") - 200):low.find("nan") + 50]


def test_report_is_self_contained(report):
    index, _ = report
    for page in [index, *sorted((index.parent / "claims").glob("*.html"))]:
        html = page.read_text()
        urls = set(re.findall(r"(?:https?:)?//[\w.-]+", html)) - {"http://www.w3.org"}
        assert not urls, (page.name, urls)
        assert "<link" not in html and " src=" not in html and "@import" not in html


def test_rerender_removes_stale_pages_and_leaves_no_temp_dirs(results, tmp_path):
    out = tmp_path / "report"
    render_report(small(results, "baek.gr-inc-adam-l2", "zhang.det-adam-linf", "gronich.own-norm-wins"), out)
    results["claims"] = results["claims"][:2]
    results["summary"] = {"total": 2, "as_expected": 1, "unexpected": 1, "errors": 0}
    render_report(results, out)
    assert sorted(p.name for p in (out / "claims").iterdir()) == ["baek.gr-inc-adam-l2.html",
                                                                  "zhang.det-adam-linf.html"]
    assert sorted(p.name for p in out.iterdir()) == ["claims", "figures", "index.html"]
    assert {p.name.split("-")[0] for p in (out / "figures").iterdir()} == {"baek.gr", "zhang.det"}


def test_crash_while_moving_pages_keeps_the_old_index(results, tmp_path, monkeypatch):
    out = tmp_path / "report"
    results = small(results, "baek.gr-inc-adam-l2", "gronich.muon-msp")
    render_report(results, out)
    old_index = (out / "index.html").read_text()
    results["tier"] = "full"
    real_replace, calls = os.replace, []

    def crash_after_two(src, dst):
        calls.append(dst)
        if len(calls) > 2:
            raise OSError("killed")
        real_replace(src, dst)
    monkeypatch.setattr(os, "replace", crash_after_two)
    with pytest.raises(OSError):
        render_report(results, out)
    assert (out / "index.html").read_text() == old_index
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
    for page in (out / "claims").glob("*.html"):
        assert page.read_text().rstrip().endswith("</html>")


def test_invalid_results_render_nothing(results, tmp_path):
    results["claims"][0]["verdict"] = "maybe"
    with pytest.raises(IbverifyError, match="verdict"):
        render_report(results, tmp_path / "report")
    assert not (tmp_path / "report").exists()


def test_report_command_renders_from_a_results_file(results, tmp_path):
    path = write_results(small(results, "baek.gr-inc-adam-l2", "gronich.muon-msp"), tmp_path / "results.json")
    index = report_command(path, tmp_path / "out")
    assert index == tmp_path / "out" / "index.html" and len(_claim_links(index.read_text())) == 2


def test_page_names_are_safe_and_unique():
    names = page_names([{"id": "a/b"}, {"id": "a b"}, {"id": "..x"}])
    assert names == {"a/b": "a_b.html", "a b": "a_b-2.html", "..x": "x.html"}


def test_controls_link_and_error_without_text(results, tmp_path):
    claim_of(results, "baek.gr-inc-adam-l2")["controls"] = ["baek.control.gr-inc-adam-linf", "not.in.this.run"]
    c = claim_of(results, "baek.inc-adam-near-proxy")  # holds=None on a non-beyond claim: verdict error, no text
    c["outcome"]["holds"] = None
    c.update(verdict="error", as_expected=False)
    results["summary"].update(as_expected=4, unexpected=4, errors=2)
    out = render_report(small(results, "baek.gr-inc-adam-l2", "baek.inc-adam-near-proxy",
                                       "baek.control.gr-inc-adam-linf"), tmp_path / "r").parent
    out = out / "claims"
    page = (out / "baek.gr-inc-adam-l2.html").read_text()
    assert 'href="baek.control.gr-inc-adam-linf.html"' in page and "<code>not.in.this.run</code>" in page
    assert "no truth value (holds = null)" in (out / "baek.inc-adam-near-proxy.html").read_text()


def test_repeated_series_are_drawn_once_and_strings_shown_raw(results, tmp_path):
    c = claim_of(results, "zhang.det-adam-linf")
    c["outcome"]["series"].append(dict(c["outcome"]["series"][0]))
    c["outcome"]["counterexample"]["note"] = "line one\nline <two>"
    page = (render_report(small(results, c["id"]), tmp_path / "r").parent / "claims" / f"{c['id']}.html").read_text()
    assert len(series_ids(page, "zhang.det-adam-linf-1")) == 1 and len(Dom(page).find("figure")) == 1
    assert "line one\nline &lt;two&gt;" in page


def test_rows_say_which_commit_ran_them_and_the_index_groups_them(results, tmp_path):
    from ibverify.runner.claim import provenance

    p = provenance()
    assert set(p) == {"commit", "dirty", "version", "source_hash"} and (p["commit"] == "" or len(p["commit"]) == 40)
    r = copy.deepcopy(results)
    for i, c in enumerate(r["claims"]):
        c.update(commit=("a" if i % 2 else "b") * 40, dirty=bool(i % 2), created=f"2026-12-0{1 + i % 2}T00:00:00Z")
    index = render_report(r, tmp_path / "r")
    html = index.read_text()
    assert f"<code>{'a' * 12}</code> (uncommitted changes) 2026-12-02" in html
    assert f"<code>{'b' * 12}</code> 2026-12-01" in html
    page = (index.parent / "claims" / f"{r['claims'][1]['id']}.html").read_text()
    assert f"commit <code>{'a' * 12}</code> with uncommitted changes" in page


def test_pdfs_are_drawn_for_the_published_full_tier_only(tmp_path):
    """A PDF is a third of a figure's drawing cost: smoke and fast reports link SVG and CSV, the full tier also PDF."""
    res = copy.deepcopy(RESULTS)
    with_series = [c for c in res["claims"] if (c["outcome"] or {}).get("series")][:2]
    with_series[0]["tier"], with_series[1]["tier"] = "full", "fast"
    res = small(res, *(c["id"] for c in with_series))
    index = render_report(res, tmp_path / "r")
    names = page_names(res["claims"])
    for c, want in zip(with_series, (True, False), strict=True):
        stem = names[c["id"]][: -len(".html")]
        pdf = index.parent / "figures" / f"{stem}-1.pdf"
        assert pdf.is_file() == want and (not want or pdf.read_bytes().startswith(b"%PDF"))
        assert (index.parent / "figures" / f"{stem}-1.svg").is_file()
        assert (f'href="../figures/{stem}-1.pdf"' in (index.parent / "claims" / names[c["id"]]).read_text()) == want
