"""Fuzz (hypothesis, in-process through ibverify.cli.main): random bytes, mangled CSV and .npz files,
damaged checkpoints and random option values. Every command that reads a file answers with exit 0
or with exit 2 and exactly one line on stderr: never a traceback, never an escaped exception."""

import io
import json
import re

import numpy as np
import pytest
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


# ---------------------------------------------------------------- every file-reading command × model, fixed inputs
# (issue 35 item 6: parametrized, no randomness; smoke tier, few steps). Each answers exit 2 with one line, or exit 0
# with every row of the file and, on rescaled data, the answer of the unscaled file (max-margin directions and the
# scale-free optimizers' limits do not depend on the scale).

XM = np.array([[[1, 2], [0, .5]], [[-1, -.5], [0.2, -1]], [[2, .3], [1, 0]], [[-.7, -1.5], [-.3, .1]]])
RANDOM = np.random.default_rng(0).bytes(400)


def _csv(X, y, final_newline=True) -> bytes:
    text = "".join(",".join(f"{v:.17g}" for v in (*x, t)) + "\n" for x, t in zip(X, y, strict=True))
    return (text if final_newline else text[:-1]).encode()


def _input(name: str, B: np.ndarray) -> tuple[str, bytes]:
    """(suffix, bytes) of input `name` built from the base features B (n×d, or n×p×r for the matrix model)."""
    bad = B.copy()
    bad.flat[0] = np.nan if name == "nan" else np.inf
    return {
        "truncated": (".npz", _npz_bytes(X=B, y=Y)[:150]),
        "random-npz": (".npz", RANDOM), "random-csv": (".csv", RANDOM),
        "nan": (".npz", _npz_bytes(X=bad, y=Y)), "inf": (".npz", _npz_bytes(X=bad, y=Y)),
        "x1e300": (".npz", _npz_bytes(X=B * 1e300, y=Y)), "x1e-300": (".npz", _npz_bytes(X=B * 1e-300, y=Y)),
        "one-class": (".npz", _npz_bytes(X=B, y=np.ones(4))), "one-row": (".npz", _npz_bytes(X=B[:1], y=Y[:1])),
        "empty-npz": (".npz", b""), "empty-csv": (".csv", b""),
        "y-2d": (".npz", _npz_bytes(X=B, y=Y[:, None])), "rows-mismatch": (".npz", _npz_bytes(X=B[:3], y=Y)),
        "x-1d": (".npz", _npz_bytes(X=B.reshape(-1), y=Y)),
        "opposite-duplicates": (".npz", _npz_bytes(X=B[[0, 0, 1]], y=np.array([1.0, -1.0, -1.0]))),
        "csv-nan": (".csv", _csv(np.where(B == 2.0, np.nan, B).reshape(4, -1), Y)),
        "csv-no-final-newline": (".csv", _csv(B.reshape(4, -1), Y, final_newline=False)),
        "valid": (".npz", _npz_bytes(X=B, y=Y)),
    }[name]


INPUTS = ["truncated", "random-npz", "random-csv", "nan", "inf", "x1e300", "x1e-300", "one-class", "one-row",
          "empty-npz", "empty-csv", "y-2d", "rows-mismatch", "x-1d", "opposite-duplicates", "csv-nan",
          "csv-no-final-newline"]
MAY_ANSWER = {"x1e300": 1e300, "x1e-300": 1e-300, "one-class": None, "one-row": None}   # else: exit 2
STEPS = ["--steps", "20", "--no-compare", "-q"]
COMMANDS = {   # (command, model) → argv after the file; the matrix model reads n×p×r matrices
    ("margin", "linear"): ["margin", "--data"], ("predict", "linear"): ["predict", "--data"],
    ("train", "linear"): ["train", "--optimizer", "adam", *STEPS, "--data"],
    ("train", "matrix"): ["train", "--model", "matrix-linear", "--optimizer", "adam", *STEPS, "--data"],
    ("train", "two-layer"): ["train", "--model", "two-layer", "--optimizer", "adam", *STEPS, "--data"],
    ("verify", "linear"): ["verify", "data.control.signum-l2", "--tier", "smoke", "--sequential", "--no-cache",
                           "--data"],
    **{("bias", m): ["bias", "--optimizer", "signum", "--model", m, "--tier", "smoke", "--json", "--data"]
       for m in ("linear", "matrix", "two-layer")},
}
ROWS = {"margin": r"loaded (\d+) × ", "predict": r"loaded (\d+) × ", "verify": r"data: (\d+) × "}


def _run(capsys, tmp_path, cmd, model, name):
    B = XM if model == "matrix" else X
    suffix, blob = _input(name, B)
    f = tmp_path / f"{name}{suffix}"
    f.write_bytes(blob)
    argv = [*COMMANDS[cmd, model], str(f)] + (["--report", str(tmp_path / "r")] if cmd == "verify" else [])
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out and rc in (0, 1, 2, 3), (argv, rc, err)
    if rc == 2:   # one error line, the last; before it only the progress lines of a run that had started (a log)
        *progress, last = err.splitlines() or [""]
        assert last.startswith("ibverify: ") and "Error:" not in last, (argv, err)
        assert all(line.startswith(f"{cmd} ") and " · " in line and "ibverify: " not in line
                   for line in progress), (argv, err)
    else:
        assert rc == 0 or cmd == "verify", (argv, rc, err)   # verify: 1 / 3 are verdicts, not failures
    return rc, out, f


def _rows(cmd, model, out) -> int:
    if cmd == "bias":
        return -1
    pattern = ROWS.get(cmd, r"on (\d+) × \d+ data" if model == "linear" else r"\(n = (\d+), d = ")
    found = re.search(pattern, out)
    assert found, out
    return int(found.group(1))


def _answer(cmd, out, scale):
    """The part of a command's answer that rescaling the data must leave unchanged (None: not compared)."""
    if cmd == "margin":
        return float(re.search(r"max margin γ = (\S+);", out).group(1)) / scale
    if cmd == "predict":
        return np.array(json.loads(re.search(r"unit ℓ2 norm\): (\[.*\])", out).group(1)))
    if cmd == "bias":
        return [(m["model"], m["supported"], m["contradicted"]) for m in json.loads(out)["models"]]
    return None


@pytest.mark.parametrize("name", INPUTS)
@pytest.mark.parametrize("cmd, model", list(COMMANDS))
def test_every_command_and_model_on_bad_and_odd_files(capsys, tmp_path, cmd, model, name):
    rc, out, f = _run(capsys, tmp_path, cmd, model, name)
    if name == "csv-no-final-newline" and model != "matrix":
        assert rc != 2 and _rows(cmd, model, out) in (4, -1)   # the last line without "\n" is a row
        if cmd == "bias":   # the same answer as the .npz of the same rows
            assert _answer(cmd, out, 1) == _answer(cmd, _run(capsys, tmp_path, cmd, model, "valid")[1], 1)
        return
    if name not in MAY_ANSWER:
        assert rc == 2, (name, out)
        return
    if rc == 2:
        return
    n = 1 if name == "one-row" else 4
    assert _rows(cmd, model, out) in (n, -1)
    scale = MAY_ANSWER[name]
    if scale is not None:   # an answer on 1e±300 data is the answer on the unscaled data
        got, base = _answer(cmd, out, scale), _answer(cmd, _run(capsys, tmp_path, cmd, model, "valid")[1], 1)
        if isinstance(base, float):
            assert got == pytest.approx(base, rel=1e-6)
        elif isinstance(base, np.ndarray):
            np.testing.assert_allclose(got, base, atol=1e-6)
        else:
            assert got == base
