"""`predict` (the AdamProxy fixed point) is scale-free: predict(sZ) has the direction, c*, support and
diagnostics of predict(Z) and margins s times larger, for s from 1e−8 to 1e8; inert coordinates are
set aside (p* = 0 there, the rest as without them)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibverify.strategies.linear import gaussian_data, shifted_diagonal_data
from ibverify.theory import predict


@settings(max_examples=8)
@given(data=st.one_of(gaussian_data(n=st.integers(3, 6), extra_dims=st.integers(0, 8)), shifted_diagonal_data()),
       log_s=st.floats(-8, 8))
def test_predict_is_homogeneous_in_the_data_scale(data, log_s):
    Z = data.dataset.Z
    s = 10.0 ** log_s
    a, b = predict(Z), predict(s * Z)
    np.testing.assert_allclose(b["direction"], a["direction"], atol=1e-8)
    np.testing.assert_allclose(b["c"], a["c"], atol=1e-8)
    assert b["support_vectors"] == a["support_vectors"] and b["damping"] == a["damping"]
    for k in ("gamma_l2", "gamma_linf", "l2_margin"):
        assert b[k] == pytest.approx(s * a[k], rel=1e-8)
    for k in ("cos_l2", "cos_linf_bound", "linf_margin_gap"):
        assert b[k] == pytest.approx(a[k], rel=1e-7, abs=1e-9)
    assert b["residual"] <= 1e-8 and b["kkt_residual"] <= 1e-8


def test_inert_coordinates_are_set_aside(rng):
    Z = rng.standard_normal((5, 8))
    Zi = np.insert(Z, [0, 3, 8], 0.0, axis=1)
    a, b = predict(Z), predict(Zi)
    assert b["inert_coordinates"] == [0, 4, 10]
    p = np.asarray(b["direction"])
    assert p[[0, 4, 10]].tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(np.delete(p, [0, 4, 10]), a["direction"], atol=1e-9)
    assert b["cos_l2"] == pytest.approx(a["cos_l2"], abs=1e-9)
