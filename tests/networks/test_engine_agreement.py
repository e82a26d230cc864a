"""The compiled network engine (ibverify.engine.network) against the numpy reference, step by step.

Both engines run the same optimizer from the same θ0 for 3000 steps (10⁴ where a run separates later); every
recorded iterate (log-spaced and every 1000 steps) must agree to 1e−12 relative, and so must the run diagnostics.
Configurations: a two-layer ReLU² net, a ReLU net, a deep linear net (K = 3), a three-layer ReLU² net (two matrices
and a vector), the linear model and the matrix-linear model, logistic and exponential loss. (Muon-type runs can be
chaotic where the momentum's smallest singular value chatters near 0: there the reference itself moves by 1e−4 when
θ0 moves by one ulp, so no engine can agree; likewise Adam with β2 = 0.99 on these sets, which a one-ulp change of
the data moves by 2e−6 by step 10⁴. These configurations are not chaotic: Adam runs with β2 = 0.999. The deep
claims' q = 1.25 is: its test below allows for the reference's own one-ulp sensitivity.)
"""

import warnings

import numpy as np
import pytest

from ibverify import IbverifyError
from ibverify.data import netdata as datasets
from ibverify import models
from ibverify.optim import logframe as optim
from ibverify.optim.optimizers import make_optimizer
from ibverify.engine import block as train
from ibverify.optim.table import ROWS

STEPS = 3000   # past 64-step renormalisations, Adam's bias correction (1 − 0.999³⁰⁰⁰ = 0.95) and 1000-step checkpoints
LONGER = {("deep-relu", "momentum-gd"): 10_000}   # separates the data only at ≈ 8000 steps


def _cps(steps):
    return sorted(set(train.log_checkpoints(steps, 12).tolist()) | set(range(1000, steps + 1, 1000)))


CPS = _cps(STEPS)
TOL = 1e-12


def _setup(kind):
    data = datasets.make_data("teacher", n=12, d=6, seed=0)
    if kind in ("wide", "wide-relu"):   # n·d·m = 2880 ≥ BLAS_MIN_WORK: the BLAS gradient (the others: the loops)
        data = datasets.make_data("teacher", n=30, d=6, seed=0)
        model = models.TwoLayer(6, 16, 2.0 if kind == "wide" else 1.0)
    elif kind == "two-layer":
        model = models.TwoLayer(6, 4, 2.0)
    elif kind == "relu":
        model = models.TwoLayer(6, 4, 1.0)
    elif kind == "deep":
        model = models.DeepLinear(6, (4, 3))
    elif kind == "deep-relu":
        model = models.DeepReLU(6, (4, 3), 2.0)
    elif kind == "linear":
        model = models.Linear(6)
    else:
        rng = np.random.default_rng(3)
        W = rng.standard_normal((3, 4))
        X = rng.standard_normal((12, 3, 4))
        y = np.sign(np.einsum("nij,ij->n", X, W))
        return models.MatrixLinear(3, 4), X, y, {"W": np.zeros((3, 4))}
    theta0 = (model.init(np.random.default_rng(0), 0.5) if model.L > 1
              else {k: np.zeros(s) for k, s in model.blocks.items()})
    return model, data.X, data.y, theta0


# every block optimizer of the table with a compiled kernel on the two-layer net (but those its row skips there), then
# other models
CASES = ([("two-layer", r.name, "logistic") for r in ROWS
          if "compiled" in r.implementations.get("block", ()) and "two-layer" not in r.skips]
         + [("relu", o, "logistic") for o in ("signum", "adam")]
         + [("deep", o, "logistic") for o in ("momentum-gd", "adam", "nsd-msp")]
         + [("deep-relu", o, "logistic") for o in ("momentum-gd", "signum", "muon", "adam", "muon-signum")]
         + [("linear", o, "exponential") for o in ("signum", "adam")]
         + [("matrix", o, "logistic") for o in ("nsd-spectral", "muon")]
         + [("wide", o, "logistic") for o in ("momentum-gd", "signum", "adam", "muon")]
         + [("wide-relu", o, "logistic") for o in ("signum", "muon")])


