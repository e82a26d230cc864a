import copy
import io

import pytest

from ibverify import IbverifyError
from ibverify.report import compare, write_results
from ibverify.report.commands import compare_command
from ibverify.report.compare import tracked_specs

from .conftest import claim_of


def _fails(res):
    return [line for line in res.lines if line.startswith("FAIL")]


def _set_verdict(results, cid, holds):
    c = claim_of(results, cid)
    c["outcome"]["holds"] = holds
    word = {"paper": {True: "holds", False: "does not hold"}, "control": {True: "not refuted", False: "refuted"},
            "reconstructed": {True: "holds", False: "does not hold"}}[c["status"]][holds]
    c["verdict"], c["as_expected"] = word, word == c["expect"]
    _resummarize(results)


def _resummarize(r):
    n = len(r["claims"])
    ok = sum(c["as_expected"] for c in r["claims"])
    r["summary"] = {"total": n, "as_expected": ok, "unexpected": n - ok,
                    "errors": sum(c["verdict"] == "error" for c in r["claims"]),
                    "inconclusive": sum(c["verdict"] == "inconclusive" and not c["as_expected"] for c in r["claims"])}


def _set_inconclusive(results, cid):
    c = claim_of(results, cid)
    c["outcome"]["inconclusive"] = "3 supported, 3 inconclusive (holds needs ≥ 4 supported)"
    c["verdict"], c["as_expected"] = "inconclusive", False
    _resummarize(results)


def test_holds_turning_inconclusive_fails_and_inconclusive_turning_false_fails_again(results):
    cid = "baek.gr-inc-adam-l2"
    undecided = copy.deepcopy(results)
    _set_inconclusive(undecided, cid)
    res = compare(results, undecided)
    assert not res.ok and "as expected before, inconclusive now" in _fails(res)[0]
    refuted = copy.deepcopy(undecided)
    _set_verdict(refuted, cid, False)
    res = compare(undecided, refuted)         # inconclusive (2) → does not hold (1): worse
    assert not res.ok and "verdict inconclusive → does not hold" in _fails(res)[0]
    back = compare(undecided, results)        # inconclusive → holds: better, not a failure
    assert back.ok and any(line.startswith("BETTER") for line in back.lines)


def test_identical_results_pass_silently(results):
    res = compare(results, copy.deepcopy(results))
    assert res.ok and res.lines == [] and res.summary().startswith("compare: OK")


@pytest.mark.parametrize("cid,holds", [("baek.gr-inc-adam-l2", False), ("baek.inc-adam-near-proxy", False),
                                       ("baek.control.gr-inc-adam-linf", True)])
def test_worse_verdict_fails_naming_the_claim(results, cid, holds):
    current = copy.deepcopy(results)
    _set_verdict(current, cid, holds)
    res = compare(results, current)
    assert not res.ok and len(_fails(res)) == 1
    assert f" {cid}: verdict" in _fails(res)[0] and "as expected before, unexpected now" in _fails(res)[0]


def test_verdict_turning_into_error_fails(results):
    current = copy.deepcopy(results)
    c = claim_of(current, "baek.beyond.reshuffling")
    c.update(verdict="error", as_expected=False, outcome=None, error="Traceback\nRuntimeError: diverged")
    _resummarize(current)
    res = compare(results, current)
    assert _fails(res) == [("FAIL   baek.beyond.reshuffling: verdict finding → error (as expected before, "
                            "error now): RuntimeError: diverged")]


def test_improved_verdict_passes_and_is_reported(results):
    current = copy.deepcopy(results)
    _set_verdict(current, "zhang.det-adam-linf", True)
    _set_verdict(current, "baek.control.signum-no-momentum", False)
    res = compare(results, current)
    assert res.ok and sorted(line.split()[1] for line in res.lines) == [
        "baek.control.signum-no-momentum:", "zhang.det-adam-linf:"]
    assert all(line.startswith("BETTER") for line in res.lines)


def test_still_unexpected_is_not_a_regression(results):
    res = compare(results, copy.deepcopy(results))
    assert res.ok  # zhang.det-adam-linf does not hold in both: verify's exit status reports that, not compare


def test_missing_claim_fails_and_new_claim_is_reported(results):
    current = copy.deepcopy(results)
    gone = current["claims"].pop(0)
    new = copy.deepcopy(gone)
    new["id"] = "baek.brand-new"
    current["claims"].append(new)
    res = compare(results, current)
    assert not res.ok
    assert _fails(res) == ["FAIL   baek.gr-inc-adam-l2: missing from current results (baseline verdict: holds)"]
    assert "NEW    baek.brand-new: verdict holds (not in baseline)" in res.lines and res.new == 1


def test_tolerance_named_figure_is_tracked_from_the_claim(results):
    spec = tracked_specs(claim_of(results, "baek.gr-inc-adam-l2"))
    assert spec == {"cos": {"better": "higher", "rtol": 0.05, "atol": 0.0}}
    current = copy.deepcopy(results)
    figs = claim_of(current, "baek.gr-inc-adam-l2")["outcome"]["figures"]
    figs["cos"] = 0.96  # within 5% of 0.9999
    assert compare(results, current).ok
    figs["cos"] = 0.90
    res = compare(results, current)
    assert not res.ok and "baek.gr-inc-adam-l2: figure cos 0.9999 → 0.9 (higher is better" in _fails(res)[0]
    figs["cos"] = None
    assert "now missing or non-finite" in _fails(compare(results, current))[0]


