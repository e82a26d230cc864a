"""KKT certificate of P_Adam(c): min ½ wᵀMw s.t. Zw ≥ 1, with M = diag(m) ⪰ 0.

A feasible w and λ ≥ 0 with M w = Zᵀλ and λ_i (z_i·w − 1) = 0 certify optimality; no
invertibility of M is needed (spec §5.5, Kim et al. Lemma E.13). All residuals are scale-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import IbverifyError

DEFAULT_TOL = 1e-9


@dataclass(frozen=True)
class Certificate:
    stationarity: float     # ‖Mw − Zᵀλ‖_∞ / max(‖Mw‖_∞, ‖Zᵀλ‖_∞)
    primal: float           # max(0, max_i (1 − z_i·w))
    dual: float             # max(0, −min λ) / ‖λ‖_∞
    complementarity: float  # max_i |λ_i (z_i·w − 1)| / ‖λ‖_∞
    gap: float              # |wᵀMw − Σλ| / wᵀMw (zero when the others are)

    @property
    def kkt(self) -> float:
        """The KKT residual: the largest of the four certificate residuals."""
        return max(self.stationarity, self.primal, self.dual, self.complementarity)

    def as_dict(self) -> dict[str, float]:
        return {"stationarity": self.stationarity, "primal": self.primal, "dual": self.dual,
                "complementarity": self.complementarity, "gap": self.gap, "kkt": self.kkt}


def residuals(Z, m, w, lam) -> Certificate:
    """Certificate residuals of (w, λ) for P_Adam with metric diagonal m."""
    Z, m, w, lam = (np.asarray(a, dtype=np.float64) for a in (Z, m, w, lam))
    Mw, Zl = m * w, Z.T @ lam
    scale = max(np.abs(Mw).max(), np.abs(Zl).max())
    lmax = np.abs(lam).max()
    if scale == 0.0 or lmax == 0.0 or not np.all(np.isfinite(np.r_[w, lam])):
        return Certificate(np.inf, np.inf, np.inf, np.inf, np.inf)
    slack = Z @ w - 1.0
    wMw = float(w @ Mw)
    return Certificate(
        stationarity=float(np.abs(Mw - Zl).max() / scale),
        primal=float(max(0.0, -slack.min())),
        dual=float(max(0.0, -lam.min()) / lmax),
        complementarity=float(np.abs(lam * slack).max() / lmax),
        gap=float(abs(wMw - lam.sum()) / wMw) if wMw > 0 else np.inf,
    )


def verify(Z, m, w, lam, tol: float = DEFAULT_TOL, what: str = "P_Adam(c)") -> Certificate:
    """Residuals of (w, λ); raise IbverifyError if the KKT residual exceeds tol."""
    cert = residuals(Z, m, w, lam)
    if not cert.kkt <= tol:
        raise IbverifyError(f"{what}: KKT certificate failed (residual {cert.kkt:.2e} > {tol:.0e}: "
                            + ", ".join(f"{k} {v:.1e}" for k, v in cert.as_dict().items()) + ")")
    return cert


def power(Z, m, w, lam) -> dict[str, float]:
    """The certificate's power on a certified pair (w, λ): the residual of each condition at a point
    built to violate THAT condition — stationarity: λ·1.01; primal: w·0.99; dual: the largest λ_j
    negated; complementarity: λ_j += 0.01·‖λ‖∞ on an inactive constraint (NaN when all are active).
    A check that trusts the certificate asserts each value exceeds its tolerance."""
    Z, m, w, lam = (np.asarray(a, dtype=np.float64) for a in (Z, m, w, lam))
    out = {"stationarity": residuals(Z, m, w, lam * 1.01).stationarity,
           "primal": residuals(Z, m, w * 0.99, lam).primal}
    neg = lam.copy()
    j = int(np.argmax(lam))
    neg[j] = -neg[j]
    out["dual"] = residuals(Z, m, w, neg).dual
    inactive = np.flatnonzero(Z @ w - 1.0 > 1e-3)
    if len(inactive):
        comp = lam.copy()
        comp[inactive[0]] += 0.01 * np.abs(lam).max()
        out["complementarity"] = residuals(Z, m, w, comp).complementarity
    else:
        out["complementarity"] = float("nan")
    return out
