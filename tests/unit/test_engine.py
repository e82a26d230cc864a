"""Engines agree: compiled log-frame kernels vs the float64 reference chain (before underflow).
Past underflow, agreement with the mpmath chain is the registry claim ibverify.log-frame-exact."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibverify.data import gr
from ibverify.strategies.linear import gaussian_data, gr_data
from ibverify.engine import kernels as K
from ibverify.engine import log_checkpoints, run
from ibverify.optim import OptimizerSpec, Sampler
from ibverify.optim.table import info, names

NAMES = tuple(n for n in names("vector") if "compiled" in info(n).implementations["vector"])  # kernel vs chain


def rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("loss", ["logistic", "exponential"])
def test_compiled_matches_reference(name, loss, rng):
    Z = gr(5, 7, rng).Z
    for kw in ({}, {"eps": 1e-3, "bias_correction": True}):
        spec = OptimizerSpec(name, loss=loss, beta1=0.8, beta2=0.95, batch_size=2 if name == "adam" else None,
                             order="reshuffle" if name == "adam" else "cyclic", **kw)
        a = run(Z, spec, 400, checkpoints=6, engine="compiled")
        b = run(Z, spec, 400, checkpoints=6, engine="reference")
        np.testing.assert_array_equal(a.checkpoints, b.checkpoints)
        assert rel(a.ws, b.ws) <= 1e-12, (name, loss, kw)


@settings(max_examples=40)
@given(data=st.one_of(gr_data(), gaussian_data()), name=st.sampled_from(NAMES), b=st.integers(1, 10),
       order=st.sampled_from(["cyclic", "reshuffle", "replacement"]), seed=st.integers(0, 100))
def test_compiled_matches_reference_property(data, name, b, order, seed):
    """Short horizon: some drawn trajectories are chaotic (e.g. Det-Adam on N = 3, d = 2 GR data, where a
    gradient coordinate keeps changing sign), so 1-ulp differences in the order of operations grow like
    e^{0.2 t}; over 40 steps agreement to 1e-12 tests the update itself, not the Lyapunov exponent."""
    Z = data.dataset.Z
    spec = OptimizerSpec(name, batch_size=min(b, len(Z)) if info(name).batch == "any" else None,
                         order=order, seed=seed, beta1=0.5, beta2=0.9)
    a = run(Z, spec, 40, checkpoints=4, engine="compiled")
    r = run(Z, spec, 40, checkpoints=4, engine="reference")
    assert rel(a.ws, r.ws) <= 1e-12


@pytest.mark.parametrize("variant", sorted(K.MOMENT_CHUNKS), ids=lambda v: "adam={},plain={},single={}".format(*v))
@pytest.mark.parametrize("loss", ["logistic", "exponential"])
def test_every_moment_kernel_variant_matches_reference(variant, loss):
    """Each variant of the Adam/Signum chunk kernel (kernels.MOMENT_CHUNKS: batch size 1 or any; the plain lazy loop
    from d = PLAIN_MIN_D at ε = 0 without bias correction) is held to the reference chain at 1e-12, and is the
    variant the run took (its dispatcher has a signature: compiled or loaded from the cache by this run)."""
    adam, plain, single = variant
    d = K.PLAIN_MIN_D if plain else 7
    Z = gr(6, d, np.random.default_rng(5)).Z
    knobs = [{"eps": 0.0, "bias_correction": False}] + ([] if plain else [{"eps": 1e-3, "bias_correction": True}])
    for kw in knobs:
        spec = OptimizerSpec("adam" if adam else "signum", loss=loss, beta1=0.8, beta2=0.95,
                             batch_size=1 if single else 3, order="reshuffle", **kw)
        a = run(Z, spec, 400, checkpoints=6, engine="compiled")
        b = run(Z, spec, 400, checkpoints=6, engine="reference")
        assert K.MOMENT_CHUNKS[variant].signatures, variant
        assert rel(a.ws[-1], a.ws[0]) > 1.0            # a run that moved
        assert rel(a.ws, b.ws) <= 1e-12, (variant, loss, kw)


# Agreement with the mpmath oracle past underflow, for every optimizer family, is the registry claim
# ibverify.log-frame-exact (claims/), with its control ibverify.control.naive-float64-exact.


def test_naive_float64_freeze_is_detected_and_log_frame_continues():
    """Measured: naive per-sample Adam freezes once g² underflows (margin ≈ 372)."""
    Z = gr(4, 5, np.random.default_rng(3)).Z * 50
    spec = OptimizerSpec("inc-adam", lr=1.0, beta1=0.0, beta2=0.5)
    naive = run(Z, spec, 20000, checkpoints=3, log_frame=False)
    framed = run(Z, spec, 20000, checkpoints=3)
    assert naive.diagnostics["frozen"] and naive.diagnostics["stalled_streak"] >= 1000
    assert not framed.diagnostics["frozen"]
    assert np.min(Z @ framed.w) > 2 * np.min(Z @ naive.w)


def test_gd_step_underflow_is_reported():
    Z = gr(4, 5, np.random.default_rng(3)).Z * 50
    r = run(Z, OptimizerSpec("gd", lr=1.0), 3000)
    assert r.diagnostics["frozen"]


def test_log_checkpoints():
    c = log_checkpoints(10**6, 7)
    assert c[0] == 1 and c[-1] == 10**6 and np.all(np.diff(c) > 0)
    np.testing.assert_allclose(np.diff(np.log10(c)), 1.0, atol=0.01)


def test_samplers():
    cyc = Sampler(5, 2, "cyclic").next(5)
    np.testing.assert_array_equal(cyc.ravel(), [0, 1, 2, 3, 4, 0, 1, 2, 3, 4])
    rs = Sampler(6, 1, "reshuffle", seed=4).next(18).ravel()
    for e in range(3):
        assert sorted(rs[6 * e:6 * e + 6]) == list(range(6))  # each epoch is a permutation
    assert not np.array_equal(rs[:6], rs[6:12])
    a, b = Sampler(6, 3, "replacement", seed=1), Sampler(6, 3, "replacement", seed=1)
    np.testing.assert_array_equal(a.next(10), b.next(10))
    s = Sampler(7, 2, "reshuffle", seed=9)
    s.next(3)
    st_ = s.state()
    x = s.next(20)
    s2 = Sampler(7, 2, "reshuffle", seed=0)
    s2.restore(st_)
    np.testing.assert_array_equal(s2.next(20), x)


def test_mpmath_backend_uses_a_local_context():
    import mpmath

    before = mpmath.mp.prec
    run(gr(3, 2, np.random.default_rng(0)).Z, OptimizerSpec("inc-adam"), 5, engine="mpmath", dps=60)
    assert mpmath.mp.prec == before


def test_stored_state_run_is_the_exact_run_with_a_float64_iterate():
    """Defining property: equal to the exact run where the orbit is stable (to ≈ ulps), and exactly equal to an
    exact run restarted from the float64-rounded iterate of the previous step."""
    from ibverify.checks.numerics import stored_state_run

    Z = gr(4, 5, np.random.default_rng(3)).Z
    spec = OptimizerSpec("det-adam", lr=0.5, beta1=0.0, beta2=0.0, eps=0.0, bias_correction=False)
    cps = np.array([1, 2, 5, 30])
    exact = run(Z, spec, 30, checkpoints=cps, engine="mpmath", dps=40)
    stored = stored_state_run(Z, spec, cps, 40)
    assert rel(stored, exact.ws) <= 1e-14
    # β1 = β2 = 0: the step is the sign of the gradient, so both runs are equal on a float64 grid...
    # ...and the stored run's iterates are float64 numbers whose next step is exact: step 1 equals the exact one
    np.testing.assert_array_equal(stored[0], exact.ws[0])
    # a memory method on the unstable det-Adam orbit of the full tier: the rounding of w alone moves the exact
    # orbit far beyond 1e-12 (the engine's distance there is judged against this, ibverify.log-frame-exact)
    Zs = Z * 50.0
    spec = OptimizerSpec("det-adam", lr=1.0, beta1=0.3, beta2=0.5, eps=0.0, bias_correction=False)
    cps = np.array([1000, 1700])
    ex = run(Zs, spec, 1700, checkpoints=cps, engine="mpmath", dps=40).ws
    st = stored_state_run(Zs, spec, cps, 40)
    d = np.abs(st - ex).max(axis=1) / np.abs(ex).max(axis=1)
    assert d[0] < 1e-14 and d[1] > 1e-8