def test_baseline_tracked_figures_with_direction_and_rtol(results):
    results["tracked"] = {"baek.control.gr-inc-adam-linf": {"gap": {"better": "higher", "rtol": 0.1}},
                          "zhang.det-adam-linf": {"gap": {"better": "lower", "rtol": 0.0, "atol": 0.005}}}
    current = copy.deepcopy(results)
    claim_of(current, "baek.control.gr-inc-adam-linf")["outcome"]["figures"]["gap"] = 0.11  # -8%: within 10%
    claim_of(current, "zhang.det-adam-linf")["outcome"]["figures"]["gap"] = 0.074  # +0.004: within atol
    assert compare(results, current).ok
    claim_of(current, "zhang.det-adam-linf")["outcome"]["figures"]["gap"] = 0.08
    res = compare(results, current)
    assert [line.split()[1] for line in _fails(res)] == ["zhang.det-adam-linf:"]
    claim_of(current, "zhang.det-adam-linf")["outcome"]["figures"]["gap"] = 0.01
    res = compare(results, current)
    assert res.ok and any(line.startswith("BETTER zhang.det-adam-linf: figure gap") for line in res.lines)


def test_changed_check_hash_warns_stale_baseline(results):
    current = copy.deepcopy(results)
    claim_of(current, "baek.gr-inc-adam-l2")["check_hash"] = "ffff000011112222"
    res = compare(results, current)
    assert res.ok and res.warnings == 1
    assert res.lines == [("WARN   baek.gr-inc-adam-l2: stale baseline: check_hash 0123456789abcdef → "
                          "ffff000011112222 (check or claim data changed; refresh the baseline if intended)")]


def test_compare_command_exit_status_and_output(results, tmp_path):
    base = write_results(results, tmp_path / "baseline.json")
    current = copy.deepcopy(results)
    _set_verdict(current, "baek.control.gr-inc-adam-linf", True)
    cur = write_results(current, tmp_path / "results.json")
    out = io.StringIO()
    assert compare_command(base, base, out) == 0 and out.getvalue() == (
        "compare: OK; 0 warning(s), 0 new claim(s)\n")
    out = io.StringIO()
    assert compare_command(base, cur, out) == 1
    assert "FAIL   baek.control.gr-inc-adam-linf: verdict refuted → not refuted" in out.getvalue()
    assert out.getvalue().endswith("compare: FAILED, 1 regression(s); 0 warning(s), 0 new claim(s)\n")
    with pytest.raises(IbverifyError, match="missing.json"):
        compare_command(tmp_path / "missing.json", cur, out)


def test_tolerance_with_figure_key_tracks_it_and_controls_flip(results):
    paper = claim_of(results, "zhang.det-adam-linf")
    paper["tolerances"] = {"gap_max": {"value": 0.03, "why": "spec", "figure": "gap", "atol": 0.001}}
    control = claim_of(results, "baek.control.gr-inc-adam-linf")
    control["tolerances"] = {"gap_max": {"value": 0.03, "why": "spec", "figure": "gap"}}
    assert tracked_specs(paper) == {"gap": {"better": "lower", "rtol": 0.05, "atol": 0.001}}
    assert tracked_specs(control) == {"gap": {"better": "higher", "rtol": 0.05, "atol": 0.0}}
    current = copy.deepcopy(results)
    claim_of(current, "zhang.det-adam-linf")["outcome"]["figures"]["gap"] = 0.09
    claim_of(current, "baek.control.gr-inc-adam-linf")["outcome"]["figures"]["gap"] = 0.05  # nearer the bound
    assert [line.split()[1] for line in _fails(compare(results, current))] == [
        "zhang.det-adam-linf:", "baek.control.gr-inc-adam-linf:"]


# ------------------------------------------------------------------ the "not yet" gate: inconclusive and set aside

def _set_counts(results, cid, **counts):
    out = claim_of(results, cid)["outcome"]
    words = {"supported": "supported", "contradicted": "contradicted", "inconclusive": "inconclusive",
             "set_aside": "set aside"}
    out["counts"] = {**out["counts"], **counts}
    out["decisions"] = {words[k]: v for k, v in out["counts"].items() if v}


def test_rows_carry_uniform_counts_of_the_decisions(results):
    out = claim_of(results, "baek.gr-inc-adam-l2")["outcome"]
    assert out["decisions"] == {"supported": 5, "set aside": 1}
    assert out["counts"] == {"supported": 5, "contradicted": 0, "inconclusive": 0, "set_aside": 1}
    bad = copy.deepcopy(results)
    claim_of(bad, "baek.gr-inc-adam-l2")["outcome"]["counts"]["supported"] = 4
    with pytest.raises(IbverifyError, match=r"baek.gr-inc-adam-l2\)\.outcome\.counts is .* but outcome\.decisions"):
        compare(bad, results)


