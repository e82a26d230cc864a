"""Issue 35 item 3: data that cannot discriminate. `verify --data` measures before any run how far apart ŵ2, the ℓ∞ max
margin and p* are on the file (runner.discern); a control whose target is there within its own tolerance of the answer
of the claim it controls is "not applicable" (not run, never a pass, never unexpected, exit 0), the positive claims are
still judged. Issue 45 item 3 (the thresholds are the control's own): tests/unit/test_discern_tolerances.py."""

import json

import numpy as np
import pytest

from ibverify import claims as registry
from ibverify.claims import Claim
from ibverify.cli import main
from ibverify.cli.verify import _status, mark_not_applicable
from ibverify.oracles import max_margin
from ibverify.recipes import RunStore
from ibverify.recipes.settings import claim_datasets
from ibverify.report.compare import compare
from ibverify.report.schema import summarize, validate_results
from ibverify.runner import discern

# ŵ2 = p* = (1, 1)/√2 is also the unique ℓ∞ max margin (coordinate swap symmetry): every answer coincides
SYMMETRIC = "x1,x2,y\n1,1,1\n2,1,1\n1,2,1\n-1,-1,-1\n-2,-1,-1\n-1,-2,-1\n"
COS_MIN, GAP_MAX = 0.9993, 0.047   # a control's own tolerances (neither the shipped ones nor the generated data's)


def sep(**kw):
    base = dict(linf_loss_l2=0.5, cos_l2_near_linf=0.5, linf_loss_fp=0.5, cos_fp_near_linf=0.5, cos_fp_l2=0.5,
                near_linf=0.03)
    return discern.Separation(**{**base, **kw})


def control(target, rival=None, **tolerances):
    params = {"target": target, **({"rival": rival} if rival else {})}
    return Claim("data.control.x", "p", "r", "control", "s", "m:f", params=params,
                 tolerances=tolerances or {"cos_min": COS_MIN, "gap_max": GAP_MAX}, tiers={"smoke": {}})


@pytest.mark.parametrize("answer, target, field, kind", [
    ("linf", "l2", "cos_l2_near_linf", "cos"), ("linf", "fixed-point", "cos_fp_near_linf", "cos"),
    ("fixed-point", "l2", "cos_fp_l2", "cos"), ("l2", "fixed-point", "cos_fp_l2", "cos"),
    ("fixed-point", "linf", "linf_loss_fp", "loss"), ("l2", "linf", "linf_loss_l2", "loss")])
def test_each_measure_on_each_side_of_the_controls_own_threshold(answer, target, field, kind):
    near, far = (((1 + COS_MIN) / 2, COS_MIN - 1e-7) if kind == "cos" else (GAP_MAX - 1e-7, GAP_MAX + 1e-7))
    c = control(target)
    assert discern.gauge(sep(**{field: near}), answer, target, c.tol)[1] is True
    assert discern.not_applicable(sep(**{field: near}), answer, c, "smoke").startswith("not applicable to this data")
    assert discern.gauge(sep(**{field: far}), answer, target, c.tol)[1] is False
    assert discern.not_applicable(sep(**{field: far}), answer, c, "smoke") == ""
    # the other measures alone decide nothing for this pair
    others = {k: (1.0 if k.startswith("cos") else 0.0) for k in sep().figures() if k not in (field, "near_linf")}
    assert discern.not_applicable(sep(**others, **{field: far}), answer, c, "smoke") == ""
    assert discern.gauge(sep(**{field: None}), answer, target, c.tol)[1] is None   # not measured: judged
    assert discern.not_applicable(sep(**{field: near}), answer, control(target, other=1.0), "smoke") == ""


def test_a_rival_other_than_the_answer_is_judged():
    c = control("linf", rival="fixed-point")
    assert discern.not_applicable(sep(linf_loss_fp=0.0), "fixed-point", c, "smoke")   # the rival is the answer
    assert discern.not_applicable(sep(linf_loss_l2=0.0), "l2", c, "smoke") == ""    # a third answer: not modelled


def test_linf_is_compared_by_margin_not_by_cosine():
    Z = np.array([[1.0, 0.0], [0.0, 3.0]])   # ŵ2 ∝ (1, 1/3) attains γ∞ = 1; so does (1, 1): the ℓ∞ solutions are many
    li, l2 = max_margin(Z, "linf"), max_margin(Z, "l2")
    other = np.array([1.0, 1.0])
    ctl = next(c for c in registry.load_registry() if c.id == "data.control.det-adam-l2")
    assert (Z @ other).min() / np.abs(other).max() == pytest.approx(li.margin)
    assert other @ l2.direction / np.linalg.norm(other) < ctl.tol("cos_min")   # by cosine to it they would differ
    s = discern.measure(Z, 0.03)
    assert s.linf_loss_l2 == pytest.approx(0.0, abs=1e-9) and s.cos_l2_near_linf == pytest.approx(1.0)
    assert discern.not_applicable(s, "linf", ctl, "smoke")


def iris_z():
    (_, rec), = claim_datasets({"dataset": "sklearn", "sklearn": "iris:0v1"})
    return RunStore.process().data(rec).Z


