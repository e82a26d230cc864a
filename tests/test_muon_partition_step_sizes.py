"""Issue 53 item 6: each block's step size in a Muon partition, as the run applies it. Three steps of the block chain
(`make_optimizer`, the engine's) from θ = 0 under one constant gradient of known SVD G = U diag(2, 0.5) Vᵀ on W and
g_a on a, with η_t = lr · t^(−1/2): then Muon's momentum is a positive multiple of G (its step ∝ the polar factor UVᵀ,
or optax's NS5 of G) and Adam's at ε = 0 is exactly sign(g_a), so every step of every block is known in closed form:

  torch:Muon+Adam       W: −η_t·√max(1, A/B)·UVᵀ (torch's lr adjustment), a: −η_t·sign(g_a)
  optax:contrib.muon    W: −η_t·√max(1, fan_out/fan_in)·NS5(G), a: −η_t·sign(g_a), or −adam_learning_rate·sign(g_a)
  muon-adam (table)     W: −lr_matrix·t^(−1/2)·UVᵀ, a: −lr_vector·t^(−1/2)·sign(g_a); c = lr_vector/lr_matrix

Faults these tests were checked against, each injected by hand (†: it passed the nearest tests before,
tests/test_muon_shipped.py, tests/unit/test_optimizer_table.py, tests/cli/test_small_items_47.py):
  - torchmuon.resolve dropping a Muon `lr=` key, which is the --lr default †;
  - optaxadapt._injected dropping adam_learning_rate (a moves at η_t) †;
  - optaxadapt's step setting adam_learning_rate to η_t with learning_rate †;
  - optimizers.make_optimizer with lr_matrix and lr_vector swapped †;
  - torchmuon.MuonPartition.param_groups holding Muon's group only, or the partner's only (a's, or W's, steps 2 and 3
    at the first lr), torchblock.torch_block setting the lr of param_groups[0] only (test_muon_shipped.py fails too)."""

import numpy as np
import pytest

from ibverify.optim.adapters import to_spec
from ibverify.optim.logframe import Scaled
from ibverify.optim.optimizers import make_optimizer

CUBIC = "ns_float64=True,ns_coefficients=(1.5,-0.5,0.0),ns_steps=60"   # torch's NS in float64 → exactly UVᵀ
STEPS, DECAY = 3, 0.5


def _known(A, B, seed=0):
    """(G, UVᵀ, g_a): G of singular values 2 and 0.5, g_a of length A with no zero entry."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((A, 2)))[0]
    V = np.linalg.qr(rng.standard_normal((B, 2)))[0]
    return U @ np.diag([2.0, 0.5]) @ V.T, U @ V.T, np.array([0.3, -1.2, 0.7, -0.1, 0.9, -0.4])[:A]


def _steps(spec, G, ga):
    """The change of each block at steps 1..STEPS of `spec`'s block chain from θ = 0 under the constant gradient."""
    theta = {"W": np.zeros(G.shape), "a": np.zeros(len(ga))}
    opt = make_optimizer(spec, params=theta, L=2.0, warn=False)
    opt.init(theta)
    out = []
    for _ in range(STEPS):
        new = opt.step(theta, Scaled({"W": G, "a": ga}, 0.0))
        out.append({k: new[k] - theta[k] for k in theta})
        theta = new
    return out


def _check(moves, W_step, a_step):
    """Every step t: W moved by W_step(t), a by a_step(t), each to 1e-12 of its size."""
    for t, d in enumerate(moves, 1):
        assert np.abs(d["W"] - W_step(t)).max() <= 1e-12 * np.abs(W_step(t)).max(), ("W", t)
        assert np.abs(d["a"] - a_step(t)).max() <= 1e-12 * np.abs(a_step(t)).max(), ("a", t)


@pytest.mark.parametrize("muon_key, knobs, lr", [("", {"lr": 0.1}, 0.1),
                                                 ("lr=0.3,", {}, 0.3),              # a Muon lr= key: the default
                                                 ("lr=0.3,", {"lr": 0.1}, 0.1)])    # … which --lr overrides
def test_torch_muon_partition_steps_each_block_at_its_own_eta(muon_key, knobs, lr):
    """torch:Muon+Adam:eps=0 on W (4 × 2: torch's adjustment √2) and a: W at η_t·√2 along UVᵀ, a at η_t."""
    pytest.importorskip("torch")
    G, P, ga = _known(4, 2)
    spec = to_spec(f"torch:Muon:{muon_key}weight_decay=0,{CUBIC}+Adam:eps=0", {**knobs, "lr_decay": DECAY})
    assert spec.lr == lr
    eta = lambda t: lr * t ** -DECAY   # noqa: E731
    _check(_steps(spec, G, ga), lambda t: -eta(t) * np.sqrt(2.0) * P, lambda t: -eta(t) * np.sign(ga))


def _ns5(M):
    """optax's quintic Newton–Schulz (5 steps) on M/‖M‖_F, in its wide orientation, in float64."""
    tall = M.shape[0] > M.shape[1]
    X = (M.T if tall else M) / np.linalg.norm(M)
    for _ in range(5):
        Q = X @ X.T
        X = 3.4445 * X + (-4.775 * Q + 2.0315 * Q @ Q) @ X
    return X.T if tall else X


@pytest.mark.parametrize("shape, scale", [((2, 4), np.sqrt(2.0)), ((4, 2), 1.0)])   # optax: axis 0 is fan_in
@pytest.mark.parametrize("adam_lr", [None, 0.02])
def test_optax_muon_steps_each_block_at_its_own_eta(shape, scale, adam_lr):
    """optax:contrib.muon: W at η_t·√max(1, fan_out/fan_in) along NS5(G); a at η_t, or at adam_learning_rate (a
    constant of its own) where given."""
    pytest.importorskip("optax")
    G, _, ga = _known(*shape)
    extra = "" if adam_lr is None else f",adam_learning_rate={adam_lr}"
    spec = to_spec(f"optax:contrib.muon:eps=0,nesterov=False{extra}", {"lr": 0.1, "lr_decay": DECAY})
    eta = lambda t: 0.1 * t ** -DECAY   # noqa: E731
    eta_a = eta if adam_lr is None else (lambda t: adam_lr)
    _check(_steps(spec, G, ga), lambda t: -eta(t) * scale * _ns5(G), lambda t: -eta_a(t) * np.sign(ga))


def test_the_tables_muon_adam_steps_w_at_lr_matrix_and_a_at_lr_vector():
    """muon-adam: W at lr_matrix·t^(−1/2) along UVᵀ, a at lr_vector·t^(−1/2); its geometry's c = lr_vector/lr_matrix."""
    G, P, ga = _known(4, 2)
    spec = to_spec("muon-adam", {"lr_matrix": 0.2, "lr_vector": 0.05, "lr_decay": DECAY})
    _check(_steps(spec, G, ga), lambda t: -0.2 * t ** -DECAY * P, lambda t: -0.05 * t ** -DECAY * np.sign(ga))
    opt = make_optimizer(spec, params={"W": G, "a": ga}, L=2.0, warn=False)
    assert opt.geometry.c == 0.25 and opt.hyper["lr_matrix"] == 0.2 and opt.hyper["lr_vector"] == 0.05
