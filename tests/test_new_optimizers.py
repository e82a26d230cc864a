"""The optimizers of issue 22 (steepest-l1, lion, adagrad, adamw, shampoo): values, not shapes.

Hand-computed steps on a 3-sample dataset against the vector chains and the block chains; the mpmath oracle against
the float64 reference; the block (log-frame) and vector implementations of one linear model against each other;
AdamW against Adam; Shampoo against the polar factor; and, driven by the table's rows, a short run of every
optimizer that moves its normalized margins toward its own geometry's max margin, further than toward the rivals'
(the row's `skips["geometry"]`, or an adaptive geometry, skips it with its reason).
"""

import numpy as np
import pytest

from ibverify import IbverifyError, geometry as geo, models
from ibverify.engine import run
from ibverify.engine.polar import polar_block
from ibverify.engine.vector import iterate_chain
from ibverify.geometry.base import polar
from ibverify.optim import OptimizerSpec
from ibverify.optim.backend import Float64
from ibverify.optim.logframe import Scaled, shampoo_direction
from ibverify.optim.optimizers import make_optimizer
from ibverify.optim.table import ROWS, info
from ibverify.optim.transforms import steepest_l1
from ibverify.oracles.kkt import certified_max_margin
from ibverify.oracles.maxmargin import max_margin, normalized_margin

NEW = ("steepest-l1", "lion", "adagrad", "adamw", "shampoo")
VECTOR_NEW = tuple(n for n in NEW if "vector" in info(n).models)
# label-folded rows z_i = y_i x_i: the ℓ1, ℓ2 and ℓ∞ max-margin directions differ (e1, (.83, .10, .55), (1, 1, 1)/1;
# each geometry's optimum loses ≥ 15 % of another geometry's margin)
Z = np.array([[0.846, 0.822, 0.33], [1.803, 0.905, 0.446], [1.037, 0.581, 0.365], [0.794, 0.028, 0.547]])
Z3 = Z[:3]


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def grad(w, Zb=Z3):
    """Mean logistic-loss gradient of the linear model: −(1/n) Σ σ(−z_i·w) z_i."""
    return -(sigmoid(-(Zb @ w))[:, None] * Zb).mean(axis=0)


def chain_steps(name, k, **kw):
    """The first k iterates (and the final state) of the float64 vector chain, full batch on Z3."""
    spec = OptimizerSpec(name, **kw).resolved(len(Z3))
    out = []
    for t, w, _, state in iterate_chain(Z3, spec, Float64()):
        out.append(w.copy())
        if t == k:
            return spec, out, state


def eta(spec, t):  # t = 1, 2, ...
    return spec.lr * t ** (-spec.lr_decay)


# ------------------------------------------------------------------------------------ hand-computed steps

def test_steepest_l1_moves_exactly_the_coordinate_of_largest_gradient():
    spec, ws, _ = chain_steps("steepest-l1", 3)
    w = np.zeros(3)
    for t, got in enumerate(ws, start=1):
        g = grad(w)
        i = int(np.argmax(np.abs(g)))
        step = np.zeros(3)
        step[i] = -eta(spec, t) * np.sign(g[i])
        np.testing.assert_array_equal(np.flatnonzero(got - w), [i])     # one coordinate moves
        np.testing.assert_allclose(got, w + step, rtol=1e-15, atol=0)
        w = got


def test_steepest_l1_splits_exact_ties_equally():
    u, _ = steepest_l1(Float64()).update(np.array([1.0, -1.0, 0.5, -0.25]), ())
    np.testing.assert_array_equal(u, [0.5, -0.5, 0.0, 0.0])
    u, _ = steepest_l1(Float64()).update(np.zeros(3), ())
    np.testing.assert_array_equal(u, np.zeros(3))
    d = geo.get("l1").lmo({"a": np.array([0.0, -2.0]), "b": np.array([[2.0, 1.0]])})   # jointly over blocks
    np.testing.assert_array_equal(d["a"], [0.0, 0.5])
    np.testing.assert_array_equal(d["b"], [[-0.5, 0.0]])


