"""Optimizers as chains of tiny transforms (optax style), for linear models.

The protocol is `ibverify.optim.protocol`'s (optax's), the block chains' too:
    init(params)                                  -> state     (params: the iterate w, shape (d,))
    update(u, state, params=None, *, per_sample=None, **extra) -> (u', state')
`u` is the running direction (the batch gradient at the start of the chain), `params` the iterate w_t the
gradient was taken at (decoupled weight decay), `per_sample` the batch's per-sample gradients G, shape (b, d)
(AdamProxy). A transform that counts steps keeps its count k = 1, 2, … in its state. The last transform is
always `scale_by_schedule`, producing the step added to w.

Before this protocol a transform was `init(d)`, `update(u, grad, state, t)` (t from 0, `grad` a `Grad`): such a
transform in a user's optimizer file still runs, adapted by `legacy_prefix`.

Arithmetic goes through a backend `xp` (`ibverify.optim.backend`): float64 numpy or mpmath, so
the same chain is the numpy reference and the arbitrary-precision oracle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from .protocol import Chain, chain, old_protocol  # noqa: F401  (the one chain builder, re-exported: T.chain)


@dataclass
class Grad:
    g: Any  # mean gradient over the batch, shape (d,)
    G: Any  # per-sample gradients of the batch, shape (b, d)
    w: Any = None  # the iterate w_t (for decoupled weight decay)


class Transform(NamedTuple):
    """A vector transform: init(params) -> state; update(u, state, params=None, **extra) -> (u', state')."""

    init: Callable[[Any], Any]
    update: Callable[..., tuple[Any, Any]]


def _stateless(update) -> Transform:
    return Transform(lambda params: (), update)


class AdamState(NamedTuple):
    m: Any       # first moment
    v: Any       # second moment (state[1], as before the count joined the state)
    count: int   # steps made: t = 1, 2, … for the update being made


def scale_by_adam(xp, beta1: float, beta2: float, eps: float = 0.0, bias_correction: bool = False) -> Transform:
    """m ← β1 m + (1−β1) u;  v ← β2 v + (1−β2) u²;
    u ← m̂ ⊘ (sqrt(v̂) + ε) with m̂ = m/(1−β1^k), v̂ = v/(1−β2^k) if bias_correction else m, v (k = 1, 2, …
    the step count; state: `AdamState(m, v, count)`); m_0 = v_0 = 0 and 0/0 := 0 (coordinates that never saw a
    gradient do not move)."""
    b1, b2, e = xp.num(beta1), xp.num(beta2), xp.num(eps)

    def init(params):
        return AdamState(xp.zeros(len(params)), xp.zeros(len(params)), 0)

    def update(u, state, params=None, **extra):
        m, v, k = state
        k += 1
        m = m * b1 + u * (1 - b1)   # array first: an mpf on the left would first try (and fail) to
        v = v * b2 + u * (1 - b2) * u   # convert the whole array, formatting it into the error (slow)
        mh, vh = m, v
        if bias_correction:
            mh = m / (1 - b1 ** k)
            vh = v / (1 - b2 ** k)
        return xp.safe_div(mh, xp.sqrt(vh) + e), AdamState(m, v, k)

    return Transform(init, update)


def trace(xp, beta: float) -> Transform:
    """m ← β m + (1−β) u;  u ← m   (EMA momentum, m_{−1} = 0)."""
    b = xp.num(beta)

    def init(params):
        return xp.zeros(len(params))

    def update(u, m, params=None, **extra):
        m = m * b + u * (1 - b)
        return m, m

    return Transform(init, update)


def scale_by_sign(xp) -> Transform:
    """u ← sign(u)  (sign(0) = 0): the ℓ∞ steepest-descent map."""
    return _stateless(lambda u, s, params=None, **extra: (xp.sign(u), s))


def normalize_l2(xp) -> Transform:
    """u ← u / ‖u‖_2  (0 stays 0): the ℓ2 normalized steepest-descent map."""

    def update(u, s, params=None, **extra):
        return xp.safe_div(u, xp.norm2(u) + 0 * u), s

    return _stateless(update)


def precondition_by_sample_rms(xp) -> Transform:
    """AdamProxy preconditioner: u ← u ⊘ sqrt(Σ_i G_i^{⊙2}), G_i the per-sample gradients (0/0 := 0)."""

    def update(u, s, params=None, *, per_sample=None, **extra):
        return xp.safe_div(u, xp.sqrt((per_sample * per_sample).sum(axis=0))), s

    return _stateless(update)


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

    def update(u, D, params=None, **extra):
        return u * D, D

    return Transform(lambda params: xp.array(precond_diagonal(len(params))), update)


def scale_by_schedule(xp, lr: float, lr_decay: float) -> Transform:
    """u ← −η_t u with η_t = η0 t^(−a), t = 1, 2, … (the step count: its state)."""
    eta0, a = xp.num(lr), xp.num(lr_decay)

    def update(u, t, params=None, **extra):
        t += 1
        return u * -(eta0 * xp.num(t) ** (-a)), t

    return Transform(lambda params: 0, update)


def scale_by_lion(xp, beta1: float, beta2: float) -> Transform:
    """Lion (Chen et al. 2023, no weight decay): c = β1 m + (1−β1) u;  u ← sign(c);  m ← β2 m + (1−β2) u
    (m_{−1} = 0; sign(0) = 0)."""
    b1, b2 = xp.num(beta1), xp.num(beta2)

    def init(params):
        return xp.zeros(len(params))

    def update(u, m, params=None, **extra):
        c = m * b1 + u * (1 - b1)
        return xp.sign(c), m * b2 + u * (1 - b2)

    return Transform(init, update)


def scale_by_adagrad(xp, eps: float = 0.0) -> Transform:
    """Diagonal Adagrad: v ← v + u²;  u ← u ⊘ (sqrt(v) + ε)  (v_{−1} = 0, 0/0 := 0)."""
    e = xp.num(eps)

    def init(params):
        return xp.zeros(len(params))

    def update(u, v, params=None, **extra):
        v = v + u * u
        return xp.safe_div(u, xp.sqrt(v) + e), v

    return Transform(init, update)


def steepest_l1(xp) -> Transform:
    """u ← sign(u_i) e_i at the coordinate i of largest |u_i|: the ℓ1 steepest-descent map (greedy coordinate
    descent). Ties (|u_i| = |u_j| = max, exactly): the unit split equally, sign(u_i)/k on each of the k tied
    coordinates (the minimum-ℓ2 element of the LMO's face: deterministic, order-free). u = 0 stays 0."""

    def update(u, s, params=None, **extra):
        a = abs(u)
        top = a.max()
        if top == 0:
            return u * 0, s
        on = a == top
        return xp.sign(u) * on / int(on.sum()), s

    return _stateless(update)


def steepest_lp(xp, p: float) -> Transform:
    """u ← sign(u) |u|^(q−1) / ‖u‖_q^(q−1)  (1/p + 1/q = 1, 1 < p < ∞): the ℓp steepest-descent map, the unique
    d with ‖d‖_p = 1 and ⟨u, d⟩ = ‖u‖_q (Hölder's equality case). Computed on u/max|u| (scale free: no overflow of
    |u|^q); u = 0 stays 0."""
    if not (1 < p < float("inf")):
        raise ValueError(f"steepest_lp needs 1 < p < inf, got {p}")
    q1 = xp.num(1.0 / (p - 1.0))       # q − 1 = 1/(p − 1)
    q = q1 + 1

    def update(u, s, params=None, **extra):
        a = abs(u)
        top = a.max()
        if top == 0:
            return u * 0, s
        a = a / top
        r = a ** q1
        nq = (r * a).sum() ** (1 / q)  # ‖a‖_q (a^q = a^(q−1)·a)
        return xp.sign(u) * r / nq ** q1, s

    return _stateless(update)


def add_decayed_weights(xp, weight_decay: float) -> Transform:
    """u ← u + λ w (decoupled weight decay, AdamW: applied after the preconditioner, before the schedule)."""
    lam = xp.num(weight_decay)

    def update(u, s, params=None, **extra):
        return u + params * lam, s

    return _stateless(update)


# ------------------------------------------------------------------ the protocol before issue 32 (user files)

def _legacy(tr) -> bool:
    """A transform of the old protocol: `update(u, grad, state, t)` (four arguments, all required)."""
    return old_protocol(tr)


def legacy_prefix(ts: list) -> list:
    """A user's chain (the head of its optimizer's chain, so its input is the batch gradient g) as new-protocol
    transforms: unchanged when none is of the old protocol, else one transform running them all, the old ones
    called as before (`init(d)`, `update(u, Grad(g, G, w), state, t)`, t = 0, 1, …)."""
    old = [_legacy(t_) for t_ in ts]
    if not any(old):
        return ts

    def init(params):
        return 0, tuple(t_.init(len(params)) if o else t_.init(params) for t_, o in zip(ts, old, strict=True))

    def update(u, state, params=None, *, per_sample=None, **extra):
        t, states = state
        grad, new = Grad(u, per_sample, params), []
        for t_, o, s in zip(ts, old, states, strict=True):
            u, s = t_.update(u, grad, s, t) if o else t_.update(u, s, params, per_sample=per_sample, **extra)
            new.append(s)
        return u, (t + 1, tuple(new))

    return [Transform(init, update)]
