"""Arithmetic backends for the reference optimizers: float64 numpy, or mpmath in a local context.

The mpmath backend never touches mpmath's global precision: it owns `mpmath.mp.clone()`.
"""

from __future__ import annotations

import mpmath
import numpy as np


class Float64:
    name = "float64"

    @staticmethod
    def num(x):
        return np.float64(x)

    @staticmethod
    def array(x):
        return np.array(x, dtype=np.float64)

    @staticmethod
    def zeros(d):
        return np.zeros(d)

    sqrt = staticmethod(np.sqrt)
    sign = staticmethod(np.sign)
    exp = staticmethod(np.exp)

    @staticmethod
    def safe_div(a, b):
        """a / b elementwise with 0/0 := 0 (b == 0 only where a == 0 in our uses)."""
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        return np.divide(a, b, out=np.zeros(np.broadcast_shapes(a.shape, b.shape)), where=b != 0)

    @staticmethod
    def norm2(u):
        return np.sqrt(np.dot(u, u))

    @staticmethod
    def log_weights(z, loss):
        return -np.logaddexp(0.0, z) if loss == "logistic" else -z

    @staticmethod
    def to_float(a):
        return np.asarray(a, dtype=np.float64)


class MPMath:
    """Arbitrary precision: object arrays of mpf from a private context with `dps` digits."""

    name = "mpmath"

    def __init__(self, dps: int = 50):
        self.ctx = mpmath.mp.clone()
        self.ctx.dps = dps
        c = self.ctx
        self._sqrt = np.frompyfunc(c.sqrt, 1, 1)
        self._exp = np.frompyfunc(c.exp, 1, 1)
        self._sign = np.frompyfunc(lambda x: c.mpf(c.sign(x)), 1, 1)
        self._log1p = np.frompyfunc(c.log1p, 1, 1)

    def num(self, x):
        return self.ctx.mpf(x)

    def array(self, x):
        return np.array([self.ctx.mpf(float(v)) for v in np.ravel(x)], dtype=object).reshape(np.shape(x))

    def zeros(self, d):
        return self.array(np.zeros(d))

    def sqrt(self, a):
        return self._sqrt(a)

    def exp(self, a):
        return self._exp(a)

    def sign(self, a):
        return self._sign(a)

    def safe_div(self, a, b):
        a, b = np.broadcast_arrays(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
        zero = self.ctx.mpf(0)
        return np.array([x / y if y != 0 else zero for x, y in zip(a.ravel(), b.ravel(), strict=True)],
                        dtype=object).reshape(a.shape)

    def norm2(self, u):
        return self.ctx.sqrt(sum(x * x for x in u))

    def log_weights(self, z, loss):
        if loss != "logistic":
            return -z
        # −log(1 + e^{z}) = −z − log1p(e^{−z}) for z > 0, −log1p(e^{z}) otherwise
        return np.array([-(x + self.ctx.log1p(self.ctx.exp(-x))) if x > 0 else -self.ctx.log1p(self.ctx.exp(x))
                         for x in z], dtype=object)

    @staticmethod
    def to_float(a):
        return np.array([float(x) for x in np.ravel(a)]).reshape(np.shape(a))
