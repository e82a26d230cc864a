"""Paper 2 (Gronich & Vardi): homogeneous networks, steepest-descent geometries, block optimizers, KKT residuals.

Parameters are *named blocks*: ``dict[str, np.ndarray]`` (1-D vectors or 2-D matrices), always float64.

Modules
-------
models       linear / matrix-linear / deep-linear / two-layer and deep ReLU^q models with exact gradients
loss         logistic / exponential loss in the log domain (per-sample log-weights, log-frame gradient)
geometry/    one module per norm (l2, linf, spectral, msp, hybrid) behind one protocol
kkt          KKT residual of min ½‖θ‖² s.t. y_i f(x_i;θ) ≥ 1 in any geometry (cvxpy/Clarabel) and convex
             max-margin oracles for linear models (certified by that same residual)
optim        optax-like transforms (momentum EMA, adam, sign / normalize / polar / Newton–Schulz, schedule)
             and the named optimizers (nsd-*, momentum-gd, signum, muon, muon-ns5, adam, muon-signum, muon-adam)
datasets     separable synthetic sets by construction, and scikit-learn digits even-vs-odd
train        the full-batch run loop with log-spaced checkpoints and run diagnostics
cli          ``add_arguments(parser)`` / ``train(args) -> dict`` for ``ibverify train``
"""

from .blocks import Params  # noqa: F401
