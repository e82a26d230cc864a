"""Datasets: generators separable by construction, strategy certificates, file loading errors."""

import numpy as np
import pytest
from hypothesis import given

from ibverify import IbverifyError
from ibverify.data import gaussian, gr, load_dataset, shifted_diagonal
from ibverify.data.files import separability_certificate
from ibverify.strategies.linear import betas, gaussian_data, gr_data, shifted_diagonal_data


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


# ---------------------------------------------------------------- CSV: no row is ever dropped silently
CSV_ROWS = "1.0,2.0,1\n-1.0,-2.0,-1\n2.0,1.0,1\n"


@pytest.mark.parametrize("text,shape", [
    (CSV_ROWS, (3, 2)),
    ("x1,x2,label\n" + CSV_ROWS, (3, 2)),                      # header: no cell is a number
    ("\ufeff" + CSV_ROWS, (3, 2)),                              # spreadsheet "CSV UTF-8" BOM: first row kept
    ("\ufeffx1,x2,label\n" + CSV_ROWS, (3, 2)),
    ('"sepal length","petal width",label\n' + CSV_ROWS, (3, 2)),  # quoted header cells with spaces
    ("\n" + CSV_ROWS + "\n\n", (3, 2)),                         # blank lines carry no data
    (CSV_ROWS.replace("\n", "\r\n"), (3, 2)),
])
def test_csv_rows_are_all_kept(tmp_path, text, shape):
    p = tmp_path / "d.csv"
    p.write_bytes(text.encode("utf-8"))
    D = load_dataset(p)
    assert D.X.shape == shape
    np.testing.assert_array_equal(D.X[0], [1.0, 2.0])  # the first data row is never taken for a header


@pytest.mark.parametrize("text,msg", [
    ("1.0,abc,2.0,3,4,1\n1,2,3,4,5,-1\n", r"line 1 mixes numbers and text \('abc'\)"),  # typo in row 1
    ("x1,2,label\n" + CSV_ROWS, "line 1 mixes numbers and text"),
    ("1.0,2.0,1,\n-1.0,-2.0,-1,\n", "line 1 ends with a comma"),
    ("x1,x2,label,\n" + CSV_ROWS, "line 1 ends with a comma"),
    ("1.0;2.0;1\n-1.0;-2.0;-1\n", "separated by ';'"),
    ("x1;x2;label\n1;2;1\n", "separated by ';'"),
    ("1.0 2.0 1\n-1.0 -2.0 -1\n", "separated by spaces"),
    ("1.0\t2.0\t1\n-1.0\t-2.0\t-1\n", "separated by tab"),
    ("1.0,,1\n-1.0,-2.0,-1\n", "line 1 has an empty cell"),
    ("x1,x2,label\n", "no numeric rows"),
    ("x1,label\n" + CSV_ROWS, "header has 2 columns but the rows have 3"),
    ("", "empty CSV file"),
])
def test_csv_malformed_is_a_clear_error(tmp_path, text, msg):
    p = tmp_path / "d.csv"
    p.write_text(text)
    with pytest.raises(IbverifyError, match=msg) as e:
        load_dataset(p)
    assert "\n" not in str(e.value)


def test_csv_not_utf8(tmp_path):
    p = tmp_path / "d.csv"
    p.write_bytes(b"1,2,1\n\xff\xfe,1,1\n")
    with pytest.raises(IbverifyError, match="not UTF-8"):
        load_dataset(p)


# ---------------------------------------------------------------- npz: damaged files and non-real arrays
def _good_npz_bytes(tmp_path):
    p = tmp_path / "good.npz"
    np.savez(p, X=np.array([[1.0, 2.0], [-1.0, -2.0], [2.0, 1.0]]), y=np.array([1.0, -1.0, 1.0]))
    return p.read_bytes()


@pytest.mark.parametrize("mangle,msg", [
    (lambda b: b"", "empty file"),
    (lambda b: b[: len(b) // 2], "truncated"),
    (lambda b: b[:-5], "truncated"),
    (lambda b: bytes(x ^ (0x20 if i == 120 else 0) for i, x in enumerate(b)), "corrupt"),  # Bad CRC-32
    (lambda b: b"\x93NUMPY" + b[6:60], "not an .npz archive"),
    (lambda b: bytes(range(256)) * 3, "not an .npz archive"),
])
def test_damaged_npz_is_a_one_line_error(tmp_path, mangle, msg):
    p = tmp_path / "d.npz"
    p.write_bytes(mangle(_good_npz_bytes(tmp_path)))
    with pytest.raises(IbverifyError, match=msg) as e:
        load_dataset(p)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("arrays,msg", [
    (dict(X=np.array([[1.0 + 2j, 0.0], [-1.0, 0.0]]), y=np.array([1.0, -1.0])), "X is complex"),
    (dict(X=np.array([[1.0, 0.0], [-1.0, 0.0]]), y=np.array([1.0 + 0j, -1.0])), "y is complex"),
    (dict(X=np.array([[1, "a"]], dtype=object), y=np.array([1.0])), "object array"),
    (dict(X=np.array([["1", "2"]]), y=np.array([1.0])), "real numbers, not dtype <U1"),
])
def test_non_real_arrays_are_refused(tmp_path, arrays, msg):
    with pytest.raises(IbverifyError, match=msg):
        load_dataset(_npz(tmp_path, **arrays))


def test_integer_and_bool_arrays_are_accepted(tmp_path):
    D = load_dataset(_npz(tmp_path, X=np.array([[1, 2], [-1, -2]]), y=np.array([1, -1])))
    assert D.X.dtype == np.float64 and D.y.tolist() == [1.0, -1.0]


def test_extreme_values_separability_is_decided(tmp_path):
    # issue 11: an entry of 1e308 gave "HiGHS Status 2: Model error"
    X = np.array([[1.0, 0.5], [-1.0, -0.2], [0.3, 1.0]])
    y = np.array([1.0, -1.0, 1.0])
    for s in (1e308, 1e-300):
        D = load_dataset(_npz(tmp_path, X=s * X, y=y))
        assert np.min(D.Z @ separability_certificate(D)) > 0
    with pytest.raises(IbverifyError, match="not linearly separable"):
        load_dataset(_npz(tmp_path, X=1e308 * np.array([[1.0], [1.0]]), y=np.array([1.0, -1.0])))


def test_inert_coordinates_are_reported(tmp_path):
    X = np.array([[0.0, 1.0, 0.0, 2.0], [0.0, -1.0, 0.0, -0.5]])
    D = load_dataset(_npz(tmp_path, X=X, y=np.array([1.0, -1.0])))
    assert D.inert.tolist() == [0, 2]
