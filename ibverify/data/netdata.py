"""Datasets for the network claims: separable by construction, and scikit-learn's digits (even vs odd).

Every generator returns a `Dataset` (X, y ∈ {±1}^n, a certificate of separability, provenance). Nothing is
downloaded: `load_digits` reads the copy shipped inside scikit-learn.
"""

from __future__ import annotations


import numpy as np

from ..errors import IbverifyError
from .dataset import Dataset


def _generated(X, y, name: str, certificate: dict) -> Dataset:
    """A generated set as a validated Dataset (vector or matrix inputs, both classes present)."""
    D = Dataset(np.asarray(X, dtype=float), np.asarray(y, dtype=float), name, certificate).validated(matrices=True)
    if len(np.unique(D.y)) < 2:
        raise IbverifyError(f"{name}: need both classes")
    return D


def _balanced_top(f: np.ndarray, score: np.ndarray, n: int) -> np.ndarray:
    """Indices of the n highest-score points, half from each label sign (both classes guaranteed)."""
    pos, neg = np.flatnonzero(f > 0), np.flatnonzero(f < 0)
    k = min(max(1, n // 2), len(pos))
    k = max(k, n - len(neg))
    ip = pos[np.argsort(-score[pos])[:k]]
    ineg = neg[np.argsort(-score[neg])[:n - k]]
    return np.sort(np.concatenate([ip, ineg]))


def _unit_rows(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def teacher_two_layer(n: int = 30, d: int = 6, m_teacher: int = 4, q: float = 2.0, seed: int = 0,
                      keep: float = 0.5) -> Dataset:
    """Unit-norm inputs labelled by a random two-layer ReLU^q teacher; only points whose teacher margin is in the
    top `keep` fraction are kept, so the teacher certifies a positive normalized ℓ2 margin γ_teacher."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((m_teacher, d))
    a = np.array([1.0 if j % 2 == 0 else -1.0 for j in range(m_teacher)])
    norm_L = (np.sum(W * W) + np.sum(a * a)) ** ((q + 1) / 2)
    Xs, ys, ms = [], [], []
    for _ in range(200):
        Z = _unit_rows(rng.standard_normal((4 * n, d)))
        f = (np.maximum(Z @ W.T, 0) ** q) @ a
        Xs.append(Z), ys.append(np.sign(f)), ms.append(np.abs(f) / norm_L)
        if sum(len(z) for z in Xs) >= 4 * n / keep:
            break
    X, y, m = np.concatenate(Xs), np.concatenate(ys), np.concatenate(ms)
    idx = _balanced_top(y, m, n)
    return _generated(X[idx], y[idx], f"teacher(n={n},d={d},m*={m_teacher},q={q:g},seed={seed})",
                   {"teacher_l2_margin": float(np.min(m[idx])), "kind": "two-layer ReLU^q teacher"})


def linear_separable(n: int = 20, d: int = 8, seed: int = 0, keep: float = 0.5) -> Dataset:
    """Gaussian points labelled by a random hyperplane through 0; the top `keep` fraction by |⟨w*, x⟩| is kept."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    Z = rng.standard_normal((2 * int(np.ceil(n / keep)) + 2, d))
    f = Z @ w
    idx = _balanced_top(f, np.abs(f), n)
    return _generated(Z[idx], np.sign(f[idx]), f"linear(n={n},d={d},seed={seed})",
                   {"teacher_l2_margin": float(np.min(np.abs(f[idx]))), "kind": "hyperplane teacher"})


def matrix_separable(n: int = 20, p: int = 4, r: int = 3, seed: int = 0, rank: int = 1) -> Dataset:
    """Gaussian input matrices labelled by a random rank-`rank` teacher ⟨W*, X⟩ (so spectral and Frobenius
    max-margin solutions differ)."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((p, rank)) @ rng.standard_normal((rank, r))
    W /= np.linalg.norm(W, 2)
    Z = rng.standard_normal((2 * n + 1, p, r))
    f = np.einsum("nij,ij->n", Z, W)
    idx = _balanced_top(f, np.abs(f), n)
    return _generated(Z[idx], np.sign(f[idx]), f"matrix(n={n},p={p},r={r},seed={seed})",
                   {"teacher_spectral_margin": float(np.min(np.abs(f[idx]))), "kind": "low-rank teacher"})


def digits_even_odd(n: int | None = None, seed: int = 0) -> Dataset:
    """scikit-learn's shipped 8×8 handwritten digits (1797 images), y = +1 for even digits, −1 for odd.

    Features: pixel values /16 (∈ [0, 1]), then each image scaled to unit ℓ2 norm. `n` draws a class-balanced
    random subset with `seed` (None: all 1797). No download happens (the data ship inside scikit-learn).
    """
    from sklearn.datasets import load_digits  # start-up time: sklearn (~1.5 s), needed only by the digits set

    dg = load_digits()
    X = dg.data.astype(float) / 16.0
    X = _unit_rows(X)
    y = np.where(dg.target % 2 == 0, 1.0, -1.0)
    if n is not None and n < len(y):
        rng = np.random.default_rng(seed)
        pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
        k = n // 2
        idx = np.sort(np.concatenate([rng.choice(pos, k, replace=False), rng.choice(neg, n - k, replace=False)]))
        X, y = X[idx], y[idx]
    return _generated(X, y, f"digits-even-odd(n={len(y)},seed={seed})",
                   {"kind": "sklearn load_digits, /16, unit rows", "even_fraction": float(np.mean(y > 0))})


def make_data(kind: str, *, n: int | None = None, d: int = 6, seed: int = 0, **kw) -> Dataset:
    if kind == "digits":
        return digits_even_odd(n, seed)
    if kind == "teacher":
        return teacher_two_layer(n or 30, d, seed=seed, **kw)
    if kind == "linear":
        return linear_separable(n or 20, d, seed=seed)
    raise IbverifyError(f"unknown network dataset {kind!r} (digits, teacher, linear)")


def matrix_vector_separable(n: int = 20, p: int = 3, r: int = 3, k: int = 4, seed: int = 0) -> Dataset:
    """Inputs (X_i, z_i) ∈ R^{p×r} × R^k, flattened to rows [vec(X_i), z_i], labelled by a random teacher
    ⟨W*, X⟩ + ⟨u*, z⟩ with W* of rank 1 (so the hybrid, spectral and ℓ∞ max-margin solutions differ); the top
    half of the points by teacher margin is kept."""
    rng = np.random.default_rng(seed)
    W = np.outer(rng.standard_normal(p), rng.standard_normal(r))
    W /= np.linalg.norm(W, 2)
    u = rng.standard_normal(k)
    u /= np.max(np.abs(u))
    Z = rng.standard_normal((2 * n + 2, p * r + k))
    f = Z[:, :p * r] @ W.ravel() + Z[:, p * r:] @ u
    idx = _balanced_top(f, np.abs(f), n)
    return _generated(Z[idx], np.sign(f[idx]), f"matrix-vector(n={n},p={p},r={r},k={k},seed={seed})",
                   {"teacher_margin": float(np.min(np.abs(f[idx]))), "kind": "rank-1 matrix + vector teacher",
                    "shape": (p, r, k)})
