"""torch's Muon and optax's contrib.muon as the libraries ship them (optim/torchmuon.py, optim/optaxadapt.py): torch's
step with its Newton–Schulz iteration in float64 (MuonNS64) is torch's own step but for that precision; a single step
on a 2-D block of known SVD; the table's `muon` on the matrix model where the algorithms coincide; the partition
(Muon on the 2-D blocks, the partner elsewhere) on the two-layer net; names and refusals; optax's own split."""

import functools

import numpy as np
import pytest

from ibverify import engine, models
from ibverify.cli import main
from ibverify.data import netdata
from ibverify.errors import IbverifyError
from ibverify.optim.adapters import to_spec

torch = pytest.importorskip("torch")
torchmuon = pytest.importorskip("ibverify.optim.torchmuon")

CUBIC = "ns_coefficients=(1.5,-0.5,0.0),ns_steps=60"   # the cubic Newton–Schulz iteration: → the exact polar factor


def _known(shape, sigma, seed=0):
    """G = U diag(σ) Vᵀ with random orthonormal U, V: (G, UVᵀ)."""
    rng = np.random.default_rng(seed)
    A, B = shape
    k = min(A, B)
    U = np.linalg.qr(rng.standard_normal((A, k)))[0]
    V = np.linalg.qr(rng.standard_normal((B, k)))[0]
    return U @ np.diag(sigma) @ V.T, U @ V.T


def _one_step(cls, G, lr=0.1, **kw):
    p = torch.zeros(G.shape, dtype=torch.float64, requires_grad=True)
    opt = cls([p], lr=lr, **kw)
    p.grad = torch.from_numpy(G.copy())
    opt.step()
    return p.detach().numpy().copy()


@pytest.mark.parametrize("shape, scale", [((3, 4), 1.0), ((5, 3), np.sqrt(5 / 3))])
def test_one_float64_step_is_the_polar_factor_times_torchs_lr_adjustment(shape, scale):
    """MuonNS64 with the cubic iteration: the step is −η·√max(1, A/B)·UVᵀ (torch's adjustment, as shipped)."""
    G, P = _known(shape, np.array([3.0, 1.0, 0.2]))
    step = _one_step(torchmuon.MuonNS64, G, lr=0.1, weight_decay=0.0, nesterov=False,
                     ns_coefficients=(1.5, -0.5, 0.0), ns_steps=60)
    assert np.abs(step - (-0.1 * scale * P)).max() <= 1e-12


def test_the_shipped_step_is_bfloat16_and_the_float64_one_is_torchs_step_otherwise(monkeypatch):
    """torch's Muon with its NS swapped for the float64 one is MuonNS64 to the bit (only the precision differs); the
    shipped bfloat16 step differs from it by bfloat16's rounding (8 bits: 1e-4 … 2e-2 relative), not more."""
    import torch.optim._muon as shipped

    rng = np.random.default_rng(1)
    Gs = [rng.standard_normal((6, 4)) for _ in range(4)]

    def run(cls):
        p = torch.zeros((6, 4), dtype=torch.float64, requires_grad=True)
        opt = cls([p], lr=0.05, weight_decay=0.1)   # torch's defaults otherwise: momentum 0.95, Nesterov, NS5
        out = []
        for G in Gs:
            p.grad = torch.from_numpy(G)
            opt.step()
            out.append(p.detach().numpy().copy())
        return np.array(out)

    bf16 = run(torch.optim.Muon)
    f64 = run(torchmuon.MuonNS64)
    rel = np.abs(bf16 - f64).max() / np.abs(f64).max()
    assert 1e-4 <= rel <= 2e-2, rel
    monkeypatch.setattr(shipped, "_zeropower_via_newtonschulz", torchmuon._ns_float64)
    assert np.array_equal(run(torch.optim.Muon), f64)


