"""Hypothesis strategies for separable linear datasets, separable BY CONSTRUCTION.

Every strategy returns a `Certified(dataset, w, margin)`: w is a separating direction built together
with the data and `margin = min_i y_i⟨w, x_i⟩ / ‖w‖_2 > 0` is its certified ℓ2 margin (re-checked in
the meta-tests, never obtained by filtering).

    gr_data(n, d)           generalized Rademacher: z_i = a_i (1, ±1, …, ±1); certificate w = e_1;
                            d ≥ 3 (on d = 2 GR data ŵ2 is an ℓ∞ max-margin direction: nothing to tell apart)
    discriminating(inner)   the inner strategy's data on which ℓ2 and ℓ∞ answers differ measurably
                            (`discrimination` below); the only data a direction claim may use
    discriminating_precond(inner, cos_max)
                            data on which the limit of diagonally preconditioned GD (optimizer precond-gd, the
                            D^(−1/2)-weighted ℓ2 max margin) has cos ≤ cos_max to ŵ2 (`precond_limit`)
    gaussian_data(n, d)     x_i ~ N(0, I), d ≥ n; certificate w = Z⁺ 1 (so Z w = 1 exactly)
    shifted_diagonal_data   z_i = a_i e_i + δ 1; certificate w = 1
    betas()                 (β1, β2) with 0 ≤ β1 ≤ β2 < 1 (β2 > 0 with `beta2=st.floats(lo, hi)`, lo > 0)
    batch_sizes(n)          b ∈ {1, …, n}

Separability is by construction; discrimination is a filter (hypothesis `assume`), asserted again
by the meta-tests (tests/meta/test_discrimination.py).
Sizes are drawn from small ranges (paper 1 uses N = 10) so each example runs in well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from ..data.dataset import Dataset, make
from ..data.generators import gr_orthogonal
from ..optim.transforms import precond_diagonal
from ..oracles import max_margin, normalized_margin
from ..recipes.linear import L1_GAP_MIN, l1_gap_of_l2  # noqa: F401  (re-exported)
from ..theory.linf_set import max_cos_near_linf


@dataclass(frozen=True)
class Certified:
    dataset: Dataset
    w: np.ndarray
    margin: float

    def __repr__(self) -> str:  # hypothesis prints this for a counterexample
        D = self.dataset
        return (f"Certified({D.name}, n={D.n}, d={D.d}, margin={self.margin:.4g}, "
                f"X={np.array2string(D.X, precision=4, separator=',')}, y={D.y.tolist()})")


def _seeds():
    return st.integers(0, 2**32 - 1)


@st.composite
def gr_data(draw, n=st.integers(3, 10), d=st.integers(3, 30), a_low=0.5, a_high=2.0):  # noqa: B008 (strategies are immutable)
    """GR data; amplitudes a_i ∈ [a_low, a_high]; certificate e_1 with margin min a_i."""
    n_, d_ = draw(n), draw(d)
    rng = np.random.default_rng(draw(_seeds()))
    a = rng.uniform(a_low, a_high, size=n_)
    s = rng.choice([-1.0, 1.0], size=(n_, d_))
    s[:, 0] = 1.0
    y = rng.choice([-1.0, 1.0], size=n_)
    Z = a[:, None] * s
    D = make(y[:, None] * Z, y, "gr")
    e1 = np.zeros(d_)
    e1[0] = 1.0
    return Certified(D, e1, float(a.min()))


@st.composite
def gr_orthogonal_data(draw, n=st.integers(3, 10), d=st.sampled_from([16, 32]), a_low=1.0, a_high=1.1):  # noqa: B008
    """GR data with orthogonal (Hadamard) sign patterns (generators.gr_orthogonal); certificate e_1.
    Used by the trend-only control: its per-sample SignGD limit Σ s_i is within the cosine tolerance
    of ŵ2 but not ŵ2."""
    d_ = draw(d)
    n_ = min(draw(n), d_)
    D = gr_orthogonal(n_, d_, np.random.default_rng(draw(_seeds())), a_low, a_high)
    e1 = np.zeros(d_)
    e1[0] = 1.0
    return Certified(D, e1, float(np.abs(D.Z[:, 0]).min()))


@st.composite
def gaussian_data(draw, n=st.integers(3, 10), extra_dims=st.integers(0, 40)):  # noqa: B008 (strategies are immutable)
    """x_i ~ N(0, I_d), y_i = ±1 uniform, d = n + extra ≥ n; certificate w = Z⁺1 (Z w = 1)."""
    n_ = draw(n)
    d_ = n_ + draw(extra_dims)
    rng = np.random.default_rng(draw(_seeds()))
    X = rng.standard_normal((n_, d_))
    y = rng.choice([-1.0, 1.0], size=n_)
    Z = y[:, None] * X
    w = np.linalg.pinv(Z) @ np.ones(n_)
    assume(np.allclose(Z @ w, 1.0, rtol=0, atol=1e-9))  # fails only for rank-deficient Z (measure 0)
    return Certified(make(X, y, "gaussian"), w, float(1.0 / np.linalg.norm(w)))


@st.composite
def shifted_diagonal_data(draw, n=st.integers(2, 8), delta=st.floats(0.05, 1.0)):  # noqa: B008 (strategies are immutable)
    """z_i = a_i e_i + δ·1 with distinct a_i ∈ [0.5, 3]; certificate w = 1 (margin (a_i + nδ)/√n)."""
    n_ = draw(n)
    rng = np.random.default_rng(draw(_seeds()))
    a = np.sort(rng.uniform(0.5, 3.0, size=n_)) + 0.01 * np.arange(n_)  # distinct
    dl = draw(delta)
    Z = np.diag(a) + dl
    w = np.ones(n_)
    return Certified(make(Z, np.ones(n_), "shifted-diagonal"), w, float((a.min() + n_ * dl) / np.sqrt(n_)))


# ---- discrimination: data on which a direction claim can tell ℓ2 from ℓ∞

LINF_GAP_MIN = 0.1   # ŵ2's normalized ℓ∞ margin is ≥ 10 % below γ∞
NEAR_LINF = 0.03     # the ℓ∞ claims' tolerance: a direction with ℓ∞ gap ≤ 3 % passes them
COS_MAX = 0.99       # every such near-ℓ∞ direction has cos to ŵ2 ≤ 0.99 (the ℓ2 claims need ≥ 0.999)


@dataclass(frozen=True)
class Discrimination:
    linf_gap_of_l2: float       # (γ∞ − γ∞(ŵ2)) / γ∞
    max_cos_near_linf: float    # max cos(ŵ2, v) over directions v with ℓ∞ gap ≤ NEAR_LINF

    def ok(self, linf_gap_min: float = LINF_GAP_MIN, cos_max: float = COS_MAX) -> bool:
        return self.linf_gap_of_l2 >= linf_gap_min and self.max_cos_near_linf <= cos_max


def discrimination(Z: np.ndarray, near_linf: float = NEAR_LINF) -> Discrimination:
    """How far apart the ℓ2 and ℓ∞ answers are on Z, both ways: ŵ2's ℓ∞ margin gap, and the exact
    largest cosine to ŵ2 of any direction within `near_linf` of γ∞ (theory.linf_set.max_cos_near_linf)."""
    l2, li = max_margin(Z, "l2"), max_margin(Z, "linf")
    gap = (li.margin - normalized_margin(Z, l2.direction, "linf")) / li.margin
    return Discrimination(float(gap), max_cos_near_linf(Z, l2.direction, li.margin, near_linf))


@st.composite
def discriminating(draw, inner, linf_gap_min: float = LINF_GAP_MIN, cos_max: float = COS_MAX):
    """Data from `inner` on which ŵ2 is ≥ linf_gap_min below γ∞ in ℓ∞ margin AND every direction
    within NEAR_LINF of γ∞ has cos ≤ cos_max to ŵ2: no direction passes both an ℓ2 check
    (cos ≥ 0.999) and an ℓ∞ check (gap ≤ 3 %). About 3 in 4 GR datasets with d ≥ 3 qualify."""
    cert = draw(inner)
    assume(discrimination(cert.dataset.Z).ok(linf_gap_min, cos_max))
    return cert


@st.composite
def betas(draw, beta2=st.floats(0.3, 0.999)):  # noqa: B008 (strategies are immutable)
    """0 ≤ β1 ≤ β2 < 1: β2 drawn, then β1 = u·β2 with u ∈ [0, 1]."""
    b2 = draw(beta2)
    return draw(st.floats(0.0, 1.0)) * b2, b2


def batch_sizes(n: int):
    return st.integers(1, n)


def data(kind: str, discriminate: bool = False, **kw):
    """Strategy by name: 'gr', 'gaussian', 'shifted-diagonal', 'gr-orthogonal'; discriminate=True wraps it in
    `discriminating` (the direction claims' data)."""
    base = {"gr": gr_data, "gaussian": gaussian_data, "shifted-diagonal": shifted_diagonal_data,
            "gr-orthogonal": gr_orthogonal_data}[kind](**kw)
    return discriminating(base) if discriminate else base


# ---- non-degenerate max-margin problems (Soudry et al. 2018's "almost every dataset")

@dataclass(frozen=True)
class Regularity:
    slack: float   # θ = min over non-support samples of z_i·ŵ2/γ2 − 1 (inf when every sample is a support vector)
    dual: float    # min over support vectors of λ_i / max_j λ_j (0: a support vector with zero dual: degenerate)
    rate: float    # κ = smallest nonzero eigenvalue of Σ_sv α_i z_i z_iᵀ (α the SVM duals, ŵ = Σ α_i z_i): GD's
    #                residual approaches its limit like t^(−κ) inside the support vectors' span (Z → cZ keeps it)


def regularity(Z: np.ndarray) -> Regularity:
    """How far Z is from the degenerate cases of the ℓ2 max-margin problem: the non-support samples' relative slack θ
    (GD's residual ρ(t) approaches its limit like t^(−θ)) and the smallest support-vector dual relative to the largest
    (a zero dual on an active constraint: a degenerate case that Soudry et al.'s "almost every dataset" leaves out), and
    the rate κ of the residual inside the support vectors' span: linearizing the proof's residual equation
    dr/d(ln t) = Σ_sv z_i (e^(−z_i·r) − α_i) at its fixed point gives dδ/d(ln t) = −(Σ_sv α_i z_i z_iᵀ) δ."""
    ref = max_margin(Z, "l2")
    rel = Z @ ref.direction / ref.margin - 1.0
    sv = np.zeros(len(rel), bool)
    sv[ref.support] = True
    sv |= rel <= 1e-5   # on the margin to the oracle's accuracy (Clarabel leaves ~1e-6 on a degenerate constraint)
    slack = float(rel[~sv].min()) if (~sv).any() else float("inf")
    lam = ref.duals / ref.duals.max()
    alpha = ref.duals / ref.margin                      # ŵ = ŵ2/γ2 = Zᵀα (the duals of the norm form, rescaled)
    ev = np.linalg.eigvalsh((Z[sv].T * alpha[sv]) @ Z[sv])
    nz = ev[ev > 1e-9 * max(float(ev.max()), 1e-300)]
    return Regularity(slack, float(lam[sv].min()), float(nz.min()) if nz.size else 0.0)


@st.composite
def nondegenerate(draw, inner, slack_min: float, dual_min: float, rate_min: float = 0.0):
    """Data from `inner` whose ℓ2 max-margin problem is non-degenerate with room to spare: every non-support sample
    has relative slack ≥ slack_min, every support vector a dual ≥ dual_min × the largest one, and the residual's rate
    κ ≥ rate_min (`regularity`)."""
    cert = draw(inner)
    r = regularity(cert.dataset.Z)
    assume(r.slack >= slack_min and r.dual >= dual_min and r.rate >= rate_min)
    return cert


# ---- discrimination for ℓ1 claims: ŵ2 (and so GD's limit) measurably short of the ℓ1 max margin

# L1_GAP_MIN = 0.1 and l1_gap_of_l2 live with the data source that needs them (recipes.linear: gaussian-l1)


@st.composite
def discriminating_l1(draw, inner, gap_min: float = L1_GAP_MIN):
    """Data from `inner` on which ŵ2 is ≥ gap_min below γ1 in ℓ1 margin (an ℓ1 check with gap_max < gap_min rejects
    ŵ2)."""
    cert = draw(inner)
    assume(l1_gap_of_l2(cert.dataset.Z) >= gap_min)
    return cert


# ---- discrimination for ℓp claims (1 < p < ∞, e.g. 'l3'): each rival's optimum measurably short of γ_p in ℓp margin.
# ℓ2 and ℓ3 balls are close: on Gaussian data ŵ2 loses only 1–5 % of γ3 (median 3 %, never 10 % in 25 draws), so the
# ℓ2 rival is held to 3 % (an ℓ3 check must then use gap_max < 0.03), ŵ1 to bias.py's 10 %.
LP_RIVALS = {"l2": 0.03, "l1": 0.1}


def lp_gaps(Z: np.ndarray, norm: str, rivals=tuple(LP_RIVALS)) -> dict:
    """rival → (γ_p − γ_p(ŵ_rival)) / γ_p: how far each rival's max-margin direction is from the ℓp max margin."""
    ref = max_margin(Z, norm)
    return {r: float((ref.margin - normalized_margin(Z, max_margin(Z, r).direction, norm)) / ref.margin)
            for r in rivals}


@st.composite
def discriminating_lp(draw, inner, norm: str, rivals=MappingProxyType(LP_RIVALS)):
    """Data from `inner` on which every rival's optimum is ≥ rivals[rival] below γ_p in ℓp margin (`lp_gaps`)."""
    cert = draw(inner)
    gaps = lp_gaps(cert.dataset.Z, norm, tuple(rivals))
    assume(all(gaps[r] >= m for r, m in rivals.items()))
    return cert


# ---- discrimination for the same-speed wrong-limit controls: precond-gd's limit (GD's rate, another direction)

PRECOND_COS_MAX = 0.9   # precond-gd's limit has cos ≤ 0.9 to ŵ2, so a·γ2 ≥ 1/0.9 (see precond_limit)


@dataclass(frozen=True)
class PrecondLimit:
    direction: np.ndarray   # unit limit direction of precond-gd: D^(1/2) v / ‖D^(1/2) v‖, v the SVM vector of Z D^(1/2)
    log_rate: np.ndarray    # w(t)/ln t → D^(1/2) v̂ (v̂ = v/γ', ‖v̂‖ = 1/γ' the SVM vector of norm 1/γ')
    cos_l2: float           # cos(direction, ŵ2)
    a_gamma: float          # ‖D^(1/2) v̂‖·γ2: the limit of a·γ2 (the slope half's figure) under precond-gd, ≥ 1/cos_l2


def precond_limit(Z: np.ndarray, D: np.ndarray | None = None) -> PrecondLimit:
    """The limit of w ← w − η D ∇L (D = precond_diagonal(d) unless given): with v = D^(−1/2) w the run is GD on the
    data z_i D^(1/2), so v(t) = v̂ ln t + O(1) (Soudry et al.'s Thm 3, v̂ the SVM vector of Z D^(1/2), from the
    certified ℓ2 oracle) and w(t)/ln t → D^(1/2) v̂. That vector satisfies z_i·w ≥ 1, so with ŵ = Σ α_i z_i (the SVM
    duals, Σ α_i = ‖ŵ‖²): ŵ·w ≥ ‖ŵ‖², i.e. ‖w‖γ2 ≥ 1/cos(w, ŵ2): the slope a·γ2 of ‖w(t)‖ against ln t tends to
    ≥ 1/cos."""
    D = precond_diagonal(Z.shape[1]) if D is None else np.asarray(D, float)
    r = D ** 0.5
    ref = max_margin(Z * r, "l2")
    w = r * (ref.direction / ref.margin)
    l2 = max_margin(Z, "l2")
    nw = float(np.linalg.norm(w))
    return PrecondLimit(w / nw, w, float(w @ l2.direction / nw), nw * l2.margin)


@st.composite
def discriminating_precond(draw, inner, cos_max: float = PRECOND_COS_MAX):
    """Data from `inner` on which precond-gd's limit direction has cos ≤ cos_max to ŵ2 (`precond_limit`)."""
    cert = draw(inner)
    assume(precond_limit(cert.dataset.Z).cos_l2 <= cos_max)
    return cert
