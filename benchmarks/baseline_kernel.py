"""A minimal hand-written compiled loop of per-sample Adam on a linear model (the speed baseline).

Same update as the engine's Inc-Adam / `adam` with batch 1 and cyclic order:
    z = z_{t mod N};  c = σ(−z·w) (logistic) or e^{−z·w} (exponential);  g = −c z
    m ← β1 m + (1−β1) g;  v ← β2 v + (1−β2) g²
    w ← w − η0 (t+1)^(−a) · (m/c1) / (sqrt(v/c2) + ε)     (c1, c2 = bias corrections or 1; 0/0 := 0)
No log-frame, no diagnostics, no index array: what one would write by hand for speed. It freezes
once g² underflows, so benchmarks time it on horizons well before that point.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np


@nb.njit(cache=True)
def adam_loop(Z, steps, t0, w, m, v, lr, decay, b1, b2, eps, bias_corr, exponential):
    """Advance w, m, v in place by `steps` per-sample Adam steps starting at global step t0."""
    n, d = Z.shape
    for t in range(t0, t0 + steps):
        i = t % n
        zw = 0.0
        for k in range(d):
            zw += Z[i, k] * w[k]
        if exponential:
            c = math.exp(-zw)
        elif zw >= 0.0:
            e = math.exp(-zw)
            c = e / (1.0 + e)
        else:
            c = 1.0 / (1.0 + math.exp(zw))
        eta = lr * math.pow(t + 1.0, -decay)
        if bias_corr:
            c1 = 1.0 - b1 ** (t + 1.0)
            c2 = 1.0 - b2 ** (t + 1.0)
        else:
            c1 = 1.0
            c2 = 1.0
        for k in range(d):
            g = -c * Z[i, k]
            m[k] = b1 * m[k] + (1.0 - b1) * g
            v[k] = b2 * v[k] + (1.0 - b2) * g * g
            den = math.sqrt(v[k] / c2) + eps
            if den > 0.0:
                w[k] -= eta * (m[k] / c1) / den
    return w


def run_adam(Z, steps, lr=0.1, decay=0.5, b1=0.9, b2=0.999, eps=0.0, bias_corr=False, exponential=False):
    """Fresh run from w = m = v = 0 for `steps` steps; returns w."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    d = Z.shape[1]
    w, m, v = np.zeros(d), np.zeros(d), np.zeros(d)
    return adam_loop(Z, steps, 0, w, m, v, lr, decay, b1, b2, eps, bias_corr, exponential)
