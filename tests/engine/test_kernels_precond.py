"""The compiled vector kernel of precond-gd (ibverify.engine.kernels_precond) against the float64 reference chain.

The kernel is driven here as `engine.vector.CompiledState.advance` drives the other kernels (the engine's sampler,
state arrays and chunk call), since the optimizer table does not route precond-gd to it yet: over 3000 steps it
equals `run(..., engine="reference")` to 1e-12 relative for both losses, every batch size and sample order, constant
and decaying steps; the comparison is a test of D (plain GD's kernel on the same data is far off).
"""

import numpy as np
import pytest

from ibverify.data import gr
from ibverify.engine import kernels_precond as KP
from ibverify.engine import run, vector
from ibverify.optim import OptimizerSpec
from ibverify.optim.transforms import precond_diagonal

TOL = 1e-12
STEPS = 3000
BATCHES = [(None, "cyclic"), (1, "cyclic"), (2, "reshuffle"), (3, "replacement")]
KNOBS = [{}, {"lr": 0.1, "lr_decay": 0.0}]  # (lr 0.3, constant: the exponential loss overflows on GR)


def rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def data(kind):
    if kind == "gr":
        return gr(5, 7, np.random.default_rng(0)).Z
    if kind == "one":
        return np.array([[1.0], [0.5], [2.0]])
    Z = np.random.default_rng(1).normal(size=(6, 4))
    return Z * np.sign(Z @ np.array([1.0, 0.5, -0.3, 0.2]))[:, None]  # separable by construction


def compiled(Z, spec, checkpoints, kind=KP.PRECOND):
    """w at the checkpoints from the kernel of `kind`, fed as CompiledState.advance feeds a kernel; the diagnostics."""
    spec = spec.resolved(Z.shape[0])
    st = vector.CompiledState(Z.shape[1], spec, Z.shape[0])
    ws = []
    for c in checkpoints:
        k = int(c - st.t)
        idx, pos = vector.sample_block(st.sampler, k)
        args = (Z, idx, pos, k, st.w, st.m, st.v, st.s, st.t, spec.lr, spec.lr_decay, spec.beta1, spec.beta2,
                spec.eps, spec.bias_correction)
        if kind == KP.PRECOND:
            KP.run_chunk(kind, *args, 0.0, vector.loss_code(spec), True, st.diag)
        else:
            vector.K.run_chunk(kind, *args, vector.loss_code(spec), True, st.diag)
        st.t += k
        ws.append(st.w.copy())
    return np.array(ws), st.diagnostics()


GRID = [(kw, batch, order, loss) for kw in KNOBS for batch, order in BATCHES for loss in ("logistic", "exponential")]


@pytest.mark.parametrize("kw,batch,order,loss", GRID, ids=[f"{kw}-{b}-{o}-{loss}" for kw, b, o, loss in GRID])
def test_compiled_precond_gd_equals_reference_over_3000_steps(kw, batch, order, loss):
    for kind in ("gr", "gauss", "one"):
        Z = data(kind)
        spec = OptimizerSpec("precond-gd", loss=loss, batch_size=batch, order=order, seed=3, **kw)
        ref = run(Z, spec, STEPS, checkpoints=8, engine="reference")
        assert ref.engine == "reference"
        n_before = len(KP.precond_chunk.signatures)
        ws, diag = compiled(Z, spec, ref.checkpoints)
        assert len(KP.precond_chunk.signatures) >= max(n_before, 1)   # the compiled kernel ran
        assert rel(ws, ref.ws) <= TOL, (kind, rel(ws, ref.ws))
        assert np.any(ws[-1] != 0)
        assert diag["stalled_steps"] == ref.diagnostics["stalled_steps"] == 0


def test_the_comparison_sees_the_diagonal():
    """The control: GD's kernel (D = 1) on the same run is far from precond-gd's reference; D is not ≡ 1 there."""
    Z = data("gr")
    assert precond_diagonal(Z.shape[1]).min() == pytest.approx(0.1)
    spec = OptimizerSpec("precond-gd", lr=1.0, lr_decay=0.0)
    ref = run(Z, spec, STEPS, checkpoints=8, engine="reference")
    ws, _ = compiled(Z, spec, ref.checkpoints)
    gd, _ = compiled(Z, spec, ref.checkpoints, kind=vector.K.GD)
    assert rel(ws, ref.ws) <= TOL < 1e-3 < rel(gd, ref.ws)


def test_the_step_underflows_as_the_reference_does():
    """Margins past ≈ 745 (e^{−margin} = 0 in float64): both engines stop moving (the step is 0 in float64); the
    kernel counts the frozen steps as stalled (its relative gradient is nonzero), the reference sees g = 0."""
    Z = gr(4, 5, np.random.default_rng(3)).Z * 50
    spec = OptimizerSpec("precond-gd", lr=1.0, lr_decay=0.0, loss="exponential")
    ref = run(Z, spec, 400, checkpoints=[1, 10, 100, 400], engine="reference")
    ws, diag = compiled(Z, spec, ref.checkpoints)
    assert rel(ws, ref.ws) <= TOL
    np.testing.assert_array_equal(ws[-1], ws[-2])                       # frozen: the true step is 0
    np.testing.assert_array_equal(ref.ws[-1], ref.ws[-2])
    assert diag["stalled_steps"] == diag["stalled_streak"] == 399   # every step after the first


def test_another_kind_is_refused():
    Z = data("gauss")
    w = np.zeros(4)
    with pytest.raises(ValueError, match="no kernel of kind 2"):
        KP.run_chunk(2, Z, np.empty((0, 6), np.int64), 0, 1, w, w, w, w, 0, 0.1, 0.5, 0.9, 0.999, 0.0, False, 0.0,
                     0, True, np.zeros(4, np.int64))
