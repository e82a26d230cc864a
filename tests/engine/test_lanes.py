"""Sweeps in lanes: every lane of `run_lanes` is bit-identical to its single `run()` (iterates at
every checkpoint and diagnostics), across data, β, ε, loss, batch size, sampling order and seeds,
including lanes that shift frames and memoryless lanes in their own frames."""

from __future__ import annotations

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.data import gr
from ibverify.engine import kernels as K
from ibverify.engine import run, run_lanes
from ibverify.optim import OptimizerSpec

T = 3000


def assert_lanes_match(Zs, specs):
    lanes = run_lanes(Zs, specs, T, checkpoints=5)
    assert len(lanes) == len(specs)
    for Z, spec, lane in zip(Zs, specs, lanes, strict=True):
        one = run(Z, spec, T, checkpoints=5)
        assert np.array_equal(lane.checkpoints, one.checkpoints)
        assert np.array_equal(lane.ws, one.ws), spec
        assert lane.diagnostics == one.diagnostics, spec
    return lanes


def test_batch_one_lanes_bit_identical():
    Zs = [gr(5, 7, np.random.default_rng(s)).Z * scale for s, scale in ((3, 50.0), (4, 1.0), (5, 1.0), (6, 10.0))]
    specs = [OptimizerSpec("inc-adam", lr=1.0, beta1=0.3, beta2=0.5),  # frame shifts past underflow
             OptimizerSpec("inc-adam"),
             OptimizerSpec("inc-adam", eps=1e-8, bias_correction=True),
             OptimizerSpec("inc-adam", beta1=0.0, beta2=0.0, loss="exponential")]
    lanes = assert_lanes_match(Zs, specs)
    assert lanes[0].diagnostics["frame_shifts"] > 0 and lanes[3].diagnostics["frame_shifts"] > 0
    assert len({lane.w.tobytes() for lane in lanes}) == 4  # the lanes really differ


def test_minibatch_lanes_with_seeds_and_own_frames():
    spread = np.array([[3.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 1.0], [2.0, 0.0, 1.0], [0.0, 1.0, 2.0]])
    Zs = [gr(5, 3, np.random.default_rng(3)).Z * 50.0, spread, gr(5, 3, np.random.default_rng(1)).Z]
    specs = [OptimizerSpec("adam", batch_size=2, order="reshuffle", seed=1, beta2=0.9),
             OptimizerSpec("adam", batch_size=2, order="reshuffle", seed=2, beta1=0.0, beta2=0.0, lr=10.0),
             OptimizerSpec("adam", batch_size=2, order="replacement", seed=3, beta2=0.99)]
    assert_lanes_match(Zs, specs)


@pytest.mark.parametrize("b", [1, 2])
def test_plain_lanes_from_plain_min_d_bit_identical(b):
    """From d = kernels.PLAIN_MIN_D a lane at ε = 0 without bias correction takes the plain lazy loop
    (kernels._lazy_step_plain); beside it a lane with ε > 0 does not."""
    Zs = [gr(6, K.PLAIN_MIN_D, np.random.default_rng(s)).Z for s in (7, 8, 9)]
    order = "cyclic" if b == 1 else "reshuffle"
    specs = [OptimizerSpec("adam", batch_size=b, order=order, seed=1, eps=0.0, bias_correction=False),
             OptimizerSpec("adam", batch_size=b, order=order, seed=2, eps=0.0, bias_correction=False, beta2=0.9),
             OptimizerSpec("adam", batch_size=b, order=order, seed=3, eps=1e-3, bias_correction=True)]
    lanes = assert_lanes_match(Zs, specs)
    assert len({lane.w.tobytes() for lane in lanes}) == 3


def test_one_dataset_for_all_lanes_and_fallback_for_other_optimizers():
    Z = gr(6, 4, np.random.default_rng(0)).Z
    assert_lanes_match([Z] * 3, [OptimizerSpec("inc-adam", beta2=b2) for b2 in (0.9, 0.99, 0.999)])
    lanes = run_lanes(Z, [OptimizerSpec("signum"), OptimizerSpec("inc-adam")], 500, checkpoints=3)
    assert np.array_equal(lanes[0].ws, run(Z, OptimizerSpec("signum"), 500, checkpoints=3).ws)


def test_lanes_need_one_shape():
    with pytest.raises(IbverifyError, match="one shape"):
        run_lanes([np.ones((3, 2)), np.ones((4, 2))], [OptimizerSpec("inc-adam")] * 2, 10)
