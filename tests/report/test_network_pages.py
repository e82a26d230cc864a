"""Network claims' pages as readable as paper-1 pages (issue 21 item 7): per-example figures grouped one row per
example, details as a list, thresholds drawn where (and only where) they bound the plotted quantity, numbers that
never round out of their range."""

from __future__ import annotations

import math

import pytest

from ibverify.evidence import THRESHOLD, Outcome, Series, bound_text
from ibverify.report import render_report
from ibverify.report.figures import FigureMaker, tolerance_lines
from ibverify.report.html import detail_sections, figure_tables, number_text
from ibverify.report.schema import summarize

from .conftest import Dom, build_results, claim_record

STEPS = [1000, 3162, 10000, 31623, 100000]
GEOMETRIES = ("ℓ2", "ℓ∞", "max-spectral", "hybrid")


def network_outcome(examples: int = 3) -> Outcome:
    """An outcome shaped as gronich_nets.network_kkt's: per-example residual curves with the rule's threshold,
    `name[k]` figures, and details 'preamble | example line | …'."""
    series, figs, lines = [], {}, []
    for k in range(examples):
        group = f"example {k}: signum (n=16,d=3,m=6,data{k},init0)"
        curves = {g: [(0.3 + 0.1 * i) * (1 - 0.05 * j) if g != "ℓ∞" else 0.3 * (1 - 0.15 * j)
                      for j in range(len(STEPS))] for i, g in enumerate(GEOMETRIES)}
        for g, y in curves.items():
            series.append(Series(f"{g} residual", STEPS, y, ylabel="Fenchel KKT residual", group=group))
        rival = [min(v[j] for g, v in curves.items() if g != "ℓ∞") for j in range(len(STEPS))]
        series.append(Series(f"{THRESHOLD} ℓ∞ residual < closest other ÷ 1.25", STEPS, [r / 1.25 for r in rival],
                             ylabel="Fenchel KKT residual", group=group))
        figs.update({f"residual[{k}]": curves["ℓ∞"][-1], f"residual_ratio[{k}]": 0.4 + 0.1 * k,
                     f"residual_crossing[{k}]": 2.1e8 * (k + 1), f"horizon[{k}]": 1e5})
        lines.append(f"n=16,d=3,m=6,data{k},init0: supported at T = 1e+05")
    figs.update({"discarded": 0, "outside_t2": 0})
    return Outcome(True, f"{examples} example(s)", figs, series, examples=examples,
                   details="judged in ℓ∞; rule: …" + "".join(f" | {ln}" for ln in lines))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    results = build_results()
    results["claims"] = [claim_record("gronich.signum-linf", "paper", network_outcome(), paper="Gronich et al.",
                                      tolerances={"guard": {"value": 1.25}, "min_drop": 0.05,
                                                  "signature_max": {"value": 0.05}})]
    results["summary"] = summarize(results["claims"])
    index = render_report(results, tmp_path_factory.mktemp("net") / "report")
    return (index.parent / "claims" / "gronich.signum-linf.html").read_text()


def test_the_figure_table_lists_each_example_once(page):
    assert len(Dom(page).find("table", class_="per-example")) == 1
    assert page.count("<tr><th>0: signum (n=16,d=3,m=6,data0,init0)</th>") == 1
    assert page.count("<tr><th>2: signum (n=16,d=3,m=6,data2,init0)</th>") == 1
    assert "residual[0]" not in page and "residual_ratio[1]" not in page   # no flat name[k] rows left
    assert "<th>discarded</th>" in page                                     # the claim-wide figures stay


def test_details_are_a_list_with_one_item_per_example(page):
    assert "<li>n=16,d=3,m=6,data0,init0: supported at T = 1e+05</li>" in page
    assert page.count("<li>n=16,d=3,m=6,data") == 3
    assert "<p>judged in ℓ∞; rule: …</p>" in page


def test_figure_tables_and_detail_sections():
    whole, per = figure_tables({"a": 1.0, "residual[0]": 0.1, "sig[0]": 0.2, "residual[1]": 0.3},
                               [{"name": "x", "group": "example 0: signum (n=16)"}])
    assert whole == {"a": 1.0}
    assert per["cols"] == ["residual", "sig"]
    assert per["rows"] == [{"example": "0: signum (n=16)", "residual": 0.1, "sig": 0.2},
                           {"example": "1", "residual": 0.3}]
    assert detail_sections("one sentence") == [{"head": "one sentence", "items": []}]
    assert detail_sections("head | a | b || sub: c | d") == [{"head": "head", "items": ["a", "b"]},
                                                            {"head": "sub: c", "items": ["d"]}]


def test_the_threshold_is_drawn_exactly_where_it_bounds_the_plotted_quantity():
    maker = FigureMaker()
    members = [s.to_json() for s in network_outcome(1).series]
    tol = {"guard": {"value": 1.25}, "signature_max": {"value": 0.05}}
    p = maker.draw(members, "example 0", tol, "n")
    assert THRESHOLD in p.svg and "stroke-dasharray" in p.svg       # the rule's threshold curve, dashed
    assert p.tolerances == []      # signature_max bounds the signature, which this plot does not show
    without = maker.draw(members[:-1], "example 0", tol, "m")
    assert THRESHOLD not in without.svg and "stroke-dasharray" not in without.svg
    # a degree-1 margin-gap plot is bounded by gap_max: its line is drawn
    gap = [{"name": "signum in linf: 1 − γ/γ*", "ylabel": "margin gap"}]
    assert tolerance_lines({"gap_max": 0.001, "min_drop": 0.05}, gap) == [("tolerance gap_max = 0.001", 0.001)]
    assert tolerance_lines({"guard": 1.25, "min_drop": 0.05}, members[:-1]) == []


def test_numbers_never_round_out_of_their_range():
    assert number_text(0.99999996) == "0.99999996"          # a cosine below 1 never reads 1
    assert number_text(1.9999999) == "1.9999999"
    assert number_text(1.0) == "1" and number_text(0.0787645511) == "0.0787646"
    assert number_text(2.1229e8) == "2.1229e+08" and number_text(math.inf) == "inf"
    assert bound_text(0.796, 0.8) == "0.796" and bound_text(0.7996, 0.8) == "0.7996"   # not "0.8" (< 0.8)
    assert bound_text(0.25, 1.0) == "0.25" and bound_text(0.9999999, 1.0) == "0.9999999"
    assert bound_text(0.8, 0.8) == "0.8" and bound_text(0.80004, 0.8) == "0.80004"
