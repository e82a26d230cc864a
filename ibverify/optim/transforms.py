"""Optimizers as chains of tiny transforms (optax style), for linear models.

A transform maps an incoming `Grad` to an update direction, keeping its own state:
    init(d)                      -> state
    update(u, grad, state, t)    -> (u', state')
`u` is the running direction (the batch gradient at the start of the chain), `grad` the raw batch
information (mean gradient g, per-sample gradients G, and the iterate w the gradient was taken at),
t the 0-based global step. The last
transform is always `scale_by_schedule`, producing the step added to w.

Arithmetic goes through a backend `xp` (`ibverify.optim.backend`): float64 numpy or mpmath, so
the same chain is the numpy reference and the arbitrary-precision oracle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np


@dataclass
class Grad:
    g: Any  # mean gradient over the batch, shape (d,)
    G: Any  # per-sample gradients of the batch, shape (b, d)
    w: Any = None  # the iterate w_t (for decoupled weight decay)


class Transform(NamedTuple):
    init: Callable[[int], Any]
    update: Callable[[Any, Grad, Any, int], tuple[Any, Any]]


def chain(*ts: Transform) -> Transform:
    """Apply transforms in order; state is the tuple of their states."""

    def init(d):
        return tuple(t.init(d) for t in ts)

    def update(u, grad, state, t):
        new = []
        for tr, s in zip(ts, state, strict=True):
            u, s = tr.update(u, grad, s, t)
            new.append(s)
        return u, tuple(new)

    return Transform(init, update)


def scale_by_adam(xp, beta1: float, beta2: float, eps: float = 0.0, bias_correction: bool = False) -> Transform:
    """m ← β1 m + (1−β1) u;  v ← β2 v + (1−β2) u²;
    u ← m̂ ⊘ (sqrt(v̂) + ε) with m̂ = m/(1−β1^{t+1}), v̂ = v/(1−β2^{t+1}) if bias_correction else m, v;
    m_{−1} = v_{−1} = 0 and 0/0 := 0 (coordinates that never saw a gradient do not move)."""
    b1, b2, e = xp.num(beta1), xp.num(beta2), xp.num(eps)

    def init(d):
        return xp.zeros(d), xp.zeros(d)

    def update(u, grad, state, t):
        m, v = state
        m = m * b1 + u * (1 - b1)   # array first: an mpf on the left would first try (and fail) to
        v = v * b2 + u * (1 - b2) * u   # convert the whole array, formatting it into the error (slow)
        mh, vh = m, v
        if bias_correction:
            mh = m / (1 - b1 ** (t + 1))
            vh = v / (1 - b2 ** (t + 1))
        return xp.safe_div(mh, xp.sqrt(vh) + e), (m, v)

    return Transform(init, update)


def trace(xp, beta: float) -> Transform:
    """m ← β m + (1−β) u;  u ← m   (EMA momentum, m_{−1} = 0)."""
    b = xp.num(beta)

    def init(d):
        return xp.zeros(d)

    def update(u, grad, m, t):
        m = m * b + u * (1 - b)
        return m, m

    return Transform(init, update)


def scale_by_sign(xp) -> Transform:
    """u ← sign(u)  (sign(0) = 0): the ℓ∞ steepest-descent map."""
    return Transform(lambda d: (), lambda u, grad, s, t: (xp.sign(u), s))


def normalize_l2(xp) -> Transform:
    """u ← u / ‖u‖_2  (0 stays 0): the ℓ2 normalized steepest-descent map."""

    def update(u, grad, s, t):
        return xp.safe_div(u, xp.norm2(u) + 0 * u), s

    return Transform(lambda d: (), update)


def precondition_by_sample_rms(xp) -> Transform:
    """AdamProxy preconditioner: u ← u ⊘ sqrt(Σ_i G_i^{⊙2}), G_i the per-sample gradients (0/0 := 0)."""

    def update(u, grad, s, t):
        return xp.safe_div(u, xp.sqrt((grad.G * grad.G).sum(axis=0))), s

    return Transform(lambda d: (), update)


def precond_diagonal(d: int):
    """The fixed diagonal of `precond-gd`: D_jj = 10^(j/(d−1) − 1), j = 0 … d−1 (geometric from 0.1 on the first
    coordinate to 1 on the last; d = 1: D = 1). max D = 1, so a step η < 2/β stays a descent step (the preconditioned
    loss's smoothness is ≤ β·max D). As a float64 numpy array."""
    d = int(d)
    return np.ones(1) if d == 1 else 10.0 ** (np.arange(d) / (d - 1) - 1.0)


def precondition_diagonal(xp) -> Transform:
    """u ← D u with D = precond_diagonal(d) (a fixed positive diagonal ≠ cI): diagonally preconditioned GD. Its limit
    on separable data is the max-margin direction of the D^(−1/2)-weighted ℓ2 norm (w = D^(1/2) v, v the SVM vector
    of the data z_i D^(1/2)), reached at GD's rate 1/log t: not ŵ2 unless the data make the two coincide."""

    def update(u, grad, D, t):
        return u * D, D

    return Transform(lambda d: xp.array(precond_diagonal(d)), update)


def scale_by_schedule(xp, lr: float, lr_decay: float) -> Transform:
    """u ← −η_t u with η_t = η0 (t+1)^(−a)."""
    eta0, a = xp.num(lr), xp.num(lr_decay)

    def update(u, grad, s, t):
        return u * -(eta0 * xp.num(t + 1) ** (-a)), s

    return Transform(lambda d: (), update)


def scale_by_lion(xp, beta1: float, beta2: float) -> Transform:
    """Lion (Chen et al. 2023, no weight decay): c = β1 m + (1−β1) u;  u ← sign(c);  m ← β2 m + (1−β2) u
    (m_{−1} = 0; sign(0) = 0)."""
    b1, b2 = xp.num(beta1), xp.num(beta2)

    def init(d):
        return xp.zeros(d)

    def update(u, grad, m, t):
        c = m * b1 + u * (1 - b1)
        return xp.sign(c), m * b2 + u * (1 - b2)

    return Transform(init, update)


def scale_by_adagrad(xp, eps: float = 0.0) -> Transform:
    """Diagonal Adagrad: v ← v + u²;  u ← u ⊘ (sqrt(v) + ε)  (v_{−1} = 0, 0/0 := 0)."""
    e = xp.num(eps)

    def init(d):
        return xp.zeros(d)

    def update(u, grad, v, t):
        v = v + u * u
        return xp.safe_div(u, xp.sqrt(v) + e), v

    return Transform(init, update)


def steepest_l1(xp) -> Transform:
    """u ← sign(u_i) e_i at the coordinate i of largest |u_i|: the ℓ1 steepest-descent map (greedy coordinate
    descent). Ties (|u_i| = |u_j| = max, exactly): the unit split equally, sign(u_i)/k on each of the k tied
    coordinates (the minimum-ℓ2 element of the LMO's face: deterministic, order-free). u = 0 stays 0."""

    def update(u, grad, s, t):
        a = abs(u)
        top = a.max()
        if top == 0:
            return u * 0, s
        on = a == top
        return xp.sign(u) * on / int(on.sum()), s

    return Transform(lambda d: (), update)


def steepest_lp(xp, p: float) -> Transform:
    """u ← sign(u) |u|^(q−1) / ‖u‖_q^(q−1)  (1/p + 1/q = 1, 1 < p < ∞): the ℓp steepest-descent map, the unique
    d with ‖d‖_p = 1 and ⟨u, d⟩ = ‖u‖_q (Hölder's equality case). Computed on u/max|u| (scale free: no overflow of
    |u|^q); u = 0 stays 0."""
    if not (1 < p < float("inf")):
        raise ValueError(f"steepest_lp needs 1 < p < inf, got {p}")
    q1 = xp.num(1.0 / (p - 1.0))       # q − 1 = 1/(p − 1)
    q = q1 + 1

    def update(u, grad, s, t):
        a = abs(u)
        top = a.max()
        if top == 0:
            return u * 0, s
        a = a / top
        r = a ** q1
        nq = (r * a).sum() ** (1 / q)  # ‖a‖_q (a^q = a^(q−1)·a)
        return xp.sign(u) * r / nq ** q1, s

    return Transform(lambda d: (), update)


def add_decayed_weights(xp, weight_decay: float) -> Transform:
    """u ← u + λ w (decoupled weight decay, AdamW: applied after the preconditioner, before the schedule)."""
    lam = xp.num(weight_decay)

    def update(u, grad, s, t):
        return u + grad.w * lam, s

    return Transform(lambda d: (), update)