def test_l1_geometry_certifies_the_l1_max_margin_and_its_kkt_point():
    from ibverify.oracles.kkt import kkt_residual

    L1, m, y = geo.get("l1"), models.Linear(3), np.ones(len(Z))
    th = {"w": np.array([0.5, -2.0, 1.0])}
    assert L1.norm(th) == 3.5 and L1.dual_norm(th) == 2.0 and L1.in_subdifferential(th, {"w": 3.5 * np.sign(th["w"])})
    theta, cert = certified_max_margin(L1, m, Z, y)
    assert cert.ok and abs(L1.margin(m, theta, Z, y) / max_margin(Z, "l1").margin - 1) < 1e-6
    assert kkt_residual(L1, m, theta, Z, y).residual < 1e-6
    l2 = {"w": max_margin(Z, "l2").direction}
    assert kkt_residual(L1, m, l2, Z, y).residual > 1e-2               # another geometry's optimum is no ℓ1 KKT point


def test_lion_steps_are_plus_minus_eta_with_its_two_betas():
    b1, b2 = 0.9, 0.99
    spec, ws, m_final = chain_steps("lion", 4)
    assert (spec.beta1, spec.beta2) == (b1, b2)                         # Chen et al. 2023's defaults
    w, m = np.zeros(3), np.zeros(3)
    for t, got in enumerate(ws, start=1):
        g = grad(w)
        c = b1 * m + (1 - b1) * g
        np.testing.assert_allclose(np.abs(got - w), eta(spec, t), rtol=1e-14)   # every entry ±η_t
        np.testing.assert_allclose(got, w - eta(spec, t) * np.sign(c), rtol=1e-15)
        m = b2 * m + (1 - b2) * g
        w = got
    np.testing.assert_allclose(m_final[0], m, rtol=1e-14)


def test_adagrad_accumulates_squared_gradients():
    spec, ws, state = chain_steps("adagrad", 4, eps=1e-3)
    w, v = np.zeros(3), np.zeros(3)
    for t, got in enumerate(ws, start=1):
        g = grad(w)
        v = v + g * g
        np.testing.assert_allclose(got, w - eta(spec, t) * g / (np.sqrt(v) + 1e-3), rtol=1e-14)
        w = got
    np.testing.assert_allclose(state[0], v, rtol=1e-14)                # the accumulator: Σ g_t²
    _, ws0, _ = chain_steps("adagrad", 1)                               # ε = 0: the first step is a sign step
    np.testing.assert_allclose(ws0[0], -0.1 * np.sign(grad(np.zeros(3))), rtol=1e-15)


def test_adamw_with_zero_decay_is_adam_bit_for_bit_and_with_decay_adds_eta_lambda_theta():
    kw = dict(batch_size=3, bias_correction=True, eps=0.0)
    adam = run(Z3, OptimizerSpec("adam", **kw), 200, checkpoints=[1, 7, 200], engine="reference")
    adamw0 = run(Z3, OptimizerSpec("adamw", weight_decay=0.0), 200, checkpoints=[1, 7, 200], engine="reference")
    np.testing.assert_array_equal(adam.ws, adamw0.ws)
    compiled = run(Z3, OptimizerSpec("adamw", weight_decay=0.0), 200, checkpoints=[1, 7, 200])
    assert compiled.engine == "compiled"                                # its own kernel: equal to rounding
    np.testing.assert_allclose(compiled.ws, adam.ws, rtol=1e-12, atol=0)
    # one update from the same state and gradient: u_adamw − u_adam = −η_t λ w exactly (up to one rounding)
    from ibverify.optim import build
    lam, xp = 0.05, Float64()
    sa, sw = OptimizerSpec("adam", **kw).resolved(3), OptimizerSpec("adamw", weight_decay=lam).resolved(3)
    A, W = build(sa, xp), build(sw, xp)
    w = np.array([0.7, -0.4, 1.3])
    stA, stW = A.init(w), W.init(w)
    for t in range(5):
        g = grad(w)
        ua, stA = A.update(g, stA, w)
        uw, stW = W.update(g, stW, w)
        np.testing.assert_allclose(uw - ua, -eta(sw, t + 1) * lam * w, rtol=1e-12, atol=1e-16)
        w = w + uw
    # the block chain: the same identity on named blocks
    th = {"W": np.array([[0.3, -0.2], [0.1, 0.4]]), "a": np.array([0.5, -0.1])}
    g = Scaled({"W": np.array([[1.0, -2.0], [0.5, 0.25]]), "a": np.array([-1.0, 3.0])}, -3.0)
    oa = make_optimizer("adam", lr=0.2, lr_decay=0.5, params=th)
    ow = make_optimizer("adamw", lr=0.2, lr_decay=0.5, weight_decay=lam, params=th)
    o0 = make_optimizer("adamw", lr=0.2, lr_decay=0.5, weight_decay=0.0, params=th)
    for o in (oa, ow, o0):
        o.init(th)
    for t in range(1, 4):
        ua, uw, u0 = oa.update(g, th), ow.update(g, th), o0.update(g, th)
        for k in th:
            np.testing.assert_array_equal(u0[k], ua[k])
            np.testing.assert_allclose(uw[k] - ua[k], 0.2 * t ** -0.5 * lam * th[k], rtol=1e-12, atol=1e-16)


