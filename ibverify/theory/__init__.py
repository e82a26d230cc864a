"""Paper 1 theory (Baek, Song, Yun): the Adam metric M(c), the parametric margin problem P_Adam(c),
the dual map T(c) and its fixed point (Algorithm 3), the epoch maps of Inc-/Det-Adam and AdamProxy,
and sympy proofs of the closed forms. Spec: paper1-per-sample-adam.md §3, §5.
"""
