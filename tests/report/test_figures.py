"""Plots a reader can read: ≥ 3 labelled ticks on every axis, tolerances drawn, stable output, files beside."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibverify.report import render_report
from ibverify.report.figures import FigureMaker, tolerance_lines
from ibverify.report.ticks import axis

from .conftest import claim_of

BASELINE = Path(__file__).resolve().parents[2] / "ci" / "baseline-fast.json"

# y ranges of plots that showed at most one y-axis number on main (measured on ci/baseline-fast.json):
# gronich KKT residuals, controls whose gap stays flat, constant series, a relative error stuck at 0.405.
NARROW = [(0.5318, 0.5782), (0.3061, 0.3862), (1.0000000000002816, 1.0000000000018785), (0.0392, 0.0492),
          (1.0500, 1.1748), (0.8193, 0.8824), (0.4048712982016722, 0.40537098684869854), (0.2164, 0.2164),
          (1e-18, 1e-18), (0.0347, 0.0577), (1.2401, 1.3357), (0.0828, 0.1329)]


@pytest.fixture(scope="module")
def maker():
    return FigureMaker()


def svg_tick_labels(svg: str, prefix: str, which: str) -> list[str]:
    """The text of each labelled tick of the x or y axis, as drawn in the SVG."""
    return re.findall(rf'id="{re.escape(prefix)}-{which}tick_\d+">(?:(?!{which}tick_).)*?<text[^>]*>([^<]+)</text>',
                      svg, flags=re.S)


def series_over(lo, hi, n=6, **extra):
    ys = [lo * (hi / lo) ** (i / (n - 1)) for i in range(n)] if lo > 0 else [lo + (hi - lo) * i / (n - 1)
                                                                            for i in range(n)]
    return {"name": "s", "x": [10.0 ** i for i in range(n)], "y": ys, "xlabel": "step",
            "ylabel": "relative KKT residual", **extra}


@pytest.mark.parametrize("lo,hi", NARROW)
def test_narrow_log_ranges_show_at_least_three_y_numbers(maker, lo, hi):
    p = maker.draw([series_over(lo, hi)], "kkt", {}, "n")
    labels = svg_tick_labels(p.svg, "n", "y")
    assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
    assert list(labels) == list(p.y.labels)
    assert p.y.lo <= lo and hi <= p.y.hi
    assert len(set(svg_tick_labels(p.svg, "n", "x"))) >= 3


@settings(max_examples=300, deadline=None)
@given(lo=st.floats(1e-300, 1e300), ratio=st.floats(1.0, 1e30), log=st.booleans())
def test_every_axis_has_three_distinct_labels_covering_the_data(lo, ratio, log):
    hi = lo * ratio
    if not math.isfinite(hi) or hi > 1e300:
        return
    a = axis([lo, hi], log)
    assert len(a.ticks) >= 3 and len(set(a.labels)) == len(a.labels)
    assert a.lo <= lo * (1 + 1e-9) and hi * (1 - 1e-9) <= a.hi
    if not a.log and all(1e-3 <= abs(t) < 1e4 for t in a.ticks):  # plain labels write the tick exactly
        assert all(abs(float(lbl.replace("−", "-")) - t) <= 1e-9 * max(map(abs, a.ticks))
                   for lbl, t in zip(a.labels, a.ticks, strict=True))
    assert all(a.lo * (1 - 1e-9) <= t <= a.hi * (1 + 1e-9) for t in a.ticks)
    if log and a.log and ratio >= 1e3:  # wide ranges: decades (every k-th), never a cluttered axis
        assert len(a.ticks) <= 9 and all(abs(math.log10(t) - round(math.log10(t))) < 1e-9 for t in a.ticks)


def test_log_axis_uses_decades_or_one_two_five_and_falls_back_to_linear():
    assert axis([1e-5, 0.64], True).labels == ("10⁻⁵", "10⁻⁴", "0.001", "0.01", "0.1", "1")
    assert axis([0.052, 0.33], True).labels == ("0.05", "0.1", "0.2", "0.5")
    narrow = axis([0.5318, 0.578], True)
    assert not narrow.log and narrow.labels == ("0.53", "0.54", "0.55", "0.56", "0.57", "0.58")
    assert axis([-1.0, 5.0], False).labels == ("−2", "0", "2", "4", "6")
    assert axis([1.05, 1.17], False).labels == ("1.050", "1.075", "1.100", "1.125", "1.150", "1.175")  # exact


def test_tolerance_lines_apply_to_the_quantity_they_bound():
    gap = [{"name": "run", "ylabel": "1 − cos(w, ŵ2)"}]
    linf = [{"name": "run", "ylabel": "(γ∞ − γ∞(w))/γ∞"}]
    kkt = [{"name": "run", "ylabel": "relative KKT residual", "group": "kkt"}]
    sig = [{"name": "run", "ylabel": "linf_saturate", "group": "signature"}]
    tol = {"cos_min": {"value": 0.999, "why": "x"}, "gap_max": 0.03, "kkt_max": {"value": 1e-3},
           "signature_max": 0.05, "slope_max": -0.02, "inversions_max": 1}
    assert [(lbl, round(v, 12)) for lbl, v in tolerance_lines(tol, gap)] == [("tolerance 1 − cos_min = 0.001", 0.001)]
    assert tolerance_lines(tol, linf) == [("tolerance gap_max = 0.03", 0.03)]
    assert tolerance_lines(tol, kkt) == [("tolerance kkt_max = 0.001", 0.001)]
    assert tolerance_lines(tol, sig) == [("tolerance signature_max = 0.05", 0.05)]
    assert tolerance_lines({"slope_max": -0.02, "significance": 1e-3}, gap + kkt) == []  # not a plotted quantity
    explicit = {"rtol": {"value": 1e-9, "plot": "linf_saturate"}}  # a claim may name the plot itself
    assert tolerance_lines(explicit, sig) == [("tolerance rtol = 1e-09", 1e-9)]


def test_the_tolerance_is_drawn_and_inside_the_y_range(maker):
    s = series_over(0.01, 0.5, ylabel="1 − cos(w, ŵ2)")
    p = maker.draw([s], "gap", {"cos_min": {"value": 0.9999}}, "t")
    assert 'id="t-tolerance"' in p.svg and "tolerance 1 − cos_min = 0.0001" in p.svg
    assert p.y.lo <= 1e-4 <= p.y.hi
    assert "0.0001" in svg_tick_labels(p.svg, "t", "y") or "10⁻⁴" in svg_tick_labels(p.svg, "t", "y")
    no_tol = maker.draw([s], "gap", {"slope_max": -0.2}, "t")
    assert "tolerance" not in no_tol.svg
    below_zero = maker.draw([s], "gap", {"cos_min": {"value": 1.5}}, "t")  # 1 − 1.5 < 0: not on a log axis
    assert below_zero.y.log and below_zero.tolerances == [] and "tolerance" not in below_zero.svg


def test_output_is_deterministic_and_self_describing(maker):
    s = series_over(1e-6, 0.3)
    s["y"][2] = None
    a, b = maker.draw([s], "gap", {}, "d"), maker.draw([s], "gap", {}, "d")
    assert a.svg == b.svg and a.pdf == b.pdf and a.csv == b.csv
    assert a.pdf.startswith(b"%PDF") and a.svg.startswith('<svg class="plot"')
    rows = list(csv.reader(io.StringIO(a.csv)))
    assert rows[0] == ["series", "step", "relative KKT residual"] and len(rows) == 7
    assert rows[3] == ["s", "100.0", ""] and float(rows[2][2]) == s["y"][1]
    assert a.skipped == 1


def test_a_plot_does_not_depend_on_the_plots_drawn_before_it():
    """FigureMaker keeps one Axes between plots: a plot drawn after others (a log plot with a tolerance and a legend,
    a plot with nothing plottable, a linear one) is byte-identical to the same plot from a fresh maker."""
    a = [series_over(1e-6, 0.3), dict(series_over(1e-5, 0.1), name="other")]
    empty = [{"name": "e", "x": [1.0, 2.0], "y": [None, None], "xlabel": "step", "ylabel": "gap"}]
    lin = [dict(series_over(-1.0, 2.0, log_y=False, log_x=False), name="lin")]
    tol = {"gap_max": {"value": 1e-3}}
    fresh = FigureMaker().draw(a, "gap", tol, "k")
    used = FigureMaker()
    for series, t in ((lin, {}), (empty, {}), (a, tol), (lin, {}), (empty, {})):
        used.draw(series, "gap", t, "k")
    again = used.draw(a, "gap", tol, "k")
    assert again.svg == fresh.svg and again.pdf == fresh.pdf and again.csv == fresh.csv
    assert FigureMaker().draw(lin, "gap", {}, "k").svg == used.draw(lin, "gap", {}, "k").svg
    assert FigureMaker().draw(empty, "gap", {}, "k").svg == used.draw(empty, "gap", {}, "k").svg


def test_repeated_rows_of_a_controls_table_are_shown_once(results, tmp_path):
    c = claim_of(results, "baek.control.gr-inc-adam-linf")
    row = {"example": "n=5 d=10", "final gap": 0.0993, "ok": False, "why not": "gap not falling"}
    c["outcome"]["table"] = [row, dict(row)]  # hypothesis replays the failing example: it comes back twice
    results["claims"], results["summary"]["total"] = [c], 1
    results["summary"].update(as_expected=1, unexpected=0, errors=0)
    page = (render_report(results, tmp_path / "r").parent / "claims" / f"{c['id']}.html").read_text()
    assert page.count("n=5 d=10") == 1 and "1 repeated row(s) not shown" in page


def test_unchanged_figures_are_reused_and_changed_ones_redrawn(results, tmp_path, monkeypatch):
    from ibverify.report import figures

    out = tmp_path / "r"
    render_report(results, out)
    before = {p.name: p.read_bytes() for p in (out / "figures").iterdir()}
    calls = []
    real = figures.FigureMaker.draw
    monkeypatch.setattr(figures.FigureMaker, "draw", lambda self, *a: calls.append(a[3]) or real(self, *a))
    render_report(results, out)
    assert calls == [] and {p.name: p.read_bytes() for p in (out / "figures").iterdir()} == before
    claim_of(results, "zhang.det-adam-linf")["outcome"]["series"][0]["y"][2] = 0.3
    render_report(results, out)
    assert calls == ["zhang.det-adam-linf-1"]


def test_plots_of_the_baseline_that_had_one_y_number_now_have_three(maker):
    if not BASELINE.is_file():
        pytest.skip("no ci/baseline-fast.json")
    from ibverify.report.svg import group_series

    claims = {c["id"]: c for c in json.loads(BASELINE.read_text())["claims"]}
    for cid in ("gronich.muon-msp", "gronich.control.gd-linf", "baek.control.proxy-limit-sign",
                "baek.control.gaussian-fixed-point-l2"):
        if cid not in claims:
            continue
        title, members = group_series(claims[cid]["outcome"]["series"])[0]
        p = maker.draw(members, title, claims[cid]["tolerances"], "b")
        assert len(set(svg_tick_labels(p.svg, "b", "y"))) >= 3, (cid, svg_tick_labels(p.svg, "b", "y"))
