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
