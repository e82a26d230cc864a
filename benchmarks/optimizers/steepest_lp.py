"""Normalized ℓp steepest descent as a user's optimizer file (docs/power.md, the linear-`bias` family; issue 45):

    θ ← θ − η_t d,   d = argmax_{‖d‖_p ≤ 1} ⟨g, d⟩ = sign(g) |g|^(q−1) / ‖g‖_q^(q−1)   (1/p + 1/q = 1)

(transforms.steepest_lp). Its limit on separable data is the ℓp max-margin direction (Gunasekar et al. 2018): for
p near 2 (1.5, 1.8, 2.2, 3) a near miss of ℓ2, for p = 5 and 20 one of ℓ∞, judged by `bias` in ℓ1, ℓ2 and ℓ∞ only.

    ibverify bias --optimizer benchmarks/optimizers/steepest_lp.py:p1_5 --model linear
"""

from ibverify.optim import transforms as T
from ibverify.optim.userfile import UserOptimizer

PS = {"p1_5": 1.5, "p1_8": 1.8, "p2_2": 2.2, "p3": 3.0, "p5": 5.0, "p20": 20.0}


def _make(name: str, p: float):
    def make():
        return UserOptimizer(name=f"steepest-lp{p:g}",
                             update=f"θ ← θ − η_t argmax_(‖d‖_{p:g} ≤ 1) ⟨g, d⟩",
                             vector=lambda spec, xp: [T.steepest_lp(xp, p)])
    make.__name__ = name
    return make


p1_5, p1_8, p2_2, p3, p5, p20 = (_make(n, p) for n, p in PS.items())
