"""An optax optimizer run unchanged in float64 (`--optimizer optax:NAME[:k=v,...]`, ibverify.optim.optaxadapt): optax's
Adam, Lion, AdamW and SGD with momentum make the same iterates as the table's own rows (or the table's own transforms)
over 1000 steps, the schedule η_t is ibverify's, every kind of optax object is accepted by `to_spec` (the API's entry),
bad names are one line. Skipped without optax."""

import functools
import json

import numpy as np
import pytest

optax = pytest.importorskip("optax")

from ibverify import IbverifyError  # noqa: E402
from ibverify.cli import main  # noqa: E402
from ibverify.data import netdata  # noqa: E402
from ibverify.engine.vector import iterate_chain  # noqa: E402
from ibverify.optim import transforms as T  # noqa: E402
from ibverify.optim.adapters import to_spec  # noqa: E402
from ibverify.optim.backend import Float64  # noqa: E402
from ibverify.optim.userfile import UserOptimizer  # noqa: E402

SCHED = {"lr": 0.1, "lr_decay": 0.5}
FULL_ADAM = {"batch_size": 12, "bias_correction": True, "eps": 0.0}


def _max_gap(a, b, n=12, steps=1000):
    """max over steps of max |w_optax − w_table| (and the iterate's size at the end)."""
    Z = netdata.linear_separable(n, 6, seed=3).Z
    ia, ib = iterate_chain(Z, a.resolved(n), Float64()), iterate_chain(Z, b.resolved(n), Float64())
    gap = 0.0
    for _ in range(steps):
        (_, wa, _, _), (_, wb, _, _) = next(ia), next(ib)
        gap = max(gap, float(np.abs(wa - wb).max()))
    return gap, float(np.abs(wb).max())


def _heavy_ball(beta):
    """SGD with heavy-ball momentum m ← β m + g, θ ← θ − η_t m from the table's own transforms: the EMA trace
    (m ← β m + (1−β) g), run at lr/(1−β)."""
    return UserOptimizer("heavy-ball", "m ← β m + (1−β) g; θ ← θ − η_t m",
                         vector=lambda s, xp: [T.trace(xp, beta)])


def _lion_wd(lam):
    """Lion with decoupled weight decay λ (optax's default λ = 1e-3) from the table's own transforms."""
    return UserOptimizer("lion-wd", "θ ← θ − η_t (sign(c) + λ θ)", knobs={"beta2": 0.99},
                         vector=lambda s, xp: [T.scale_by_lion(xp, s.beta1, s.beta2), T.add_decayed_weights(xp, lam)])


@pytest.mark.parametrize("mine, table, knobs", [
    # optax's adam: bias-corrected m̂/(√v̂ + ε), full batch = the table's adam at batch N, bias correction on, ε = 0
    ("optax:adam:eps=0", "adam", FULL_ADAM),
    (functools.partial(optax.adam, eps=0.0, b1=0.8, b2=0.99), "det-adam",
     {"bias_correction": True, "eps": 0.0, "beta1": 0.8, "beta2": 0.99}),
    # optax's lion without its weight decay = the table's lion (β1 = 0.9, β2 = 0.99)
    ("optax:lion:weight_decay=0", "lion", {}),
    ("optax:lion:b1=0.95,b2=0.98,weight_decay=0", "lion", {"beta1": 0.95, "beta2": 0.98}),
    # optax's lion as shipped (weight_decay = 1e-3): the table's lion transform + decoupled weight decay
    ("optax:lion", _lion_wd(1e-3), {}),
    # optax's adamw at ε = 0 = the table's adamw (bias-corrected, decoupled weight decay)
    ("optax:adamw:eps=0,weight_decay=0.01", "adamw", {"batch_size": 12, "weight_decay": 0.01}),
    # SGD with heavy-ball momentum: no table row on the linear model, the table's trace transform rescaled
    ("optax:sgd:momentum=0.9", _heavy_ball(0.9), {"lr": SCHED["lr"] / (1 - 0.9)}),
    ("optax:sgd", "gd", {}),
])
def test_optax_optimizer_makes_the_table_rows_iterates(mine, table, knobs):
    spec = to_spec(mine, SCHED)
    assert spec.name.startswith("optax:") and spec.row.owns_schedule
    gap, size = _max_gap(spec, to_spec(table, {**SCHED, **knobs}))
    assert gap <= 1e-10, gap
    assert size > 0.3   # it moved