def test_torch_muon_in_float64_with_the_exact_polar_factor_is_the_tables_muon_on_the_matrix_model():
    """Where the algorithms coincide (no Nesterov, momentum = β1, no weight decay, p ≤ r so torch's lr adjustment is
    1, NS converged to UVᵀ in float64) torch's own step() is the table's `muon` over 150 steps (rounding differences
    grow past that: 2e-13 at 150 steps, 3e-9 at 200, 6e-3 at 300 on this problem, with 60 or 99 NS steps alike)."""
    D = netdata.matrix_separable(12, 3, 4, seed=1)
    model = models.MatrixLinear(3, 4)
    sched = {"lr": 0.1, "lr_decay": 0.5}
    mine = to_spec(f"torch:Muon:ns_float64=True,nesterov=False,momentum=0.9,weight_decay=0,{CUBIC}", sched)
    table = to_spec("muon", {**sched, "beta1": 0.9})
    cps = list(range(1, 151, 7))
    ra = engine.run(D, mine, 150, model=model, checkpoints=cps, engine="reference", warn=False)
    rb = engine.run(D, table, 150, model=model, checkpoints=cps, engine="reference", warn=False)
    gap = max(float(np.abs(a["W"] - b["W"]).max()) for a, b in zip(ra.thetas, rb.thetas, strict=True))
    assert gap <= 1e-10, gap
    assert np.abs(rb.thetas[-1]["W"]).max() > 1.0   # it moved
    # torch's momentum 0.95 (its default) is another EMA: the iterates differ (the test can fail)
    other = to_spec(f"torch:Muon:ns_float64=True,nesterov=False,weight_decay=0,{CUBIC}", sched)
    rc = engine.run(D, other, 150, model=model, checkpoints=cps, engine="reference", warn=False)
    assert float(np.abs(rc.thetas[-1]["W"] - rb.thetas[-1]["W"]).max()) > 1e-6


@pytest.mark.parametrize("ns64", [False, True])
def test_the_partition_steps_muon_on_the_matrix_and_the_partner_on_the_vector(ns64):
    """MuonPartition on the two-layer net's blocks: W moves as Muon alone would (shipped or float64 NS), a as the
    partner alone (SGD: −η g_a), both at the group lr ibverify set."""
    rng = np.random.default_rng(2)
    gW, ga = rng.standard_normal((8, 4)), rng.standard_normal(8)
    W = torch.zeros((8, 4), dtype=torch.float64, requires_grad=True)
    a = torch.zeros(8, dtype=torch.float64, requires_grad=True)
    opt = torchmuon.MuonPartition([W, a], lr=1.0, muon={"weight_decay": 0.0}, partner="SGD", ns_float64=ns64)
    for g in opt.param_groups:
        g["lr"] = 0.05
    W.grad, a.grad = torch.from_numpy(gW), torch.from_numpy(ga)
    opt.step()
    alone = _one_step(torchmuon.MuonNS64 if ns64 else torch.optim.Muon, gW, lr=0.05, weight_decay=0.0)
    assert np.array_equal(W.detach().numpy(), alone)
    assert np.array_equal(a.detach().numpy(), -0.05 * ga)
    assert [type(o).__name__ for o in (opt.muon, opt.partner)] == ["MuonNS64" if ns64 else "Muon", "SGD"]


def test_a_run_through_ibverify_is_torchs_own_loop_on_the_two_layer_net():
    """The block chain (Unscale, one float64 torch parameter per block, group lr η_t, torch's step) makes the
    iterates of a plain torch loop of MuonPartition on the net's float64 loss gradient (200 steps). In float64 NS:
    the shipped bfloat16 rounding turns the gradients' last-bit differences into 1e-3 ones."""
    D = netdata.teacher_two_layer(16, 3, seed=2)
    model = models.TwoLayer(3, 6, 2.0)
    spec = to_spec("torch:Muon:weight_decay=0,ns_float64=True+Adam:eps=0", {"lr": 0.05, "lr_decay": 0.8})
    r = engine.run(D, spec, 200, model=model, init_seed=5, checkpoints=[200], engine="reference", warn=False)
    ps = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in r.theta0.items()}
    opt = torchmuon.MuonPartition(list(ps.values()), lr=0.05, muon={"weight_decay": 0.0}, partner="Adam",
                                  partner_kwargs={"eps": 0.0}, ns_float64=True)
    X, y = D.X, D.y
    for t in range(1, 200):   # the record at checkpoint 200 is θ before step 200
        th = {k: p.detach().numpy() for k, p in ps.items()}
        q = y * model.outputs(th, X)
        c = -y * np.exp(-np.logaddexp(0.0, q)) / len(y)   # d/df of the mean logistic loss
        g = model.vjp(th, X, c)
        for k, p in ps.items():
            p.grad = torch.from_numpy(np.ascontiguousarray(g[k]))
        for grp in opt.param_groups:
            grp["lr"] = 0.05 * t ** -0.8
        opt.step()
    for k, p in ps.items():
        ref = np.abs(r.thetas[-1][k]).max()
        assert np.abs(p.detach().numpy() - r.thetas[-1][k]).max() <= 1e-9 * max(1.0, ref), k


