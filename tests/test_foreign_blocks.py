"""torch and optax optimizers on the block models (matrix, two-layer; optim.torchadapt.torch_block,
optim.optaxadapt.optax_block): the same iterates as the table's own block chains over 1000 steps (numpy reference
engines), and `bias` answers on the matrix model. Skipped without torch or optax."""

import json

import numpy as np
import pytest

from ibverify import engine, models
from ibverify.cli import main
from ibverify.data import netdata
from ibverify.optim.adapters import to_spec

SCHED = {"lr": 0.1, "lr_decay": 0.5}
MATRIX = (netdata.matrix_separable(12, 3, 4, seed=1), models.MatrixLinear(3, 4), None)


def _two_layer():
    D = netdata.teacher_two_layer(16, 3, seed=2)
    model = models.TwoLayer(3, 6, 2.0)
    return D, model, 5


def _max_gap(mine, table, problem, steps=1000):
    D, model, seed = problem
    cps = list(range(1, steps + 1, 7))
    ra = engine.run(D, to_spec(mine, SCHED), steps, model=model, init_seed=seed, checkpoints=cps, engine="reference",
                    warn=False)
    rb = engine.run(D, table, steps, model=model, init_seed=seed, checkpoints=cps, engine="reference", warn=False)
    gap = max(float(np.abs(a[k] - b[k]).max()) for a, b in zip(ra.thetas, rb.thetas, strict=True) for k in a)
    return gap, max(float(np.abs(v - rb.theta0[k]).max()) if rb.theta0 is not None else float(np.abs(v).max())
                    for k, v in rb.thetas[-1].items())


CASES = [
    # block models: the table's adam is bias-corrected with ε = 0 (paper 2), full batch, as torch's and optax's
    ("torch:Adam:eps=0", "adam", {}),
    ("torch:SGD", "gd", {}),
    ("optax:adam:eps=0", "adam", {}),
    ("optax:lion:weight_decay=0", "lion", {}),
    ("optax:sgd", "gd", {}),
]


@pytest.mark.parametrize("mine, table, knobs", CASES)
def test_foreign_optimizer_on_the_matrix_model(mine, table, knobs):
    pytest.importorskip(mine.split(":")[0])
    gap, moved = _max_gap(mine, to_spec(table, {**SCHED, **knobs}), MATRIX)
    assert gap <= 1e-10, gap
    assert moved > 0.3


@pytest.mark.parametrize("mine, table", [("torch:Adam:eps=0", "adam"), ("optax:lion:weight_decay=0", "lion")])
def test_foreign_optimizer_on_the_two_layer_net(mine, table):
    pytest.importorskip(mine.split(":")[0])
    gap, moved = _max_gap(mine, to_spec(table, SCHED), _two_layer(), steps=500)
    assert gap <= 1e-10, gap
    assert moved > 0.05


def test_bias_on_the_matrix_model_answers(capsys):
    pytest.importorskip("optax")
    rc = main(["bias", "--optimizer", "optax:adam:eps=0", "--model", "matrix", "--tier", "smoke", "--datasets", "1",
               "--json", "-q"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    (m,) = json.loads(out)["models"]
    assert m["model"] == "matrix" and "not_judged" not in m and m["supported"] + m["contradicted"] + m["inconclusive"]


def test_a_torch_rows_block_chain_survives_pickling():
    """A Dask worker gets the spec pickled: the torch row keeps its block models (torchblock._rebuilt)."""
    import pickle

    pytest.importorskip("torch")
    spec = to_spec("torch:Adam:eps=0")
    again = pickle.loads(pickle.dumps(spec))
    assert spec.row.models == again.row.models == ("vector", "block") and again.row.block is not None
