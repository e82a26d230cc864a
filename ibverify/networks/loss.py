"""The full-batch network gradient in a log frame (the per-sample losses are ibverify.losses').

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

from ..losses import LOSSES, check_loss, log_loss_terms, log_weights, logsumexp
from .blocks import Params

__all__ = ["LOSSES", "LossEval", "evaluate", "gradient", "log_loss_terms", "log_weights", "logsumexp"]


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
