"""Hypothesis strategies for separable linear datasets, separable BY CONSTRUCTION.

Every strategy returns a `Certified(dataset, w, margin)`: w is a separating direction built together
with the data and `margin = min_i y_i⟨w, x_i⟩ / ‖w‖_2 > 0` is its certified ℓ2 margin (re-checked in
the meta-tests, never obtained by filtering).

    gr_data(n, d)           generalized Rademacher: z_i = a_i (1, ±1, …, ±1); certificate w = e_1
    gaussian_data(n, d)     x_i ~ N(0, I), d ≥ n; certificate w = Z⁺ 1 (so Z w = 1 exactly)
    shifted_diagonal_data   z_i = a_i e_i + δ 1; certificate w = 1
    betas()                 (β1, β2) with 0 ≤ β1 ≤ β2 < 1
    batch_sizes(n)          b ∈ {1, …, n}

Sizes are drawn from small ranges (paper 1 uses N = 10) so each example runs in well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from .dataset import Dataset, make


@dataclass(frozen=True)
class Certified:
    dataset: Dataset
    w: np.ndarray
    margin: float

    def __repr__(self) -> str:  # hypothesis prints this for a counterexample
        D = self.dataset
        return (f"Certified({D.name}, n={D.n}, d={D.d}, margin={self.margin:.4g}, "
                f"X={np.array2string(D.X, precision=4, separator=',')}, y={D.y.tolist()})")


def _seeds():
    return st.integers(0, 2**32 - 1)


@st.composite
def gr_data(draw, n=st.integers(3, 10), d=st.integers(2, 30), a_low=0.5, a_high=2.0):
    """GR data; amplitudes a_i ∈ [a_low, a_high]; certificate e_1 with margin min a_i."""
    n_, d_ = draw(n), draw(d)
    rng = np.random.default_rng(draw(_seeds()))
    a = rng.uniform(a_low, a_high, size=n_)
    s = rng.choice([-1.0, 1.0], size=(n_, d_))
    s[:, 0] = 1.0
    y = rng.choice([-1.0, 1.0], size=n_)
    Z = a[:, None] * s
    D = make(y[:, None] * Z, y, "gr")
    e1 = np.zeros(d_)
    e1[0] = 1.0
    return Certified(D, e1, float(a.min()))


@st.composite
def gaussian_data(draw, n=st.integers(3, 10), extra_dims=st.integers(0, 40)):
    """x_i ~ N(0, I_d), y_i = ±1 uniform, d = n + extra ≥ n; certificate w = Z⁺1 (Z w = 1)."""
    n_ = draw(n)
    d_ = n_ + draw(extra_dims)
    rng = np.random.default_rng(draw(_seeds()))
    X = rng.standard_normal((n_, d_))
    y = rng.choice([-1.0, 1.0], size=n_)
    Z = y[:, None] * X
    w = np.linalg.pinv(Z) @ np.ones(n_)
    assume(np.allclose(Z @ w, 1.0, rtol=0, atol=1e-9))  # fails only for rank-deficient Z (measure 0)
    return Certified(make(X, y, "gaussian"), w, float(1.0 / np.linalg.norm(w)))


@st.composite
def shifted_diagonal_data(draw, n=st.integers(2, 8), delta=st.floats(0.05, 1.0)):
    """z_i = a_i e_i + δ·1 with distinct a_i ∈ [0.5, 3]; certificate w = 1 (margin (a_i + nδ)/√n)."""
    n_ = draw(n)
    rng = np.random.default_rng(draw(_seeds()))
    a = np.sort(rng.uniform(0.5, 3.0, size=n_)) + 0.01 * np.arange(n_)  # distinct
    dl = draw(delta)
    Z = np.diag(a) + dl
    w = np.ones(n_)
    return Certified(make(Z, np.ones(n_), "shifted-diagonal"), w, float((a.min() + n_ * dl) / np.sqrt(n_)))


@st.composite
def betas(draw, beta2=st.floats(0.3, 0.999)):
    """0 ≤ β1 ≤ β2 < 1: β2 drawn, then β1 = u·β2 with u ∈ [0, 1]."""
    b2 = draw(beta2)
    return draw(st.floats(0.0, 1.0)) * b2, b2


def batch_sizes(n: int):
    return st.integers(1, n)


def data(kind: str, **kw):
    """Strategy by name: 'gr', 'gaussian', 'shifted-diagonal'."""
    return {"gr": gr_data, "gaussian": gaussian_data, "shifted-diagonal": shifted_diagonal_data}[kind](**kw)
