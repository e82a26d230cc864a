"""Issue 47 item 2: the data's zero columns are set aside for every optimizer family (the table, a user's file,
torch:, optax:), as docs/own-data.md says: on scikit-learn digits pairs (blank pixels) the runs go past step 1, the
answer names the zero columns and the iterate keeps 0 there; a genuine 0/0 elsewhere is that error line, not overflow.
Engine path: userguard.set_aside (the last transform of every foreign vector chain); bias's torch loop:
runner.torchloop (the torch parameter holds the other columns only)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("optax")
datasets = pytest.importorskip("sklearn.datasets")

import ibverify  # noqa: E402
from ibverify import IbverifyError  # noqa: E402
from ibverify.engine import run as engine_run  # noqa: E402
from ibverify.optim.adapters import to_spec  # noqa: E402
from ibverify.optim.userguard import set_aside  # noqa: E402
from ibverify.runner import torchloop  # noqa: E402
from ibverify.runner.underflow import failed_step  # noqa: E402

ZERO_1_2 = [0, 7, 15, 23, 31, 32, 39, 40]   # pixels blank in every digit 1 and 2 of load_digits


def digits(a, b):
    d = datasets.load_digits()
    m = (d.target == a) | (d.target == b)
    return d.data[m], np.where(d.target[m] == a, 1.0, -1.0)


@pytest.fixture(scope="module")
def pair12(tmp_path_factory):
    X, y = digits(1, 2)
    path = tmp_path_factory.mktemp("digits") / "d12.npz"
    np.savez(path, X=X, y=y)
    return path, y[:, None] * X


USER_ADAM = '''
from ibverify.optim.transforms import Transform
from ibverify.optim.userfile import UserOptimizer


def adam0(spec, xp):   # Adam at eps = 0 with no care for 0/0: NaN where a coordinate's moments are 0
    def init(params):
        return (params * 0, params * 0, 0)

    def update(u, s, params=None, **extra):
        m, v, t = s
        m, v, t = 0.9 * m + 0.1 * u, 0.999 * v + 0.001 * u * u, t + 1
        return (m / (1 - 0.9 ** t)) / (v / (1 - 0.999 ** t)) ** 0.5, (m, v, t)

    return [Transform(init, update)]


def make():
    return UserOptimizer("adam0", "Adam at eps = 0, 0/0 unguarded", vector=adam0, knobs={"lr": 0.05})
'''


@pytest.fixture(scope="module")
def user_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("opt") / "adam0.py"
    path.write_text(USER_ADAM)
    return str(path)


def test_the_digits_pair_has_the_zero_columns_these_tests_name(pair12):
    _, Z = pair12
    assert np.flatnonzero(~np.any(Z != 0, axis=0)).tolist() == ZERO_1_2


@pytest.mark.parametrize("name", ["torch:Adam:eps=0", "torch:RMSprop:eps=0", "optax:adam:eps=0", "user", "adam"])
def test_every_family_runs_past_step_one_with_the_zero_columns_set_aside(pair12, user_file, name):
    path, Z = pair12
    opt = user_file if name == "user" else name
    knobs = {"eps": 0.0} if name == "adam" else {}
    out = ibverify.train(opt, path, steps=20, checkpoints=4, compare=False, lr=0.05, **knobs).to_json()
    w = np.asarray(out["w"], dtype=float)
    assert out["steps"] == 20 and np.isfinite(w).all()
    assert out["data"]["inert_coordinates"] == ZERO_1_2   # the answer names them
    assert np.all(w[ZERO_1_2] == 0.0)                    # untouched
    live = np.setdiff1d(np.arange(Z.shape[1]), ZERO_1_2)
    assert np.count_nonzero(w[live]) > len(live) // 2     # the others move


def test_the_text_answer_names_the_zero_columns(pair12, capsys):
    from ibverify.cli.commands import main

    path, _ = pair12
    assert main(["train", "--data", str(path), "--optimizer", "torch:Adam:eps=0", "--steps", "10", "--no-compare"]) == 0
    assert f"8 inert coordinates (zero in every sample) set aside: {ZERO_1_2}" in capsys.readouterr().out


def test_bias_torch_loop_sets_the_zero_columns_aside_and_equals_the_engine(pair12):
    _, Z = pair12
    spec = to_spec("torch:Adam:eps=0", {"lr": 0.05, "lr_decay": 0.5}, probe=False)
    mine = torchloop.run(Z, spec, 200, 8)
    ref = engine_run(Z, spec, 200, checkpoints=8)
    assert np.all(mine.ws[:, ZERO_1_2] == 0.0) and np.all(ref.ws[:, ZERO_1_2] == 0.0)
    scale = np.max(np.abs(ref.ws))
    assert scale > 0.1 and np.max(np.abs(mine.ws - ref.ws)) <= 1e-12 * scale


def test_stacked_runs_with_other_zero_columns_are_each_their_own_run_for_adam_at_eps_zero(pair12):
    _, Z = pair12
    Z2 = Z.copy()
    Z2[:, 5] = 0.0   # a zero column of the second dataset only: Adam at ε = 0 divides 0 by 0 there, out of its run
    spec = to_spec("torch:Adam:eps=0", {"lr": 0.05, "lr_decay": 0.5}, probe=False)
    stacked = torchloop.run_many([Z, Z2], [spec, spec], 20, 4)
    for one, got in zip((Z, Z2), stacked, strict=True):
        alone = torchloop.run(one, spec, 20, 4)
        assert np.isfinite(got.ws).all() and np.array_equal(got.ws, alone.ws)
    assert np.all(stacked[1].ws[:, 5] == 0.0) and np.all(stacked[0].ws[-1:, 5] != 0.0)
    both = torchloop.run_many([Z, Z], [spec, spec], 20, 4)   # the same zero columns: stacked, set aside
    assert all(np.all(r.ws[:, ZERO_1_2] == 0.0) and np.isfinite(r.ws).all() for r in both)


def test_a_zero_over_zero_in_a_stacked_row_is_its_own_runs_line():
    X, y = digits(0, 8)
    Z = y[:, None] * X   # pixel 13's step-1 gradient cancels: Adam at ε = 0 divides 0 by 0 there
    spec = to_spec("torch:Adam:eps=0", {"lr": 0.05}, probe=False)
    with pytest.raises(IbverifyError, match=r"non-finite iterate by step 1: 0/0 in coordinate 13 at step 1") as e:
        torchloop.run_many([Z[:, :12], Z], [spec, spec], 10, 2)   # the first row has no pixel 13
    assert failed_step(e.value) == 1


def test_a_genuine_zero_over_zero_is_named_with_its_coordinate_and_step():
    X, y = digits(0, 8)
    Z = y[:, None] * X
    assert Z[:, 13].sum() == 0 and np.any(Z[:, 13] != 0)   # pixel 13 is live, its step-1 gradient cancels
    spec = to_spec("torch:Adam:eps=0", {"lr": 0.05}, probe=False)
    for make in (lambda: engine_run(Z, spec, 10, checkpoints=2), lambda: torchloop.run(Z, spec, 10, 2)):
        with pytest.raises(IbverifyError, match=r"non-finite iterate by step 1: 0/0 in coordinate 13 at step 1") as e:
            make()
        assert "overflow" not in str(e.value) and failed_step(e.value) == 1
        assert str(e.value).endswith("; the way forward: a positive ε (e.g. eps=1e-8 in the optimizer's name or "
                                     "--eps), or coordinate 13 set aside yourself (its column, 0-based, removed from "
                                     "the data file)")


def test_a_coordinate_set_aside_until_a_batch_shows_it_is_an_error_naming_its_first_step():
    Z = np.array([[1.0, 0.0], [2.0, 0.0], [1.0, 1.0], [3.0, 2.0]])   # column 1: zero in the first batch only
    spec = to_spec("optax:adam:eps=0", {"lr": 0.05, "batch_size": 2, "lr_decay": 0.5}, probe=False)
    with pytest.raises(IbverifyError, match=r"non-finite iterate by step 1: 0/0 in coordinate 1 at step 1, while "
                                            r"every sample seen so far was 0 there; set aside until step 2") as e:
        engine_run(Z, spec, 10, checkpoints=2)
    assert failed_step(e.value) == 1 and "the way forward: a positive ε" in str(e.value)
    assert "or coordinate 1 set aside yourself" in str(e.value)


def step(tr, state, u, G):
    return tr.update(np.asarray(u, float), state, np.zeros(len(u)), per_sample=np.asarray(G, float))


def test_set_aside_zeroes_unseen_coordinates_and_keeps_seen_ones():
    tr = set_aside("src")
    s = tr.init(np.zeros(3))
    out, s = step(tr, s, [np.nan, 0.5, 7.0], [[0.0, 1.0, 0.0], [0.0, 2.0, 0.0]])
    assert out.tolist() == [0.0, 0.5, 0.0]   # coordinates 0 (NaN) and 2 (a finite move) unseen: 0
    out, s = step(tr, s, [0.0, -0.25, 0.0], [[0.0, 1.0, 0.0], [0.0, 2.0, 0.0]])
    assert out.tolist() == [0.0, -0.25, 0.0]
    with pytest.raises(IbverifyError, match="the optimizer moved coordinate 2 at step 1 .*set aside until step 3"):
        step(tr, s, [0.0, 1.0, 1.0], [[0.0, 1.0, 1.0], [0.0, 2.0, 0.0]])


def test_set_aside_reports_a_late_nan_as_zero_over_zero():
    tr = set_aside("src")
    s = tr.init(np.zeros(2))
    _, s = step(tr, s, [1.0, np.nan], [[1.0, 0.0]])
    with pytest.raises(IbverifyError, match=r"src: non-finite iterate by step 1: 0/0 in coordinate 1 at step 1"):
        step(tr, s, [1.0, 1.0], [[1.0, 1.0]])


def test_set_aside_names_a_nan_of_zero_gradient_at_a_seen_coordinate_and_leaves_other_nans():
    tr = set_aside("src")
    s = tr.init(np.zeros(2))
    with pytest.raises(IbverifyError, match=r"by step 1: 0/0 in coordinate 1 at step 1 \(its step is NaN"):
        step(tr, s, [1.0, np.nan], [[1.0, 1.0], [1.0, -1.0]])   # live, its batch gradient cancels
    out, _ = step(tr, tr.init(np.zeros(2)), [1.0, np.nan], [[1.0, 1.0], [1.0, 1.0]])   # gradient ≠ 0: the engine's
    assert out[0] == 1.0 and np.isnan(out[1])


def test_set_aside_without_per_sample_gradients_changes_nothing():
    tr = set_aside("src")
    s = tr.init(np.zeros(2))
    out, s = tr.update(np.array([np.nan, 3.0]), s, np.zeros(2))
    assert np.isnan(out[0]) and out[1] == 3.0
