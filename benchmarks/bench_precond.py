"""precond-gd per step: the compiled kernel (ibverify.engine.kernels_precond) vs the float64 reference loop.

    python benchmarks/bench_precond.py [--rounds 5] [--quick] [--json PATH] [--markdown PATH]

The full tier ran precond-gd (four rows: wang/soudry.control.precond-gd-l2, ji-telgarsky.control.precond-gd-alignment,
nacson.control.precond-sgd-replacement-l2) through `run(..., engine="reference")`, the numpy chain stepped in Python;
this measures what a step costs there and in the compiled kernel, on GR data at the rows' sizes (n ≤ 20, d ≤ 50; full
batch, and batch 2 drawn with replacement), constant lr 0.1 (the rows run lr_decay 0). The kernel is fed as
`engine.vector.CompiledState.advance` feeds a kernel (the table routes precond-gd to it: the row's default engine).
Agreement first: after AGREE steps the kernel's w must match the reference's to 1e−12 relative, else exit 1. Then
`rounds` interleaved rounds (`harness.rounds`: each contender once per round, order rotated): the reference runs
REF_STEPS steps, the kernel KERNEL_STEPS (per-step costs differ by orders of magnitude); the speed-up is the median
over rounds of the per-round ratio of CPU seconds per step (time.process_time: the machine is shared), wall clock
beside it. --markdown PATH writes the table of benchmarks/README.md and docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(HERE), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)

import harness  # noqa: E402
from ibverify.data import gr  # noqa: E402
from ibverify.engine import kernels_precond as KP  # noqa: E402
from ibverify.engine import run, vector  # noqa: E402
from ibverify.optim import OptimizerSpec  # noqa: E402

SIZES = [(3, 3, None, "cyclic"), (10, 20, None, "cyclic"), (20, 50, None, "cyclic"), (20, 50, 2, "replacement")]
AGREE, TOL = 300, 1e-12
STEPS = {False: (5_000, 500_000), True: (100, 2_000)}   # quick → (REF_STEPS, KERNEL_STEPS)


def compiled(Z, spec, steps: int) -> np.ndarray:
    """w after `steps` steps of the kernel, in chunks of the engine's size, as CompiledState.advance runs them."""
    spec = spec.resolved(Z.shape[0])
    st = vector.CompiledState(Z.shape[1], spec, Z.shape[0])
    per = max(1, vector.CHUNK_WORK // spec.batch_size)
    while st.t < steps:
        k = int(min(steps - st.t, per))
        idx, pos = vector.sample_block(st.sampler, k)
        KP.run_chunk(KP.PRECOND, Z, idx, pos, k, st.w, st.m, st.v, st.s, st.t, spec.lr, spec.lr_decay, spec.beta1,
                     spec.beta2, spec.eps, spec.bias_correction, 0.0, vector.loss_code(spec), True, st.diag)
        st.t += k
    return st.w


def reference(Z, spec, steps: int) -> np.ndarray:
    return run(Z, spec, steps, checkpoints=[steps], engine="reference").ws[-1]


def measure(n, d, b, order, rounds: int, quick: bool) -> dict:
    Z = gr(n, d, np.random.default_rng(0)).Z
    spec = OptimizerSpec("precond-gd", lr=0.1, lr_decay=0.0, batch_size=b, order=order, seed=0)
    agree = harness.rel_diff(compiled(Z, spec, AGREE), reference(Z, spec, AGREE))
    r_steps, k_steps = STEPS[quick]
    t = harness.rounds({"reference": lambda: reference(Z, spec, r_steps),
                        "compiled": lambda: compiled(Z, spec, k_steps)}, rounds)

    def speedup(times):
        return statistics.median((tr / r_steps) / (tk / k_steps) for tr, tk in zip(times["reference"],
                                                                                 times["compiled"], strict=True))

    return {"n": n, "d": d, "batch": "full" if b is None else b, "order": order, "agree_rel": agree,
            "reference_steps": r_steps, "compiled_steps": k_steps,
            "reference_steps_per_cpu_s": harness.rate(r_steps, t.cpu["reference"]),
            "compiled_steps_per_cpu_s": harness.rate(k_steps, t.cpu["compiled"]),
            "speedup_cpu": speedup(t.cpu), "speedup_wall": speedup(t.wall)}


def markdown(res: dict) -> list[str]:
    rows = [[r["n"], r["d"], r["batch"] if r["order"] == "cyclic" else f"{r['batch']}, {r['order']}",
             f"{r['reference_steps_per_cpu_s']:,.0f}", f"{r['compiled_steps_per_cpu_s']:,.0f}",
             f"{r['speedup_cpu']:,.0f}×", f"{r['speedup_wall']:,.0f}×", f"{r['agree_rel']:.1e}"]
            for r in res["sizes"]]
    head = (f"Measured {res['created']} on {res['machine']['cpus']} CPUs, numba {res['machine']['numba']}; "
            f"{res['rounds']} interleaved rounds, medians; load average {res['load_before']} → {res['load_after']}.")
    return [head, ""] + harness.table(
        ["n", "d", "batch", "reference steps/CPU s", "compiled steps/CPU s", "speed-up (CPU)", "speed-up (wall)",
         f"rel. diff. after {AGREE} steps"], rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median reported)")
    ap.add_argument("--quick", action="store_true", help="tiny step counts, one round (the smoke test)")
    ap.add_argument("--json", default=None, help="write the measurements here")
    ap.add_argument("--markdown", default=None, metavar="PATH", help="also write the markdown table here")
    a = ap.parse_args(argv)
    rounds = 1 if a.quick else a.rounds
    compiled(gr(3, 3, np.random.default_rng(0)).Z, OptimizerSpec("precond-gd"), 2)   # compile outside the timings
    res = {"created": harness.created(), "machine": harness.machine(), "rounds": rounds,
           "load_before": harness.load_average(), "sizes": []}
    for n, d, b, order in SIZES:
        res["sizes"].append(measure(n, d, b, order, rounds, a.quick))
    res["load_after"] = harness.load_average()
    res["ok"] = all(r["agree_rel"] <= TOL for r in res["sizes"])
    text = "\n".join(markdown(res))
    print(text)
    if a.json:
        harness.write_json(a.json, res)
    if a.markdown:
        Path(a.markdown).write_text(text + "\n")
    if not res["ok"]:
        print(f"disagreement above {TOL}: not timed as the same update", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