def test_weight_decay_is_adamws_knob_only():
    assert OptimizerSpec("adamw").weight_decay == 0.01 and OptimizerSpec("adam").weight_decay == 0.0
    with pytest.raises(IbverifyError, match="no weight decay"):
        OptimizerSpec("adam", weight_decay=0.1).resolved(3)
    with pytest.raises(IbverifyError, match="weight_decay must be"):
        OptimizerSpec("adamw", weight_decay=-1.0).for_block(1.0)


# ---------------------------------------------------------------------------------------------- shampoo

def _orth(rng, n):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


@pytest.mark.parametrize("shape,rank", [((3, 4), 3), ((5, 2), 2), ((4, 4), 2), ((1, 6), 1)])
def test_shampoo_step_is_the_polar_factor_and_orthogonally_equivariant(shape, rank):
    rng = np.random.default_rng(sum(shape) + rank)
    G = rng.standard_normal((shape[0], rank)) @ rng.standard_normal((rank, shape[1]))
    D = shampoo_direction(G)
    np.testing.assert_allclose(D, polar(G), atol=1e-10)
    jac = np.empty(G.size)
    polar_block(G.ravel().copy(), 0, shape[0], shape[1], jac, 1e-12)      # the compiled engine's polar factor
    np.testing.assert_allclose(D, jac.reshape(shape), atol=1e-10)
    assert np.linalg.matrix_rank(D) == rank
    np.testing.assert_allclose(np.linalg.svd(D, compute_uv=False)[:rank], 1.0, atol=1e-10)
    U, V = _orth(rng, shape[0]), _orth(rng, shape[1])
    np.testing.assert_allclose(shampoo_direction(U @ G @ V), U @ D @ V, atol=1e-10)
    np.testing.assert_allclose(shampoo_direction(1e-200 * G), D, atol=1e-10)            # scale-free
    opt = make_optimizer("shampoo", lr_decay=0.5, params={"W": np.zeros(shape)})
    opt.init({"W": np.zeros(shape)})
    u1 = opt.update(Scaled({"W": G}, -500.0))                               # θ ← θ − η_1 polar(G), η_1 = 0.3
    np.testing.assert_allclose(u1["W"], 0.3 * polar(G), atol=1e-10)
    assert np.array_equal(shampoo_direction(np.zeros(shape)), np.zeros(shape))


# ------------------------------------------------------------------ implementations against each other

