"""Each claim page says what its verdict would have detected (issue 45 item 5): a resolution line made from the power
table (ibverify/report/power.json, package data) where the claim's rule is covered at its tolerances, and from a
law's own interval."""

import json

import pytest

from ibverify.checks import laws
from ibverify.report import html
from ibverify.report.html import law_lines, power_line, power_table

from .conftest import claim_of

RULE = "all_of: Soudry (K, ρ, slope)"


def _power(**tol):
    runs = ([{"rule": RULE, "tier": "fast", "kind": "right, fast", "decision": d} for d in
             ("supported", "supported", "contradicted")]
            + [{"rule": RULE, "tier": "fast", "kind": "wrong, same speed", "decision": d} for d in
               ("supported", "contradicted", "contradicted", "inconclusive", "set aside")]
            + [{"rule": RULE, "tier": "full", "kind": "wrong, same speed", "decision": "contradicted"}]
            + [{"rule": "other", "tier": "fast", "kind": "wrong, same speed", "decision": "supported"}])
    return {"commit": "abc1234", "date": "2026-12-03", "runs": runs,
            "tolerances": {"log-rate": {"k_rise_max": 0.15, "slope_gap_max": 0.05, "decades": 2.0, **tol}}}


def _claim(tier="fast", halves=None, k_rise=0.15):
    params = {"decades": 2.0, **({"halves": halves} if halves else {})}
    return {"id": "soudry.gd-l2", "check": "ibverify.checks.classic:log_rate", "tier": tier, "params": params,
            "tolerances": {"k_rise_max": {"value": k_rise, "why": "x"}, "slope_gap_max": 0.05}}


def test_power_line_counts_the_rules_decisions_at_the_claims_tier():
    line = power_line(_claim(), _power())
    assert RULE in line and "fast tier" in line and "abc1234" in line
    assert "right, fast: contradicted 1 of 3 (supported 2, undecided 0)" in line
    assert "wrong, same speed: supported 1 of 5 (contradicted 2, undecided 1, set aside 1)" in line
    full = power_line(_claim("full"), _power())
    assert "wrong, same speed: supported 0 of 1 (contradicted 1, undecided 0)" in full and "right" not in full
    smoke = power_line(_claim("smoke"), _power())      # not measured at smoke: the nearest tier, said so
    assert "the fast tier (this run: smoke)" in smoke and "supported 1 of 5" in smoke


def test_power_line_only_where_the_rule_and_tolerances_are_the_claims():
    assert "k_rise_max = 0.2 here, 0.15 there" in power_line(_claim(k_rise=0.2), _power())
    assert "no resolution line" in power_line(_claim(k_rise=0.2), _power())
    assert power_line(_claim(halves=["K", "norm"]), _power()) == ""          # halves not in the table
    assert power_line(dict(_claim(), check="ibverify.checks.x:check"), _power()) == ""
    assert power_line(_claim(), None) == ""
    wang = power_line(_claim(halves=["K", "norm", "approach"]), _power())
    assert wang == ""   # the Wang rule has no runs in this table


def test_power_table_is_read_when_present(tmp_path):
    assert power_table(tmp_path / "missing.json") is None
    (tmp_path / "p.json").write_text(json.dumps(_power()), encoding="utf-8")
    assert power_table(tmp_path / "p.json")["commit"] == "abc1234"
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    assert power_table(bad) is None


def test_the_committed_power_table_covers_soudry_at_its_tolerances():
    power = power_table()
    if power is None:
        pytest.fail("no power table shipped in the package (ibverify/report/power.json)")
    from ibverify.claims import default_claims_dir, load_claim

    claim = load_claim(default_claims_dir() / "soudry.gd-l2.toml")
    row = {"check": claim.check, "tier": "fast", "params": claim.params_for("fast"), "tolerances": claim.tolerances}
    line = power_line(row, power)
    wrong = [r for r in power["runs"] if r["rule"] == RULE and r["tier"] == "fast" and r["kind"] == "wrong, same speed"]
    sup = sum(r["decision"] == "supported" for r in wrong)
    assert f"wrong, same speed: supported {sup} of {len(wrong)}" in line


def test_law_lines_from_the_laws_own_row():
    fit = laws.Fit(1.14, 0.993, 1.278, 30, 23)
    dec = laws.judge_interval(fit.lo, fit.hi, 1.0, 0.3)
    row = laws.law_row("p in 1 − β_c(m) ∝ m^−p", fit, 1.0, 0.3, dec, "t", scope="30 thresholds on 6 datasets")
    (line,) = law_lines({"outcome": {"table": [{"seed": 1}, row]}})
    assert "(30 thresholds on 6 datasets)" in line and "fitted 1.14" in line and "[0.993, 1.278]" in line
    assert "the alternatives 0.7 and 1.3 are excluded" in line and line.endswith("supported.")
    wide = laws.law_row("p", laws.Fit(1.07, 0.72, 1.42, 10, 7), 1.0, 0.3, dec, "t")
    assert "are not both excluded" in law_lines({"outcome": {"table": [wide]}})[0]
    allow = laws.law_row("κ", laws.Fit(0.9997, 0.9996, 0.9999, 32, 31), 1.0, 0.1, dec, "t", allowance=0.0019)
    assert "the law: 1 ± 0.0019 (allowance)" in law_lines({"outcome": {"table": [allow]}})[0]
    assert law_lines({"outcome": {"table": [{"seed": 1}]}}) == [] and law_lines({"outcome": None}) == []
    assert html.LAW_KEY == laws.LAW_KEY


def test_claim_page_shows_the_resolution_lines(results, monkeypatch):
    c = claim_of(results, "baek.beyond.reshuffling")
    fit = laws.Fit(0.9997, 0.9996, 0.9999, 32, 31)
    c["outcome"]["table"] = [laws.law_row("κ", fit, 1.0, 0.1, laws.judge_interval(0.9996, 0.9999, 1.0, 0.1, 0.002),
                                          "t", allowance=0.002)] + c["outcome"]["table"]
    page = html.claim_page(c, html.page_names(results["claims"]), [], None)
    assert 'id="resolution"' in page and "Resolution of the law" in page and "κ fitted 0.9997" in page
    plain = html.claim_page(claim_of(results, "zhang.det-adam-linf"), html.page_names(results["claims"]), [], None)
    assert 'id="resolution"' not in plain
    soudry = dict(claim_of(results, "baek.gr-inc-adam-l2"), **_claim())
    page = html.claim_page(soudry, html.page_names(results["claims"]), [], _power())
    assert "Resolution of the rule all_of: Soudry" in page and "supported 1 of 5" in page
