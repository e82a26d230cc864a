"""Issue 53 item 4: a foreign optimizer's record lists every part's hyper-parameters. torch's Muon with a partner
(torch:Muon+PARTNER) records Muon's own (its param_groups entry on a 2-D block), the partner's, and the c the pair
implies; the bias page shows each of them. Expected values are read here from torch's own signatures."""

from __future__ import annotations

import inspect
import json

import pytest

from ibverify.report.bias import bias_page, hyper_rows
from ibverify.optim.adapters import to_spec

torch = pytest.importorskip("torch")

NAME = "torch:Muon:weight_decay=0,momentum=0.9,ns_steps=6+Adam:eps=0,betas=(0.8,0.99)"


def _defaults(cls) -> dict:
    return {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
            if k not in ("self", "params", "lr") and p.default is not inspect.Parameter.empty}


def _plain(d: dict) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def test_both_parts_hyperparameters_are_recorded_with_torchs_defaults_and_the_keys_given():
    hp = to_spec(NAME, {}, probe=False).to_json()["hyperparameters"]
    assert hp["muon"] == _plain({**_defaults(torch.optim.Muon), "weight_decay": 0, "momentum": 0.9, "ns_steps": 6})
    assert hp["partner"] == "Adam"
    assert hp["partner_hyperparameters"] == _plain({**_defaults(torch.optim.Adam), "eps": 0, "betas": (0.8, 0.99)})
    assert hp["muon"]["momentum"] == 0.9 and hp["partner_hyperparameters"]["betas"] == [0.8, 0.99]
    assert "1/(√max(1, A/B))" in hp["c"] and "'original'" in hp["c"]


def test_an_sgd_partner_states_its_lr_ratio_as_no_steepest_descent_and_a_bare_muon_records_its_own_group():
    """An SGD partner's c is still its lr ratio (bias judges the hybrid there, optim.hybridc), said to be no steepest
    descent of one norm."""
    hp = to_spec("torch:Muon:weight_decay=0+SGD:momentum=0.5", {}, probe=False).to_json()["hyperparameters"]
    assert hp["partner"] == "SGD" and hp["partner_hyperparameters"]["momentum"] == 0.5
    assert hp["muon"]["weight_decay"] == 0 and "1/(√max(1, A/B))" in hp["c"]
    assert "with SGD no steepest descent of one norm" in hp["c"]
    bare = to_spec("torch:Muon:weight_decay=0", {}, probe=False).to_json()["hyperparameters"]
    assert bare == _plain({**_defaults(torch.optim.Muon), "weight_decay": 0})   # made on a 2-D block, not the kwargs


def test_the_match_rms_adjustment_changes_the_stated_c():
    hp = to_spec("torch:Muon:adjust_lr_fn='match_rms_adamw'+Adam:eps=0", {}, probe=False).to_json()
    assert "1/(0.2·√max(A, B))" in hp["hyperparameters"]["c"]


def _answer(name: str) -> dict:
    spec = to_spec(name, {}, probe=False).to_json()
    model = {"model": "two-layer", "supported": [], "contradicted": [], "inconclusive": [], "datasets": 1,
             "evidence": {}, "cpu_seconds": 1.0, "spec": spec}
    return {"optimizer": spec["name"], "knobs": {}, "models": [model], "source": spec["source"],
            "source_sha256": spec["source_sha256"]}


def test_the_bias_page_lists_every_parts_hyperparameter_and_the_c():
    a = _answer(NAME)
    hp = a["models"][0]["spec"]["hyperparameters"]
    page = bias_page([a], {"versions": {}, "tier": "smoke", "seed": 0}, {})
    rows = {line.split("<th>")[1].split("</th>")[0]: line for line in page.splitlines()
            if line.startswith('<tr class="hyper">')}
    assert list(rows) == ["Muon&#39;s hyper-parameters (2-D blocks)", "Adam&#39;s hyper-parameters (the other blocks)",
                          "c implied"]
    muon, adam, c = rows.values()
    for part, row in ((hp["muon"], muon), (hp["partner_hyperparameters"], adam)):
        assert row.count("<code>") == len(part)
        for k, v in part.items():
            assert f"<code>{k} = {json.dumps(v) if isinstance(v, list) else v}</code>" in row, (k, v)
    assert "<code>momentum = 0.9</code>" in muon and "<code>ns_steps = 6</code>" in muon
    assert "<code>weight_decay = 0</code>" in muon and "<code>eps = 1e-07</code>" in muon
    assert "<code>eps = 0</code>" in adam and "<code>betas = [0.8, 0.99]</code>" in adam
    assert "<code>amsgrad = False</code>" in adam and "momentum" not in adam
    assert "√max(1, A/B)" in c
    assert len(hyper_rows(_answer("torch:Adam:eps=0"))) == 1


def test_muons_default_weight_decay_is_named_as_what_bounds_the_norm():
    """torch's Muon defaults to weight_decay 0.1 (issue 53 item 1): its record carries it, so bias's note names it as
    the setting that bounds ‖θ‖; weight_decay = 0 on both parts names none."""
    from ibverify.checks.bias import bounding_settings

    wd = _defaults(torch.optim.Muon)["weight_decay"]
    assert wd > 0
    shipped = to_spec("torch:Muon+Adam:eps=0", {}, probe=False).to_json()
    assert f"hyperparameters.muon.weight_decay = {wd:g}" in bounding_settings(shipped)
    plain = to_spec("torch:Muon:weight_decay=0+Adam:eps=0,weight_decay=0", {}, probe=False).to_json()
    assert bounding_settings(plain) == []
