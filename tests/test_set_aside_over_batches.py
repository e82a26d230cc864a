"""Issue 53 item 6: the data's zero columns set aside over a whole mini-batch run, for every foreign family (torch:,
optax:, a user's file) and bias's torch loop. A constructed dataset (n = 12, batches of 4 in cyclic order) has two
columns zero in every sample, one live column zero in the second batch only and, in a second copy, one live column
zero in the first batch only. Over every checkpoint the zero columns keep their initial value exactly, the other
coordinates equal (to rounding) a run on the data with the zero columns removed, and the JSON names the zero columns.

Faults these tests were checked against, each injected by hand (†: it passed the nearest tests before,
tests/test_zero_columns_foreign.py, which runs full batches only):
  - userguard.set_aside forgetting the samples seen between batches (`seen = now`) †: the gap column's momentum step
    is zeroed, then named an error when the next batch shows it;
  - … freezing the columns seen after the first batch (`seen = now if seen is None else seen`) †: the late column is
    never moved, then an error;
  - runner/torchloop.run_many reading the zero columns from the first batch only (`Zp[:, :bmax]`) †: the late column
    stays 0;
  - the JSON's data.inert_coordinates losing a column (cli/output.py);
  - userguard.set_aside masking at the first step only (`moved.any() and t == 1`): the drift file moves the zero
    columns later, Adam at ε = 0 makes 0/0 there (the nearest tests catch this one too)."""

import numpy as np
import pytest

import ibverify

ZERO = [1, 4]          # zero in every sample
GAP, LATE = 2, 3       # zero in batch 2 only (rows 4–7); zero in batch 1 only (rows 0–3), in LATE_DATA only
B, STEPS = 4, 30


def _data(late: bool):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 6))
    X[:, ZERO] = 0.0
    X[4:8, GAP] = 0.0
    if late:
        X[0:4, LATE] = 0.0
    y = np.where(X @ np.array([1.0, 0.0, -0.5, 1.0, 0.0, 0.5]) >= 0, 1.0, -1.0)
    return X, y


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """{(late, reduced): path}: the data, and the data with the zero columns removed."""
    d = tmp_path_factory.mktemp("aside")
    out = {}
    for late in (False, True):
        X, y = _data(late)
        for reduced in (False, True):
            p = d / f"late{int(late)}_red{int(reduced)}.npz"
            np.savez(p, X=np.delete(X, ZERO, axis=1) if reduced else X, y=y)
            out[late, reduced] = p
    return out


USER_FILE = '''
from ibverify.optim.transforms import Transform
from ibverify.optim.userfile import UserOptimizer


def drift(spec, xp):   # heavy ball plus a constant 0.1: it moves every coordinate, whatever its gradient
    def init(params):
        return params * 0

    def update(u, m, params=None, **extra):
        m = 0.5 * m + u
        return m + 0.1, m

    return [Transform(init, update)]


def adam(spec, xp):   # Adam at eps = 1e-8: a coordinate whose gradient is 0 from the start is not moved
    def init(params):
        return (params * 0, params * 0, 0)

    def update(u, s, params=None, **extra):
        m, v, t = s
        m, v, t = 0.9 * m + 0.1 * u, 0.999 * v + 0.001 * u * u, t + 1
        return (m / (1 - 0.9 ** t)) / ((v / (1 - 0.999 ** t)) ** 0.5 + 1e-8), (m, v, t)

    return [Transform(init, update)]


def make_drift():
    return UserOptimizer("drift", "heavy ball plus a constant", vector=drift, knobs={"lr": 0.05})


def make_adam():
    return UserOptimizer("adam8", "Adam at eps = 1e-8", vector=adam, knobs={"lr": 0.05})
'''


@pytest.fixture(scope="module")
def user_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("opt") / "mine.py"
    path.write_text(USER_FILE)
    return str(path)


# (family, optimizer, late): an optimizer that moves a zero-gradient coordinate (Adam at ε = 0, the drift) on the
# data without a late column (on a late one it is an error by design: tests/test_zero_columns_foreign.py); one that
# does not (ε > 0) on the data with one
CASES = [("torch", "torch:Adam:eps=0", False), ("torch", "torch:Adam", True),
         ("optax", "optax:adam:eps=0", False), ("optax", "optax:adam", True),
         ("user", ":make_drift", False), ("user", ":make_adam", True)]


def _train(opt, path):
    r = ibverify.train(opt, path, steps=STEPS, checkpoints=6, compare=False, lr=0.05, batch_size=B)
    return r, np.array([th["w"] for th in r.thetas])


@pytest.mark.parametrize("family, name, late", CASES, ids=[f"{c[1]}-late{int(c[2])}" for c in CASES])
def test_zero_columns_stay_put_over_every_batch_and_the_rest_is_the_run_without_them(files, user_file, family,
                                                                                     name, late):
    if family in ("torch", "optax"):
        pytest.importorskip(family)
    opt = user_file + name if family == "user" else name
    r, W = _train(opt, files[late, False])
    ref, Wr = _train(opt, files[late, True])
    assert r.output["data"]["inert_coordinates"] == ZERO and ref.output["data"]["inert_coordinates"] == []
    assert r.output["optimizer"]["batch_size"] == B < r.output["data"]["n"]
    assert r.checkpoints == ref.checkpoints and r.checkpoints[-1] == STEPS and len(r.checkpoints) >= 5
    assert np.all(W[:, ZERO] == 0.0)   # the initial value, at every checkpoint
    live = np.delete(W, ZERO, axis=1)
    scale = np.abs(Wr).max()
    assert scale > 0.1 and np.abs(live[:, GAP - 1]).min() > 0   # it moved; the gap column from step 1 on
    assert np.abs(live - Wr).max() <= 1e-12 * scale


@pytest.mark.parametrize("name, late", [("torch:Adam:eps=0", False), ("torch:Adam", True)])
def test_bias_torch_loop_sets_the_zero_columns_aside_over_batches(name, late):
    """runner/torchloop (bias's torch path) at batch 4 of 12: the zero columns 0 at every checkpoint, the others the
    loop's run on the data without them and the engine's run (userguard.set_aside) alike."""
    pytest.importorskip("torch")
    from ibverify.engine import run as engine_run
    from ibverify.optim.adapters import to_spec
    from ibverify.runner import torchloop

    X, y = _data(late)
    Z = y[:, None] * X
    spec = to_spec(name, {"lr": 0.05, "lr_decay": 0.5, "batch_size": B}, probe=False)
    mine = torchloop.run(Z, spec, STEPS, 6)
    without = torchloop.run(np.delete(Z, ZERO, axis=1), spec, STEPS, 6)
    ref = engine_run(Z, spec, STEPS, checkpoints=6)
    assert list(mine.checkpoints) == list(ref.checkpoints) and mine.checkpoints[-1] == STEPS
    assert np.all(mine.ws[:, ZERO] == 0.0) and np.all(ref.ws[:, ZERO] == 0.0)
    scale = np.abs(without.ws).max()
    assert scale > 0.1
    assert np.abs(np.delete(mine.ws, ZERO, axis=1) - without.ws).max() <= 1e-12 * scale
    assert np.abs(mine.ws - ref.ws).max() <= 1e-12 * scale
