"""Check-level behaviour of the issue-3 checks: helpers, and that checks can fail (same function,
opposite expectation) on small, fast inputs."""

import json

import numpy as np

from ibverify.checks import proxy as P
from ibverify.checks import symbolic as C
from ibverify.claims import CheckContext, Claim


def ctx(params, tol, status="paper"):
    cl = Claim(id="t", paper="", result="", status=status, statement="", check="", params=params,
               tolerances={k: {"value": v, "why": "test"} for k, v in tol.items()}, tiers={"fast": {}})
    return CheckContext(cl, "fast", params)


def test_inversions_and_one_trend_rule():
    assert P.inversions([1, 2, 3]) == 0 and P.inversions([1, 0.5, 3, 2]) == 2
    import ibverify.checks.per_sample as PS
    from ibverify.checks import rules

    # no private copy of a trend rule is left in the checks: each rule they use is the one in rules.py
    for mod in (P, PS, C):
        assert not hasattr(mod, "falls")
        for name in ("falling", "judge_gap", "judge_invariant", "judge_rate_invariant", "tally", "closeness"):
            if hasattr(mod, name):
                assert getattr(mod, name) is getattr(rules, name), (mod.__name__, name)
    assert P.judge_gap is rules.judge_gap and PS.judge_gap is rules.judge_gap


def test_plain_makes_json():
    row = {"a": np.float64(1.5), "b": np.bool_(True), "c": np.arange(2), "d": float("nan")}
    assert json.loads(json.dumps(P.plain(row))) == {"a": 1.5, "b": True, "c": [0, 1], "d": None}


def test_datasets_families():
    ds = P.datasets(ctx({"datasets": [{"dataset": "gaussian", "n": 4, "d": 6, "data_seeds": [1, 2]},
                                      {"dataset": "shifted-diagonal", "a": [1.0, 2.0], "deltas": [0.3]}]}, {}))
    assert [Z.shape for _, _, Z in ds] == [(4, 6), (4, 6), (2, 2)]
    assert [label for label, _, _ in ds][1:] == ["gaussian N=4 d=6 seed=2", "shifted-diagonal a=[1.0, 2.0] δ=0.3"]
    assert np.allclose(ds[2][2], [[1.3, 0.3], [0.3, 2.3]])


def test_proxy_direction_theory_only_claim_and_control():
    base = {"dataset": "gaussian", "n": 10, "d": 50, "data_seeds": [1]}
    tol = {"fp_tol": 1e-8, "kkt_tol": 1e-8, "theory_gap": 1e-9, "cos_min": 0.9999}
    ok = P.proxy_direction(ctx({**base, "target": "fixed-point"}, tol))
    assert ok.holds and ok.figures["fp_residual"] < 1e-8 and abs(ok.figures["cos_fp_l2"] - 0.964) < 1e-3
    bad = P.proxy_direction(ctx({**base, "target": "l2"}, tol, "control"))
    assert bad.holds is False and bad.figures["l2_duals_fp_residual"] > 1e-2
    json.dumps(bad.to_json())


def test_shifted_diagonal_theory_gives_linf_and_not_l2():
    base = {"dataset": "shifted-diagonal", "a": [1.0, 2.0, 3.0, 4.0], "deltas": [0.2]}
    tol = {"fp_tol": 1e-8, "kkt_tol": 1e-8, "theory_gap": 1e-8}
    assert P.proxy_direction(ctx({**base, "target": "linf"}, tol)).holds
    assert not P.proxy_direction(ctx({**base, "target": "l2"}, tol)).holds


def test_symbolic_checks_refute_wrong_limit():
    o = C.proxy_limit(ctx({"target": "sign", "symbolic_n": [2], "numeric_n": [3], "beta1s": [0.5]}, {"rtol": 1e-6}))
    assert o.holds is False and o.counterexample
    o = C.proxy_limit(ctx({"symbolic_n": [2], "numeric_n": [3], "beta1s": [0.5]}, {"rtol": 1e-6}))
    assert o.holds is True and o.figures["max_numeric_rel_error"] < 1e-6
