"""Datasets: generators separable by construction, strategy certificates, file loading errors."""

import numpy as np
import pytest
from hypothesis import given

from ibverify import IbverifyError
from ibverify.data import gaussian, gr, load_dataset, shifted_diagonal
from ibverify.data.files import separability_certificate
from ibverify.data.strategies import betas, gaussian_data, gr_data, shifted_diagonal_data


@given(gr_data())
def test_gr_certificate_and_structure(c):
    Z = c.dataset.Z
    assert np.min(Z @ c.w) / np.linalg.norm(c.w) == pytest.approx(c.margin, rel=1e-12) and c.margin > 0
    a = np.abs(Z)
    np.testing.assert_allclose(a, a[:, :1] * np.ones_like(a))  # |x_i[k]| = a_i for all k


@given(gaussian_data())
def test_gaussian_certificate(c):
    assert np.min(c.dataset.Z @ c.w) / np.linalg.norm(c.w) >= c.margin * (1 - 1e-9) > 0


@given(shifted_diagonal_data())
def test_shifted_diagonal_certificate(c):
    Z = c.dataset.Z
    assert np.min(Z @ c.w) / np.linalg.norm(c.w) == pytest.approx(c.margin, rel=1e-12)
    off = Z - np.diag(np.diag(Z))
    assert np.allclose(off[~np.eye(len(Z), dtype=bool)], off[0, 1])  # constant shift δ


@given(betas())
def test_betas_ordered(b):
    assert 0 <= b[0] <= b[1] < 1


def test_generators_are_separable(rng):
    for D in (gr(6, 4, rng), gaussian(5, 12, rng), shifted_diagonal([1.0, 2.0, 3.0], 0.2)):
        w = separability_certificate(D)
        assert np.min(D.Z @ w) > 0


def _npz(tmp_path, **arrays):
    p = tmp_path / "d.npz"
    np.savez(p, **arrays)
    return p


@pytest.mark.parametrize("arrays,msg", [
    (dict(X=np.ones((3, 2))), "missing y"),
    (dict(X=np.ones((3, 2)), y=np.ones(4)), "3 rows but y has 4"),
    (dict(X=np.array([[1.0, np.nan], [1, 2]]), y=np.ones(2)), "non-finite value at row 0, column 1"),
    (dict(X=np.eye(2), y=np.array([0.0, 1.0])), r"labels must be -1 or \+1, found 0"),
    (dict(X=np.ones(3), y=np.ones(3)), "2-d array"),
    (dict(X=np.array([[1.0], [1.0]]), y=np.array([1.0, -1.0])), "not linearly separable"),
])
def test_npz_errors(tmp_path, arrays, msg):
    with pytest.raises(IbverifyError, match=msg) as e:
        load_dataset(_npz(tmp_path, **arrays))
    assert "\n" not in str(e.value)


def test_csv_with_header_and_xor(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("a,b,label\n1,2,1\n-1,-1,-1\n3,0,1\n")
    D = load_dataset(p)
    assert D.X.shape == (3, 2) and D.y.tolist() == [1, -1, 1]
    p.write_text("1,1,1\n-1,-1,1\n1,-1,-1\n-1,1,-1\n")
    with pytest.raises(IbverifyError, match="not linearly separable"):
        load_dataset(p)
    p.write_text("1,2,1\n1,x,1\n")
    with pytest.raises(IbverifyError, match="line 2 is not numeric"):
        load_dataset(p)
    p.write_text("1,2,1\n1,1\n")
    with pytest.raises(IbverifyError, match="different numbers of columns"):
        load_dataset(p)


def test_unknown_format_and_missing(tmp_path):
    with pytest.raises(IbverifyError, match="not found"):
        load_dataset(tmp_path / "nope.npz")
    (tmp_path / "d.txt").write_text("1")
    with pytest.raises(IbverifyError, match="unsupported data format"):
        load_dataset(tmp_path / "d.txt")
