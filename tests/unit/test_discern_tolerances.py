"""Issue 45 item 3: a data control is "not applicable" only when a run at its claim's answer passes the control's own
closeness test. runner.discern reads the control's tolerances (cos_min, gap_max) and the ℓ∞ radius (the gap_max of
the claim whose answer is ℓ∞) from the claims themselves, so on data between the generated data's thresholds
(cos ≥ 0.99, ℓ∞ loss < 10 %: the former ones) and the controls' own (cos_min 0.999, gap_max 3 %) the control runs and is
judged; just outside it is still skipped; and a changed tolerance in a copied claims dir changes the decision.

The sets are small Gaussian ones (d = 3), label-folded rows Z = y·x, found by a seeded search and measured below."""

import json
import shutil

import numpy as np
import pytest

from ibverify import claims as registry
from ibverify.cli import main
from ibverify.cli.verify import mark_not_applicable
from ibverify.runner import discern
from ibverify.strategies.linear import COS_MAX, LINF_GAP_MIN   # the former thresholds (the generated data's)

L2_CONTROLS = {"data.control.det-adam-l2", "data.control.signum-l2"}   # answer ℓ∞, target ŵ2: judged by cos_min
LINF_CONTROL = "data.control.inc-adam-linf"                           # answer p*, target ℓ∞: judged by gap_max

SETS = {
    # every control inside the former window: cos to ŵ2 0.99809, p*'s ℓ∞ loss 4.45 %
    "inside": [[-0.42, 0.04, -1.5], [-1.99, 0.48, -2.54], [-0.61, 1.53, -3.03], [-3.74, 0.63, 1.04],
               [-2.28, -1.24, -0.92], [-2.12, -0.5, -1.86], [-0.74, -0.4, -1.23], [-1.45, -0.84, -1.83]],
    # cos to ŵ2 0.99931 ≥ 0.999 (the ℓ2 controls truly n/a), p*'s ℓ∞ loss 4.39 % (inside: judged)
    "l2-outside": [[2.14, -0.95, 0.03], [3.86, -0.12, -1.46], [2.97, -0.84, -3.5], [0.27, 0.08, -2.09],
                   [2.18, 0.91, -2.76], [2.14, 2.52, -0.31], [2.56, 0.67, -0.53], [0.6, 1.4, -1.6]],
    # cos to ŵ2 0.99515 (inside: judged), p*'s ℓ∞ loss 0.92 % ≤ 3 % (the ℓ∞ control truly n/a)
    "linf-outside": [[-1.39, -2.18, -0.95], [-0.15, -0.13, -1.84], [0.27, -1.92, 0.54], [2.44, -1.11, 0.85],
                     [-0.62, -3.02, -2.09], [-1.67, -2.37, -1.06], [1.06, -0.72, -0.36], [-0.51, -2.14, -0.79],
                     [0.05, -1.16, -0.45]],
    # cos to ŵ2 1 and p*'s ℓ∞ loss 1.99 %: every control truly n/a
    "outside": [[0.41, -0.09, 0.06], [2.3, 1.58, -0.41], [0.05, 3.96, 0.31], [-0.15, 0.31, -0.49],
                [-0.57, 1.26, -1.03], [2.21, 2.05, -3.28], [1.03, -0.53, 0.54], [1.15, 1.64, -1.64]],
}
SKIPPED = {"inside": set(), "l2-outside": L2_CONTROLS, "linf-outside": {LINF_CONTROL},
           "outside": L2_CONTROLS | {LINF_CONTROL}}


def by_id(claims):
    return {c.id: c for c in claims}


def data_claims(everything):
    return [c for c in everything if c.id.startswith("data.")]


def skipped(out):
    return {c.id for c in out if "not_applicable" in c.params}


@pytest.fixture(scope="module")
def shipped():
    return registry.load_registry()


@pytest.fixture(scope="module")
def measured(shipped):
    radius = by_id(shipped)["data.det-adam-linf"].tol("gap_max")
    return {k: discern.measure(np.array(Z), radius) for k, Z in SETS.items()}


def test_the_sets_lie_where_said(shipped, measured):
    """Each set on the stated side of the controls' own thresholds and of the former ones."""
    c = by_id(shipped)
    cos_min = {c[i].tol("cos_min") for i in L2_CONTROLS}.pop()
    gap_max = c[LINF_CONTROL].tol("gap_max")
    m = measured
    assert COS_MAX <= m["inside"].cos_l2_near_linf < cos_min and gap_max < m["inside"].linf_loss_fp < LINF_GAP_MIN
    assert cos_min <= m["l2-outside"].cos_l2_near_linf and gap_max < m["l2-outside"].linf_loss_fp < LINF_GAP_MIN
    assert COS_MAX <= m["linf-outside"].cos_l2_near_linf < cos_min and m["linf-outside"].linf_loss_fp <= gap_max
    assert cos_min <= m["outside"].cos_l2_near_linf and m["outside"].linf_loss_fp <= gap_max


