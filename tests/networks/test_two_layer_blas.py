"""The two-layer gradient's two implementations (engine.network): loops below n·d·m = BLAS_MIN_WORK, BLAS products
over one-thread sample blocks from there up. Both against each other at sizes that span several blocks, and the
compiled step's choice between them at either side of the switch. (Both against the numpy reference over 3000
steps: tests/networks/test_engine_agreement.py, its `two-layer` and `wide` cases.)"""

import numpy as np
import pytest

from ibverify.engine import network as NK
from ibverify.engine.kernels import EXPONENTIAL, LOGISTIC


def _problem(n, d, m, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(rng.standard_normal(n) > 0, 1.0, -1.0)
    th = 0.4 * rng.standard_normal(m * d + m)
    return X, y, th


def _loops(X, y, th, m, q, loss):
    n, d = X.shape
    g = np.empty(m * d + m)
    S, z = NK._two_layer_grad(X, y, th, m, q, loss, np.empty((n, m)), np.empty((n, m)), np.empty((d, m)),
                              np.empty((d, m)), np.empty(n), np.empty(n), np.empty(n), g)
    return g, S, z


def _blas(X, y, th, m, q, loss):
    n, d = X.shape
    g = np.empty(m * d + m)
    S, z = NK._two_layer_grad_blas(X, y, th, m, q, loss, np.empty((n, m)), np.empty((n, m)), np.empty((m, d)),
                                   np.empty((m, d)), np.empty((m, d)), np.empty(n), np.empty(n), np.empty(n), g)
    return g, S, z


@pytest.mark.parametrize("q", [2.0, 1.0, 1.25])
@pytest.mark.parametrize("loss", [LOGISTIC, EXPONENTIAL])
def test_blas_gradient_equals_the_loops_over_several_sample_blocks(q, loss):
    n, d, m = 300, 32, 32                     # one-thread blocks of 256 samples: two, the second one short
    assert n * d * m > NK.BLAS_ONE_THREAD and NK.BLAS_ONE_THREAD // (d * m) < n
    X, y, th = _problem(n, d, m)
    (g1, S1, z1), (g2, S2, z2) = _loops(X, y, th, m, q, loss), _blas(X, y, th, m, q, loss)
    assert np.abs(g2 - g1).max() <= 1e-13 * np.abs(g1).max() and np.abs(g1).max() > 0
    assert abs(S2 - S1) <= 1e-13 * max(1.0, abs(S1)) and z1 == z2
    a = th[m * d:]                              # the output layer's gradient is Σ_i c_i σ(w_j·x_i), by hand
    H = np.maximum(X @ th[:m * d].reshape(m, d).T, 0.0) ** q
    qv = y * (H @ a)
    w = 1 / (1 + np.exp(qv)) if loss == LOGISTIC else np.exp(-qv)
    np.testing.assert_allclose(g2[m * d:], -(H.T @ (w / w.sum() * y)), rtol=1e-12, atol=1e-15)


def _one_gd_step(n, d, m):
    """θ after one compiled step of plain gradient descent (no moment, no direction, η = 0.1), and θ0 − 0.1·ĝ by
    each implementation."""
    X, y, th = _problem(n, d, m, seed=1)
    blocks = np.array([[0, m, d, 0], [m * d, 1, m, 0]], np.int64)
    gcfg = np.zeros((1, NK.N_GCFG))
    gcfg[0, NK.G_ETA] = 0.1
    P = th.size
    out = th.copy()
    done = NK.advance(NK.TWO_LAYER, np.array([d, m], np.int64), 2.0, X, y, LOGISTIC, blocks,
                      np.array([[0, P]], np.int64), gcfg, out, np.zeros(P), np.zeros(P), np.zeros((1, NK.N_SC)),
                      np.zeros(0), np.full(2, -1, np.int64), 0, 1, np.zeros(NK.N_DIAG, np.int64))
    assert done == 1
    return out, th - 0.1 * _loops(X, y, th, m, 2.0, LOGISTIC)[0], th - 0.1 * _blas(X, y, th, m, 2.0, LOGISTIC)[0]


def test_the_step_takes_the_loops_below_the_switch_and_blas_from_it():
    small = (10, 5, 20)                                       # n·d·m = 1000 < BLAS_MIN_WORK = 1024
    large = (16, 8, 8)                                        # 1024
    assert np.prod(small) < NK.BLAS_MIN_WORK <= np.prod(large)
    for size, blas in ((small, False), (large, True)):
        got, by_loops, by_blas = _one_gd_step(*size)
        assert not np.array_equal(by_loops, by_blas)          # the two differ in their last bits here ...
        np.testing.assert_array_equal(got, by_blas if blas else by_loops)   # ... so this says which one ran