def _rel(a, b):
    return max(float(np.max(np.abs(a[k] - b[k])) / max(np.max(np.abs(a[k])), 1e-300)) for k in a)


@pytest.mark.parametrize("kind,name,loss", CASES, ids=[f"{k}-{o}" for k, o, _ in CASES])
def test_compiled_matches_reference_over_3000_steps(kind, name, loss):
    model, X, y, theta0 = _setup(kind)

    def make():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return make_optimizer(name, lr=0.1, lr_decay=0.8, beta1=0.9, beta2=0.999, lr_matrix=0.1,
                                        lr_vector=0.05, params=theta0, L=model.L)

    steps = LONGER.get((kind, name), STEPS)
    ref = train.run(model, X, y, make(), steps, theta0, loss=loss, checkpoints=_cps(steps), engine="reference")
    com = train.run(model, X, y, make(), steps, theta0, loss=loss, checkpoints=_cps(steps), engine="compiled")
    assert com.engine == "compiled" and ref.engine == "reference"
    assert com.checkpoints == ref.checkpoints == _cps(steps)
    assert ref.q_min[-1] > 0                                       # a run that got somewhere
    worst = max(_rel(a, b) for a, b in zip(ref.thetas, com.thetas, strict=True))
    assert worst <= TOL, f"θ differs by {worst:.3g} (relative)"
    moved = _rel(ref.thetas[-1], ref.thetas[0])
    assert moved > 1e-3                                            # agreement of a run that moves
    for f in ("log_loss", "q_min", "align", "track", "adam_dev"):
        a, b = np.array(getattr(ref, f)), np.array(getattr(com, f))
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        ok = ~np.isnan(a)
        np.testing.assert_allclose(b[ok], a[ok], rtol=1e-10, atol=1e-12, err_msg=f)
    assert com.underflow == ref.underflow and com.diverged is ref.diverged is False


def test_deep_muon_agrees_as_closely_as_the_reference_agrees_with_itself():
    """Deep linear gradients are rank one per layer, so Muon's momentum is nearly rank deficient and its polar
    factor ill conditioned: a one-ulp change of θ0 moves the reference by ~1e−7 by step 10⁴ (less by 3000). The
    compiled run must stay within 100× of that spread (a wrong kernel is off by O(1))."""
    model, X, y, th0 = _setup("deep")
    th1 = {k: v + np.spacing(np.abs(v)) for k, v in th0.items()}

    def go(theta, engine):
        opt = make_optimizer("muon", lr=0.1, lr_decay=0.8, params=theta, L=model.L)
        return train.run(model, X, y, opt, STEPS, theta, checkpoints=CPS, engine=engine)

    ref, ulp, com = go(th0, "reference"), go(th1, "reference"), go(th0, "compiled")
    spread = max(_rel(a, b) for a, b in zip(ref.thetas, ulp.thetas, strict=True))
    worst = max(_rel(a, b) for a, b in zip(ref.thetas, com.thetas, strict=True))
    assert ref.q_min[-1] > 0 and _rel(ref.thetas[-1], ref.thetas[0]) > 1e-3
    assert worst <= 100 * spread + TOL, (worst, spread)


