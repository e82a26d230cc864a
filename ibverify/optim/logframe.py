"""Block optimizers as chains of tiny transforms (optax-like), full batch, float64, log frame.

Gradients arrive in a log frame: `Scaled(blocks=ĝ, log_scale=S)` means ∇ℒ = e^S ĝ (see loss.py). Every method
here but plain GD (`unscale`, below) is invariant to one common positive rescaling of the whole gradient history, so
the frame is exact:
moments are stored as `Scaled` too (m = e^{s_m} m̂ with max|m̂| = 1); when a new gradient arrives the two
terms are brought to the larger scale (m̂ ← β e^{s_m−s} m̂ + (1−β) e^{S−s} ĝ, s = max(s_m, S)), so nothing
overflows and only terms that are negligible in float64 anyway can flush to zero. Adam's v is kept the same
way with scale 2S. Underflow that matters (a zero momentum, or v_j = 0 while m_j ≠ 0) is counted in
`Optimizer.underflow`, never silently ignored.

Transforms (update θ ← θ − u, u the chain's output):
  ema(β)                 m_k = β m_{k−1} + (1−β) g_k, m_0 = 0                     (Scaled → Scaled)
  adam(β1, β2, bc, ε)    m_k, v_k EMAs of g, g²; d = m̂_k/(√v̂_k + ε), m̂ = m/(1−β1^k), v̂ = v/(1−β2^k)
                         (bc=False drops the corrections); 0/0 := 0                 (Scaled → direction)
  unscale()              d = e^S ĝ = g, the plain gradient (GD: the one chain that is not invariant to a rescaling of g;
                         exact while e^S is a float64 number, an underflow of e^S with ĝ ≠ 0 is counted)
  normalize_l2()         d = m/‖m‖_2 (jointly over blocks)
  sign()                 d = sign(m)
  polar()                d_k = U_kV_kᵀ for m_k = U_kΣ_kV_kᵀ (exact SVD; 1-D block = row: m_k/‖m_k‖)
  newton_schulz5()       d_k = NS5(m_k): Keller Jordan's quintic iteration, (a,b,c) = (3.4445, −4.7750, 2.0315),
                         5 steps, X_0 = M/(‖M‖_F + 1e−7), X ← aX + b(XXᵀ)X + c(XXᵀ)²X (float64 here, not bf16;
                         no Nesterov, no shape factor, so it differs from `polar` only in the orthogonalization)
  lion(β1, β2)           d = sign(β1 m_{k−1} + (1−β1) g_k); m_k = β2 m_{k−1} + (1−β2) g_k, m_0 = 0
  adagrad(ε)             v_k = v_{k−1} + g_k², v_0 = 0; d = g_k/(√v_k + ε), 0/0 := 0 (v kept at scale 2S)
  steepest_l1()          d = sign(m_i)/k on the k coordinates (over all blocks) of largest |m_i| (k = 1 but on
                         exact ties): the ℓ1 LMO, greedy coordinate descent
  shampoo()              d_k = L_k^(−1/4) m_k R_k^(−1/4), L_k = m_k m_kᵀ, R_k = m_kᵀ m_k (no accumulation; inverse
                         roots on the eigenvalues > SHAMPOO_RTOL·max: = polar(m_k) up to rounding)
  decayed_weights(λ)     d ← d + λ θ (decoupled weight decay: reads θ, the chain's `params`)
  schedule(lr, lr_decay) u = η_t d, η_t = lr · t^(−lr_decay), t = 1, 2, ... (its count: its state)
  partition({group: (blocks, chain)})   different chains on different blocks (hybrids)

The protocol is `ibverify.optim.protocol`'s (optax's), the vector chains' too: `init(params) -> state`,
`update(x, state, params=None, *, ctr=NO_COUNTER, **extra) -> (out, state)`, a transform that counts steps keeping
its count in its state (t = 1, 2, …); `ctr` is the run's `Counter` of underflows (none given: not counted); `chain`
(= `Chain`) composes them.

Named optimizers (`optimizers.make_optimizer`): the block rows of `ibverify.optim.table`, each of which carries its
chain of the transforms above (`OptimizerInfo.block`; each row's `update` is its exact update, t = 1, 2, …,
g_t = ∇ℒ(θ_t)); the hybrids partition their parts' chains (`OptimizerInfo.parts`; matrices: muon; vectors: signum or
adam). A user's optimizer file (`ibverify.optim.userfile`) gives its own chain of these transforms; the schedule is
appended as for a row. Each optimizer's own rate ν_t (the ν of Definition 5.1) is η_t, or lr_vector · t^(−lr_decay)
for the hybrids: Δθ = −ν_t · (−LMO(m)) in its own geometry for every normalized method.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import IbverifyError
from ..blocks import Params
from ..geometry.base import as_matrix, polar as _polar
from . import protocol as _protocol
from ..geometry.l1 import l1_lmo

NS5_COEFFS = (3.4445, -4.7750, 2.0315)
SHAMPOO_RTOL = 1e-12  # eigenvalues of GGᵀ, GᵀG kept: > SHAMPOO_RTOL·λ_max (singular values > 1e−6·σ_max)


class ScheduleWarning(UserWarning):
    """η_t = η0 t^{−p} outside 1 − 1/L < p ≤ 1 (the LR-MSD / LR-Adam condition)."""


def check_schedule(p: float, L: float | None, *, warn: bool = True) -> bool:
    """True when η0 t^{−p} satisfies LR-MSD for degree L: 1 − 1/L < p ≤ 1. Warns (ScheduleWarning) otherwise."""
    if L is None:
        return True
    ok = (1.0 - 1.0 / L) < p <= 1.0
    if not ok and warn:
        warnings.warn(f"learning-rate exponent p = {p:g} violates 1 - 1/L < p <= 1 for L = {L:g} "
                      f"(needs p in ({1 - 1 / L:.4g}, 1]); the paper's theorems do not cover this run",
                      ScheduleWarning, stacklevel=3)
    return ok


@dataclass
class Scaled:
    """A block quantity held as e^{log_scale} · blocks."""

    blocks: Params
    log_scale: float


@dataclass
class Counter:
    underflow: dict = field(default_factory=dict)

    def hit(self, what: str, n: int = 1):
        self.underflow[what] = self.underflow.get(what, 0) + n


class _Discard(Counter):
    """No counter given (a transform called by hand): underflows are not counted."""

    def hit(self, what: str, n: int = 1):
        pass


NO_COUNTER = _Discard()

def _maxabs(p: Params) -> float:
    return float(max((np.max(np.abs(v)) if v.size else 0.0) for v in p.values()))


def _renorm(blocks: Params, s: float) -> tuple[Params, float]:
    z = _maxabs(blocks)
    if z == 0 or not math.isfinite(z):
        return blocks, s
    return {k: v / z for k, v in blocks.items()}, s + math.log(z)


def _mix(a: Scaled | None, wa: float, b: Scaled, wb: float, power: int = 1) -> Scaled:
    """wa·a + wb·b^power in the log frame (b^power coordinatewise; its scale is power·b.log_scale)."""
    sb = power * b.log_scale
    bb = b.blocks if power == 1 else {k: v ** power for k, v in b.blocks.items()}
    if a is None:
        return Scaled(*_renorm({k: wb * v for k, v in bb.items()}, sb))
    s = max(a.log_scale, sb)
    ea, eb = math.exp(a.log_scale - s), math.exp(sb - s)
    out = Scaled({k: wa * ea * a.blocks[k] + wb * eb * bb[k] for k in bb}, s)
    # both terms are O(max|ĝ|) after alignment, so the blocks stay O(1)-ish; renormalise only now and then
    out.age = getattr(a, "age", 0) + 1
    if out.age >= 64:
        out = Scaled(*_renorm(out.blocks, out.log_scale))
    return out


def merge(parts: list[Scaled]) -> Scaled:
    """Blocks of several Scaled quantities brought to one common scale."""
    parts = [p for p in parts if p is not None]
    s = max(p.log_scale for p in parts)
    out = {}
    for p in parts:
        e = math.exp(p.log_scale - s)
        out.update({k: e * v for k, v in p.blocks.items()})
    return Scaled(out, s)


# ------------------------------------------------------------------------------------------- transforms

class Transform:
    """A pure transform (`ibverify.optim.protocol`): `init(params) -> state`,
    `update(x, state, params=None, *, ctr=NO_COUNTER, **extra) -> (out, state')`. Its settings are fixed at
    construction; everything that changes lives in the state it returns (a step count too)."""

    def init(self, params: Params):
        return None

    def update(self, x, state, params=None, *, ctr: Counter = NO_COUNTER, **extra):
        raise NotImplementedError


class EMA(Transform):
    """m_k = β m_{k−1} + (1−β) g_k (m_0 = 0), in the log frame (state: m). β = 0 passes g through."""

    def __init__(self, beta: float):
        if not 0 <= beta < 1:
            raise IbverifyError(f"momentum β must be in [0, 1) (got {beta})")
        self.beta = beta

    def update(self, g: Scaled, m, params=None, *, ctr=NO_COUNTER, **extra):
        m = _mix(m, self.beta, g, 1.0 - self.beta)
        if _maxabs(m.blocks) == 0:
            ctr.hit("momentum_zero")
        return m, m


@dataclass
class AdamState:
    m: Scaled | None = None
    v: Scaled | None = None
    k: int = 0
    ratio: Params | None = None  # the last direction m̂/(√v̂ + ε), for the run diagnostics


class Adam(Transform):
    """Adam direction d = m̂/(√v̂ + ε) with m̂ = m/(1−β1^k), v̂ = v/(1−β2^k) (bias_correction), 0/0 := 0."""

    def __init__(self, b1: float = 0.9, b2: float = 0.99, bias_correction: bool = True, eps: float = 0.0):
        if not (0 <= b1 < 1 and 0 <= b2 < 1):
            raise IbverifyError(f"Adam needs 0 <= β1, β2 < 1 (got {b1}, {b2})")
        self.b1, self.b2, self.bc, self.eps = b1, b2, bias_correction, eps

    def init(self, params):
        return AdamState()

    def update(self, g: Scaled, st: AdamState, params=None, *, ctr=NO_COUNTER, **extra):
        k = st.k + 1
        m = _mix(st.m, self.b1, g, 1.0 - self.b1)
        v = _mix(st.v, self.b2, g, 1.0 - self.b2, power=2)
        bc1 = 1.0 - self.b1 ** k if self.bc else 1.0
        bc2 = 1.0 - self.b2 ** k if self.bc else 1.0
        # d = (e^{s_m} m̂/bc1) / (sqrt(e^{s_v} v̂/bc2) + ε) = m̂ / (bc1 (sqrt(v̂/bc2) e^{s_v/2 − s_m} + ε e^{−s_m}))
        a = math.exp(min(v.log_scale / 2 - m.log_scale, 700.0))
        eps_term = self.eps * math.exp(min(-m.log_scale, 700.0)) if self.eps > 0 else 0.0
        out = {}
        for key, mh in m.blocks.items():
            den = bc1 * (np.sqrt(v.blocks[key] / bc2) * a + eps_term)
            bad = (den == 0) & (mh != 0)
            if bad.any():
                ctr.hit("adam_v_underflow", int(bad.sum()))
            with np.errstate(divide="ignore", invalid="ignore"):
                out[key] = np.where(den > 0, mh / np.where(den > 0, den, 1.0), 0.0)
        return out, AdamState(m, v, k, out)


def _unscaled(x) -> Params:
    return x.blocks if isinstance(x, Scaled) else x


class Unscale(Transform):
    """d = e^S ĝ: the gradient itself (plain GD). Not invariant to a rescaling of g, so the frame is left here: exact
    while e^S is a float64 number (a GD run's loss and gradient shrink like 1/t, far from underflow); e^S flushing to 0
    while ĝ ≠ 0 is counted as `gradient_underflow` (the step is then 0), never silent."""

    def update(self, x, state, params=None, *, ctr=NO_COUNTER, **extra):
        if not isinstance(x, Scaled):
            return x, state
        e = math.exp(min(x.log_scale, 700.0))
        if e == 0.0 and _maxabs(x.blocks) > 0:
            ctr.hit("gradient_underflow")
        return {k: e * v for k, v in x.blocks.items()}, state


class NormalizeL2(Transform):
    def update(self, x, state, params=None, *, ctr=NO_COUNTER, **extra):
        b = _unscaled(x)
        n = math.sqrt(sum(float(np.sum(v * v)) for v in b.values()))
        if n == 0:
            ctr.hit("zero_direction")
            return {k: np.zeros_like(v) for k, v in b.items()}, state
        return {k: v / n for k, v in b.items()}, state


class Sign(Transform):
    def update(self, x, state, params=None, *, ctr=NO_COUNTER, **extra):
        return {k: np.sign(v) for k, v in _unscaled(x).items()}, state


class Polar(Transform):
    def update(self, x, state, params=None, *, ctr=NO_COUNTER, **extra):
        return {k: _polar(v) for k, v in _unscaled(x).items()}, state


def newton_schulz5(G: np.ndarray, steps: int = 5, coeffs=NS5_COEFFS) -> np.ndarray:
    """Keller Jordan's quintic Newton–Schulz orthogonalization (float64; KellerJordan/Muon commit 00ba60d)."""
    a, b, c = coeffs
    X = as_matrix(G).astype(float)
    tr = X.shape[0] > X.shape[1]
    if tr:
        X = X.T
    X = X / (np.linalg.norm(X) + 1e-7)
    for _ in range(steps):
        A = X @ X.T
        B = b * A + c * A @ A
        X = a * X + B @ X
    if tr:
        X = X.T
    return X.reshape(G.shape)


class NewtonSchulz5(Transform):
    def update(self, x, state, params=None, *, ctr=NO_COUNTER, **extra):
        return {k: newton_schulz5(v) for k, v in _unscaled(x).items()}, state


class Lion(Transform):
    """Lion (Chen et al. 2023): d = sign(β1 m + (1−β1) g), then m ← β2 m + (1−β2) g (m_0 = 0), log frame."""

    def __init__(self, b1: float = 0.9, b2: float = 0.99):
        if not (0 <= b1 < 1 and 0 <= b2 < 1):
            raise IbverifyError(f"Lion needs 0 <= β1, β2 < 1 (got {b1}, {b2})")
        self.b1, self.b2 = b1, b2

    def update(self, g: Scaled, m, params=None, *, ctr=NO_COUNTER, **extra):
        c = _mix(m, self.b1, g, 1.0 - self.b1)
        if _maxabs(c.blocks) == 0:
            ctr.hit("momentum_zero")
        return {k: np.sign(v) for k, v in c.blocks.items()}, _mix(m, self.b2, g, 1.0 - self.b2)


class Adagrad(Transform):
    """Diagonal Adagrad d = g/(√v + ε), v = Σ_{j≤k} g_j² (log frame: v at scale 2S), 0/0 := 0."""

    def __init__(self, eps: float = 0.0):
        if not eps >= 0:
            raise IbverifyError(f"Adagrad needs ε >= 0 (got {eps})")
        self.eps = eps

    def update(self, g: Scaled, v, params=None, *, ctr=NO_COUNTER, **extra):
        v = _mix(v, 1.0, g, 1.0, power=2)
        # d = e^S ĝ / (sqrt(v̂) e^{s_v/2} + ε) = ĝ / (sqrt(v̂) e^{s_v/2 − S} + ε e^{−S})
        a = math.exp(min(v.log_scale / 2 - g.log_scale, 700.0))
        eps_term = self.eps * math.exp(min(-g.log_scale, 700.0)) if self.eps > 0 else 0.0
        out = {}
        for key, gh in g.blocks.items():
            den = np.sqrt(v.blocks[key]) * a + eps_term
            bad = (den == 0) & (gh != 0)
            if bad.any():
                ctr.hit("adagrad_v_underflow", int(bad.sum()))
            with np.errstate(divide="ignore", invalid="ignore"):
                out[key] = np.where(den > 0, gh / np.where(den > 0, den, 1.0), 0.0)
        return out, v


class SteepestL1(Transform):
    """The ℓ1 steepest-descent direction (greedy coordinate descent), jointly over all blocks: −LMO_ℓ1(m)."""

    def update(self, x, state, params=None, *, ctr=NO_COUNTER, **extra):
        b = _unscaled(x)
        d = {k: -v for k, v in l1_lmo(b).items()}
        if not any(np.any(v) for v in d.values()):
            ctr.hit("zero_direction")
        return d, state


def shampoo_direction(G: np.ndarray, rtol: float = SHAMPOO_RTOL) -> np.ndarray:
    """(GGᵀ)^(−1/4) G (GᵀG)^(−1/4) with the inverse roots taken on the eigenvalues > rtol·λ_max only (no ε): one
    Shampoo step without accumulation. On the kept spectrum it is UVᵀ of G = UΣVᵀ, i.e. polar(G). 1-D: a row.
    G is scaled to max |G_ij| = 1 first (the result is invariant to G's scale)."""
    M = as_matrix(G).astype(float)
    top = float(np.max(np.abs(M))) if M.size else 0.0
    if top == 0:
        return np.zeros_like(G, dtype=float)
    M = M / top  # the direction is scale-free; GGᵀ of a tiny or huge G would underflow or overflow

    def inv_root4(A):
        lam, Q = np.linalg.eigh(A)
        keep = lam > rtol * lam[-1]
        r = np.zeros_like(lam)
        r[keep] = lam[keep] ** -0.25
        return (Q * r) @ Q.T

    return (inv_root4(M @ M.T) @ M @ inv_root4(M.T @ M)).reshape(G.shape)


class Shampoo(Transform):
    """Shampoo without accumulation on every block separately (`shampoo_direction`)."""

    def update(self, x, state, params=None, *, ctr=NO_COUNTER, **extra):
        return {k: shampoo_direction(v) for k, v in _unscaled(x).items()}, state


class DecayedWeights(Transform):
    """d ← d + λ θ (AdamW's decoupled weight decay; the schedule then multiplies by η_t)."""

    def __init__(self, weight_decay: float):
        if not weight_decay >= 0:
            raise IbverifyError(f"weight decay λ must be >= 0 (got {weight_decay})")
        self.wd = weight_decay

    def update(self, d, state, params=None, **extra):
        if params is None:
            raise IbverifyError("decoupled weight decay needs the iterate θ (Optimizer.step or update(g, θ))")
        return {k: v + self.wd * params[k] for k, v in d.items()}, state


class Schedule(Transform):
    """u = η_t d with η_t = lr · t^(−lr_decay), t = 1, 2, … (the step count: its state)."""

    def __init__(self, eta0: float, p: float):
        if not eta0 > 0:
            raise IbverifyError(f"η0 must be positive (got {eta0})")
        self.eta0, self.p = eta0, p

    def rate(self, t: int) -> float:
        return self.eta0 * t ** (-self.p)

    def init(self, params):
        return 0

    def update(self, d, t, params=None, **extra):
        t += 1
        e = self.rate(t)
        return {k: e * v for k, v in d.items()}, t


Chain = _protocol.Chain  # the transforms in order; its state is the tuple of theirs
chain = _protocol.chain  # the one chain builder (vector and block chains alike)


class Partition(Transform):
    """Apply chain_g to the blocks of group g; its state is {group: chain state}."""

    def __init__(self, groups: dict[str, tuple[tuple[str, ...], Chain]]):
        self.groups = groups

    def init(self, params):
        return {gname: ch.init({k: params[k] for k in names}) for gname, (names, ch) in self.groups.items()}

    def update(self, g: Scaled, state, params=None, **extra):
        out, new = {}, {}
        for gname, (names, ch) in self.groups.items():
            sub = Scaled({k: g.blocks[k] for k in names}, g.log_scale)
            u, new[gname] = ch.update(sub, state[gname], None if params is None else {k: params[k] for k in names},
                                      **extra)
            out.update(u)
        return {k: out[k] for k in g.blocks}, new


def _walk(tr, state):
    """(transform, its state) for every leaf transform of a chain or partition."""
    if isinstance(tr, Chain):
        for t_, s in zip(tr.ts, state, strict=True):
            yield from _walk(t_, s)
    elif isinstance(tr, Partition):
        for gname, (_, ch) in tr.groups.items():
            yield from _walk(ch, state[gname])
    else:
        yield tr, state


# ------------------------------------------------------------------------------------------- optimizers

class Optimizer:
    """A named chain and the loop's copy of its state: `init(θ0)`, then `update(g)` returns the step u of
    θ ← θ − u (advancing t and the state); `geometry` is its own norm; `nu(t)` its rate ν_t."""

    def __init__(self, name: str, chain: Transform, geometry, nu, hyper: dict, spec=None):
        self.name, self.chain, self.geometry, self.nu, self.hyper, self.spec = name, chain, geometry, nu, hyper, spec
        self.ctr = Counter()
        self.t = 0
        self.state = None

    @property
    def underflow(self) -> dict:
        return dict(self.ctr.underflow)

    def init(self, params: Params):
        self.state = self.chain.init(params)
        self.t = 0
        self.ctr = Counter()

    def update(self, g: Scaled, params: Params | None = None) -> Params:
        """The step u of θ ← θ − u for the gradient g at θ_t = `params` (needed by decoupled weight decay only)."""
        self.t += 1
        u, self.state = self.chain.update(g, self.state, params, ctr=self.ctr)
        return u

    def step(self, theta: Params, g: Scaled) -> Params:
        u = self.update(g, theta)
        return {k: theta[k] - u[k] for k in theta}

    def momentum(self) -> Scaled | None:
        """The current first moment(s) merged to one frame (None for memoryless methods)."""
        parts = []
        for tr, st in _walk(self.chain, self.state):
            if isinstance(tr, EMA) and st is not None and tr.beta > 0:
                parts.append(st)
            elif isinstance(tr, Lion) and st is not None:
                parts.append(st)
            elif isinstance(tr, Adam) and st.m is not None:
                parts.append(st.m)
        return merge(parts) if parts else None

    def adam_ratio(self) -> Params | None:
        out = {}
        for tr, st in _walk(self.chain, self.state):
            if isinstance(tr, Adam) and st.ratio is not None:
                out.update(st.ratio)
        return out or None


# ------------------------------------------------------------------ the protocol before issue 32 (user files)

def _legacy(tr) -> bool:
    """A transform of the old protocol: `update(x, state, t, ctr[, params])` (four required arguments)."""
    return not isinstance(tr, (Chain, Partition)) and _protocol.old_protocol(tr)


class _Legacy(Transform):
    """A user's transform of the old protocol, run as before: t = 1, 2, … (its count, in the state) and the Counter
    passed positionally; θ as a fifth argument where it has `needs_params`."""

    def __init__(self, tr):
        self.tr = tr

    def init(self, params):
        return 0, self.tr.init(params)

    def update(self, x, state, params=None, *, ctr=NO_COUNTER, **extra):
        t, s = state
        t += 1
        if getattr(self.tr, "needs_params", False):
            x, s = self.tr.update(x, s, t, ctr, params)
        else:
            x, s = self.tr.update(x, s, t, ctr)
        return x, (t, s)


def adapt(ts: list) -> list:
    """A user's block transforms as transforms of the protocol (old-protocol ones wrapped in `_Legacy`)."""
    return [_Legacy(t_) if _legacy(t_) else t_ for t_ in ts]
