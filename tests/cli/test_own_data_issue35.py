"""Issue 35: a researcher's own data (and own optimizer) through every command. Bad input is one stderr line and
exit 2, never a traceback; ordinary image data get verdicts; networks are refused only for what no network
separates; one model's failure never discards another model's answer. Small data, smoke tier, few steps."""

import json

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris, load_wine

from ibverify.cli import main
from ibverify.data.dataset import inert_coordinates
from ibverify.theory import fixed_point, predict

RNG = np.random.default_rng(0)
X12 = RNG.standard_normal((12, 3))
Y12 = np.sign(X12 @ np.array([1.0, -2.0, 0.5]))
XOR_X = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]])
XOR_Y = np.array([1.0, -1.0, -1.0, 1.0])

# an optimizer file whose chains pass the probe's two steps, then raise (issue 35: 60 traceback lines in bias)
RAISES_LATER = '''
from ibverify.optim import logframe as F
from ibverify.optim import transforms as T
from ibverify.optim.userfile import UserOptimizer


def _vector(xp):
    def update(u, n, params=None, **extra):
        if n >= 2:
            raise RuntimeError("my optimizer broke")
        return u, n + 1
    return T.Transform(lambda params: 0, update)


class _Block(F.Transform):
    def init(self, theta):
        return 0

    def update(self, x, n, params=None, **extra):
        if n >= 2:
            raise RuntimeError("my optimizer broke")
        return F.NormalizeL2().update(x, None, params, **extra)[0], n + 1


def make():
    return UserOptimizer(name="breaks-late", update="raises at its third step",
                         vector=lambda spec, xp: _vector(xp), block=lambda spec: _Block())
'''


def npz(tmp_path, name, X, y):
    p = tmp_path / name
    np.savez(p, X=X, y=y)
    return p


def one_line(capsys, argv) -> str:
    """The command fails with exit 2 and exactly one line on stderr (no traceback); returns that line."""
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith("ibverify: error: "), err
    assert "Traceback" not in err
    return err