@pytest.mark.parametrize("key", ["inconclusive", "set_aside"])
def test_more_not_yet_examples_than_the_baseline_fail_naming_the_claim(results, key):
    cid = "zhang.det-adam-linf"                        # baseline: 1 inconclusive, 0 set aside
    fewer = copy.deepcopy(results)                     # a doctored baseline with fewer examples of `key`
    _set_counts(fewer, cid, **{key: 0})
    more = copy.deepcopy(results)
    _set_counts(more, cid, **{key: 1})
    res = compare(fewer, more)
    word = key.replace("_", " ")
    assert not res.ok and len(_fails(res)) == 1
    assert _fails(res)[0].startswith(f"FAIL   {cid}: {word} examples") and "more examples not decided" in _fails(res)[0]
    back = compare(more, fewer)                        # fewer than the baseline: better, not a failure
    assert back.ok and any(line.startswith(f"BETTER {cid}: {word} examples") for line in back.lines)
    assert compare(more, copy.deepcopy(more)).ok       # equal: passes


def test_the_gate_reads_decisions_of_a_baseline_without_counts(results):
    old = copy.deepcopy(results)
    for c in old["claims"]:
        (c["outcome"] or {}).pop("counts", None)       # a baseline written before outcome.counts
    current = copy.deepcopy(results)
    _set_counts(current, "baek.gr-inc-adam-l2", set_aside=2)
    res = compare(old, current)
    assert [line.split()[1] for line in _fails(res)] == ["baek.gr-inc-adam-l2:"]
    assert "set aside examples 1 → 2" in _fails(res)[0]


def test_a_baseline_row_without_decisions_is_not_gated_and_said_so(results):
    cid = "baek.inc-adam-near-proxy"
    old = copy.deepcopy(results)
    out = claim_of(old, cid)["outcome"]
    out["decisions"], out["counts"] = {}, None
    current = copy.deepcopy(results)
    _set_counts(current, cid, inconclusive=4)
    res = compare(old, current)
    assert res.ok
    assert res.lines == [f"NOTE   1 claim(s): no per-example counts in the baseline (no three-valued examples), "
                         f"inconclusive / set-aside not gated: {cid}"]
    lost = compare(results, old)                       # counts in the baseline, none now: fails
    assert not lost.ok and f"FAIL   {cid}: per-example counts were recorded in the baseline, none now" in lost.lines[0]


def test_a_decision_word_that_is_not_one_is_refused_where_the_check_returns():
    from ibverify.evidence import Outcome

    with pytest.raises(ValueError, match=r"\['maybe'\] are not per-example decision words"):
        Outcome(True, "f", decisions={"supported": 1, "maybe": 2})
    assert Outcome(True, "f").to_json()["counts"] is None


# ------------------------------------------------------------------ laws: a doctored law figure fails the gate

def _law_rows():
    """(law row, its control's row) per law of the registry, with the claim files' own tolerances."""
    from ibverify.claims import load_registry
    from ibverify.evidence import Outcome

    from .conftest import claim_record, gap_series

    reg = {c.id: c for c in load_registry()}
    rows = []
    for law in (c for c in reg.values() if c.status == "law"):
        ctl = reg[law.controls[0]]
        figs = {t["figure"]: 0.5 * float(t["value"]) for n, t in law.tolerances.items()
                if n.endswith("_max") and isinstance(t, dict) and t.get("figure")}
        rows.append((claim_record(law.id, "law", Outcome(True, "within", figs, [gap_series()],
                                                         decisions={"supported": 2}), tolerances=law.tolerances),
                     claim_record(ctl.id, "control", Outcome(False, "outside", {f: 4 * v for f, v in figs.items()},
                                                             [gap_series()], decisions={"contradicted": 2}),
                                  tolerances=ctl.tolerances)))
    return rows


@pytest.mark.parametrize("law,control", _law_rows(), ids=lambda r: r["id"])
def test_a_doctored_law_figure_outside_its_band_fails_compare(results, law, control):
    results["claims"] += [law, control]
    _resummarize(results)
    figs = law["outcome"]["figures"]
    assert figs and set(tracked_specs(law)) == set(figs)   # every law figure with a tolerance is tracked
    assert compare(results, copy.deepcopy(results)).ok
    for fig, v in figs.items():
        doctored = copy.deepcopy(results)
        claim_of(doctored, law["id"])["outcome"]["figures"][fig] = 2.5 * v   # past the law's tolerance
        res = compare(results, doctored)
        assert not res.ok and _fails(res) == [
            f"FAIL   {law['id']}: figure {fig} {v:.6g} → {2.5 * v:.6g} (lower is better, tolerance "
            f"{0.05 * v:.3g}): regressed"]
        doctored = copy.deepcopy(results)                                     # the control nearer its bound
        claim_of(doctored, control["id"])["outcome"]["figures"][fig] = 1.5 * v
        res = compare(results, doctored)
        assert [line.split()[1] for line in _fails(res)] == [f"{control['id']}:"]
