"""`bias` answers that say when (issue 36 item 2: runner.decades) and stop where float64 underflows (item 1:
runner.underflow). Constructed curves and a constructed dataset scaled so that every margin passes 745 within a few
thousand steps."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.checks import bias, rules
from ibverify.cli import main
from ibverify.cli.bias import answers, decade_lines
from ibverify.optim import transforms as T
from ibverify.optim.adapters import to_spec
from ibverify.optim.userfile import UserOptimizer
from ibverify.runner import decades, underflow
from ibverify.runner.bias import with_decades

STEPS = [int(round(10 ** (2 + j / 4))) for j in range(13)]   # 100 … 1e5, four a decade, as recipes.bias.checkpoints


def entry(curves: dict[str, dict[str, list[float]]], steps=STEPS) -> dict:
    """A model entry of bias's answer with these curves: geometry → dataset → values."""
    ev = {g: {"datasets": [{"dataset": tag, "curve": {"steps": list(steps), "values": list(v)}}
                           for tag, v in per.items()]} for g, per in curves.items()}
    return {"model": "linear", "evidence": ev}


def power(c: float, s: float, steps=STEPS) -> list[float]:
    return [c * t ** s for t in steps]


# ------------------------------------------------------------------------------------------ leaders

def test_the_leader_is_the_smallest_falling_geometry():
    series = decades._curves(entry({"l2": {"a": power(0.5, -0.3)}, "linf": {"a": power(1.0, -0.3)}}))["a"]
    assert [decades.leader(series, k) for k in (2, 3, 4)] == ["l2", "l2", "l2"]


def test_the_smallest_geometry_that_rises_or_is_flat_leads_no_decade():
    rising = decades._curves(entry({"l2": {"a": power(0.01, 0.2)}, "linf": {"a": power(1.0, -0.3)}}))["a"]
    assert decades.leader(rising, 2) is None
    flat = decades._curves(entry({"l2": {"a": power(0.01, -0.01)}, "linf": {"a": power(1.0, -0.3)}}))["a"]
    assert -0.01 > rules.FLAT and decades.leader(flat, 2) is None   # 2 % a decade: not falling
    falling = decades._curves(entry({"l2": {"a": power(0.01, -0.03)}, "linf": {"a": power(1.0, -0.3)}}))["a"]
    assert decades.leader(falling, 2) == "l2"


def test_a_reached_value_leads_without_a_trend_and_a_tie_leads_nothing():
    reached = decades._curves(entry({"l2": {"a": [0.0] * 13}, "linf": {"a": power(1.0, -0.3)}}))["a"]
    assert decades.leader(reached, 3) == "l2"
    tie = decades._curves(entry({"l2": {"a": power(0.5, -0.3)}, "linf": {"a": power(0.5, -0.3)}}))["a"]
    assert decades.leader(tie, 3) is None


def test_decades_are_the_powers_of_ten_the_grid_reaches():
    assert decades.decades_of(np.array(STEPS, float)) == [2, 3, 4]
    capped = np.array([31, 55, 98, 175, 312, 556, 990, 1764, 3141, 5595, 9967, 17753, 31622], float)
    assert decades.decades_of(capped) == [2, 3]   # 98 ≈ 100, 990 ≈ 1e3, 9967 ≈ 1e4; 1e5 not reached
    assert decades.decades_of(np.array([150, 300, 900, 5000], float)) == []


# ------------------------------------------------------------------------------------------ the model's decades

def crossing_curves(t_star: float):
    """linf falls slowly (t^-0.05), l2 falls through it at t_star: log(l2/linf) linear in log t, 0 at t_star."""
    lt = np.log(STEPS)
    linf = 0.1 * np.exp(-0.05 * lt)
    l2 = linf * np.exp(-0.4 * (lt - math.log(t_star)))
    return linf.tolist(), l2.tolist()