def test_the_shipped_defaults_differ_from_the_stripped_ones():
    """optax's own defaults are run (ε = 1e-8, Lion's λ = 1e-3), not replaced by the table's."""
    assert _max_gap(to_spec("optax:lion", SCHED), to_spec("lion", SCHED), steps=300)[0] > 1e-3
    assert _max_gap(to_spec("optax:sgd:momentum=0.9", SCHED), to_spec("gd", SCHED), steps=50)[0] > 1e-3


def test_the_schedule_is_ibverifys():
    """η_t = lr · t^(−lr_decay) reaches the optax update: a changed lr_decay or lr changes the iterates as the
    table's sgd does (sgd's step is −η_t g exactly)."""
    for knobs in ({"lr": 0.3, "lr_decay": 0.0}, {"lr": 0.05, "lr_decay": 1.0}):
        assert _max_gap(to_spec("optax:sgd", knobs), to_spec("gd", knobs))[0] <= 1e-12
    assert _max_gap(to_spec("optax:sgd", {"lr_decay": 0.0}), to_spec("gd", {"lr_decay": 0.5}), steps=50)[0] > 1e-3


def test_every_kind_of_optax_object(tmp_path):
    """A function, a partial, a function of one's own taking learning_rate, an inject_hyperparams transformation and
    a file all become the same optimizer (sgd here), with the schedule of the knobs."""
    def mine(learning_rate):
        return optax.sgd(learning_rate)

    f = tmp_path / "my_optax.py"
    f.write_text("import optax\n\ndef make(learning_rate):\n    return optax.sgd(learning_rate)\n\n"
                 "def made():\n    return optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)\n")
    for obj in (optax.sgd, functools.partial(optax.sgd, momentum=None), mine,
                optax.inject_hyperparams(optax.sgd)(learning_rate=0.1), f"optax:{f}", f"optax:{f}:made"):
        spec = to_spec(obj, SCHED)
        assert _max_gap(spec, to_spec("gd", SCHED), steps=200)[0] <= 1e-12, obj
    assert to_spec(f"optax:{f}").to_json()["source_sha256"]


def test_names_and_pickles():
    import pickle

    s = to_spec("optax:lion:b1=0.9,b2=0.99", {"lr": 0.05})
    assert s.name == "optax:lion(b1=0.9,b2=0.99)" and s.lr == 0.05
    assert to_spec(s.name).name == s.name                          # the row's own name reads back
    assert to_spec("optax:adam:learning_rate=0.3").lr == 0.3       # optax's learning_rate: the lr knob's default
    assert pickle.loads(pickle.dumps(s)).row.name == s.name
    assert s.to_json()["source"] == "optax:lion:b1=0.9,b2=0.99"
    with pytest.raises(IbverifyError, match="cannot be sent"):
        pickle.dumps(to_spec(optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)))


@pytest.mark.parametrize("obj, msg", [
    ("optax:adamm", "not an optimizer of optax"),
    ("optax:adam:epss=0", "unknown key 'epss'"),
    ("optax:adam:eps=", "cannot read"),
    ("optax:adam:eps=foo", "cannot read"),
    ("optax:adam:learning_rate='x'", "must be a number"),
    ("optax:/no/such/file.py", "cannot read"),
    (optax.adam(0.1), "no learning_rate hyperparameter"),
    (optax.scale_by_adam(), "no learning_rate hyperparameter"),
])
def test_bad_optax_arguments_are_one_line(obj, msg):
    with pytest.raises(IbverifyError) as e:
        to_spec(obj)
    assert msg in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_mpmath_is_refused():
    from ibverify.optim.backend import MPMath
    from ibverify.optim.optimizers import build

    with pytest.raises(IbverifyError, match="float64 only"):
        build(to_spec("optax:sgd").resolved(4), MPMath())


def test_bias_on_optax_lion_answers(capsys):
    rc = main(["bias", "--optimizer", "optax:lion:b1=0.9,b2=0.99", "--model", "linear", "--tier", "smoke",
               "--datasets", "1", "--json", "-q"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    obj = json.loads(out)
    assert obj["optimizer"] == "optax:lion(b1=0.9,b2=0.99)" and obj["source"] == "optax:lion:b1=0.9,b2=0.99"
    (m,) = obj["models"]
    assert m["model"] == "linear" and m["supported"] + m["contradicted"] + m["inconclusive"]


def test_api_takes_optax_objects():
    import ibverify

    with pytest.raises(IbverifyError, match="no learning_rate"):
        ibverify.bias(optax.lion(0.1), models=["linear"], tier="smoke")