def ok_json(capsys, argv):
    rc = main([str(a) for a in argv] + ["--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


SMOKE = ["--tier", "smoke", "-q"]


# ------------------------------------------------------------------ 1. tracebacks → one line, exit 2

def test_bias_on_a_truncated_npz_is_one_line(capsys, tmp_path):
    good = npz(tmp_path, "good.npz", X12, Y12).read_bytes()
    p = tmp_path / "cut.npz"
    p.write_bytes(good[: len(good) // 2])
    err = one_line(capsys, ["bias", "--optimizer", "signum", "--data", p, "--model", "linear", *SMOKE])
    assert "truncated" in err and "BadZipFile" not in err


def test_random_bytes_as_npz_never_give_numpys_pickle_advice(capsys, tmp_path):
    p = tmp_path / "noise.npz"
    p.write_bytes(np.random.default_rng(1).bytes(400))
    for argv in (["bias", "--optimizer", "signum", "--data", p, "--model", "linear", *SMOKE],
                 ["train", "--optimizer", "signum", "--data", p, "--model", "matrix-linear", "--steps", "5", "-q"]):
        err = one_line(capsys, argv)
        assert "allow_pickle" not in err and "pickle.load" not in err


@pytest.mark.parametrize("argv", [
    ["bias", "--model", "linear", "--datasets", "1", *SMOKE],
    ["bias", "--model", "two-layer", "--datasets", "1", *SMOKE],
    ["train", "--steps", "50", "-q"],
    ["train", "--model", "two-layer", "--steps", "50", "-q"],
], ids=["bias-linear", "bias-two-layer", "train-linear", "train-two-layer"])
def test_a_user_optimizer_raising_after_the_probe_is_one_line(argv, capsys, tmp_path):
    opt = tmp_path / "late.py"
    opt.write_text(RAISES_LATER)
    data = ["--data", npz(tmp_path, "d.npz", X12, Y12)] if argv[0] == "train" else []
    err = one_line(capsys, [argv[0], "--optimizer", opt, *data, *argv[1:]])
    assert f"--optimizer {opt}:make" in err and "at step 3" in err and "RuntimeError: my optimizer broke" in err


def test_a_non_separable_matrix_file_is_refused_in_words(capsys, tmp_path):
    X = np.random.default_rng(2).standard_normal((6, 3, 4))
    X[3] = X[0]                                    # the same input matrix with both labels
    p = npz(tmp_path, "m.npz", X, np.array([1.0, 1, 1, -1, -1, -1]))
    err = one_line(capsys, ["bias", "--optimizer", "signum", "--data", p, *SMOKE])
    assert "not linearly separable" in err and "reshape" not in err
    err = one_line(capsys, ["train", "--optimizer", "signum", "--data", p, "--model", "matrix-linear", "--steps", "5"])
    assert "not linearly separable" in err


def test_a_scheduler_address_without_a_port_is_one_line(capsys):
    err = one_line(capsys, ["bias", "--optimizer", "signum", "--scheduler", "bogus", "--model", "linear",
                            "--datasets", "1", *SMOKE])
    assert "--scheduler 'bogus' is not a Dask scheduler address" in err and "ValueError" not in err


@pytest.mark.parametrize("scale, word", [(1e300, "too large"), (1e-300, "too small")])
def test_data_at_1e300_are_refused_up_front(scale, word, capsys, tmp_path):
    p = npz(tmp_path, "s.npz", scale * X12, Y12)
    err = one_line(capsys, ["train", "--optimizer", "muon", "--data", p, "--model", "two-layer", "--steps", "20"])
    assert word in err and "SVD" not in err
    err = one_line(capsys, ["verify", "--data", p, "--tier", "smoke", "--sequential", "--no-cache",
                            "--report", tmp_path / "rep"])
    assert word in err and "rescale X" in err
    if scale < 1:
        assert "overflow" not in err      # tiny data underflow; they do not overflow
    assert not (tmp_path / "rep" / "results.json").exists()


# ------------------------------------------------------------------ 2. inert pixels in the data.* claims' theory

@pytest.fixture(scope="module")
def digits40():
    X, y = load_digits(return_X_y=True)
    keep = np.flatnonzero(y < 2)[:40]
    return X[keep], np.where(y[keep] == 0, 1.0, -1.0)


def test_the_fixed_point_sets_inert_pixels_aside(digits40):
    X, y = digits40
    Z = y[:, None] * X
    inert = inert_coordinates(Z)
    live = np.setdiff1d(np.arange(64), inert)
    assert len(inert) >= 10
    fp = fixed_point.iterate(Z, damping=None)     # was: IbverifyError "M(c) is singular (coordinate 0 …)"
    assert fp.residual < 1e-10 and fp.kkt < 1e-8
    assert np.all(fp.direction[inert] == 0.0)
    ref = fixed_point.iterate(Z[:, live], damping=fp.damping)
    np.testing.assert_allclose(fp.direction[live], ref.direction, atol=1e-9)
    np.testing.assert_allclose(fp.direction, predict(Z)["direction"], atol=1e-6)
    st = fixed_point.tmap(Z, fp.c)
    assert np.all(st.sol.m[inert] == 0) and np.all(st.sol.w[inert] == 0)


def test_verify_data_on_digits_gives_verdicts_not_errors(capsys, tmp_path, digits40):
    X, y = digits40
    p = tmp_path / "digits01.csv"
    np.savetxt(p, np.c_[X, y], delimiter=",")
    rc = main(["verify", "data.signum-linf", "data.inc-adam-fixed-point", "--data", str(p), "--tier", "smoke",
               "--sequential", "--no-cache", "--report", str(tmp_path / "rep")])
    out, err = capsys.readouterr()
    assert rc in (0, 3), out + err
    assert "M(c) is singular" not in out and "0 errors" in out, out


# ------------------------------------------------------------------ 3. networks: not linear separability

def test_train_two_layer_separates_xor(capsys, tmp_path):
    p = npz(tmp_path, "xor.npz", XOR_X, XOR_Y)
    out = ok_json(capsys, ["train", "--optimizer", "signum", "--data", p, "--model", "two-layer", "--steps", "3000",
                           "-q"])
    assert out["q_min"] > 0 and out["margins"] is not None


def test_train_two_layer_on_iris_versicolor_virginica_runs(capsys, tmp_path):
    X, y = load_iris(return_X_y=True)
    k = y > 0
    p = npz(tmp_path, "iris12.npz", X[k], np.where(y[k] == 1, 1.0, -1.0))
    rc = main(["train", "--optimizer", "signum", "--data", str(p), "--model", "two-layer", "--steps", "200", "-q"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "min margin q_min" in out
    assert "separated yet" in out or "normalized margins" in out


def test_what_no_network_separates_is_still_refused(capsys, tmp_path):
    X = np.array([[1.0, 2.0], [1.0, 2.0], [-1.0, 0.5]])
    err = one_line(capsys, ["train", "--optimizer", "signum", "--data", npz(tmp_path, "dup.npz", X, [1.0, -1, 1]),
                            "--model", "two-layer", "--steps", "10"])
    assert "opposite labels" in err
    X = np.array([[1.0, 2.0], [2.0, 4.0], [-1.0, 0.5]])   # one ray: f(2x) = 2^L f(x) keeps the sign
    err = one_line(capsys, ["train", "--optimizer", "signum", "--data", npz(tmp_path, "ray.npz", X, [1.0, -1, 1]),
                            "--model", "two-layer", "--steps", "10"])
    assert "one ray" in err
    err = one_line(capsys, ["train", "--optimizer", "signum", "--data", npz(tmp_path, "xor.npz", XOR_X, XOR_Y),
                            "--model", "deep-linear", "--steps", "10"])
    assert "not linearly separable" in err          # a deep linear net is linear in x: the hypothesis stays


def test_bias_on_xor_answers_the_network_and_says_why_not_the_linear_model(capsys, tmp_path):
    p = npz(tmp_path, "xor.npz", XOR_X, XOR_Y)
    out = ok_json(capsys, ["bias", "--optimizer", "signum", "--data", p, *SMOKE])
    assert [m["model"] for m in out["models"]] == ["two-layer"]
    assert "not linearly separable" in out["skipped"]["linear"]
    err = one_line(capsys, ["bias", "--optimizer", "signum", "--data", p, "--model", "linear", *SMOKE])
    assert "not linearly separable" in err


# ------------------------------------------------------------------ 4. one model's failure keeps the others

def test_bias_on_wine_keeps_the_linear_answer(capsys, tmp_path):
    X, y = load_wine(return_X_y=True)
    k = y != 1
    p = npz(tmp_path, "wine02.npz", X[k], np.where(y[k] == 0, 1.0, -1.0))
    out = ok_json(capsys, ["bias", "--optimizer", "signum", "--data", p, *SMOKE])
    by = {m["model"]: m for m in out["models"]}
    assert set(by) == {"linear", "two-layer"}
    assert "not_judged" not in by["linear"] and by["linear"]["datasets"] == 1 and by["linear"]["evidence"]
    net = by["two-layer"]
    assert net["not_judged"].startswith("no dataset could be judged") and "wine02.npz" in net["not_judged"]
    assert net["datasets"] == 0 and not net["supported"]
