"""Homogeneous models with named parameter blocks and exact, hand-derived gradients.

Every model is positively homogeneous: f(x; αθ) = α^L f(x; θ) for α > 0, and separately homogeneous in
each block k with degree L_k (Σ_k L_k = L), so Euler's identities ⟨∇_θ f, θ⟩ = L f and
⟨∇_{θ_k} f, θ_k⟩ = L_k f hold.

Interface (duck-typed, see `Model`):
  blocks          {name: shape}; 2-D blocks are matrices (Muon's), 1-D blocks are vectors
  degrees         {name: L_k};  L = Σ L_k
  smooth          False for ReLU (q = 1): ∇ is then one Clarke-subgradient element (1[h > 0])
  outputs(θ, X)   f(x_i; θ) for all samples, shape (n,)
  vjp(θ, X, c)    Σ_i c_i ∇_θ f(x_i; θ)   (a Params), the full-batch loss gradient uses this
  jac(θ, X)       per-sample gradients {name: (n, *shape)} (KKT residuals use this)
  init(rng, s)    a random θ with entries of size ~ s
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .errors import IbverifyError
from .blocks import Params


def relu_power(h: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """(σ(h), σ'(h)) for σ(z) = max(0, z)^q; q = 1 (ReLU) uses σ'(0) := 0, a Clarke-subgradient element."""
    r = np.maximum(h, 0.0)
    if q == 1:
        return r, (h > 0).astype(float)
    if q == 2:
        return r * r, 2.0 * r
    return r ** q, q * r ** (q - 1)

class Model(Protocol):
    name: str
    blocks: dict[str, tuple[int, ...]]
    degrees: dict[str, float]
    smooth: bool

    @property
    def L(self) -> float: ...
    def outputs(self, theta: Params, X: np.ndarray) -> np.ndarray: ...
    def vjp(self, theta: Params, X: np.ndarray, c: np.ndarray) -> Params: ...
    def jac(self, theta: Params, X: np.ndarray) -> Params: ...
    def init(self, rng: np.random.Generator, scale: float = 1.0) -> Params: ...


class _Base:
    name = "model"
    blocks: dict[str, tuple[int, ...]]
    degrees: dict[str, float]
    smooth = True

    @property
    def L(self) -> float:
        return float(sum(self.degrees.values()))

    def init(self, rng: np.random.Generator, scale: float = 1.0) -> Params:
        out = {}
        for k, shp in self.blocks.items():
            fan_in = shp[-1] if len(shp) == 2 else shp[0]
            out[k] = scale * rng.standard_normal(shp) / np.sqrt(fan_in)
        return out

    def check_theta(self, theta: Params) -> None:
        if list(theta) != list(self.blocks):
            raise IbverifyError(f"{self.name}: parameter blocks {list(theta)} != {list(self.blocks)}")
        for k, shp in self.blocks.items():
            if theta[k].shape != shp:
                raise IbverifyError(f"{self.name}: block {k} has shape {theta[k].shape}, expected {shp}")

    def describe(self) -> dict:
        return {"model": self.name, "L": self.L, "degrees": dict(self.degrees),
                "blocks": {k: list(v) for k, v in self.blocks.items()}, "smooth": self.smooth}


@dataclass
class Linear(_Base):
    """f(x; w) = ⟨w, x⟩, block w ∈ R^d (vector), L = 1."""

    d: int
    name: str = "linear"

    def __post_init__(self):
        self.blocks = {"w": (self.d,)}
        self.degrees = {"w": 1.0}

    def outputs(self, theta, X):
        return X @ theta["w"]

    def vjp(self, theta, X, c):
        return {"w": X.T @ c}

    def jac(self, theta, X):
        return {"w": np.array(X, dtype=float, copy=True)}


@dataclass
class MatrixLinear(_Base):
    """f(X; W) = ⟨W, X⟩ = tr(WᵀX), block W ∈ R^{p×r} (matrix), inputs X of shape (n, p, r); L = 1."""

    p: int
    r: int
    name: str = "matrix-linear"

    def __post_init__(self):
        self.blocks = {"W": (self.p, self.r)}
        self.degrees = {"W": 1.0}

    def outputs(self, theta, X):
        return np.einsum("nij,ij->n", X, theta["W"])

    def vjp(self, theta, X, c):
        return {"W": np.einsum("n,nij->ij", c, X)}

    def jac(self, theta, X):
        return {"W": np.array(X, dtype=float, copy=True)}


@dataclass
class DeepLinear(_Base):
    """f(x) = W_K ⋯ W_1 x with W_k ∈ R^{h_k × h_{k−1}}, h_0 = d, h_K = 1 (W_K is a 1×h row matrix).

    Blocks W1..WK (all matrices), each of degree 1; L = K.
    Backward pass: a_0 = x, a_k = W_k a_{k−1}; δ_K = 1, δ_{k−1} = W_kᵀ δ_k; ∂f/∂W_k = δ_k a_{k−1}ᵀ.
    """

    d: int
    widths: tuple[int, ...] = (4,)
    name: str = "deep-linear"

    def __post_init__(self):
        dims = [self.d, *self.widths, 1]
        self.dims = dims
        self.K = len(dims) - 1
        self.blocks = {f"W{k}": (dims[k], dims[k - 1]) for k in range(1, self.K + 1)}
        self.degrees = {f"W{k}": 1.0 for k in range(1, self.K + 1)}

    def _forward(self, theta, X):
        acts = [X]  # rows are samples: a_k has shape (n, h_k)
        for k in range(1, self.K + 1):
            acts.append(acts[-1] @ theta[f"W{k}"].T)
        return acts

    def _deltas(self, theta, n):
        deltas = {self.K: np.ones((n, 1))}
        for k in range(self.K, 1, -1):
            deltas[k - 1] = deltas[k] @ theta[f"W{k}"]
        return deltas

    def outputs(self, theta, X):
        return self._forward(theta, X)[-1][:, 0]

    def vjp(self, theta, X, c):
        acts = self._forward(theta, X)
        deltas = self._deltas(theta, X.shape[0])
        return {f"W{k}": (deltas[k] * c[:, None]).T @ acts[k - 1] for k in range(1, self.K + 1)}

    def jac(self, theta, X):
        acts = self._forward(theta, X)
        deltas = self._deltas(theta, X.shape[0])
        return {f"W{k}": deltas[k][:, :, None] * acts[k - 1][:, None, :] for k in range(1, self.K + 1)}


@dataclass
class TwoLayer(_Base):
    """f(x; W, a) = Σ_j a_j σ(w_j·x), σ(z) = max(0, z)^q; W ∈ R^{m×d} (matrix), a ∈ R^m (vector).

    Degrees: W → q, a → 1, L = q + 1. q > 1 is C¹ (smooth); q = 1 is ReLU, flagged non-smooth, and its
    "gradient" uses σ'(0) := 0 (an element of the Clarke subdifferential).
    ∂f/∂a_j = σ(h_j), ∂f/∂w_j = a_j σ'(h_j) x with h = W x and σ'(z) = q max(0, z)^{q−1}.
    """

    d: int
    m: int
    q: float = 2.0
    name: str = "two-layer"

    def __post_init__(self):
        if self.q < 1:
            raise IbverifyError(f"two-layer: q must be >= 1 (got {self.q})")
        self.smooth = self.q > 1
        self.blocks = {"W": (self.m, self.d), "a": (self.m,)}
        self.degrees = {"W": float(self.q), "a": 1.0}

    def _act(self, h):
        return relu_power(h, self.q)

    def init(self, rng, scale=1.0):
        return {"W": scale * rng.standard_normal((self.m, self.d)) / np.sqrt(self.d),
                "a": scale * rng.standard_normal(self.m) / np.sqrt(self.m)}

    def outputs(self, theta, X):
        s, _ = self._act(X @ theta["W"].T)
        return s @ theta["a"]

    def vjp(self, theta, X, c):
        s, ds = self._act(X @ theta["W"].T)
        return {"W": ((ds * c[:, None]) * theta["a"][None, :]).T @ X, "a": s.T @ c}

    def jac(self, theta, X):
        s, ds = self._act(X @ theta["W"].T)
        return {"W": (ds * theta["a"][None, :])[:, :, None] * X[:, None, :], "a": s}


@dataclass
class DeepReLU(_Base):
    """f(x) = aᵀ σ(W_{K−1} ⋯ σ(W_1 x)), σ(z) = max(0, z)^q (q > 1); W_k ∈ R^{h_k × h_{k−1}}, h_0 = d, a ∈ R^{h_{K−1}}.

    K trained layers: K − 1 matrices (Muon's) and the output vector a; K = 2 is `TwoLayer`. Degrees compound:
    W_k → q^{K−k}, a → 1, L = Σ_{j<K} q^j (K = 3, q = 2: L = 7).
    Backward pass: z_0 = x, h_k = W_k z_{k−1}, z_k = σ(h_k); δ_{K−1} = a, e_k = δ_k ∘ σ'(h_k), δ_{k−1} = W_kᵀ e_k;
    ∂f/∂W_k = e_k z_{k−1}ᵀ, ∂f/∂a = z_{K−1}.
    """

    d: int
    widths: tuple[int, ...] = (8, 8)
    q: float = 2.0
    name: str = "deep"

    def __post_init__(self):
        if self.q <= 1:
            raise IbverifyError(f"deep: q must be > 1 (a smooth ReLU^q; got {self.q})")
        if not self.widths:
            raise IbverifyError("deep: needs at least one hidden layer")
        dims = [self.d, *self.widths]
        self.dims = dims
        self.K = len(dims)
        self.blocks = {f"W{k}": (dims[k], dims[k - 1]) for k in range(1, self.K)}
        self.blocks["a"] = (dims[-1],)
        self.degrees = {f"W{k}": float(self.q) ** (self.K - k) for k in range(1, self.K)}
        self.degrees["a"] = 1.0

    def _act(self, h):
        return relu_power(h, self.q)

    def _forward(self, theta, X):
        zs, dss = [X], []   # rows are samples
        for k in range(1, self.K):
            z, ds = self._act(zs[-1] @ theta[f"W{k}"].T)
            zs.append(z)
            dss.append(ds)
        return zs, dss

    def outputs(self, theta, X):
        return self._forward(theta, X)[0][-1] @ theta["a"]

    def _backward(self, theta, X, c):
        """{W_k: e_k (n × h_k)} with the per-sample factor c folded into δ_{K−1} = c_i a."""
        zs, dss = self._forward(theta, X)
        delta = c[:, None] * theta["a"][None, :]
        es = {}
        for k in range(self.K - 1, 0, -1):
            es[k] = delta * dss[k - 1]
            delta = es[k] @ theta[f"W{k}"]
        return zs, es

    def vjp(self, theta, X, c):
        zs, es = self._backward(theta, X, c)
        out = {f"W{k}": es[k].T @ zs[k - 1] for k in range(1, self.K)}
        out["a"] = zs[-1].T @ c
        return out

    def jac(self, theta, X):
        zs, es = self._backward(theta, X, np.ones(X.shape[0]))
        out = {f"W{k}": es[k][:, :, None] * zs[k - 1][:, None, :] for k in range(1, self.K)}
        out["a"] = np.array(zs[-1], copy=True)
        return out


INIT_SEED_OFFSET = 1000  # θ0's random stream is kept apart from the data's, which may use the same seed


class MatrixVectorLinear(Linear):
    """f(X, z; W, u) = ⟨W, X⟩ + ⟨u, z⟩: blocks W ∈ R^{p×r} (matrix) and u ∈ R^k (vector), L = 1.

    Inputs are rows [vec(X), z] of length d = p·r + k (row-major vec), so f is the linear model ⟨θ, x⟩ in the
    flat parameter θ = [vec(W), u] (a `Linear` of dimension d, which the compiled engine runs) with the two
    blocks kept apart for the hybrid optimizers and geometry."""

    def __init__(self, p: int, r: int, k: int):
        self.p, self.r, self.k = p, r, k
        super().__init__(p * r + k, name="matrix-vector-linear")

    def __post_init__(self):
        self.blocks = {"W": (self.p, self.r), "u": (self.k,)}
        self.degrees = {"W": 1.0, "u": 1.0}   # each block enters linearly; f is a sum, not a product

    @property
    def L(self) -> float:
        """Degree 1 jointly: f(x; αθ) = α f(x; θ) (the blockwise degrees of a sum do not add up)."""
        return 1.0

    def outputs(self, theta, X):
        return X[:, :self.p * self.r] @ theta["W"].ravel() + X[:, self.p * self.r:] @ theta["u"]

    def vjp(self, theta, X, c):
        return {"W": (X[:, :self.p * self.r].T @ c).reshape(self.p, self.r), "u": X[:, self.p * self.r:].T @ c}

    def jac(self, theta, X):
        n = X.shape[0]
        return {"W": X[:, :self.p * self.r].reshape(n, self.p, self.r).copy(), "u": X[:, self.p * self.r:].copy()}


def initial_point(model, seed: int | None, scale: float = 0.5) -> Params:
    """θ0 of a run: zero for seed None, else the model's random init from the stream of `seed`."""
    if seed is None:
        return {k: np.zeros(s) for k, s in model.blocks.items()}
    return model.init(np.random.default_rng(INIT_SEED_OFFSET + int(seed)), scale)


def make_model(kind: str, d: int, *, width: int = 16, q: float = 2.0, depth: int = 2,
               p: int | None = None, r: int | None = None) -> _Base:
    """Factory used by the CLI and the checks."""
    if kind == "linear":
        return Linear(d)
    if kind == "matrix-linear":
        if p is None or r is None:
            raise IbverifyError("matrix-linear needs p and r (input matrices p×r)")
        return MatrixLinear(p, r)
    if kind == "deep-linear":
        if depth < 1:
            raise IbverifyError("deep-linear: depth must be >= 1")
        return DeepLinear(d, tuple([width] * (depth - 1)))
    if kind == "two-layer":
        return TwoLayer(d, width, q)
    if kind == "deep":
        if depth < 2:
            raise IbverifyError("deep: depth (trained layers) must be >= 2")
        return DeepReLU(d, tuple([width] * (depth - 1)), q)
    raise IbverifyError(f"unknown model {kind!r} (linear, matrix-linear, deep-linear, two-layer, deep)")
