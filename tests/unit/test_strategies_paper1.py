"""Paper-1 data: the orthogonal GR generator, the β2 strategy's range, and the β1 = β2 = 0 closed form
against the float64 reference engine (the engine-independent oracle of baek.beyond.gr-beta2-zero)."""

import numpy as np
import pytest
from hypothesis import given, settings

from ibverify.checks.per_sample import beta2_strategy, sign_sum_closed_form
from ibverify.data import gr
from ibverify.data.generators import gr_orthogonal, sylvester_hadamard
from ibverify.engine import run
from ibverify.optim import OptimizerSpec


def test_sylvester_hadamard_is_orthogonal_with_a_ones_column():
    for d in (1, 2, 8, 32):
        H = sylvester_hadamard(d)
        assert np.array_equal(H @ H.T, d * np.eye(d)) and np.all(H[:, 0] == 1)
    with pytest.raises(ValueError):
        sylvester_hadamard(12)


def test_gr_orthogonal_is_gr_and_separable():
    D = gr_orthogonal(5, 16, np.random.default_rng(0))
    Z = D.Z
    a = np.abs(Z)
    assert np.allclose(a, a[:, :1])  # |z_i[k]| = a_i for every k: GR
    assert np.all(Z[:, 0] > 0)  # e_1 separates


@settings(max_examples=30, deadline=None, derandomize=True)
@given(beta2_strategy(1e-6, 0.9999, "log"))
def test_log_beta2_strategy_stays_inside_the_open_interval(b2):
    assert 1e-6 * (1 - 1e-12) <= b2 <= 0.9999 + 1e-12 and 0 < b2 < 1


@pytest.mark.parametrize("decay", [0.5, 0.3])
def test_sign_sum_closed_form_matches_the_reference_engine(decay):
    Z = gr(4, 6, np.random.default_rng(1)).Z
    spec = OptimizerSpec("inc-adam", beta1=0.0, beta2=0.0, lr=0.1, lr_decay=decay)
    cps = np.array([1, 5, 37, 400])
    r = run(Z, spec, 400, checkpoints=cps, engine="reference")
    assert np.allclose(r.ws, sign_sum_closed_form(Z, cps, 0.1, decay), rtol=1e-12, atol=1e-14)
    # and it is NOT the closed form of another order (a shifted cyclic start)
    shifted = sign_sum_closed_form(Z[[1, 2, 3, 0]], cps, 0.1, decay)
    assert not np.allclose(r.ws, shifted, rtol=1e-6)
