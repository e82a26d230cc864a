"""oracles.constrained: the box- and ball-constrained logistic optima against their certificates, each certificate
condition failing on its own, and values against closed forms."""

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.oracles.constrained import (ball_logistic, ball_residuals, box_logistic, box_residuals, logistic)

Z = np.array([[0.846, 0.822, 0.33], [1.803, 0.905, 0.446], [1.037, 0.581, 0.365], [0.794, 0.028, 0.547]])
R = 2.0


def test_logistic_value_and_gradient_against_finite_differences_and_large_margins():
    w = np.array([0.3, -0.2, 0.5])
    f, g = logistic(w, Z)
    assert f == pytest.approx(np.mean(np.log1p(np.exp(-(Z @ w)))), rel=1e-14)
    h = 1e-6
    fd = [(logistic(w + h * e, Z)[0] - logistic(w - h * e, Z)[0]) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-7)
    f_big, g_big = logistic(np.array([1e4, 0.0, 0.0]), Z)                    # e^(−z·w) underflows: no NaN
    assert np.isfinite(f_big) and np.all(np.isfinite(g_big))


def test_box_optimum_is_certified_and_sits_on_the_face_with_the_right_signs():
    b = box_logistic(Z, R)
    assert b.kind == "box" and all(v <= 1e-7 for v in b.certificate.values())
    g = logistic(b.w, Z)[1]
    on = np.abs(b.w) == R                                                  # separable: the box binds
    assert on.any() and np.all(-np.sign(b.w[on]) * g[on] >= 0)
    assert np.all(np.abs(g[~on]) <= 1e-9)


def test_ball_optimum_is_certified_on_the_sphere_with_a_positive_multiplier():
    c = ball_logistic(Z, R)
    assert np.linalg.norm(c.w) == pytest.approx(R, rel=1e-12) and c.multiplier > 0
    g = logistic(c.w, Z)[1]
    np.testing.assert_allclose(g + c.multiplier * c.w, 0, atol=1e-12)
    # the ball optimum is the loss minimizer over the sphere: no random point of the ball does better
    rng = np.random.default_rng(0)
    for _ in range(200):
        v = rng.standard_normal(3)
        v *= R * rng.uniform(0, 1) ** (1 / 3) / np.linalg.norm(v)
        assert logistic(v, Z)[0] >= c.loss - 1e-12


def test_box_and_ball_optima_differ_and_the_box_allows_the_lower_loss():
    b, c = box_logistic(Z, R), ball_logistic(Z, R)
    assert np.linalg.norm(b.w - c.w) / np.linalg.norm(b.w) > 0.1
    assert b.loss < c.loss                                                 # the ball of radius R lies in the box


def test_each_box_condition_fails_on_its_own():
    b = box_logistic(Z, R)
    w = b.w.copy()
    base = box_residuals(Z, w, R)
    assert max(base.values()) <= 1e-7
    out = w.copy()
    i = int(np.argmax(np.abs(w)))
    out[i] = np.sign(w[i]) * R * 1.01                                      # outside the box
    r = box_residuals(Z, out, R)
    assert r["primal_infeasibility"] == pytest.approx(0.01, rel=1e-9)
    free = np.flatnonzero(np.abs(w) < R)
    if free.size:                                                          # a free coordinate moved: gradient ≠ 0
        moved = w.copy()
        moved[free[0]] += 0.1
        r = box_residuals(Z, moved, R)
        assert r["stationarity_free"] > 1e-4 and r["primal_infeasibility"] == 0 and r["sign_active"] == 0
    # an active coordinate on the wrong face (w_i = −R where the optimum has +R): the sign condition fails alone
    act = np.flatnonzero(np.abs(w) == R)
    wrong = w.copy()
    wrong[act[0]] = -w[act[0]]
    r = box_residuals(Z, wrong, R)
    assert r["sign_active"] > 1e-4 and r["primal_infeasibility"] == 0
    assert r["projected_gradient"] > 1e-4                                  # and the one-number residual sees it


