"""Meta-tests of paper 1's direction claims: the data strategies only generate data on which the claim
can discriminate, and every paper direction claim has a control that runs the same check with the
wrong optimizer on the same strategy.

Disjointness is proved per dataset, not sampled: with u = ŵ2, `max_cos_near_linf(Z, u, γ∞, 0.03)` is
the exact largest cosine to ŵ2 of ANY direction whose ℓ∞ gap is ≤ 3 %. If it is < 0.999 then no run
can pass both an ℓ2 check (cos ≥ 0.999) and an ℓ∞ check (gap ≤ 3 %): whichever optimizer runs, at
most one of baek.gr-inc-adam-l2 / zhang.det-adam-linf (and their controls) can accept it.
"""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibverify.claims import load_registry
from ibverify.data import gr
from ibverify.strategies import linear as S
from ibverify.oracles import max_margin, normalized_margin
from ibverify.theory.linf_set import max_cos_near_linf

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = {c.id: c for c in load_registry(ROOT / "claims")}
DIRECTION_CHECKS = ("ibverify.checks.per_sample:direction_converges", "ibverify.checks.per_sample:signum_beta_trend")
# what the claim's data strategy and β draw depend on: a control must match all of them in every tier
STRATEGY_KEYS = ("dataset", "n", "d", "beta2_range", "beta2_scale", "beta_range", "betas", "c_beta",
                 "beta_one_minus_min", "lr", "lr_decay", "criterion", "target", "late_decades", "base_steps", "losses",
                 "loss")


@settings(max_examples=12, deadline=None, derandomize=True)
@given(S.data("gr", discriminate=True))
def test_discriminating_gr_data_separate_the_two_checks(cert):
    Z = cert.dataset.Z
    assert cert.dataset.d >= 3
    l2, li = max_margin(Z, "l2"), max_margin(Z, "linf")
    gap_l2 = (li.margin - normalized_margin(Z, l2.direction, "linf")) / li.margin
    assert gap_l2 >= S.LINF_GAP_MIN  # ŵ2 fails the ℓ∞ check by a wide margin
    near = max_cos_near_linf(Z, l2.direction, li.margin, S.NEAR_LINF)
    assert near <= S.COS_MAX < 0.999  # every direction passing the ℓ∞ check fails the ℓ2 check


@settings(max_examples=20, deadline=None, derandomize=True)
@given(S.gr_data())
def test_gr_strategy_never_draws_d_below_3(cert):
    assert cert.dataset.d >= 3


def test_d2_gr_data_cannot_discriminate():
    """The issue's measurement: on d = 2 GR data ŵ2 is an ℓ∞ max-margin direction, so the strategy
    must reject it (and does, through the same test it applies to every dataset)."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        Z = gr(6, 2, rng).Z
        dis = S.discrimination(Z)
        assert dis.linf_gap_of_l2 <= 1e-9 and dis.max_cos_near_linf >= 1 - 1e-9 and not dis.ok()


def test_max_cos_near_linf_bounds_every_near_linf_direction():
    """Defining property: no direction with ℓ∞ gap ≤ 3 % has a larger cosine to u than the bound, and
    the bound is nearly attained by some such direction (so it is not vacuous)."""
    rng = np.random.default_rng(3)
    Z = gr(6, 8, rng).Z
    l2, li = max_margin(Z, "l2"), max_margin(Z, "linf")
    bound = max_cos_near_linf(Z, l2.direction, li.margin, 0.03)
    v0 = li.direction
    best = -1.0
    for _ in range(4000):
        v = v0 + rng.uniform(0, 0.3) * rng.standard_normal(Z.shape[1]) + rng.uniform(0, 1) * l2.direction
        gap = (li.margin - normalized_margin(Z, v, "linf")) / li.margin
        if gap <= 0.03:
            c = float(v @ l2.direction / np.linalg.norm(v))
            assert c <= bound + 1e-9
            best = max(best, c)
    assert best > -1.0 and bound - best < 0.05


def _direction_claims():
    return [c for c in CLAIMS.values() if c.check in DIRECTION_CHECKS and c.status == "paper"
            and c.params.get("dataset") == "gr"]


@pytest.mark.parametrize("cid", [c.id for c in _direction_claims()])
def test_every_direction_claim_has_a_wrong_optimizer_control_on_its_strategy(cid):
    claim = CLAIMS[cid]
    assert claim.tiers and claim.check in DIRECTION_CHECKS
    same = []
    for ctl_id in claim.controls:
        ctl = CLAIMS[ctl_id]
        if ctl.check != claim.check or ctl.params.get("optimizer") == claim.params.get("optimizer"):
            continue
        if "refuted_by" in ctl.params:
            continue
        if all(ctl.params_for(t).get(k) == claim.params_for(t).get(k) for t in claim.tiers for k in STRATEGY_KEYS) \
                and set(ctl.tiers) == set(claim.tiers) and ctl.tolerances.keys() == claim.tolerances.keys() \
                and all(ctl.tol(k) == claim.tol(k) for k in claim.tolerances):
            same.append(ctl_id)
    assert same, f"{cid}: no control runs its check with another optimizer on the same strategy and tolerances"


def test_each_half_of_the_direction_rule_has_its_own_control():
    halves = {CLAIMS[c].params.get("refuted_by") for c in CLAIMS if CLAIMS[c].status == "control"
              and CLAIMS[c].check == DIRECTION_CHECKS[0]}
    assert {"trend", "closeness"} <= halves


@settings(max_examples=6, deadline=None, derandomize=True)
@given(S.data("gr-orthogonal"), st.just(None))
def test_orthogonal_gr_sign_sum_is_within_tolerance_but_not_l2(cert, _):
    """The trend-only control's data: cos(Σ s_i, ŵ2) ∈ [0.999, 1 − 1e-8) in closed form and by the oracle."""
    D = cert.dataset
    Z = D.Z
    a = np.abs(Z[:, 0])
    s = Z / a[:, None]
    assert np.allclose(s @ s.T, D.d * np.eye(D.n))  # orthogonal sign patterns
    u = s.sum(axis=0) / np.linalg.norm(s.sum(axis=0))
    closed = (1 / a).sum() / (np.sqrt(D.n) * np.sqrt((1 / a**2).sum()))
    l2 = max_margin(Z, "l2").direction
    assert u @ l2 == pytest.approx(closed, abs=1e-9)
    w2 = (s / a[:, None]).sum(axis=0)
    assert np.allclose(l2, w2 / np.linalg.norm(w2), atol=1e-8)
    assert 0.999 <= closed < 1 - 1e-8