def test_a_switch_is_found_at_the_step_where_the_curves_cross():
    linf, l2 = crossing_curves(3000.0)
    m = entry({"linf": {"a": linf, "b": linf}, "l2": {"a": l2, "b": l2}, "l1": {"a": [0.9] * 13, "b": [0.9] * 13}})
    rows, switches = decades.by_decade(m)
    assert [r["geometry"] for r in rows] == ["linf", "l2", "l2"]
    (s,) = switches
    assert (s["from_geometry"], s["to_geometry"]) == ("linf", "l2")
    assert s["step"] == pytest.approx(3000.0, rel=1e-9) and set(s["steps"]) == {"a", "b"}
    later = crossing_curves(20000.0)
    m2 = entry({"linf": {"a": later[0]}, "l2": {"a": later[1]}})
    assert decades.by_decade(m2)[1][0]["step"] == pytest.approx(20000.0, rel=1e-9)


def test_a_decade_needs_two_thirds_of_the_datasets():
    linf, l2 = crossing_curves(3000.0)
    other_linf, other_l2 = crossing_curves(50000.0)
    two = entry({"linf": {"a": linf, "b": linf, "c": other_linf}, "l2": {"a": l2, "b": l2, "c": other_l2}})
    rows, _ = decades.by_decade(two)
    assert rows[1]["geometry"] == "l2" and rows[1]["leaders"] == {"a": "l2", "b": "l2", "c": "linf"}
    one = entry({"linf": {"a": linf, "b": other_linf, "c": other_linf}, "l2": {"a": l2, "b": other_l2,
                                                                              "c": other_l2}})
    rows, _ = decades.by_decade(one)
    assert rows[1]["geometry"] == "linf"   # 2 of 3 still on linf
    split = entry({"linf": {"a": linf, "b": other_linf}, "l2": {"a": l2, "b": other_l2}})
    assert decades.by_decade(split)[0][1]["geometry"] is None   # 1 of 2: no geometry


def test_the_answer_carries_decades_switches_and_text_lines():
    linf, l2 = crossing_curves(3000.0)
    ans = with_decades({"models": [entry({"linf": {"a": linf}, "l2": {"a": l2}}), {"model": "matrix",
                                                                                    "not_judged": "x"}]}, {})
    m, nj = ans["models"]
    assert [r["geometry"] for r in m["by_decade"]] == ["linf", "l2", "l2"] and "by_decade" not in nj
    lines = decade_lines(m)
    assert lines[0] == "    by decade: 1e2–1e3 linf, 1e3–1e4 l2, 1e4–1e5 l2"
    assert lines[1].startswith("    switch: linf → l2 at step ≈ 3e+03")


# ------------------------------------------------------------------------------------------ underflow

def test_the_gradient_is_zero_exactly_when_every_margin_underflows():
    Z = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert not underflow.zero_gradient(Z, np.array([740.0, 800.0]), "logistic")   # e^-740 is a float64 number
    assert underflow.zero_gradient(Z, np.array([746.0, 800.0]), "logistic")
    assert not underflow.zero_gradient(Z, np.array([744.0, 746.0]), "exponential")
    ws = [np.array([1.0, 1.0]), np.array([700.0, 760.0]), np.array([750.0, 760.0]), np.array([900.0, 900.0])]
    assert underflow.first_zero(Z, ws, "logistic") == 2


def test_the_engines_failure_line_gives_its_step():
    assert underflow.failed_step(IbverifyError("x: non-finite iterate by step 159 (overflow: …)")) == 159
    assert underflow.failed_step(IbverifyError("something else")) is None


def scaled_file(tmp_path, scale: float) -> str:
    """Ten points with margin ≥ 1 along e1; scaled so that sign descent's margins pass 745 at a few thousand steps."""
    rng = np.random.default_rng(1)
    y = np.where(np.arange(10) % 2 == 0, 1.0, -1.0)
    X = rng.normal(size=(10, 3))
    X[:, 0] = y * (1 + np.abs(X[:, 0]))
    path = tmp_path / f"scaled{scale:g}.npz"
    np.savez(path, X=X * scale, y=y)
    return str(path)


