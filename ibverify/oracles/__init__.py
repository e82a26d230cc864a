"""Max-margin oracles for linear models, each verified by its own optimality certificate."""

from .maxmargin import MaxMargin, max_margin, normalized_margin, norm_of

__all__ = ["MaxMargin", "max_margin", "normalized_margin", "norm_of"]
