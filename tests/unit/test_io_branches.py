"""Values of small untested paths (issue 33, item 6): a CSV without a final newline, the run store's key over every
spec field, the provenance commit, and the ℓ∞ margins of the batch-metric check."""

import subprocess
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import ibverify
from ibverify.data import load_dataset
from ibverify.recipes import DataRecipe, Recipe, settings
from ibverify.losses import LOSSES
from ibverify.optim import OptimizerSpec
from ibverify.optim.table import ORDERS


# ------------------------------------------------------------------ CSV: the last row without a newline

@pytest.mark.parametrize("end", ["", "\r", "   "])
def test_csv_without_a_final_newline_keeps_the_last_row(tmp_path, end):
    p = tmp_path / "d.csv"
    p.write_text("x1,x2,label\n1.0,2.0,1\n-1.0,-2.0,-1\n2.0,1.5,1" + end)
    D = load_dataset(p)
    assert D.X.shape == (3, 2)
    np.testing.assert_array_equal(D.X[-1], [2.0, 1.5])
    np.testing.assert_array_equal(D.y, [1, -1, 1])


# ------------------------------------------------------------------ the run store's key: every spec field counts

def _other(field: str, v):
    if field == "name":
        return "signum" if v != "signum" else "adam"
    if field == "order":
        return next(o for o in ORDERS if o != v)
    if field == "loss":
        return next(x for x in LOSSES if x != v)
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, float):
        return v * 1.5 + 0.125
    assert v is None, (field, v)
    return 0.5


def test_two_specs_differing_in_any_one_field_have_different_keys():
    spec = OptimizerSpec.from_params({"optimizer": "adam", "batch_size": 2, "lr_decay": 0.5, "eps": 1e-8})
    fields = spec.to_json()
    assert {"eps", "lr_decay", "order", "batch_size", "beta1", "beta2", "lr", "loss", "seed"} <= set(fields)
    data = DataRecipe.generated("gr", n=8, d=4, seed=1)
    key = Recipe(data, spec, 100).key()
    for f, v in fields.items():
        other = replace(spec, **{f: _other(f, v)})
        assert other.to_json()[f] != v, f
        assert Recipe(data, other, 100).key() != key, f"{f}: {v!r} → {other.to_json()[f]!r} gives the same key"


# each block-run setting, on a configuration where it changes the run
SETTING_BASES = {
    "dataset": {}, "n": {}, "d": {}, "teacher_width": {}, "teacher_q": {}, "data_seed": {}, "model": {},
    "width": {}, "q": {}, "steps": {}, "checkpoints": {}, "start": {}, "init_scale": {},
    "rows": {"dataset": "matrix", "model": "matrix-linear"}, "cols": {"dataset": "matrix", "model": "matrix-linear"},
    "depth": {"model": "deep"}, "zero_init": {"model": "linear"},
}
CHANGED = {"dataset": "linear", "model": "deep", "zero_init": False, "teacher_q": 3.0, "q": 3.0, "init_scale": 0.25}


def test_every_run_setting_and_the_seed_count_in_the_key():
    base = {"optimizer": "signum", "dataset": "teacher", "n": 8, "d": 3, "teacher_width": 2, "teacher_q": 2.0,
            "data_seed": 1, "model": "two-layer", "width": 4, "q": 2.0, "depth": 2, "steps": 100, "checkpoints": 5,
            "start": 10, "init_scale": 0.5, "rows": 2, "cols": 3, "zero_init": True}
    for k, over in SETTING_BASES.items():
        cfg = {**base, **over}
        key = settings.network(cfg, 0).key()
        assert settings.network({**cfg, k: CHANGED.get(k, cfg[k] * 2 if k != "steps" else 200)}, 0).key() != key, k
    two_layer = settings.network(base, 0)
    assert settings.network(base, 1).key() != two_layer.key()                      # θ0's seed
    linear = {**base, "model": "linear"}
    assert settings.network(linear, 1).key() == settings.network(linear, 0).key()  # θ0 = 0: the seed plays no part


# ------------------------------------------------------------------ provenance: the checkout's HEAD

def test_provenance_commit_is_the_checkouts_head():
    from ibverify.runner.claim import provenance

    root = Path(ibverify.__file__).resolve().parents[1]
    git = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    if git.returncode:
        pytest.skip("ibverify is not run from a git checkout")
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                            capture_output=True, text=True, check=True).stdout
    provenance.cache_clear()
    try:
        p = provenance()
    finally:
        provenance.cache_clear()
    assert {k: p[k] for k in ("commit", "dirty")} == {"commit": git.stdout.strip(), "dirty": bool(status.strip())}
    assert len(p["commit"]) == 40


# ------------------------------------------------------------------ the batch metric's ℓ∞ margins, by hand

def test_batch_metric_linf_margins_are_min_margin_over_the_max_coordinate(monkeypatch):
    """Predicted direction (2, 1): min_i z_i·p = 4, ‖p‖∞ = 2 → 2. Run w = (−3, 1): min z·w = −10, ‖w‖∞ = 3 → −10/3
    (the max of |w|, not of w); at b = 2, p = (1, 4) → −1/4 and w = (1, 0.5) → 2/1."""
    from ibverify import profiles
    from ibverify.checks import paper1_laws as P
    from ibverify.claims import CheckContext, load_registry

    profiles.load("ci")
    Z = np.array([[1.0, 2.0], [3.0, -1.0], [2.0, 2.0]])
    preds = {1: np.array([2.0, 1.0]), 2: np.array([1.0, 4.0])}
    finals = {1: np.array([-3.0, 1.0]), 2: np.array([1.0, 0.5])}
    monkeypatch.setattr(P, "gaussian", lambda n, d, seed: "data")
    monkeypatch.setattr(P, "fixed_point", SimpleNamespace(iterate=lambda Z, b: SimpleNamespace(direction=preds[b])))
    monkeypatch.setattr(P, "listed_run", lambda data, r, n, seed, checkpoints: r["batch_size"])

    def fake_run(b):   # the run store's run of the recipe (here: its batch size)
        w = finals[b]
        return SimpleNamespace(ws=np.array([0.5 * w, w]), w=w, checkpoints=np.array([1.0, 2.0]))

    monkeypatch.setattr(P, "store_of", lambda ctx: SimpleNamespace(data=lambda rec: SimpleNamespace(Z=Z),
                                                                   run=fake_run))
    claim = next(c for c in load_registry() if c.check.endswith(":batch_metric_prediction"))
    ctx = CheckContext(claim, "smoke", {**claim.params_for("smoke"), "data_seeds": [1], "b_values": [1, 2]}, 0)
    rows = P.batch_metric_prediction(ctx).table
    assert [r["predicted ℓ∞ margin"] for r in rows] == pytest.approx([2.0, -0.25])
    assert [r["run ℓ∞ margin"] for r in rows] == pytest.approx([-10 / 3, 2.0])
    assert [r["predicted margins increase with b"] for r in rows] == [False, False]
    assert [r["run margins increase with b"] for r in rows] == [True, True]