@pytest.mark.parametrize("name", VECTOR_NEW)
def test_mpmath_oracle_agrees_with_the_float64_chain(name):
    spec = OptimizerSpec(name, eps=1e-3 if name == "adagrad" else None)
    a = run(Z, spec, 30, checkpoints=[1, 5, 30], engine="reference")
    b = run(Z, spec, 30, checkpoints=[1, 5, 30], engine="mpmath", dps=40)
    assert b.engine == "mpmath"
    np.testing.assert_allclose(a.ws, b.ws, rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", VECTOR_NEW)
def test_block_log_frame_chain_equals_the_vector_chain_on_the_linear_model(name):
    """Full batch, w0 = 0, ε = 0: every update is invariant to the gradient's scale, so the block chain (sum loss,
    log frame) and the vector chain (mean loss, plain float64) make the same steps."""
    vec = run(Z, OptimizerSpec(name), 300, checkpoints=[1, 10, 300])
    assert vec.engine == "compiled"                                     # the engine's choice: the vector kernels
    # the block run records θ before step t (checkpoint t: after t − 1 steps), the vector run w after step t
    blk = run((Z, np.ones(len(Z))), OptimizerSpec(name, lr_decay=0.5), 301, model=models.Linear(3),
              checkpoints=[2, 11, 301])
    assert blk.engine == "reference"
    got = np.array([th["w"] for th in blk.thetas])
    np.testing.assert_allclose(got, vec.ws, rtol=1e-10, atol=1e-14)
    assert got.shape == (3, 3) and blk.diverged is False


@pytest.mark.parametrize("name", ["adagrad", "adamw"])
def test_block_eps_term_in_the_log_frame_matches_the_vector_chain(name):
    """With ε > 0 the update is not scale-free: the block loss is the sum over the n samples, the vector loss their
    mean, so block ε = n·ε_vector gives the same steps (exercises the log frame's ε e^{−S} term)."""
    n = len(Z)
    vec = run(Z, OptimizerSpec(name, eps=1e-2), 200, checkpoints=[1, 200])
    blk = run((Z, np.ones(n)), OptimizerSpec(name, eps=n * 1e-2, lr_decay=0.5), 201, model=models.Linear(3),
              checkpoints=[2, 201])
    np.testing.assert_allclose(np.array([th["w"] for th in blk.thetas]), vec.ws, rtol=1e-10, atol=1e-14)
    far = run(Z, OptimizerSpec(name, eps=1e-2 * n), 200, checkpoints=[1, 200])
    assert not np.allclose(far.ws, vec.ws, rtol=1e-6)                  # ε matters here: the test can fail


def test_rows_without_a_compiled_kernel_refuse_it_by_name():
    with pytest.raises(IbverifyError, match="no compiled"):                # block model: no compiled kernel yet
        run((Z, np.ones(len(Z))), OptimizerSpec("lion"), 10, model=models.Linear(3), engine="compiled")
    with pytest.raises(IbverifyError, match="block models only"):
        run(Z, OptimizerSpec("shampoo"), 10)


# --------------------------------------------------- generic: each row moves toward its own geometry

NORMS = ("l1", "l2", "linf")
SHORT = {"beta1": 0.5, "beta2": 0.9}        # short moment memory: the limit shows within 3000 steps


def _why_not(row, model: str) -> str | None:
    why = row.skips.get("geometry") or row.skips.get(f"geometry:{model}")
    if why:
        return why
    if row.geometry == "adaptive":
        return "adaptive: no fixed geometry (its limit depends on the data, paper 1)"
    return None


def _cases(model: str, keep) -> list:
    return [pytest.param(r.name, marks=pytest.mark.skip(reason=_why_not(r, model)) if _why_not(r, model) else ())
            for r in ROWS if model in r.models and keep(r)]


VECTOR_CASES = _cases("vector", lambda r: True)


@pytest.fixture(scope="module")
def optima():
    return {p: max_margin(Z, p) for p in NORMS}


@pytest.mark.parametrize("name", VECTOR_CASES)
def test_vector_row_converges_toward_its_own_geometry(name, optima):
    row = info(name)
    spec = OptimizerSpec(name, **{k: v for k, v in SHORT.items() if k in row.moments})
    r = run(Z, spec, 3000, checkpoints=[3000], engine="reference")
    gap = {p: 1.0 - normalized_margin(Z, r.ws[-1], p) / optima[p].margin for p in NORMS}
    own = gap[row.geometry]
    rivals = [gap[p] for p in NORMS if p != row.geometry]
    assert own < 0.1 and own < 0.5 * min(rivals), gap


MATRIX_CASES = _cases("block", lambda r: r.geometry == "spectral")


def matrix_data():
    """12 samples of 3×4 matrices labelled by a random teacher: the spectral and Frobenius optima differ (each loses
    ≥ 12 % of the other's margin)."""
    rng = np.random.default_rng(2)
    W = rng.standard_normal((3, 4))
    X = rng.standard_normal((12, 3, 4))
    return X, np.sign(np.einsum("nij,ij->n", X, W))


@pytest.mark.parametrize("name", MATRIX_CASES)
def test_spectral_rows_converge_toward_the_spectral_max_margin_on_matrix_data(name):
    X, y = matrix_data()
    m = models.MatrixLinear(3, 4)
    G = {"spectral": geo.Spectral(), "l2": geo.L2()}
    gamma = {k: g.margin(m, certified_max_margin(g, m, X, y)[0], X, y) for k, g in G.items()}
    r = run((X, y), OptimizerSpec(name, lr_decay=0.5), 2000, model=m, theta0={"W": np.zeros((3, 4))},
            checkpoints=[2000], engine="reference")
    gap = {k: 1.0 - G[k].margin(m, r.thetas[-1], X, y) / gamma[k] for k in G}
    assert gap["spectral"] < 0.05 and gap["spectral"] < 0.5 * gap["l2"], gap


LINEAR_BLOCK_CASES = _cases("block", lambda r: r.geometry in (*NORMS, "adaptive"))


@pytest.mark.parametrize("name", LINEAR_BLOCK_CASES)
def test_block_row_converges_toward_its_own_geometry_on_the_linear_model(name, optima):
    row = info(name)
    spec = OptimizerSpec(name, **{k: v for k, v in SHORT.items() if k in row.moments})
    r = run((Z, np.ones(len(Z))), spec, 3000, model=models.Linear(3), checkpoints=[3000], engine="reference")
    w = r.thetas[-1]["w"]
    gap = {p: 1.0 - normalized_margin(Z, w, p) / optima[p].margin for p in NORMS}
    own = gap[row.geometry]
    assert own < 0.1 and own < 0.5 * min(gap[p] for p in NORMS if p != row.geometry), gap


# ------------------------------------------------------------------------------------------ command line

def test_train_runs_the_new_rows_on_the_linear_model_and_on_a_matrix_model(tmp_path, capsys):
    import json

    from ibverify.cli import main

    path = tmp_path / "z.npz"
    np.savez(path, X=Z, y=np.ones(len(Z)))
    assert main(["train", "--data", str(path), "--optimizer", "lion", "--steps", "200", "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine"] == "compiled" and out["optimizer"]["beta2"] == 0.99
    np.testing.assert_allclose(out["w"], run(Z, OptimizerSpec("lion"), 200).ws[-1], rtol=1e-15)
    assert main(["train", "--data", str(path), "--optimizer", "adamw", "--weight-decay", "0.2", "--steps", "20",
                 "--json", "-q", "--no-compare"]) == 0
    assert json.loads(capsys.readouterr().out)["optimizer"]["weight_decay"] == 0.2
    X, y = matrix_data()
    np.savez(tmp_path / "m.npz", X=X, y=y)
    assert main(["train", "--data", str(tmp_path / "m.npz"), "--model", "matrix-linear", "--optimizer", "shampoo",
                 "--steps", "50", "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["geometry"] == "spectral" and out["optimizer"] == "shampoo"
    assert main(["train", "--data", "teacher", "--model", "linear", "--optimizer", "adagrad", "--steps", "300",
                 "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)                           # no own geometry is claimed for adagrad
    assert out["geometry"] == "adaptive" and (out["kkt"] is None or out["kkt"]["geometry"] == "l2")
    assert main(["train", "--data", str(path), "--optimizer", "adam", "--weight-decay", "0.2", "-q"]) == 2
    assert "no weight decay" in capsys.readouterr().err