def test_each_ball_condition_fails_on_its_own():
    c = ball_logistic(Z, R)
    w = c.w
    assert max(v for k, v in ball_residuals(Z, w, R).items() if k != "multiplier") <= 1e-7
    r = ball_residuals(Z, w * 1.01, R)                                     # outside the ball
    assert r["primal_infeasibility"] == pytest.approx(0.01, rel=1e-9)
    r = ball_residuals(Z, w * 0.5, R)                                      # inside with μ > 0: complementarity
    assert r["complementarity"] > 1e-3 and r["primal_infeasibility"] == 0
    rot = np.array([w[1], w[0], w[2]])                                     # on the sphere, not stationary
    r = ball_residuals(Z, rot, R)
    assert r["stationarity"] > 1e-3 and r["primal_infeasibility"] < 1e-12
    r = ball_residuals(Z, -w, R)                                           # the worst point: μ < 0
    assert r["dual_negativity"] > 1e-3


def test_a_failed_certificate_raises_and_bad_input_is_refused(monkeypatch):
    import ibverify.oracles.constrained as C

    monkeypatch.setattr(C, "box_residuals", lambda Z, w, R: {"projected_gradient": 1e-3, "sign_active": 0.0})
    with pytest.raises(IbverifyError, match="projected_gradient"):
        C.box_logistic(Z, R)
    with pytest.raises(IbverifyError, match="radius"):
        box_logistic(Z, 0.0)
    with pytest.raises(IbverifyError, match="finite"):
        ball_logistic(np.array([[np.nan, 1.0]]), 1.0)


def test_non_separable_data_inside_the_constraint_give_the_unconstrained_optimum():
    Zn = np.array([[1.0, 0.2], [-1.0, 0.1], [0.5, -1.0], [-0.4, -0.9]])      # not separable: a finite minimizer
    b, c = box_logistic(Zn, 50.0), ball_logistic(Zn, 50.0)
    np.testing.assert_allclose(b.w, c.w, atol=1e-6)
    np.testing.assert_allclose(logistic(b.w, Zn)[1], 0, atol=1e-8)


def test_box_restarts_where_lbfgsb_stopped_short_and_certifies(monkeypatch):
    """L-BFGS-B can stop short of stationarity (seen on a Dask worker at the full tier: stationarity_free 1.8e-3):
    box_logistic restarts it where it stopped and polishes by projected Newton until the certificate passes; with a
    single run that stopped short, the certificate refuses (never a wrong optimum)."""
    import scipy.optimize

    from ibverify import IbverifyError
    from ibverify.oracles import constrained as C

    rng = np.random.default_rng(3)
    X = rng.standard_normal((10, 12))
    Z = X * np.sign(X @ rng.standard_normal(12))[:, None]
    real, calls = scipy.optimize.minimize, []

    def short_first(*a, **k):   # the first run stops after 3 iterations, as a line search giving up would
        calls.append(1)
        if len(calls) == 1:
            k = {**k, "options": {**k["options"], "maxiter": 3}}
        return real(*a, **k)

    monkeypatch.setattr(scipy.optimize, "minimize", short_first)
    good = real and C.box_logistic(Z, 1.5)             # polish alone (Newton) finishes the short run
    assert max(good.certificate.values()) <= C.CERT_RTOL
    snap_only = lambda Z, w, R: np.where(np.abs(w) >= R * (1 - C.ACTIVE), np.sign(w) * R, w)  # noqa: E731
    monkeypatch.setattr(C, "_box_polish", snap_only)
    calls.clear()
    b = C.box_logistic(Z, 1.5)                          # restart alone (no Newton) finishes it too
    assert len(calls) >= 2 and max(b.certificate.values()) <= C.CERT_RTOL
    assert np.allclose(b.w, good.w, atol=1e-7)
    calls.clear()
    monkeypatch.setattr(C, "RESTARTS", 1)               # neither: the certificate refuses
    with pytest.raises(IbverifyError, match="certificate failed"):
        C.box_logistic(Z, 1.5)
