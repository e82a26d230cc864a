"""The optimizer table drives specs, block chains and the CLI: every row is consistent, every knob has one
name (old names read with a deprecation), and defaults follow the row and the model."""

import warnings

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.engine import run
from ibverify.models import TwoLayer
from ibverify.optim import OptimizerSpec
from ibverify.optim.optimizers import make_optimizer
from ibverify.optim.table import (ALIASES, DEPRECATED, KNOBS, MODELS, NAMES, ROWS, TABLE, info, markdown,
                                  names)

GEOMETRIES = {"l1", "l2", "l3", "linf", "spectral", "msp", "hybrid", "adaptive"}
TH = {"W": np.array([[0.3, -0.2], [0.1, 0.4]]), "a": np.array([0.5, -0.1])}


def test_rows_are_consistent():
    assert len({r.name for r in ROWS}) == len(ROWS) and not set(ALIASES) & set(TABLE)
    for r in ROWS:
        assert r.geometry in GEOMETRIES and set(r.models) <= set(MODELS) and r.models
        assert set(r.implementations) == set(r.models)              # an implementation for every model it runs
        assert set(r.defaults) <= set(KNOBS) and all(set(d) <= set(KNOBS) for d in r.by_model.values())
        assert set(r.moments) <= {"beta1", "beta2", "eps", "bias_correction", "weight_decay"}
        assert f"`{r.name}`" in markdown() and r.update in markdown()
    assert info("ngd") is TABLE["nsd-l2"] and set(NAMES) == set(TABLE) | set(ALIASES)
    assert set(names("block")) == {n for n in NAMES if "block" in info(n).models}


@pytest.mark.parametrize("name", [r.name for r in ROWS if "block" in r.models])
def test_block_chain_has_the_rows_own_geometry_and_defaults(name):
    opt = make_optimizer(OptimizerSpec(name), params=TH, L=3.0, warn=False)
    own = "l2" if info(name).geometry == "adaptive" else info(name).geometry  # adagrad: measured in ℓ2
    assert opt.name == name and opt.geometry.name.startswith(own)
    assert opt.spec.lr_decay == 1 - 1 / 6                           # block default: middle of the theorem's range
    for k in ("lr", *info(name).moments):
        assert opt.spec.to_json()[k] == info(name).default(k, "block"), k


@pytest.mark.parametrize("name", [r.name for r in ROWS if "vector" in r.models])
def test_vector_rows_run_on_the_vector_model_with_their_defaults(name):
    Z = np.array([[1.0, 0.5, -0.2], [0.8, -0.3, 0.4], [1.2, 0.1, 0.1]])
    r = run(Z, OptimizerSpec(name), 50, checkpoints=5)
    assert r.spec.lr_decay == 0.5 and r.horizon == 50 and r.ws.shape == (len(r.checkpoints), 3)
    for k in ("lr", *info(name).moments):
        assert r.spec.to_json()[k] == info(name).default(k, "vector"), k


def test_defaults_differ_by_model_where_the_papers_do():
    assert OptimizerSpec("adam").resolved(4).bias_correction is False           # paper 1 (vector)
    assert OptimizerSpec("adam").for_block(3.0).bias_correction is True         # paper 2 (block)
    assert OptimizerSpec("inc-adam").resolved(4).bias_correction is False
    assert OptimizerSpec("nsd-l2").resolved(4).lr == 0.1 and OptimizerSpec("ngd").resolved(4).lr == 0.1
    assert OptimizerSpec("nsd-l2").for_block(2.0).lr == 0.5 and OptimizerSpec("muon").for_block(2.0).lr == 0.3
    assert OptimizerSpec("adam").resolved(4).batch_size == 1 and OptimizerSpec("signum").resolved(4).batch_size == 4
    assert OptimizerSpec("adam", bias_correction=False).for_block(3.0).bias_correction is False  # given wins


def test_from_params_reads_knobs_and_old_names_once():
    p = {"optimizer": "muon-adam", "eta_m": 0.2, "eta_a": 0.6, "p": 0.7, "beta": 0.5, "eta0": 0.3, "steps": 10}
    with pytest.warns(DeprecationWarning) as rec:
        s = OptimizerSpec.from_params(p)
    assert len(rec) == len(DEPRECATED) and all("deprecated" in str(w.message) for w in rec)
    assert (s.lr_matrix, s.lr_vector, s.lr_decay, s.beta1, s.lr) == (0.2, 0.6, 0.7, 0.5, 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = OptimizerSpec.from_params({"optimizer": "signum", "lr": 0.2, "other": 1}, beta1=0.3, name="adam")
    assert (s.name, s.lr, s.beta1) == ("adam", 0.2, 0.3)                    # overrides win, other keys ignored
    with pytest.raises(IbverifyError, match="contradicts"):
        OptimizerSpec.from_params({"optimizer": "signum", "p": 0.5, "lr_decay": 0.6})
    with pytest.raises(IbverifyError, match="no optimizer"):
        OptimizerSpec.from_params({"lr": 0.1})


@pytest.mark.parametrize("bad,msg", [
    (lambda: OptimizerSpec("muon").resolved(3), "block models only"),
    (lambda: OptimizerSpec("inc-adam").for_block(2.0), "vector"),
    (lambda: OptimizerSpec("signum", batch_size=2).for_block(2.0), "full batch"),
    (lambda: OptimizerSpec("nope").resolved(3), "unknown optimizer"),
    (lambda: OptimizerSpec("det-adam", batch_size=2).resolved(3), "full batch"),
    (lambda: OptimizerSpec("inc-adam", batch_size=2).resolved(3), "batch size 1"),
    (lambda: OptimizerSpec("muon-adam", lr_vector=-1.0).for_block(2.0), "lr_vector"),
    (lambda: make_optimizer("muon-adam", params={"w": np.zeros(2)}, L=1.0), "matrix and vector"),
])
def test_refusals_name_the_problem(bad, msg):
    with pytest.raises(IbverifyError, match=msg):
        bad()


def test_the_block_entry_records_theta0_and_its_seed():
    from ibverify.data import netdata

    data = netdata.make_data("teacher", n=10, d=3, seed=0)
    m = TwoLayer(3, 4, 2.0)
    r = run(data, OptimizerSpec("signum", lr_decay=0.8), 20, model=m, init_seed=5, checkpoints=[10, 20])
    again = m.init(np.random.default_rng(1005), 0.5)
    assert r.init_seed == 5 and all(np.array_equal(r.theta0[k], again[k]) for k in again)
    assert r.checkpoints == [10, 20] and r.optimizer.name == "signum" and r.spec.lr_decay == 0.8
    z = run(data, OptimizerSpec("signum", lr_decay=0.8), 5, model=m, checkpoints=[5])
    assert z.init_seed is None and all(not v.any() for v in z.theta0.values())   # no seed: θ0 = 0


def test_every_row_points_at_its_implementations():
    """Issue 32: a row carries its chains (vector, block), its compiled vector kernel's kind and a hybrid's parts;
    no other name-keyed table decides what runs."""
    from ibverify.engine.vector import KERNELS
    from ibverify.optim.table import ROWS, info

    for r in ROWS:
        assert (r.vector is not None) == ("vector" in r.models), r.name
        assert (r.block is not None or bool(r.parts)) == ("block" in r.models), r.name
        assert ("compiled" in r.implementations.get("vector", ())) == (r.kernel is not None), r.name
        assert r.kernel is None or r.kernel in KERNELS, r.name
        assert all(info(p).block is not None for p in r.parts), r.name
