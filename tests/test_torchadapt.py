"""A PyTorch optimizer run unchanged in float64 (`--optimizer torch:NAME[:k=v,...]`, ibverify.optim.torchadapt):
torch's Adam and SGD make the same iterates as the table's own rows, `bias` answers for torch:Adam, bad names are one
line. Skipped without torch."""

import functools
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ibverify import IbverifyError  # noqa: E402
from ibverify.cli import main  # noqa: E402
from ibverify.data import netdata  # noqa: E402
from ibverify.engine.vector import iterate_chain  # noqa: E402
from ibverify.optim.adapters import to_spec  # noqa: E402
from ibverify.optim.backend import Float64  # noqa: E402

SCHED = {"lr": 0.1, "lr_decay": 0.5}


def _max_gap(a, b, n, steps=1000):
    """max over steps of max |w_torch − w_table| (and the iterate's size at the end)."""
    Z = netdata.linear_separable(n, 6, seed=3).Z
    ia, ib = iterate_chain(Z, a.resolved(n), Float64()), iterate_chain(Z, b.resolved(n), Float64())
    gap = 0.0
    for _ in range(steps):
        (_, wa, _, _), (_, wb, _, _) = next(ia), next(ib)
        gap = max(gap, float(np.abs(wa - wb).max()))
    return gap, float(np.abs(wb).max())


@pytest.mark.parametrize("torch_opt, row, knobs", [
    # torch's Adam: bias-corrected m̂/(√v̂ + ε), full batch = the table's adam at batch N, bias_correction on, ε = 0
    ("torch:Adam:eps=0", "adam", {"batch_size": 12, "bias_correction": True, "eps": 0.0}),
    # (β2 = 0.95 on this data: a gradient coordinate near 1e-8 makes ε = 0 Adam ill-conditioned near step 400, and
    # both float64 implementations leave a 40-digit mpmath run by ~3e-4, each its own way: rounding, not the adapter)
    (functools.partial(torch.optim.Adam, eps=0.0, betas=(0.8, 0.99)), "det-adam",
     {"bias_correction": True, "eps": 0.0, "beta1": 0.8, "beta2": 0.99}),
    # no table row is SGD with heavy-ball momentum on the linear model: plain SGD = gd
    ("torch:SGD", "gd", {}),
    # torch's Adagrad as shipped (eps 1e-10, its own lr_decay 0, accumulator from 0) = the table's adagrad at ε = 1e-10
    ("torch:Adagrad", "adagrad", {"eps": 1e-10}),
])
def test_torch_optimizer_makes_the_table_rows_iterates(torch_opt, row, knobs):
    mine = to_spec(torch_opt, SCHED)
    assert mine.name.startswith("torch:") and mine.row.owns_schedule
    gap, size = _max_gap(mine, to_spec(row, {**SCHED, **knobs}), 12)
    assert gap <= 1e-10, gap
    assert size > 0.3   # it moved


def test_torch_momentum_makes_heavy_ball_iterates():
    """torch SGD(momentum=β) (m ← β m + g, m_1 = g; θ ← θ − η_t m) = the table's EMA trace (m ← β m + (1−β) g) at
    lr/(1−β): no table row is heavy-ball SGD on the linear model, its transform is."""
    from ibverify.optim import transforms as T
    from ibverify.optim.userfile import UserOptimizer

    hb = UserOptimizer("heavy-ball", "m ← β m + (1−β) g; θ ← θ − η_t m", vector=lambda s, xp: [T.trace(xp, 0.9)])
    gap, size = _max_gap(to_spec("torch:SGD:momentum=0.9", SCHED), to_spec(hb, {**SCHED, "lr": 0.1 / (1 - 0.9)}), 12)
    assert gap <= 1e-10, gap
    assert size > 0.3


def test_torch_momentum_differs_from_plain_sgd():
    gap, _ = _max_gap(to_spec("torch:SGD:momentum=0.9", SCHED), to_spec("gd", SCHED), 12, steps=50)
    assert gap > 1e-3


def test_torch_names_and_pickles():
    s = to_spec("torch:Adam:eps=0,betas=(0.9,0.99)", {"lr": 0.05})
    assert s.name == "torch:Adam(betas=(0.9,0.99),eps=0)" and s.lr == 0.05
    assert to_spec(s.name).name == s.name                          # the row's own name reads back
    assert to_spec("torch:Adam:lr=0.3").lr == 0.3                  # torch's lr: the lr knob's default
    import pickle
    assert pickle.loads(pickle.dumps(s)).row.name == s.name
    assert s.to_json()["source"] == "torch:Adam:eps=0,betas=(0.9,0.99)"


@pytest.mark.parametrize("name, msg", [
    ("torch:Adamm", "not an optimizer of torch.optim"),
    ("torch:Adam:epss=0", "unknown key 'epss'"),
    ("torch:Adam:eps=", "cannot read"),
    ("torch:Adam:eps=foo", "cannot read"),
    ("torch:Adam:eps=-1", "refused its arguments"),
])
def test_bad_torch_names_are_one_line(name, msg):
    with pytest.raises(IbverifyError) as e:
        to_spec(name)
    assert msg in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_mpmath_is_refused():
    from ibverify.optim.backend import MPMath
    from ibverify.optim.optimizers import build

    with pytest.raises(IbverifyError, match="float64 only"):
        build(to_spec("torch:SGD").resolved(4), MPMath())


def test_bias_on_torch_adam_answers(capsys):
    rc = main(["bias", "--optimizer", "torch:Adam:eps=0", "--model", "linear", "--tier", "smoke", "--datasets", "1",
               "--json", "-q"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    obj = json.loads(out)
    assert obj["optimizer"] == "torch:Adam(eps=0)" and obj["source"] == "torch:Adam:eps=0"
    (m,) = obj["models"]
    assert m["model"] == "linear" and m["supported"] + m["contradicted"] + m["inconclusive"]