def test_past_float64_underflow_both_engines_agree_and_keep_moving():
    """Exponential loss with margins ≈ 10³: every raw weight e^{−q} is 0.0 in float64, the log frame is not."""
    model = models.TwoLayer(6, 4, 2.0)
    data = datasets.make_data("teacher", n=12, d=6, seed=0)
    start = model.init(np.random.default_rng(0), 0.5)
    opt = make_optimizer("signum", lr=0.1, lr_decay=0.8, params=start, L=model.L)
    sep = train.run(model, data.X, data.y, opt, 3000, start, checkpoints=[3000], engine="reference")
    assert sep.q_min[-1] > 0
    c = (1000.0 / sep.q_min[-1]) ** (1 / model.L)                  # q scales like c^L: q_min = 1000
    th0 = {k: c * v for k, v in sep.theta.items()}
    runs = []
    for engine in ("reference", "compiled"):
        opt = make_optimizer("signum", lr=1.0, lr_decay=0.8, params=th0, L=model.L)
        runs.append(train.run(model, data.X, data.y, opt, 2000, th0, loss="exponential",
                              checkpoints=[1, 1000, 2000], engine=engine))
    ref, com = runs
    assert com.q_min[0] > 800 and com.q_min[-1] > com.q_min[0] + 100
    assert _rel(com.thetas[-1], com.thetas[-2]) > 1e-3
    assert max(_rel(a, b) for a, b in zip(ref.thetas, com.thetas, strict=True)) <= TOL
    assert com.underflow == ref.underflow == {}


def test_default_engine_is_compiled_where_supported_and_reference_elsewhere():
    model, X, y, th0 = _setup("two-layer")
    opt = make_optimizer("signum", params=th0, L=model.L)
    assert train.run(model, X, y, opt, 10, th0).engine == "compiled"
    opt.chain = optim.Chain(optim.EMA(0.9), optim.Sign(), optim.Sign(), optim.Schedule(0.1, 0.8))  # no kernel
    assert train.run(model, X, y, opt, 10, th0).engine == "reference"
    with pytest.raises(IbverifyError, match="no compiled kernel"):
        train.run(model, X, y, opt, 10, th0, engine="compiled")
    with pytest.raises(IbverifyError):
        train.run(model, X, y, opt, 10, th0, engine="fortran")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_divergence_is_reported_by_both_engines():
    model, X, y, th0 = _setup("linear")
    runs = []
    for engine in ("reference", "compiled"):
        opt = make_optimizer("nsd-linf", lr=1e308, lr_decay=-1.0, params=th0, warn=False)
        runs.append(train.run(model, X, y, opt, 50, th0, checkpoints=[1, 2, 50], engine=engine))
    assert runs[0].diverged and runs[1].diverged
    assert runs[0].checkpoints == runs[1].checkpoints and 50 not in runs[1].checkpoints


@pytest.mark.parametrize("name", ["momentum-gd", "muon"])
def test_deep_q125_matches_reference_within_its_conditioning(name):
    """The deep claims' q = 1.25 (the r^q, q r^(q−1) path): σ'(z) = 1.25 z^0.25 is not Lipschitz at 0, so from step
    ≈ 10³ the reference itself moves when θ0 moves by one ulp (2e−8 for MomentumGD, 3e−7 for Muon at 10⁴). Up to
    10³ steps the engines agree to 1e−12; after that, within 100× the reference's own one-ulp sensitivity
    (rules.within_conditioning, the rule log-frame-exact uses)."""
    from ibverify.checks.rules import within_conditioning

    data = datasets.make_data("teacher", n=12, d=6, seed=0)
    model = models.DeepReLU(6, (4, 3), 1.25)
    theta0 = model.init(np.random.default_rng(0), 0.5)
    nudged = {k: np.nextafter(v, np.inf) for k, v in theta0.items()}
    cps = [10, 100, 1000, 2000, 3000]

    def run(th, engine):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = make_optimizer(name, lr=0.1, lr_decay=0.8, beta1=0.9, params=th, L=model.L)
        return train.run(model, data.X, data.y, opt, STEPS, th, checkpoints=cps, engine=engine)

    ref, com, sens_run = run(theta0, "reference"), run(theta0, "compiled"), run(nudged, "reference")
    assert com.engine == "compiled" and ref.q_min[-1] > 0
    err = np.array([_rel(a, b) for a, b in zip(ref.thetas, com.thetas, strict=True)])
    sens = np.array([_rel(a, b) for a, b in zip(ref.thetas, sens_run.thetas, strict=True)])
    assert np.all(err[:3] <= TOL), err
    assert within_conditioning(err, sens, TOL, 100).all(), (err, sens)