def sign_descent(normalized: bool = False):
    """Sign descent (sign(0) = 0: it stops where the gradient is 0), or GD normalized in ℓ∞ without a guard (0/0 =
    NaN where the gradient is 0: the run fails a step after its underflow)."""
    if normalized:
        def update(u, s, params=None, **e):
            with np.errstate(invalid="ignore"):
                return u / np.max(np.abs(u)), s
        unguarded = T.Transform(lambda p: None, update)
        return to_spec(UserOptimizer("raw-ngd", "u / ‖u‖∞", vector=lambda spec, xp: [unguarded]))
    return to_spec(UserOptimizer("raw-sign", "sign(u)", vector=lambda spec, xp: [T.scale_by_sign(xp)]))


@pytest.fixture
def short_smoke(monkeypatch):
    monkeypatch.setitem(bias.HORIZONS["smoke"], "linear", (10_000, 10_000))


def _answer(spec, path, notes):
    (out,) = answers([spec], {}, tier="smoke", seed=0, datasets=1, data_file=path, models=["linear"], quiet=True,
                     note=notes.append)
    return out["models"][0]


def test_a_run_whose_loss_underflows_is_judged_before_it_and_says_so(tmp_path, short_smoke):
    notes = []
    m = _answer(sign_descent(), scaled_file(tmp_path, 118.0), notes)
    (u,) = m["underflow"]
    assert 100 < u["step"] <= 10_000 and u["min_margin"] > 745
    assert u["judged_at"] < u["step"] and u["judged_at"] in bias.recipes.checkpoints(10_000)
    assert {d["horizon"] for ev in m["evidence"].values() for d in ev["datasets"]} == {u["judged_at"]}
    (line,) = notes
    assert "underflows by step" in line and f"judged at T = {u['judged_at']}" in line


def test_the_same_optimizer_on_unscaled_data_runs_to_the_horizon(tmp_path, short_smoke):
    notes = []
    m = _answer(sign_descent(), scaled_file(tmp_path, 0.01), notes)
    assert "underflow" not in m and not notes
    assert {d["horizon"] for ev in m["evidence"].values() for d in ev["datasets"]} == {10_000}


def test_a_run_that_fails_after_its_underflow_is_judged_before_it(tmp_path, short_smoke):
    notes = []
    m = _answer(sign_descent(normalized=True), scaled_file(tmp_path, 118.0), notes)
    (u,) = m["underflow"]
    assert u["judged_at"] is not None and u["judged_at"] < u["step"] and u["min_margin"] > 745


def test_a_failure_with_no_underflow_before_it_is_the_runs_own_error(tmp_path, short_smoke):
    bad = to_spec(UserOptimizer("nan-at-51", "NaN from step 51", vector=lambda spec, xp: [T.Transform(
        lambda p: 0, lambda u, s, params=None, **e: (np.full_like(u, np.nan) if s >= 50 else u, s + 1))]))
    with pytest.raises(IbverifyError, match="non-finite iterate"):
        _answer(bad, scaled_file(tmp_path, 0.01), [])


