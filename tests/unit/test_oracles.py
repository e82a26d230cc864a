"""Max-margin oracles: known values, certificates, and that a broken certificate is rejected."""

import numpy as np
import pytest
from hypothesis import given, settings

from ibverify import IbverifyError
from ibverify.data.strategies import gaussian_data, gr_data
from ibverify.oracles import max_margin, normalized_margin
from ibverify.oracles.maxmargin import certify


def test_known_values_two_points():
    Z = np.array([[1.0, 0.0], [0.0, 1.0]])
    l2, li, l1 = (max_margin(Z, p) for p in ("l2", "linf", "l1"))
    assert l2.margin == pytest.approx(1 / np.sqrt(2), rel=1e-9)
    np.testing.assert_allclose(l2.direction, [2 ** -0.5, 2 ** -0.5], atol=1e-9)
    assert li.margin == pytest.approx(1.0, rel=1e-9)
    assert l1.margin == pytest.approx(0.5, rel=1e-9)
    np.testing.assert_allclose(l2.duals.sum(), 1 / l2.margin, rtol=1e-8)  # zero duality gap


def test_non_unique_linf_direction_compared_by_margin():
    # NUMERICS.md: X = [[1,0],[1,0.5]] has many ℓ∞ maximizers; any of them attains γ∞ = 1
    Z = np.array([[1.0, 0.0], [1.0, 0.5]])
    r = max_margin(Z, "linf")
    assert r.margin == pytest.approx(1.0, rel=1e-9)
    for w in ([1.0, 0.0], [1.0, 0.3], [1.0, -0.0]):
        assert normalized_margin(Z, np.array(w), "linf") == pytest.approx(r.margin, rel=1e-9)


@settings(max_examples=20)
@given(gr_data())
def test_certificates_and_weak_duality_on_generated_data(cert):
    Z = cert.dataset.Z
    for p in ("l2", "linf", "l1"):
        r = max_margin(Z, p)
        assert normalized_margin(Z, r.direction, p) == pytest.approx(r.margin, rel=1e-7)
        assert r.margin >= normalized_margin(Z, cert.w, p) - 1e-9  # optimum beats the certificate
        assert np.all(r.duals >= -1e-9)
    # ℓ2 margin of the certificate is a lower bound; γ2 is the max
    assert max_margin(Z, "l2").margin >= cert.margin - 1e-9


@settings(max_examples=10)
@given(gaussian_data())
def test_perturbed_certificate_is_rejected(cert):
    Z = cert.dataset.Z
    for p in ("l2", "linf", "l1"):
        r = max_margin(Z, p)
        w = r.direction / r.margin
        certify(Z, w, r.duals, p)  # the real one passes
        with pytest.raises(IbverifyError):
            certify(Z, w * 0.99, r.duals, p)  # infeasible primal
        with pytest.raises(IbverifyError):
            certify(Z, w, r.duals * 1.01, p)  # dual infeasible / gap


def test_non_separable_is_an_error():
    Z = np.array([[1.0, 0.0], [-1.0, 0.0]])
    with pytest.raises(IbverifyError, match="not linearly separable"):
        max_margin(Z, "l2")