@pytest.mark.parametrize("name", SETS)
def test_a_control_is_skipped_only_outside_its_own_tolerance(name, shipped, capsys):
    everything = shipped
    out = mark_not_applicable(data_claims(everything), np.array(SETS[name]), everything, "smoke", name)
    assert skipped(out) == SKIPPED[name]
    err = capsys.readouterr().err
    for c in out:
        if c.id in SKIPPED[name]:
            reason = c.params["not_applicable"]["reason"]
            assert err.count(f"{c.id}: not applicable") == 1 and reason in err
            own = (f"(≤ the control's gap_max {c.tol('gap_max'):.2%})" if c.id == LINF_CONTROL
                   else f"(≥ the control's cos_min {c.tol('cos_min'):g})")
            assert own in reason
        else:
            assert c.id not in err and "not_applicable" not in c.params


def copy_claims(tmp_path, edits):
    """The shipped claims dir copied, with `edits` {claim id: (old line, new line)} applied."""
    dst = tmp_path / "claims"
    shutil.copytree(SHIPPED_DIR, dst)
    for cid, (old, new) in edits.items():
        f = dst / f"{cid}.toml"
        text = f.read_text()
        assert text.count(old) == 1
        f.write_text(text.replace(old, new))
    return dst


SHIPPED_DIR = registry.default_claims_dir()   # read once, before any test points IBVERIFY_CLAIMS at a copy
COS_LINE = 'cos_min = { value = 0.999,'
GAP_LINE = 'gap_max = { value = 0.03,'


def test_a_changed_tolerance_in_a_copied_claims_dir_changes_the_decision(tmp_path, monkeypatch, capsys):
    Z = np.array(SETS["inside"])   # cos to ŵ2 0.99809, p*'s ℓ∞ loss 4.45 %, ŵ2's 5.27 %: every control judged
    monkeypatch.setenv("IBVERIFY_CLAIMS", str(copy_claims(tmp_path, {
        "data.control.det-adam-l2": (COS_LINE, 'cos_min = { value = 0.998,'),   # the control's own: 0.99809 passes
        LINF_CONTROL: (GAP_LINE, 'gap_max = { value = 0.05,'),                  # the control's own: 4.45 % passes
        "data.signum-linf": (GAP_LINE, 'gap_max = { value = 0.06,')})))         # the claim's ℓ∞ radius: ŵ2 within
    everything = registry.load_registry()
    assert by_id(everything)["data.control.det-adam-l2"].tol("cos_min") == 0.998   # the copy is what is read
    out = mark_not_applicable(data_claims(everything), Z, everything, "smoke", "inside")
    assert skipped(out) == {"data.control.det-adam-l2", LINF_CONTROL, "data.control.signum-l2"}
    why = {c.id: c.params["not_applicable"]["reason"] for c in out if "not_applicable" in c.params}
    assert "(≥ the control's cos_min 0.998)" in why["data.control.det-adam-l2"]
    assert "(≤ the control's gap_max 5.00%)" in why[LINF_CONTROL]
    assert "within 6% of γ∞ has cos 1.00000 to ŵ2" in why["data.control.signum-l2"]   # ŵ2 itself is within 6 %
    capsys.readouterr()
    # each edit alone: only its own control changes
    for cid, edit in (("data.control.det-adam-l2", (COS_LINE, 'cos_min = { value = 0.998,')),
                      (LINF_CONTROL, (GAP_LINE, 'gap_max = { value = 0.05,')),
                      ("data.control.signum-l2", (GAP_LINE, 'gap_max = { value = 0.06,'))):
        where = "data.signum-linf" if cid == "data.control.signum-l2" else cid
        monkeypatch.setenv("IBVERIFY_CLAIMS", str(copy_claims(tmp_path / cid, {where: edit})))
        everything = registry.load_registry()
        assert skipped(mark_not_applicable(data_claims(everything), Z, everything, "smoke", "inside")) == {cid}


def write_csv(path, Z):
    """Label-folded rows Z as a data file: row i labelled ±1 alternately, x = y·z."""
    rows = ["x1,x2,x3,y"]
    for i, z in enumerate(Z):
        y = 1 if i % 2 == 0 else -1
        rows.append(",".join(f"{y * v:g}" for v in z) + f",{y}")
    path.write_text("\n".join(rows) + "\n")
    return path


def verify_rows(args, capsys):
    rc = main(["verify", *args, "--tier", "smoke", "--sequential", "--no-cache", "-q", "--json", "-"])
    cap = capsys.readouterr()
    return rc, {r["id"]: r for r in json.loads(cap.out)["claims"]}, cap.err


def test_verify_data_runs_the_control_inside_the_former_window_and_skips_it_by_a_copied_tolerance(
        tmp_path, monkeypatch, capsys):
    f = write_csv(tmp_path / "inside.csv", SETS["inside"])
    args = [LINF_CONTROL, "--data", str(f), "--report", str(tmp_path / "r")]
    _, rows, err = verify_rows(args, capsys)
    r = rows[LINF_CONTROL]
    assert r["verdict"] in ("refuted", "not refuted", "inconclusive") and r["cpu_s"] > 0   # run and judged
    assert "not applicable" not in err and "inc-adam" in r["outcome"]["figure"]
    monkeypatch.setenv("IBVERIFY_CLAIMS", str(copy_claims(tmp_path, {LINF_CONTROL: (GAP_LINE,
                                                                                   'gap_max = { value = 0.05,')})))
    rc, rows, err = verify_rows(args, capsys)
    r = rows[LINF_CONTROL]
    assert r["verdict"] == "not applicable" and r["cpu_s"] == 0.0 and rc == 0
    assert f"{LINF_CONTROL}: not applicable to this data" in err and "4.45% below γ∞" in r["outcome"]["figure"]