def test_iris_discriminates_so_its_controls_are_judged(capsys):
    s = discern.measure(iris_z(), 0.03)
    everything = registry.load_registry()
    tol = {c.id: c.tol for c in everything}
    assert s.cos_l2_near_linf < tol["data.control.det-adam-l2"]("cos_min")   # measured 0.974
    assert s.linf_loss_fp > tol["data.control.inc-adam-linf"]("gap_max")     # measured 0.297
    data = [c for c in everything if c.id.startswith("data.")]
    out = mark_not_applicable(data, iris_z(), everything, "smoke", "iris")
    assert [c.params for c in out] == [c.params for c in data] and capsys.readouterr().err == ""


def test_a_control_is_matched_to_its_claims_answer_even_when_that_claim_is_not_selected(capsys):
    everything = registry.load_registry()
    ctl = [c for c in everything if c.id == "data.control.inc-adam-linf"]
    Z = np.array([[1.0, 1.0], [2.0, 1.0], [1.0, 2.0]])
    out, = mark_not_applicable(ctl, Z, everything, "smoke", "sym")
    why = out.params["not_applicable"]
    assert "p* (where the run goes) is within the control's tolerance of the ℓ∞ max margin" in why["reason"]
    assert why["figures"]["linf_loss_fp"] < 1e-9 and "(≤ the control's gap_max 3.00%)" in why["reason"]
    assert capsys.readouterr().err == f"data.control.inc-adam-linf: {why['reason']}\n"


def test_symmetric_data_controls_not_applicable_positive_claim_judged(tmp_path, capsys):
    f = tmp_path / "sym.csv"
    f.write_text(SYMMETRIC)
    out = tmp_path / "r"
    rc = main(["verify", "data.det-adam-linf", "data.control.det-adam-l2", "data.control.inc-adam-linf", "--data",
               str(f), "--tier", "smoke", "--sequential", "--no-cache", "-q", "--report", str(out), "--json", "-"])
    cap = capsys.readouterr()
    res = validate_results(json.loads(cap.out))
    rows = {c["id"]: c for c in res["claims"]}
    for cid in ("data.control.det-adam-l2", "data.control.inc-adam-linf"):
        r = rows[cid]
        assert r["verdict"] == "not applicable" and r["as_expected"] is False and r["cpu_s"] == 0.0
        assert r["outcome"]["figure"].startswith("not applicable to this data")
        assert f"{cid}: not applicable to this data" in cap.err
    assert rows["data.det-adam-linf"]["verdict"] == "holds"   # still judged, on this data
    assert rows["data.det-adam-linf"]["outcome"]["figures"]["det-adam_linf_gap"] < 0.03
    assert res["summary"]["not_applicable"] == 2 and res["summary"]["unexpected"] == 0 and rc == 0
    page = next((out / "claims").glob("data.control.det-adam-l2*.html")).read_text()
    assert "Not applicable to this data" in page and "cos 1.00000 to ŵ2 (≥ the control&#39;s cos_min 0.999)" in page
    assert "not applicable to this data</a>" in (out / "index.html").read_text()


def row(cid, verdict, expect="refuted", status="control"):
    r = {"id": cid, "paper": "p", "result": "r", "statement": "s", "tier": "smoke", "check": "m:f", "check_hash": "h",
         "reproduce": "x", "status": status, "expect": expect, "verdict": verdict, "as_expected": verdict == expect,
         "params": {}, "tolerances": {}, "runtime_s": 0.0, "seed": 0, "error": None,
         "outcome": {"holds": None, "figure": "", "figures": {}, "series": []}}
    return r


def results(rows):
    return {"schema": "ibverify.results/1", "created": "t", "tier": "smoke", "seed": 0, "versions": {},
            "summary": summarize(rows), "claims": rows}


def test_summary_and_exit_status_count_not_applicable_apart():
    rows = [row("a", "not applicable"), row("b", "holds", "holds", "paper")]
    s = summarize(rows)
    assert (s["total"], s["as_expected"], s["unexpected"], s["not_applicable"]) == (2, 1, 0, 1)
    assert _status(s) == 0
    s = summarize(rows + [row("c", "not refuted")])
    assert s["unexpected"] == 1 and _status(s) == 1
    validate_results(results(rows))
    with pytest.raises(Exception, match="control"):   # only a control can be not applicable
        validate_results(results([row("b", "not applicable", "holds", "paper")]))


@pytest.mark.parametrize("before, now, kind", [
    ("refuted", "not applicable", "FAIL"), ("not applicable", "not refuted", "FAIL"),
    ("not applicable", "error", "FAIL"), ("not applicable", "refuted", "BETTER"),
    ("not applicable", "inconclusive", "CHANGE"), ("not applicable", "not applicable", None)])
def test_compare_ranks_not_applicable_with_inconclusive(before, now, kind):
    res = compare(results([row("a", before)]), results([row("a", now)]))
    kinds = [line.split()[0] for line in res.lines if not line.startswith("NOTE")]   # NOTE: rows without counts
    assert kinds == ([kind] if kind else [])
    assert res.ok == (kind != "FAIL")
