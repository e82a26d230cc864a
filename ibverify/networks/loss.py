"""Losses in the log domain, and the full-batch gradient in a log frame.

ℒ(θ) = Σ_i ℓ(q_i),  q_i = y_i f(x_i; θ).
  exponential: ℓ(q) = e^{−q},          −ℓ'(q) = e^{−q}
  logistic:    ℓ(q) = log(1 + e^{−q}),  −ℓ'(q) = 1/(1 + e^{q})
∇ℒ = −Σ_i w_i y_i ∇f(x_i) with w_i = −ℓ'(q_i) > 0. In the log frame we keep log w_i, their log-sum-exp
S = log Σ_i w_i and the renormalised weights p_i = exp(log w_i − S) (Σ p_i = 1), so

    ∇ℒ = e^{S} · ĝ,   ĝ = −Σ_i p_i y_i ∇f(x_i)

and ĝ never underflows as a whole (the largest p_i is ≥ 1/n). Only weights below 1e-308 *relative to the
largest* flush to zero, which cannot change ĝ in float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import IbverifyError
from .blocks import Params

LOSSES = ("logistic", "exponential")


def log_loss_terms(q: np.ndarray, loss: str) -> np.ndarray:
    """log ℓ(q_i), accurate for all q (no underflow to −inf before q ≈ 1e308)."""
    q = np.asarray(q, float)
    if loss == "exponential":
        return -q
    if loss == "logistic":
        out = np.empty_like(q)
        pos = q > 0
        x = np.exp(-q[pos])  # may underflow to 0: then log1p(x)/x → 1
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(x > 0, np.log1p(x) / np.where(x > 0, x, 1.0), 1.0)
        out[pos] = -q[pos] + np.log(ratio)
        out[~pos] = np.log(np.log1p(np.exp(-q[~pos])))
        return out
    raise IbverifyError(f"unknown loss {loss!r} (logistic, exponential)")


def log_weights(q: np.ndarray, loss: str) -> np.ndarray:
    """log(−ℓ'(q_i))."""
    q = np.asarray(q, float)
    if loss == "exponential":
        return -q
    if loss == "logistic":
        return -np.logaddexp(0.0, q)
    raise IbverifyError(f"unknown loss {loss!r} (logistic, exponential)")


def logsumexp(a: np.ndarray) -> float:
    m = float(np.max(a))
    if not np.isfinite(m):
        return m
    return m + float(np.log(np.sum(np.exp(a - m))))


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
    lw = log_weights(q, loss)
    S = logsumexp(lw)
    p = np.exp(lw - S)
    ghat = model.vjp(theta, X, -(p * y))
    ll = logsumexp(log_loss_terms(q, loss)) if with_loss else float("nan")
    return LossEval(q=q, log_loss=ll, log_scale=S, p=p, ghat=ghat, underflow_samples=int(np.sum(p == 0.0)))


def gradient(model, theta: Params, X: np.ndarray, y: np.ndarray, loss: str = "logistic") -> Params:
    """The plain float64 gradient ∇ℒ (underflows for large margins; for tests and small margins only)."""
    ev = evaluate(model, theta, X, y, loss)
    return {k: np.exp(ev.log_scale) * v for k, v in ev.ghat.items()}
