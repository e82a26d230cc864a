"""engine.kernels._own_frames against its definition, value by value: a coordinate k gets its own frame L_k =
max{l_j : z_jk ≠ 0} when its largest contribution in the shared frame, dom_k = max_j e^{l_j − L}|z_jk|, is below
`cut`; its gradient is then −(1/b) Σ_j e^{l_j − L_k} z_jk (and Σ_j (e^{l_j − L_k} z_jk)² for AdamProxy). The kernel
computes each e^{l_j − L} once a step and stops at the first sample that feeds k (a raw-digits Signum run: 23 → 4
CPU-s at 1e5 full-batch steps); these cases pin that shortcut: samples flushed to a zero weight, a contribution
exactly at `cut` and just below it, a blank column, a column fed only by flushed samples."""

import math

import numpy as np

from ibverify.engine import kernels

CUT = kernels.CUT


def definition(Z, rows, lw, L, cut):
    """{k: (L_k, g_k, sq_k)} of the coordinates that get their own frame, by the definition (no shortcut)."""
    out = {}
    for k in range(Z.shape[1]):
        zs = [(lw[j], Z[i, k]) for j, i in enumerate(rows) if Z[i, k] != 0.0]
        if not zs:
            continue
        dom = max(math.exp(l - L) * abs(z) for l, z in zs)
        if dom >= cut:
            continue
        Lk = max(l for l, _ in zs)
        terms = [math.exp(l - Lk) * z for l, z in zs]
        out[k] = (Lk, -sum(terms) / len(rows), sum(t * t for t in terms))
    return out


def kernel(Z, rows, lw, L, cut, adam=True):
    d = Z.shape[1]
    gt, gown, Lk = np.full(d, 7.0), np.full(d, np.nan), np.full(d, np.nan)
    own = np.ones(d, dtype=np.bool_) if adam else np.zeros(0, dtype=np.bool_)
    gsq = np.zeros(0) if adam else np.full(d, 5.0)
    count = kernels._own_frames(Z, np.asarray(rows, dtype=np.int64), lw, L, gt, gsq, cut, gown, Lk, own)
    return count, gt, gsq, gown, Lk, own


def case():
    """Sample 0 holds the frame (l = L = 0); samples 1, 2 are flushed to weight 0 in it (l = −800, −900), sample 3
    weighs e^{−700} ≈ 1e−304. Columns: 0 fed by sample 0; 1 only by the flushed samples; 2 blank; 3 by sample 0 with
    e^0·|z| = cut exactly (fed: dom ≥ cut); 4 by sample 0 just below cut (own frame); 5 by sample 3 alone; 6 by
    sample 3 and a flushed one."""
    Z = np.zeros((4, 7))
    Z[0, 0] = 1.0
    Z[1, 1], Z[2, 1] = 2.0, -3.0
    Z[0, 3] = CUT
    Z[0, 4] = np.nextafter(CUT, 0.0)
    Z[3, 5] = 4.0
    Z[3, 6], Z[1, 6] = 0.5, 1.5
    lw = np.array([0.0, -800.0, -900.0, -700.0])
    return Z, [0, 1, 2, 3], lw, 0.0


def test_each_column_decided_as_the_definition_decides():
    Z, rows, lw, L = case()
    want = definition(Z, rows, lw, L, CUT)
    assert sorted(want) == [1, 4, 5, 6]   # the case is what its docstring says
    count, gt, _, gown, Lk, own = kernel(Z, rows, lw, L, CUT)
    assert count == 4
    assert [bool(x) for x in own] == [k in want for k in range(7)]
    for k, (lk, g, _) in want.items():
        assert Lk[k] == lk and gt[k] == 0.0
        assert math.isclose(gown[k], g, rel_tol=1e-15)
    assert gt[0] == gt[2] == gt[3] == 7.0   # the others are left as the shared frame computed them


def test_scale_free_form_writes_the_gradient_and_its_squares_in_place():
    Z, rows, lw, L = case()
    want = definition(Z, rows, lw, L, CUT)
    count, gt, gsq, *_ = kernel(Z, rows, lw, L, CUT, adam=False)
    assert count == len(want)
    for k in range(7):
        if k in want:
            assert math.isclose(gt[k], want[k][1], rel_tol=1e-15) and math.isclose(gsq[k], want[k][2], rel_tol=1e-15)
        else:
            assert gt[k] == 7.0 and gsq[k] == 5.0


def test_random_batches_with_flushed_samples_match_the_definition():
    rng = np.random.default_rng(3)
    for trial in range(40):
        b, d = int(rng.integers(1, 9)), int(rng.integers(1, 12))
        Z = rng.normal(size=(b + 2, d)) * (rng.random((b + 2, d)) < 0.5)
        rows = rng.choice(b + 2, size=b, replace=False)
        lw = -rng.choice([0.0, 10.0, 600.0, 680.0, 740.0, 760.0, 1000.0], size=b) - rng.random(b)
        lw[int(rng.integers(b))] = L = 0.0 if trial % 2 else -3.0
        cut = CUT if trial % 3 else kernels.CUT_SQ
        want = definition(Z, rows, lw, L, cut)
        count, gt, _, gown, Lk, own = kernel(Z, rows, lw, L, cut)
        assert count == len(want) and {k for k in range(d) if own[k]} == set(want), trial
        for k, (lk, g, _) in want.items():
            assert Lk[k] == lk and math.isclose(gown[k], g, rel_tol=1e-14, abs_tol=0.0), (trial, k)
