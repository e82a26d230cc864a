"""Paper 1 theory (Baek, Song, Yun): the Adam metric M(c), the parametric margin problem P_Adam(c),
the dual map T(c) and its fixed point (Algorithm 3), the epoch maps of Inc-/Det-Adam and AdamProxy,
and sympy proofs of the closed forms. Spec: paper1-per-sample-adam.md §3, §5.

Modules: metric (M, M_{N,b}, loss weights) · certificate (KKT residuals) · padam (P_Adam solve) ·
duals (dual optimal set, the choice T makes) · fixed_point (T, Algorithm 3) · epoch_map (numeric
maps) · linf_set (cosine bound to all ℓ∞ solutions) · symbolic (sympy proofs) · predict.
"""

from .fixed_point import FixedPoint, iterate, tmap
from .metric import loss_weights, metric_diag, metric_diag_batch
from .padam import PAdamSolution, solve
from .predict import predict

__all__ = ["FixedPoint", "PAdamSolution", "iterate", "loss_weights", "metric_diag", "metric_diag_batch",
           "predict", "solve", "tmap"]
