"""Losses of a linear margin z = y⟨w, x⟩, in the log domain.

The gradient of ℓ(z_i·w) is ℓ'(z_i·w) z_i with ℓ' < 0; we work with the log-weight
    logistic:     log|ℓ'(z)| = log σ(−z) = −log(1 + e^{z})   (= −logaddexp(0, z))
    exponential:  log|ℓ'(z)| = −z
so weights never overflow and large margins give large negative log-weights instead of 0/0.
"""

from __future__ import annotations

import numpy as np

from . import IbverifyError

LOSSES = ("logistic", "exponential")


def check_loss(loss: str) -> str:
    if loss not in LOSSES:
        raise IbverifyError(f"unknown loss {loss!r}; use one of {', '.join(LOSSES)}")
    return loss


def log_weights(margins: np.ndarray, loss: str) -> np.ndarray:
    """log|ℓ'(z)| for each margin z."""
    if loss == "logistic":
        return -np.logaddexp(0.0, margins)
    return -np.asarray(margins, dtype=np.float64)


def loss_values(margins: np.ndarray, loss: str) -> np.ndarray:
    """ℓ(z): logistic log(1 + e^{−z}) = logaddexp(0, −z); exponential e^{−z}."""
    if loss == "logistic":
        return np.logaddexp(0.0, -margins)
    return np.exp(-margins)


def log_loss_terms(margins: np.ndarray, loss: str) -> np.ndarray:
    """log ℓ(z) for each margin z, accurate for all z (no −inf before z ≈ 1e308):
    exponential −z; logistic log log1p(e^{−z}) for z ≤ 0 and −z + log(log1p(x)/x), x = e^{−z}, for z > 0."""
    z = np.asarray(margins, dtype=np.float64)
    if check_loss(loss) == "exponential":
        return -z
    out = np.empty_like(z)
    pos = z > 0
    x = np.exp(-z[pos])  # may underflow to 0: then log1p(x)/x → 1
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(x > 0, np.log1p(x) / np.where(x > 0, x, 1.0), 1.0)
    out[pos] = -z[pos] + np.log(ratio)
    out[~pos] = np.log(np.log1p(np.exp(-z[~pos])))
    return out


def logsumexp(a: np.ndarray) -> float:
    """log Σ_i e^{a_i}, shifted by the maximum (−inf for an empty or all −inf input)."""
    a = np.asarray(a, dtype=np.float64)
    m = float(np.max(a)) if a.size else -np.inf
    if not np.isfinite(m):
        return m
    return m + float(np.log(np.sum(np.exp(a - m))))
