"""Exact (sympy) proofs of the closed forms behind paper 1's epoch maps and AdamProxy.

Each `prove_*` returns a `Proof`: a list of named identities, each established by exact rational
simplification to zero (`sympy.cancel`), or, when it is not zero, a counterexample found by exact
substitution of rational points. Symbols: β1, β2 ∈ (0, 1) (positive), gradients g_j real.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp


@dataclass
class Step:
    name: str
    holds: bool
    counterexample: dict | None = None


@dataclass
class Proof:
    statement: str
    steps: list[Step] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return all(s.holds for s in self.steps)

    def failures(self) -> list[Step]:
        return [s for s in self.steps if not s.holds]


def _rational_points(symbols, n: int, seed: int, positive=()):
    """Exact rational sample points (β's in (0, 1), positives > 0, other values nonzero)."""
    rnd = random.Random(seed)
    for _ in range(n):
        pt = {}
        for s in symbols:
            if s in positive:
                pt[s] = sp.Rational(rnd.randint(1, 19), 20)
            else:
                v = Fraction(rnd.randint(1, 40), rnd.randint(1, 9)) * rnd.choice((-1, 1))
                pt[s] = sp.Rational(v.numerator, v.denominator)
        yield pt


def identity(name: str, lhs, rhs, symbols, positive=(), seed: int = 0) -> Step:
    """lhs ≡ rhs, proven by exact simplification of lhs − rhs to 0. A quick screen at exact rational
    points (60-digit evaluation) runs first, so a false identity fails fast with a counterexample."""
    diff = lhs - rhs
    points = list(_rational_points(symbols, 40, seed, positive))
    for pt in points[:3]:
        cex = _counterexample(diff, pt)
        if cex:
            return Step(name, False, cex)
    diff = sp.simplify(sp.cancel(sp.together(diff)))
    if diff == 0:
        return Step(name, True)
    for pt in points[3:]:
        cex = _counterexample(diff, pt)
        if cex:
            return Step(name, False, cex)
    return Step(name, False, {"difference": str(diff), "note": "not simplified to 0; no counterexample found"})


def _counterexample(diff, pt) -> dict | None:
    val = sp.N(diff.subs(pt), 60)  # exact point, 60-digit evaluation: no false counterexamples
    if val.is_real and abs(val) > sp.Float("1e-40", 60):
        return {**{str(k): str(v) for k, v in pt.items()}, "difference": f"{float(val):.6e}"}
    return None


def _betas():
    return sp.symbols("beta1 beta2", positive=True)


def geometric(beta, n: int):
    """Σ_{k<N} β^k = (1−β^N)/(1−β): positive for β > 0."""
    return sum(beta ** k for k in range(n))


def steady_state_moments(beta, xs, n: int):
    """Cyclic steady state of x_t = β x_{t−1} + (1−β) g_t over a period g_0..g_{N−1}: solve the
    linear epoch recursion x_start = β^N x_start + (1−β) Σ_j β^(N−1−j) g_j, then step through."""
    start = (1 - beta) * sum(beta ** (n - 1 - j) * xs[j] for j in range(n)) / (1 - beta ** n)
    out, x = [], start
    for i in range(n):
        x = beta * x + (1 - beta) * xs[i]
        out.append(x)
    return start, out


def c_inc_symbolic(b1, b2, n: int):
    """C_inc(β1, β2, N) = (1−β1)/(1−β1^N) · sqrt((1−β2^N)/(1−β2))."""
    return (1 - b1) / (1 - b1 ** n) * sp.sqrt((1 - b2 ** n) / (1 - b2))


def prove_epoch_map_inc(n: int, c_inc=None, claimed: str = "c_inc") -> Proof:
    """Prop 2.5 under frozen gradients (one coordinate; maps act coordinatewise):
    (1) the steady state is periodic: one more epoch returns to x_start;
    (2) m_i = k1·A_i, A_i = Σ_j β1^((i−j) mod N) g_j, k1 = 1/Σ_{k<N} β1^k;
    (3) v_i = k2·B_i, B_i = Σ_j β2^((i−j) mod N) g_j², k2 = 1/Σ_{k<N} β2^k;
    (4) C_inc² = k1²/k2 with C_inc, k1, k2 > 0, hence m_i/√v_i = C_inc·A_i/√B_i and
        Σ_i m_i/√v_i = C_inc Σ_i A_i/√B_i exactly.
    `c_inc` replaces the constant (a control passes a wrong one). claimed = "sign" instead tests the
    full-batch belief Σ_i m_i/√v_i = N·sign(Σ_j g_j) directly (a control: it must fail)."""
    b1, b2 = _betas()
    g = sp.symbols(f"g0:{n}", real=True)
    syms = (b1, b2, *g)
    if claimed == "sign":
        _, m = steady_state_moments(b1, g, n)
        _, v = steady_state_moments(b2, [x ** 2 for x in g], n)
        pr = Proof(f"cyclic steady state of Adam moments = N·sign(Σg) (N = {n})")
        lhs = sum(a / sp.sqrt(b) for a, b in zip(m, v, strict=True))
        pr.steps.append(identity("Σ_i m_i/√v_i = N·sign(Σ_j g_j)", lhs, n * sp.sign(sum(g)), syms, (b1, b2)))
        return pr
    pr = Proof(f"cyclic steady state of Adam moments = C_inc(β1, β2, {n}) epoch map")
    C = c_inc_symbolic(b1, b2, n) if c_inc is None else c_inc(b1, b2, n)
    g2 = [x ** 2 for x in g]
    for beta, xs, tag in ((b1, g, "m"), (b2, g2, "v")):
        start, traj = steady_state_moments(beta, xs, n)
        pr.steps.append(identity(f"{tag}: periodic after one epoch", traj[-1], start, syms, (b1, b2)))
        k = 1 / geometric(beta, n)
        for i in range(n):
            age = sum(beta ** ((i - j) % n) * xs[j] for j in range(n))
            pr.steps.append(identity(f"{tag}_{i} = k·Σ_j β^((i−j) mod N) x_j", traj[i], k * age, syms, (b1, b2)))
    k1, k2 = 1 / geometric(b1, n), 1 / geometric(b2, n)
    pr.steps.append(identity("C_inc² = k1²/k2 (all three positive)", C ** 2, k1 ** 2 / k2, syms, (b1, b2)))
    return pr


def prove_proxy_limit(n: int, target=None) -> Proof:
    """Prop 4.1: lim_{β2→1⁻} C_inc Σ_i A_i/√B_i = sqrt(N)·S/√Q for every β1 (one coordinate),
    with A_i = Σ_j β1^((i−j) mod N) g_j, B_i = Σ_j β2^((i−j) mod N) g_j².
    Steps: sympy.limit of the whole map; and, as a cross-check, the factorwise argument (C_inc is
    the only 0/0 factor; B_i(1) = Q; Σ_i A_i = Σ_{k<N} β1^k · S). `target(S, Q, n)` replaces the
    closed form (a control passes a wrong one)."""
    b1, b2 = _betas()
    g = sp.symbols(f"g0:{n}", real=True)
    pr = Proof(f"β2 → 1 limit of the C_inc epoch map = sqrt(N)·S/√Q for every β1 (N = {n})")
    S = sum(g)
    Q = sum(x ** 2 for x in g)
    lim_c = sp.limit(c_inc_symbolic(b1, b2, n), b2, 1, "-")
    pr.steps.append(identity("lim C_inc = sqrt(N)/Σ_{k<N} β1^k", lim_c, sp.sqrt(n) / geometric(b1, n),
                             (b1, *g), (b1,)))
    B1 = [sum(b2 ** ((i - j) % n) * g[j] ** 2 for j in range(n)).subs(b2, 1) for i in range(n)]
    pr.steps.append(Step("B_i(β2 = 1) = Q for every i", all(sp.expand(B - Q) == 0 for B in B1)))
    A = [sum(b1 ** ((i - j) % n) * g[j] for j in range(n)) for i in range(n)]
    B = [sum(b2 ** ((i - j) % n) * g[j] ** 2 for j in range(n)) for i in range(n)]
    closed = sp.sqrt(n) * S / sp.sqrt(Q) if target is None else target(S, Q, n)
    pr.steps.append(identity("factorwise limit = closed form", lim_c * sum(A) / sp.sqrt(Q), closed, (b1, *g), (b1,)))
    full = sp.limit(c_inc_symbolic(b1, b2, n) * sum(a / sp.sqrt(b) for a, b in zip(A, B, strict=False)), b2, 1, "-")
    pr.steps.append(identity("sympy.limit of the full map = closed form", full, closed, (b1, *g), (b1,)))
    return pr


def proxy_update(s, z, n_samples: int, eps=0):
    """AdamProxy step direction for one coordinate, L = (1/N) Σ_i L_i, ∇L_i = ℓ'_i z_i = −s_i z_i:
    −∇L ⊘ (sqrt(Σ_i ∇L_i²) + ε) = (1/N) Σ_i s_i z_i / (sqrt(Σ_i s_i² z_i²) + ε)."""
    num = sum(si * zi for si, zi in zip(s, z, strict=False)) / n_samples
    return num / (sp.sqrt(sum(si ** 2 * zi ** 2 for si, zi in zip(s, z, strict=False))) + eps)


def prove_proxy_closed_form(n: int, eps=0) -> Proof:
    """AdamProxy (spec §5.2), one coordinate k, loss derivatives s_i = σ(−z_i·w) > 0:
    (1) invariance: the step is unchanged when every s_i is multiplied by one α > 0 (this makes
        the log-domain engine exact: s_i = exp(log s_i − max_j log s_j));
    (2) closed form via M: with c = s/Σs, the step equals (1/N)(Σ_i c_i z_i)/M(c)_kk, i.e.
        −P(w)⁻¹∇L(w) with P ∝ M(c(w)) (spec §5.5).
    `eps` > 0 (a control) adds ε to the denominator, which breaks (1)."""
    s = sp.symbols(f"s0:{n}", positive=True)
    z = sp.symbols(f"z0:{n}", real=True)
    alpha = sp.Symbol("alpha", positive=True)
    syms = (*s, *z, alpha)
    pos = (*s, alpha)
    pr = Proof(f"AdamProxy closed form and invariance to s → α·s (N = {n}, ε = {eps})")
    base = proxy_update(s, z, n, eps)
    scaled = proxy_update([alpha * si for si in s], z, n, eps)
    pr.steps.append(identity("step(α·s) = step(s)", scaled, base, syms, pos))
    c = [si / sum(s) for si in s]
    M = sp.sqrt(sum(ci ** 2 * zi ** 2 for ci, zi in zip(c, z, strict=False)))
    pr.steps.append(identity("step = (1/N)(Σ c_i z_i)/M(c)_kk", base,
                             sum(ci * zi for ci, zi in zip(c, z, strict=False)) / n / M, syms, pos))
    return pr


def prove_gr_isotropic(n: int, d: int) -> Proof:
    """GR data z_i = a_i s_i, a_i > 0, s_i ∈ {±1}^d (spec §4.1, §5.8): for every c,
    M(c)_kk² = Σ_i c_i² a_i² s_ik² = Σ_i c_i² a_i² for every k (s_ik² = 1), so M(c) ∝ I."""
    a = sp.symbols(f"a0:{n}", positive=True)
    c = sp.symbols(f"c0:{n}", nonnegative=True)
    s = sp.Matrix(n, d, lambda i, k: sp.Symbol(f"s{i}_{k}", real=True))
    pr = Proof(f"GR data: M(c) ∝ I for every c (N = {n}, d = {d}, all sign patterns)")
    unit = {s[i, k] ** 2: 1 for i in range(n) for k in range(d)}
    mk = [sp.expand(sum(c[i] ** 2 * (a[i] * s[i, k]) ** 2 for i in range(n))).subs(unit) for k in range(d)]
    iso = sum(c[i] ** 2 * a[i] ** 2 for i in range(n))
    for k in range(d):
        pr.steps.append(identity(f"M_{k}{k}² = Σ c_i² a_i²", mk[k], iso, (*a, *c), (*a, *c)))
    return pr