def test_the_json_answer_and_stderr_say_so(tmp_path, capsys, short_smoke):
    path = scaled_file(tmp_path, 118.0)
    signum = str(Path(__file__).parents[1] / "docs" / "examples" / "my_signum.py")
    rc = main(["bias", "--optimizer", signum, "--data", path, "--model", "linear",
               "--tier", "smoke", "--json", "-q"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    (u,) = json.loads(out)["models"][0]["underflow"]
    assert f"underflows by step {u['step']}" in err


def test_a_torch_optimizer_stops_where_its_float64_loss_underflows(tmp_path, monkeypatch):
    """torch's Rprop grows its steps ×1.2 while the gradient's sign holds: margins pass 745 within a few hundred
    steps on unit-scale data, and its float64 gradient is then exactly 0."""
    pytest.importorskip("torch")
    monkeypatch.setitem(bias.HORIZONS["smoke"], "linear", (1000, 1000))
    notes = []
    m = _answer(to_spec("torch:Rprop", {}), scaled_file(tmp_path, 1.0), notes)
    (u,) = m["underflow"]
    assert u["min_margin"] > 745 and u["judged_at"] < u["step"] <= 1000
    assert {d["horizon"] for ev in m["evidence"].values() for d in ev["datasets"]} == {u["judged_at"]}
    assert "torch:Rprop" in notes[0] and "underflows" in notes[0]


def test_the_report_page_shows_decades_switches_and_underflow(tmp_path):
    from ibverify.report.bias import render_bias_report

    linf, l2 = crossing_curves(3000.0)
    m = entry({"linf": {"a": linf}, "l2": {"a": l2}})
    m.update({"supported": [], "contradicted": [], "inconclusive": ["linf", "l2"], "datasets": 1, "cpu_seconds": 0.0,
              "underflow": [{"dataset": "a", "step": 3162, "judged_at": 1778, "min_margin": 802.0}]})
    for g in ("linf", "l2"):
        m["evidence"][g].update({"line": "x", "tally": "1 inconclusive"})
        m["evidence"][g]["datasets"][0].update({"decision": "inconclusive", "reason": "r", "margin_gap": 0.1,
                                                "slope": -0.1, "horizon": 100000})
    ans = with_decades({"optimizer": "o", "knobs": {}, "tier": "smoke", "seed": 0, "models": [m]}, {})
    prov = {"command": "c", "ibverify": "0", "commit": None, "created": "now", "tier": "smoke", "seed": 0,
            "datasets": 1, "data": None, "ran_on": "here", "versions": {}}
    html = render_bias_report([ans], tmp_path / "r", prov).read_text()
    assert [r["geometry"] for r in ans["models"][0]["by_decade"]] == ["linf", "l2", "l2"]
    assert 'data-from="100" data-geometry="linf"' in html and 'data-from="1000" data-geometry="l2"' in html
    assert "switch <code>linf</code> → <code>l2</code>: at step ≈ 3000" in html
    assert "float64 underflow: <code>a</code> by step 3162" in html and "judged at T = 1778" in html


def freezing(after: int):
    """GD (ibverify applies −η_t) whose update shrinks to 1e-300 of itself after `after` steps: w + u == w from then on,
    while the gradient is not 0: a float64 run that freezes long before any underflow."""
    def update(u, t, params=None, **e):
        return (u if t < after else u * 1e-300), t + 1
    return to_spec(UserOptimizer(f"freezes-at-{after}", "GD, then 1e-300·GD",
                                 vector=lambda spec, xp: [T.Transform(lambda p: 0, update)]))


def test_a_run_that_freezes_is_judged_where_it_froze_and_says_so(tmp_path, short_smoke):
    notes = []
    m = _answer(freezing(300), scaled_file(tmp_path, 0.01), notes)
    (u,) = m["underflow"]
    assert u["kind"] == "frozen" and u["step"] == 301 and u["min_margin"] < 745
    assert u["judged_at"] == min(c for c in bias.recipes.checkpoints(10_000) if c >= 300)
    assert {d["horizon"] for ev in m["evidence"].values() for d in ev["datasets"]} == {u["judged_at"]}
    (line,) = notes
    assert "stops moving at step 301" in line and f"judged at T = {u['judged_at']}" in line


def test_a_run_frozen_only_in_its_last_interval_is_judged_at_its_horizon(tmp_path, short_smoke):
    last_two = bias.recipes.checkpoints(10_000)[-2:]
    m = _answer(freezing(int(last_two[0]) + 1), scaled_file(tmp_path, 0.01), [])
    assert "underflow" not in m
    assert {d["horizon"] for ev in m["evidence"].values() for d in ev["datasets"]} == {10_000}


def test_an_underflow_is_of_kind_underflow(tmp_path, short_smoke):
    (u,) = _answer(sign_descent(), scaled_file(tmp_path, 118.0), [])["underflow"]
    assert u["kind"] == "underflow"
