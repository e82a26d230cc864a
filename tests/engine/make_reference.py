"""Regenerate tests/engine/reference_outputs.json: today's compiled-engine outputs (final w, the
iterates at checkpoints, max log-scale and diagnostics) for every optimizer family on three
datasets, stored as float.hex so the bit-identity test compares exact bits.

    python tests/engine/make_reference.py      # only when an intended numerical change is made

Generated from the engine at commit d89222f (before the vectorized kernels)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ibverify.data import gaussian, gr
from ibverify.engine import run
from ibverify.optim import OptimizerSpec

OUT = Path(__file__).with_name("reference_outputs.json")
STEPS = 3000

DATASETS = {  # label -> Z (label-folded rows z_i = y_i x_i)
    "gr-n5-d7-x50": lambda: gr(5, 7, np.random.default_rng(3)).Z * 50.0,  # passes float64 underflow
    "gaussian-n12-d20": lambda: gaussian(12, 20, np.random.default_rng(4)).Z,
    "gr-n10-d50": lambda: gr(10, 50, np.random.default_rng(1)).Z,
}

FAMILIES = [
    dict(name="inc-adam"),
    dict(name="inc-adam", beta1=0.3, beta2=0.5),
    dict(name="inc-adam", eps=1e-8, bias_correction=True),
    dict(name="inc-adam", beta1=0.0, beta2=0.0),
    dict(name="inc-adam", loss="exponential"),
    dict(name="det-adam"),
    dict(name="det-adam", beta1=0.0, beta2=0.0),
    dict(name="adam", batch_size=2, order="reshuffle", seed=7),
    dict(name="adam", batch_size=3, order="replacement", seed=2),
    dict(name="adam", batch_size=1, order="reshuffle", seed=1),
    dict(name="signum"),
    dict(name="signum", batch_size=1),
    dict(name="signum", batch_size=1, beta1=0.0),
    dict(name="gd"),
    dict(name="ngd"),
    dict(name="adam-proxy"),
    dict(name="adam-proxy", loss="exponential"),
]


def label(fam: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in fam.items())


def outputs(Z: np.ndarray, fam: dict) -> dict:
    kw = {"lr": 1.0, **fam} if Z.max() > 10 else dict(fam)
    r = run(Z, OptimizerSpec(**kw), STEPS, checkpoints=5)
    diag = {k: v for k, v in r.diagnostics.items() if k != "max_log_scale"}
    return {"ws": [[float(x).hex() for x in row] for row in r.ws], "checkpoints": r.checkpoints.tolist(),
            "max_log_scale": float(r.diagnostics.get("max_log_scale", 0.0)).hex(), "diagnostics": diag,
            "spec": kw}


def main() -> None:
    ref = {"steps": STEPS, "cases": {}}
    for ds, make in DATASETS.items():
        Z = make()
        for fam in FAMILIES:
            ref["cases"][f"{ds}|{label(fam)}"] = {"dataset": ds, **outputs(Z, fam)}
    OUT.write_text(json.dumps(ref, indent=0, sort_keys=True))
    print(f"wrote {len(ref['cases'])} cases to {OUT}")


if __name__ == "__main__":
    main()
