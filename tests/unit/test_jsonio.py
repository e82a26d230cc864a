"""The one JSON cleaner, `ibverify.jsonio.plain`: numpy values, tuples and non-finite floats → plain Python."""

import json
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ibverify.jsonio import plain


def test_numpy_scalars_become_python_values_of_the_same_value():
    out = plain([np.float64(1.25), np.float32(0.1), np.int64(-7), np.int8(3), np.uint64(2**63), np.bool_(True),
                 np.bool_(False), np.str_("a")])
    assert out == [1.25, float(np.float32(0.1)), -7, 3, 2**63, True, False, "a"]
    assert [type(v) for v in out] == [float, float, int, int, int, bool, bool, str]


def test_non_finite_floats_become_none_or_stay():
    values = [float("nan"), float("inf"), -math.inf, np.float64("nan"), np.float32("-inf"), 1.5, 0.0]
    assert plain(values) == [None, None, None, None, None, 1.5, 0.0]
    kept = plain(values, keep_nonfinite=True)
    assert math.isnan(kept[0]) and kept[1:3] == [math.inf, -math.inf] and math.isnan(kept[3])
    assert kept[4:] == [-math.inf, 1.5, 0.0] and type(kept[4]) is float


def test_nested_containers_tuples_and_keys():
    x = {"a": (1, np.int32(2), [np.float64(3.5), (np.bool_(True), None)]), 7: {"b": (float("nan"),)}, "s": "text"}
    assert plain(x) == {"a": [1, 2, [3.5, [True, None]]], "7": {"b": [None]}, "s": "text"}
    assert json.dumps(plain(x), allow_nan=False) == ('{"a": [1, 2, [3.5, [true, null]]], "7": {"b": [null]}, '
                                                     '"s": "text"}')


def test_numpy_arrays_become_nested_lists_of_values():
    A = np.array([[1.5, np.nan], [np.inf, -2.0]])
    assert plain(A) == [[1.5, None], [None, -2.0]]
    assert plain({"i": np.arange(3, dtype=np.int16), "b": np.array([True, False]), "z": np.array(4.0)}) == \
        {"i": [0, 1, 2], "b": [True, False], "z": 4.0}
    assert type(plain(np.arange(2))[0]) is int and type(plain(np.ones(1, np.float32))[0]) is float


def test_other_values_pass_through_unchanged():
    obj = object()
    assert plain(obj) is obj and plain(None) is None and plain(True) is True and plain("x") == "x"
    assert plain(3) == 3 and type(plain(3)) is int


def test_kept_non_finite_writes_what_json_default_tolist_wrote():
    """`ibverify <command> --json` wrote json.dumps(obj, default=<tolist>) before; the cleaner gives the same bytes."""
    obj = {"w": np.array([0.5, -1e-300, np.nan]), "margin": np.float64(np.inf), "n": np.int64(4), "ok": np.bool_(1),
           "pair": (1, 2.5), "nested": [{"x": np.float32(0.1)}], "none": None, "ratio": 1 / 3, 2: "int key"}
    before = json.dumps(obj, indent=2, ensure_ascii=False, default=lambda o: o.tolist())
    assert json.dumps(plain(obj, keep_nonfinite=True), indent=2, ensure_ascii=False) == before


@given(st.floats(0.0, 1.0, exclude_max=True))
def test_a_decay_rate_never_reads_as_one(b):
    from ibverify.evidence import beta_text

    text = beta_text(b)
    assert float(text) < 1 and abs(float(text) - b) <= 0.01 * (1 - b) + 5e-4   # issue 21: β2 = 0.9999 printed "1"


def test_decay_rate_text_by_hand():
    from ibverify.evidence import beta_text

    assert [beta_text(b) for b in (0.9, 0.99, 0.995, 0.9999, 0.99987, 0.5)] == \
        ["0.9", "0.99", "0.995", "0.9999", "0.99987", "0.5"]
