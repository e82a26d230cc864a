"""Issue 47 item 5b: a torch or optax optimizer's JSON lists its own hyper-parameters (torch's param_groups, optax's
factory arguments or hyper-parameter state), never the table's knobs; an optax.inject_hyperparams object has a
stable name (its function and hyper-parameters, no address), the same for the same object and in every process."""

import functools
import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
optax = pytest.importorskip("optax")

import ibverify  # noqa: E402
from ibverify.optim.adapters import to_spec  # noqa: E402
from ibverify.optim.foreign import ForeignSpec  # noqa: E402
from ibverify.optim.userfile import plain_value  # noqa: E402

TABLE_ONLY = ("beta1", "beta2", "eps", "bias_correction", "weight_decay")
ADAM_HP = {"b1": 0.9, "b2": 0.999, "eps": 0.0, "eps_root": 0.0, "mu_dtype": None, "nesterov": False}


def test_an_optax_partials_json_lists_optax_adams_hyperparameters_not_the_tables_knobs():
    j = to_spec(functools.partial(optax.adam, eps=0.0), {}, probe=False).to_json()
    assert j["name"] == "optax:adam(eps=0.0)" and j["library"] == "optax"
    assert j["hyperparameters"] == ADAM_HP
    assert not set(TABLE_ONLY) & set(j)


def test_the_train_answer_carries_the_foreign_json(tmp_path):
    path = tmp_path / "toy.csv"
    path.write_text("x1,x2,label\n2,1,1\n1.5,-0.5,1\n-1,-2,-1\n-2,0.5,-1\n")
    out = ibverify.train(functools.partial(optax.adam, eps=0.0), path, steps=10, compare=False).to_json()
    assert out["optimizer"]["hyperparameters"] == ADAM_HP and "bias_correction" not in out["optimizer"]
    assert out["optimizer"]["lr"] == 0.1 and out["optimizer"]["batch_size"] == 4   # ibverify's own settings


def test_a_torch_optimizers_json_lists_its_param_groups():
    j = to_spec("torch:Adam:eps=0,betas=(0.8,0.99)", {"lr": 0.3}, probe=False).to_json()
    assert j["library"] == "torch" and j["lr"] == 0.3
    hp = j["hyperparameters"]
    assert hp["betas"] == [0.8, 0.99] and hp["eps"] == 0 and hp["amsgrad"] is False and hp["weight_decay"] == 0
    assert "lr" not in hp and "params" not in hp and not set(TABLE_ONLY) & set(j)
    sgd = to_spec(functools.partial(torch.optim.SGD, momentum=0.9), {}, probe=False).to_json()["hyperparameters"]
    assert sgd["momentum"] == 0.9 and sgd["nesterov"] is False and sgd["dampening"] == 0


def test_the_foreign_spec_survives_resolving_and_pickling():
    import pickle

    spec = to_spec("torch:Adam:eps=0", {}, probe=False)
    r = spec.resolved(5)
    assert isinstance(r, ForeignSpec) and r.to_json()["batch_size"] == 5
    assert pickle.loads(pickle.dumps(r)) == r
    assert type(to_spec("adam", {}, probe=False)).__name__ == "OptimizerSpec"   # the table's: as before
    assert "bias_correction" in to_spec("adam", {}, probe=False).to_json()


def injected():
    return optax.inject_hyperparams(optax.adam)(learning_rate=0.2, eps=0.0)


def test_an_inject_hyperparams_object_is_named_by_its_function_and_hyperparameters():
    tx = injected()
    a, b = to_spec(tx, {}, probe=False), to_spec(tx, {}, probe=False)
    assert a.name == b.name == "optax:inject_hyperparams(adam)(eps=0.0)"
    assert a.user.user.sha256 == b.user.user.sha256
    c = to_spec(injected(), {}, probe=False)   # another object of the same function and values: the same optimizer
    assert c.name == a.name and c.user.user.sha256 == a.user.user.sha256
    assert a.to_json()["hyperparameters"] == ADAM_HP and a.lr == 0.2
    other = to_spec(optax.inject_hyperparams(optax.adam)(learning_rate=0.2, eps=1e-3), {}, probe=False)
    assert other.name == "optax:inject_hyperparams(adam)(eps=0.001)" and other.user.user.sha256 != a.user.user.sha256


def test_the_inject_hyperparams_name_is_the_same_in_another_process():
    code = ("import optax, json; from ibverify.optim.adapters import to_spec; "
            "s = to_spec(optax.inject_hyperparams(optax.adam)(learning_rate=0.2, eps=0.0), {}, probe=False); "
            "print(json.dumps([s.name, s.user.user.sha256]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    here = to_spec(injected(), {}, probe=False)
    assert json.loads(out.strip().splitlines()[-1]) == [here.name, here.user.user.sha256]


def test_plain_value_never_writes_an_address():
    assert plain_value((0.9, np.float64(0.5))) == [0.9, 0.5]
    assert plain_value(np.array(2.0)) == 2.0
    assert plain_value(optax.adam).endswith(".adam") and "0x" not in plain_value(optax.adam)
    assert plain_value(object()) == "object"


@pytest.mark.parametrize("name", ["torch:Adam:eps=0", "optax:adam:eps=0"])
@pytest.mark.parametrize("knob", TABLE_ONLY)
def test_a_table_knob_given_to_a_foreign_optimizer_is_refused_not_ignored(name, knob):
    value = {"bias_correction": True}.get(knob, 0.5)
    with pytest.raises(ibverify.IbverifyError, match=f"{knob} is a knob of the optimizer table"):
        to_spec(name, {knob: value}, probe=False)


@pytest.mark.parametrize("name", ["torch:Adam:eps=0", "optax:adam:eps=0"])
def test_the_run_settings_still_reach_a_foreign_optimizer(name):
    spec = to_spec(name, {"lr": 0.01, "lr_decay": 0.0, "batch_size": 2, "seed": 3}, probe=False)
    assert (spec.lr, spec.lr_decay, spec.batch_size, spec.seed) == (0.01, 0.0, 2, 3)
    assert to_spec("adam", {"beta1": 0.5}, probe=False).beta1 == 0.5   # the table's own rows read them
