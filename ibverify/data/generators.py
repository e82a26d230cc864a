"""Dataset generators of paper 1 (spec §4.1, §5.8). Every generator returns separable data by
construction; the certificate (a separating direction with its margin) is checked in the tests.
"""

from __future__ import annotations

import numpy as np

from .dataset import Dataset, make


def gr(n: int, d: int, rng: np.random.Generator, a_low: float = 0.5, a_high: float = 2.0) -> Dataset:
    """Generalized (scaled) Rademacher data: x_i = a_i s_i, a_i ~ U(a_low, a_high), s_i ∈ {±1}^d.

    Separable by construction: z_i = y_i x_i = a_i (1, s_i[2], ..., s_i[d]), so w = e_1 separates
    with margin min_i a_i. Labels are drawn uniformly; x_i is set to y_i z_i.
    """
    if d < 1 or n < 1:
        raise ValueError("gr needs n, d >= 1")
    a = rng.uniform(a_low, a_high, size=n)
    s = rng.choice([-1.0, 1.0], size=(n, d))
    s[:, 0] = 1.0
    y = rng.choice([-1.0, 1.0], size=n)
    X = y[:, None] * (a[:, None] * s)
    return make(X, y, "gr")


def gr_draw(n: int, d: int, seed: int, draw: int) -> Dataset:
    """The `draw`-th (from 0) of the GR datasets (n, d) drawn in turn from default_rng(seed): a dataset chosen by a
    condition on successive draws (e.g. the first on which ℓ2 and ℓ∞ differ) is known by its seed and index."""
    rng = np.random.default_rng(int(seed))
    for _ in range(int(draw)):
        gr(int(n), int(d), rng)
    return gr(int(n), int(d), rng)


def gaussian(n: int, d: int, rng: np.random.Generator) -> Dataset:
    """x_i ~ N(0, I_d), y_i uniform ±1 (spec §5.8). Separable with probability 1 when d ≥ n.

    For d < n separability is not guaranteed; callers that need it validate with
    `ibverify.data.files.separability_certificate`.
    """
    X = rng.standard_normal((n, d))
    y = rng.choice([-1.0, 1.0], size=n)
    return make(X, y, "gaussian")


def shifted_diagonal(a, delta: float) -> Dataset:
    """Shifted-diagonal data [reconstructed, spec §5.8]: z_i = a_i e_i + δ·1 (N = d), labels +1.

    Separable by construction: w = 1 gives margins a_i + dδ > 0.
    """
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 1 or np.any(a <= 0) or delta <= 0:
        raise ValueError("shifted_diagonal needs a 1-d a with a_i > 0 and delta > 0")
    Z = np.diag(a) + delta
    return make(Z, np.ones(len(a)), "shifted-diagonal")


def sylvester_hadamard(d: int) -> np.ndarray:
    """The d×d Sylvester Hadamard matrix (d a power of 2): ±1 entries, orthogonal rows, first column all +1."""
    if d < 1 or d & (d - 1):
        raise ValueError("sylvester_hadamard needs d a power of 2")
    H = np.ones((1, 1))
    while H.shape[0] < d:
        H = np.block([[H, H], [H, -H]])
    return H


def gr_orthogonal(n: int, d: int, rng: np.random.Generator, a_low: float = 1.0, a_high: float = 1.1) -> Dataset:
    """GR data whose sign patterns are n distinct rows of a Sylvester Hadamard matrix (orthogonal, first
    coordinate +1): z_i = a_i s_i with s_i·s_j = d·δ_ij. Then every sample is a support vector and, in
    closed form, ŵ2 ∝ Σ_i s_i / a_i, while per-sample SignGD (β1 = β2 = 0) goes to Σ_i s_i:
        cos(Σ s_i, ŵ2) = Σ_i a_i⁻¹ / (√n · (Σ_i a_i⁻²)^{1/2}),
    within 1e-3 of 1 for a_i ∈ [1, 1.1] but not 1 unless all a_i are equal."""
    if n > d:
        raise ValueError("gr_orthogonal needs n <= d")
    rows = rng.choice(d, size=n, replace=False)
    s = sylvester_hadamard(d)[rows]
    a = rng.uniform(a_low, a_high, size=n)
    y = rng.choice([-1.0, 1.0], size=n)
    return make(y[:, None] * (a[:, None] * s), y, "gr-orthogonal")