def test_names_round_trip_and_the_rows_run_the_block_models_only():
    s = to_spec("torch:Muon:weight_decay=0+Adam:eps=0")
    assert s.name == "torch:Muon(weight_decay=0)+Adam(eps=0)" and s.row.models == ("block",)
    assert to_spec(s.name).name == s.name and to_spec(s.name).user.user.sha256 == s.user.user.sha256
    assert "Muon–Adam hybrid" in s.row.update and "bfloat16" in s.row.update
    s64 = to_spec("torch:Muon:ns_float64=True,weight_decay=0+SGD:momentum=0.9")
    assert s64.name == "torch:Muon(ns_float64=True,weight_decay=0)+SGD(momentum=0.9)"
    assert "float64" in s64.row.update and s64.user.user.sha256 != s.user.user.sha256
    bare = to_spec("torch:Muon")
    assert bare.row.models == ("block",) and "partner" in bare.row.skips["two-layer"]
    assert to_spec("torch:Adam:eps=1e+3").name == "torch:Adam(eps=1000.0)"   # a `+` in a value is no partner
    obj = to_spec(functools.partial(torchmuon.MuonPartition, muon={"weight_decay": 0.0}, partner="Adam",
                                    partner_kwargs={"eps": 0.0}))
    assert obj.name == "torch:Muon(weight_decay=0.0)+Adam(eps=0.0)"
    import pickle

    again = pickle.loads(pickle.dumps(s))
    assert again.name == s.name and again.row.models == ("block",) and again.row.block is not None


@pytest.mark.parametrize("name, words", [
    ("torch:Muon+Muon", "cannot be Muon"),
    ("torch:Muon+Adam:lr=3", "drop its lr= key"),
    ("torch:Muon+Adam:foo=3", "unknown key 'foo' of torch.optim.Adam"),
    ("torch:Muon:bar=1+Adam", "unknown key 'bar' of torch.optim.Muon"),
    ("torch:Adam+SGD", "only torch:Muon takes a partner"),
    ("torch:Muon+SGD+Adam", "one partner only"),
    ("torch:Muon:ns_float64=2", "ns_float64 is True or False"),
])
def test_bad_muon_names_are_one_line(name, words):
    with pytest.raises(IbverifyError, match=words):
        to_spec(name)


def test_a_bare_muon_on_the_two_layer_net_is_one_line_naming_the_partner_syntax(capsys):
    rc = main(["train", "--data", "teacher", "--model", "two-layer", "--optimizer", "torch:Muon", "--steps", "5",
               "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "torch:Muon:weight_decay=0+Adam:eps=0" in err and "a (" in err
    rc = main(["train", "--data", "teacher", "--model", "two-layer", "--optimizer",
               "torch:Muon:weight_decay=0+Adam:eps=0", "--steps", "5", "-q"])
    assert rc == 0


def test_optax_contrib_muon_is_its_own_split_in_float64():
    """optax:contrib.muon: block models only; one step from θ = 0 (nesterov=False, eps=0): W moves by −η·NS5(g_W)
    (optax's quintic iteration in float64 on g_W/‖g_W‖_F; scale 1 for m ≥ d), a by AdamW's first step −η·sign(g_a)."""
    pytest.importorskip("optax")
    spec = to_spec("optax:contrib.muon:eps=0,nesterov=False", {"lr": 0.1, "lr_decay": 0.0})
    assert spec.name == "optax:contrib.muon(eps=0,nesterov=False)" and spec.row.models == ("block",)
    assert "Muon–Adam hybrid" in spec.row.update
    from ibverify.optim.logframe import Scaled
    from ibverify.optim.optimizers import make_optimizer

    rng = np.random.default_rng(3)
    theta = {"W": np.zeros((6, 3)), "a": np.zeros(6)}
    g = {"W": rng.standard_normal((6, 3)), "a": rng.standard_normal(6)}
    opt = make_optimizer(spec, params=theta, L=3.0, warn=False)
    opt.init(theta)
    new = opt.step(theta, Scaled(g, 0.0))
    X = g["W"].T / np.linalg.norm(g["W"])          # optax orthogonalizes the wide orientation (3 × 6)
    for _ in range(5):
        A = X @ X.T
        X = 3.4445 * X + (-4.775 * A + 2.0315 * A @ A) @ X
    assert np.abs(new["W"] - (-0.1 * X.T)).max() <= 1e-12
    assert np.abs(new["a"] - (-0.1 * np.sign(g["a"]))).max() <= 1e-12


def test_bias_names_the_partner_syntax_for_a_bare_muon_on_the_two_layer_net(capsys):
    rc = main(["bias", "--optimizer", "torch:Muon", "--model", "two-layer", "--tier", "smoke", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "runs matrix" in err and "torch:Muon:weight_decay=0+Adam:eps=0" in err
