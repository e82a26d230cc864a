"""Fuzz (hypothesis, in-process through ibverify.cli.main): random bytes, mangled CSV and .npz files,
damaged checkpoints and random option values. Every command that reads a file answers with exit 0
or with exit 2 and exactly one line on stderr: never a traceback, never an escaped exception."""

import io
import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ibverify.optim.table import names
from ibverify.cli import main

X = np.array([[1.0, 2.0, 0.0], [-1.0, -0.5, 0.0], [2.0, 0.3, 0.0], [-0.7, -1.5, 0.0]])
Y = np.array([1.0, -1.0, 1.0, -1.0])
CSV = "x1,x2,x3,label\n" + "".join(",".join(f"{v:g}" for v in (*x, y)) + "\n" for x, y in zip(X, Y, strict=True))


def _npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


NPZ = _npz_bytes(X=X, y=Y)
FAST = {"train": ["--optimizer", "adam", "--steps", "20", "--no-compare", "-q"], "margin": [], "predict": []}
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def check(capsys, argv, must_fail=False):
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse --help/--version only
        rc = e.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    if must_fail or rc != 0:
        assert rc == 2, (argv, rc, err)
        assert len(err.splitlines()) == 1 and err.startswith("ibverify: "), (argv, err)
    return rc, out, err


def mangle(data: bytes, edits) -> bytes:
    """Apply (kind, position, byte) edits: delete, insert, flip a bit, or truncate."""
    b = bytearray(data)
    for kind, pos, byte in edits:
        if not b:
            break
        i = pos % len(b)
        if kind == "delete":
            del b[i]
        elif kind == "insert":
            b.insert(i, byte)
        elif kind == "flip":
            b[i] ^= 1 << (byte % 8)
        else:
            del b[i:]
    return bytes(b)


EDITS = st.lists(st.tuples(st.sampled_from(["delete", "insert", "flip", "truncate"]), st.integers(0, 10**6),
                           st.integers(0, 255)), min_size=1, max_size=4)
CSV_BYTES = st.sampled_from([ord(c) for c in ",;. \t\n\r-e+x\"0159"]) | st.integers(0, 255)


@FUZZ
@given(blob=st.binary(max_size=400), suffix=st.sampled_from([".npz", ".csv"]),
       cmd=st.sampled_from(sorted(FAST)))
def test_random_bytes(capsys, tmp_path, blob, suffix, cmd):
    p = tmp_path / f"fuzz{suffix}"
    p.write_bytes(blob)
    check(capsys, [cmd, "--data", str(p), *FAST[cmd]], must_fail=True)


@FUZZ
@given(edits=st.lists(st.tuples(st.sampled_from(["delete", "insert", "flip", "truncate"]), st.integers(0, 10**6),
                                CSV_BYTES), min_size=1, max_size=4), cmd=st.sampled_from(sorted(FAST)))
def test_mangled_csv(capsys, tmp_path, edits, cmd):
    p = tmp_path / "fuzz.csv"
    p.write_bytes(mangle(CSV.encode(), edits))
    check(capsys, [cmd, "--data", str(p), *FAST[cmd]])


@FUZZ
@given(edits=EDITS, cmd=st.sampled_from(sorted(FAST)))
def test_mangled_npz(capsys, tmp_path, edits, cmd):
    p = tmp_path / "fuzz.npz"
    p.write_bytes(mangle(NPZ, edits))
    check(capsys, [cmd, "--data", str(p), *FAST[cmd]])


ODD_ARRAYS = st.sampled_from([
    dict(X=X.astype(complex), y=Y), dict(X=X.astype(object), y=Y), dict(X=X.astype(str), y=Y),
    dict(X=X * 1e307, y=Y), dict(X=X * 1e-320, y=Y), dict(X=X[:, :, None], y=Y), dict(X=X, y=Y[:, None]),
    dict(X=X, y=Y * 2), dict(X=X[:0], y=Y[:0]), dict(X=X, y=Y.astype(bool)), dict(X=np.zeros_like(X), y=Y),
    dict(X=X), dict(y=Y), dict(X=np.where(X > 1, np.inf, X), y=Y), dict(X=X[:, :0], y=Y),
])


@FUZZ
@given(arrays=ODD_ARRAYS, cmd=st.sampled_from(sorted(FAST)))
def test_odd_arrays(capsys, tmp_path, arrays, cmd):
    p = tmp_path / "odd.npz"
    p.write_bytes(_npz_bytes(**arrays))
    check(capsys, [cmd, "--data", str(p), *FAST[cmd]])


NUM = st.sampled_from(["0", "-1", "1", "2", "3", "1e400", "nan", "inf", "-inf", "0.5", "1.5", "abc", "",
                       str(2**70), "1e-300", "999999999999"])
OPTIONS = ["--steps", "--epochs", "--lr", "--lr-decay", "--beta1", "--beta2", "--eps", "--batch-size",
           "--checkpoints", "--seed", "--checkpoint-every", "--lr-matrix", "--lr-vector", "--weight-decay"]


@FUZZ
@given(opts=st.lists(st.tuples(st.sampled_from(OPTIONS), NUM), max_size=4),
       optimizer=st.sampled_from([*names(), "sgd"]),  # every row of the table (block-only ones are refused here)
       order=st.sampled_from(["cyclic", "reshuffle", "replacement", "sorted"]))
def test_random_option_values(capsys, tmp_path, opts, optimizer, order):
    p = tmp_path / "ok.npz"
    p.write_bytes(NPZ)
    given_ = dict(opts)
    argv = ["train", "--data", str(p), "--optimizer", optimizer, "--order", order, "--no-compare", "-q", "--json"]
    for k, v in given_.items():
        argv += [k, v]
    if "--steps" not in given_ and "--epochs" not in given_:
        argv += ["--steps", "30"]
    for k in ("--steps", "--epochs"):  # keep a valid run short
        if k in given_ and given_[k] in ("999999999999", "1e400", str(2**70)):
            return
    rc, out, err = check(capsys, argv)
    if rc == 0:
        assert np.all(np.isfinite(json.loads(out)["w"]))


@FUZZ
@given(b=NUM, norm=st.sampled_from(["l2", "linf", "l1", "l3", ""]))
def test_random_predict_and_margin_options(capsys, tmp_path, b, norm):
    p = tmp_path / "ok.npz"
    p.write_bytes(NPZ)
    check(capsys, ["predict", "--data", str(p), "--batch-size", b, "--json"])
    check(capsys, ["margin", "--data", str(p), "--norm", norm, "--json"])


@FUZZ
@given(edits=EDITS)
def test_damaged_checkpoint(capsys, tmp_path, edits):
    p = tmp_path / "ok.npz"
    p.write_bytes(NPZ)
    ck = tmp_path / "run.ckpt"
    argv = ["train", "--data", str(p), "--optimizer", "adam", "--steps", "300", "--checkpoint", str(ck), "-q",
            "--no-compare"]
    if not ck.exists():
        check(capsys, argv)
    good = ck.read_bytes()
    ck.write_bytes(mangle(good, edits))
    rc, _, err = check(capsys, [*argv, "--resume"])
    if rc == 2:
        assert "is corrupt; delete it or rerun without --resume" in err or "different run" in err, err
    ck.write_bytes(good)
