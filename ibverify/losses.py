"""Losses of a margin z = y f(x; θ), in the log domain (a linear model is f = ⟨w, x⟩).

The gradient of ℓ(z_i·w) is ℓ'(z_i·w) z_i with ℓ' < 0; we work with the log-weight
    logistic:     log|ℓ'(z)| = log σ(−z) = −log(1 + e^{z})   (= −logaddexp(0, z))
    exponential:  log|ℓ'(z)| = −z
so weights never overflow and large margins give large negative log-weights instead of 0/0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import IbverifyError
from .blocks import Params

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


# ------------------------------------------------------------------ the model gradient in a log frame
# The full-batch gradient of any model (vector, matrix or network) in a log frame.
#
# ℒ(θ) = Σ_i ℓ(q_i),  q_i = y_i f(x_i; θ).
#   exponential: ℓ(q) = e^{−q},          −ℓ'(q) = e^{−q}
#   logistic:    ℓ(q) = log(1 + e^{−q}),  −ℓ'(q) = 1/(1 + e^{q})
# ∇ℒ = −Σ_i w_i y_i ∇f(x_i) with w_i = −ℓ'(q_i) > 0. In the log frame we keep log w_i, their log-sum-exp
# S = log Σ_i w_i and the renormalised weights p_i = exp(log w_i − S) (Σ p_i = 1), so
#
#     ∇ℒ = e^{S} · ĝ,   ĝ = −Σ_i p_i y_i ∇f(x_i)
#
# and ĝ never underflows as a whole (the largest p_i is ≥ 1/n). Only weights below 1e-308 *relative to the
# largest* flush to zero, which cannot change ĝ in float64.


@dataclass
class LossEval:
    q: np.ndarray          # output margins y_i f(x_i)
    log_loss: float        # log ℒ
    log_scale: float       # S = log Σ_i w_i  (∇ℒ = e^S ĝ)
    p: np.ndarray          # renormalised weights, Σ p = 1
    ghat: Params           # ĝ
    underflow_samples: int  # samples whose relative weight flushed to exactly 0


def evaluate(model, theta: Params, X: np.ndarray, y: np.ndarray, loss: str = "logistic",
             with_loss: bool = True) -> LossEval:
    """q, log ℒ (nan unless with_loss), the log scale S and ĝ with ∇ℒ = e^S ĝ."""
    q = y * model.outputs(theta, X)
    lw = log_weights(q, check_loss(loss))
    S = logsumexp(lw)
    p = np.exp(lw - S)
    ghat = model.vjp(theta, X, -(p * y))
    ll = logsumexp(log_loss_terms(q, loss)) if with_loss else float("nan")
    return LossEval(q=q, log_loss=ll, log_scale=S, p=p, ghat=ghat, underflow_samples=int(np.sum(p == 0.0)))


def gradient(model, theta: Params, X: np.ndarray, y: np.ndarray, loss: str = "logistic") -> Params:
    """The plain float64 gradient ∇ℒ (underflows for large margins; for tests and small margins only)."""
    ev = evaluate(model, theta, X, y, loss)
    return {k: np.exp(ev.log_scale) * v for k, v in ev.ghat.items()}
