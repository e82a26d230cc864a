"""Issue 53 item 6: the hyper-parameters a torch Muon pair's answer records are those its run applies. `train --json`
on the two-layer net records `spec.hyperparameters`; each part's entry equals, key for key, the param_groups (all
but params and lr) of the torch optimizers the run's block chain builds (torchblock.torch_block's MuonPartition),
and the keys given are among them. tests/test_foreign_pair_hyperparameters.py checks the record against torch's
signatures and the bias page; this checks it against the optimizer that steps.

Faults this test was checked against, each injected by hand into optim/torchblock.torch_block, where the run's
optimizer is built (the record is made apart from it, by MuonPartition.ibverify_hyperparameters):
  - the run's Muon part at torch's default momentum 0.95 while the record says 0.9 (passed
    tests/test_foreign_pair_hyperparameters.py and tests/test_muon_shipped.py);
  - the run's partner without its keys (Adam at ε = 1e-8, betas (0.9, 0.999)), which test_muon_shipped.py's
    run-through catches too.
A fault inside MuonPartition itself changes the run and the record alike; test_foreign_pair_hyperparameters.py
catches those against torch's signatures."""

import contextlib
import io
import json

import numpy as np
import pytest

from ibverify.cli.commands import main
from ibverify.optim.adapters import to_spec
from ibverify.optim.optimizers import make_optimizer
from ibverify.optim.userfile import plain_value

NAME = "torch:Muon:weight_decay=0,momentum=0.9,ns_steps=6+Adam:eps=0,betas=(0.8,0.99)"


def _applied(group: dict) -> dict:
    return {k: plain_value(v) for k, v in sorted(group.items()) if k not in ("params", "lr")}


def test_the_recorded_hyperparameters_of_both_parts_are_those_the_run_steps_with():
    pytest.importorskip("torch")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["train", "--data", "teacher", "--model", "two-layer", "--optimizer", NAME, "--steps", "3",
                   "--json", "-q"])
    assert rc == 0
    out = json.loads(buf.getvalue())
    hp = out["spec"]["hyperparameters"]
    spec = to_spec(NAME, {"lr": out["spec"]["lr"], "lr_decay": out["spec"]["lr_decay"]})
    theta = {"W": np.zeros((4, 2)), "a": np.zeros(4)}
    opt = make_optimizer(spec, params=theta, L=2.0, warn=False)
    opt.init(theta)
    pair = opt.state[1].opt   # the MuonPartition torch_block made
    assert hp["partner"] == type(pair.partner).__name__ == "Adam"
    assert hp["muon"] == _applied(pair.muon.param_groups[0])
    assert hp["partner_hyperparameters"] == _applied(pair.partner.param_groups[0])
    assert (hp["muon"]["weight_decay"], hp["muon"]["momentum"], hp["muon"]["ns_steps"]) == (0, 0.9, 6)
    assert (hp["partner_hyperparameters"]["eps"], hp["partner_hyperparameters"]["betas"]) == (0, [0.8, 0.99])
