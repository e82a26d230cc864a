"""recipes.bias and recipes.cli: `ibverify bias`'s problems and `ibverify train`'s runs as recipes (issue 32: the CLI
uses the claims' recipes). The data and models the recipes build are the generators' and constructors' own, a bias
problem pickles as recipes (a Dask task) and rebuilds the same data, and a user's file is known by its content."""

import pickle

import numpy as np

from ibverify import models
from ibverify.checks import bias
from ibverify.data import netdata
from ibverify.optim import OptimizerSpec
from ibverify.recipes import DataRecipe, RunStore
from ibverify.recipes import bias as rb
from ibverify.recipes import cli as rc


def test_candidates_are_the_seeded_generators_datasets():
    for model, gen in (("linear", netdata.linear_separable), ("matrix", netdata.matrix_separable),
                       ("two-layer", netdata.teacher_two_layer)):
        (tag, data, mrec, init), = list(rb.candidates(model, 3, 1))
        kw = dict(data.args)
        D = RunStore().data(data)
        ref = gen(**kw)
        assert np.array_equal(D.X, ref.X) and np.array_equal(D.y, ref.y) and f"data{kw['seed']}" in tag
        assert (mrec is None) == (model == "linear") and (init is not None) == (model == "two-layer")


def test_a_problem_travels_as_recipes_and_rebuilds_the_same_data():
    store = RunStore()
    pr = bias.generated("matrix", 0, 1, store=store)[0]
    back = pickle.loads(pickle.dumps(pr))
    assert back.data == pr.data and back.model == pr.model and back.n == pr.n == store.data(pr.data).n
    assert np.array_equal(RunStore().data(back.data).X, store.data(pr.data).X)
    rec = rb.run_recipe(pr.data, pr.model, None, OptimizerSpec("nsd-l2").for_block(1.0), 1000)
    assert rec.checkpoints == rb.checkpoints(1000) and len(rec.checkpoints) == rb.CHECKPOINTS
    assert rb.run_recipe(pr.data, pr.model, None, rec.spec, 1000, batch=1).key() != rec.key()


def test_train_recipes_are_the_clis_data_and_models():
    for kind in ("teacher", "linear"):
        D = RunStore().data(rc.generated_data(kind, None, 5, 2))
        ref = netdata.make_data(kind, n=None, d=5, seed=2)
        assert np.array_equal(D.X, ref.X) and D.name == ref.name
    D = netdata.teacher_two_layer(20, 4, seed=1)
    for kind in ("linear", "two-layer", "deep", "deep-linear"):
        built = rc.train_model(kind, 6, 2.0, 3).build(D)
        ref = models.make_model(kind, 4, width=6, q=2.0, depth=3)
        assert built.describe() == ref.describe()


def test_a_users_file_is_known_by_its_content(tmp_path):
    D = netdata.linear_separable(12, 5, seed=1)
    path = tmp_path / "d.npz"
    np.savez(path, X=D.X, y=D.y)
    spec = OptimizerSpec("nsd-l2").resolved(D.n)
    a = rc.vector_run(rc.user_file(path), spec, 100, 5, None)
    assert a.key() == rc.vector_run(rc.user_file(path), spec, 100, 5, None).key()
    assert a.key() != rc.vector_run(rc.user_file(path, intercept=True), spec, 100, 5, None).key()
    np.savez(path, X=2 * D.X, y=D.y)
    assert rc.vector_run(rc.user_file(path), spec, 100, 5, None).key() != a.key()
    assert isinstance(rc.bias_data(D), DataRecipe) and RunStore().data(rc.bias_data(D)).n == D.n
