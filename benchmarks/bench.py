"""ibverify benchmark: the compiled engine against the loops a careful researcher would write.

    python benchmarks/bench.py [--quick] [--rounds 5] [--json PATH] [--markdown PATH] [--tiers smoke,fast]

Sections (every timing is the median of `rounds` interleaved rounds: in each round every contender
runs once on the same fixed work, so load changes hit all of them alike; ratios are medians of the
per-round ratios):
  * agreement first: engine (compiled and reference), hand-written numba loop, jitted JAX loop and
    (if installed) torch.optim.Adam compute the same per-sample Adam update (≤ 1e-10 relative over a
    few hundred steps), else the script exits 1;
  * scaling in d (10 … 1000) and N: Inc-Adam in the papers' convention (ε = 0, no bias correction,
    η_t = 0.1 (t+1)^(−1/2), 0/0 := 0): engine `run()`, hand-written loop (`baseline_kernel.py`),
    JAX peer (jitted `lax.scan` + an optax transform, float64);
  * torch.optim.Adam per-sample loop (torch convention, optional: skipped with a note when absent);
  * lanes: 16 runs (N = 10, d = 50) in one `run_lanes` call vs the same 16 `run()` calls;
  * every optimizer family through `run()` (steps/s);
  * horizon and memory: one 10⁸-step Inc-Adam run (N = 10, d = 50) in a fresh subprocess: CPU
    seconds and peak RSS (VmHWM from /proc/self/status, else resource.getrusage ru_maxrss, which on
    Linux can carry the parent's peak over fork + exec), next to the peak RSS of a process that only
    imports the engine and runs 10 steps (numba's own floor);
  * optionally the wall time of `ibverify verify --tier T` (--tiers).
Prints markdown tables headed by the date (UTC) and `uptime` (the load average), writes JSON
(schema ibverify.bench/2, default benchmarks/results.json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(HERE), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)

import baseline_kernel  # noqa: E402
import harness  # noqa: E402
from harness import rate, ratio, rounds, table, vs_reference  # noqa: E402
from ibverify.data.generators import gr  # noqa: E402
from ibverify.engine import run, run_lanes  # noqa: E402
from ibverify.optim import OptimizerSpec  # noqa: E402

try:  # optional peers, never dependencies of ibverify
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None
try:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import optax
except ImportError:  # pragma: no cover
    jax = None

SCHEMA = "ibverify.bench/2"
PAPER = dict(name="inc-adam")  # paper 1: eps = 0, no bias correction, lr 0.1 (t+1)^(-1/2), β = (0.9, 0.999)
TORCH_LR = 1e-3
TORCH_CONV = dict(name="adam", batch_size=1, order="cyclic", lr=TORCH_LR, lr_decay=0.0, beta1=0.9,
                  beta2=0.999, eps=1e-8, bias_correction=True)
OPTIMIZERS = [("inc-adam", dict(name="inc-adam")), ("det-adam", dict(name="det-adam")),
              ("adam b=5 reshuffle", dict(name="adam", batch_size=5, order="reshuffle")),
              ("signum", dict(name="signum")), ("gd", dict(name="gd")), ("ngd", dict(name="ngd")),
              ("adam-proxy", dict(name="adam-proxy"))]
GRID = [(10, 10), (10, 20), (50, 20), (10, 50), (200, 50), (10, 100), (10, 1000)]  # (N, d)
JAX_AT = {(10, 20), (10, 50), (10, 1000)}
TARGETS = {"engine/hand d=20": 1.0, "engine/hand d=1000": 0.8, "engine/jax N=10 d=50": 5.0,
           "lanes speed-up": 2.0, "1e8 CPU s": 10.0, "1e8 peak RSS MB": 150.0}

QUICK = dict(rounds=1, work=20_000, agree_steps=60, lane_steps=2_000, horizon=100_000, torch_steps=50,
             grid=[(10, 20), (10, 100)], jax_at=[(10, 20)])
NORMAL = dict(rounds=5, work=4_000_000, agree_steps=400, lane_steps=200_000, horizon=100_000_000, torch_steps=3_000,
              grid=GRID, jax_at=sorted(JAX_AT))


def dataset(n: int, d: int) -> np.ndarray:
    return np.ascontiguousarray(gr(n, d, np.random.default_rng(1000 * n + d)).Z)


# ---------------------------------------------------------------- contenders

def engine_run(Z, kw, steps, engine="compiled", checkpoints=2):
    return run(Z, OptimizerSpec(**kw), steps, checkpoints=checkpoints, engine=engine, dps=50).w


def hand_run(Z, kw, steps):
    s = OptimizerSpec(**kw).resolved(Z.shape[0])
    assert s.batch_size == 1 and s.order == "cyclic" and s.loss == "logistic"
    return baseline_kernel.run_adam(Z, steps, s.lr, s.lr_decay, s.beta1, s.beta2, s.eps, s.bias_correction)


def paper_adam(b1: float, b2: float):
    """optax transform: the papers' Adam (ε = 0, no bias correction, m_{−1} = v_{−1} = 0, 0/0 := 0)."""
    def init(params):
        return (jnp.zeros_like(params), jnp.zeros_like(params))

    def update(g, state, params=None):
        m, v = state
        m = b1 * m + (1.0 - b1) * g
        v = b2 * v + (1.0 - b2) * g * g
        pos = v > 0
        return jnp.where(pos, m / jnp.sqrt(jnp.where(pos, v, 1.0)), 0.0), (m, v)

    return optax.GradientTransformation(init, update)


def jax_runner(Z, steps, lr=0.1, decay=0.5, b1=0.9, b2=0.999):
    """Jitted lax.scan over per-sample steps (cyclic order), float64, optax chain: paper Adam then the
    schedule −lr (t+1)^(−decay). Returns a callable () -> w (compiled on first call)."""
    Zj = jnp.asarray(Z, dtype=jnp.float64)
    n, d = Z.shape
    grad = jax.grad(lambda w, z: jax.nn.softplus(-(z @ w)))
    tx = optax.chain(paper_adam(b1, b2), optax.scale_by_schedule(lambda t: -lr * (t + 1.0) ** (-decay)))

    def body(carry, t):
        w, st = carry
        u, st = tx.update(grad(w, Zj[t % n]), st, w)
        return (w + u, st), None

    @jax.jit
    def go(w0):
        (w, _), _ = jax.lax.scan(body, (w0, tx.init(w0)), jnp.arange(steps))
        return w

    w0 = jnp.zeros(d, dtype=jnp.float64)
    return lambda: np.asarray(go(w0).block_until_ready())


def torch_run(Z, steps, lr=TORCH_LR):
    """torch.optim.Adam per-sample Python loop: float64, batch 1, cyclic order, constant lr."""
    Zt = torch.tensor(Z, dtype=torch.float64)
    w = torch.zeros(Z.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([w], lr=lr, betas=(0.9, 0.999), eps=1e-8)
    n = Z.shape[0]
    for t in range(steps):
        opt.zero_grad()
        torch.nn.functional.softplus(-(Zt[t % n] @ w)).backward()
        opt.step()
    return w.detach().numpy().copy()


# ---------------------------------------------------------------- sections

def check_agreement(cfg) -> dict:
    Z, T = dataset(50, 20), cfg["agree_steps"]
    paper = {"compiled": engine_run(Z, PAPER, T), "handwritten": hand_run(Z, PAPER, T)}
    if jax is not None:
        paper["jax"] = jax_runner(Z, T)()
    conv = {"compiled": engine_run(Z, TORCH_CONV, T), "handwritten": hand_run(Z, TORCH_CONV, T)}
    if torch is not None:
        conv["torch"] = torch_run(Z, T)
    out = {"steps": T, "tolerance": 1e-10,
           "paper_convention": vs_reference(engine_run(Z, PAPER, T, "reference"), paper),
           "torch_convention": vs_reference(engine_run(Z, TORCH_CONV, T, "reference"), conv)}
    out["max_rel"] = max(v for sec in ("paper_convention", "torch_convention") for v in out[sec].values())
    out["ok"] = bool(out["max_rel"] <= out["tolerance"])
    return out


def bench_scaling(cfg, log) -> list[dict]:
    rows = []
    for n, d in cfg["grid"]:
        Z = dataset(n, d)
        steps = max(100, int(cfg["work"] * 20 / d))
        con = {"engine": lambda: engine_run(Z, PAPER, steps), "hand": lambda: hand_run(Z, PAPER, steps)}
        if jax is not None and (n, d) in cfg["jax_at"]:
            con["jax"] = jax_runner(Z, steps)
            con["jax"]()  # compile outside the timing
        engine_run(Z, PAPER, 10)
        hand_run(Z, PAPER, 10)
        t = rounds(con, cfg["rounds"]).wall
        row = {"N": n, "d": d, "steps": steps, **{f"{k}_steps_per_s": rate(steps, v) for k, v in t.items()},
               "engine_over_hand": ratio(t, "engine", "hand"), "seconds": t}
        if "jax" in t:
            row["engine_over_jax"] = ratio(t, "engine", "jax")
        rows.append(row)
        log(f"  N={n:<4} d={d:<5} engine {row['engine_steps_per_s']:>12,.0f}  hand {row['hand_steps_per_s']:>12,.0f}"
            + (f"  jax {row['jax_steps_per_s']:>12,.0f}" if "jax" in t else "")
            + f"  engine/hand {row['engine_over_hand']:.2f}"
            + (f"  engine/jax {row['engine_over_jax']:.1f}" if "jax" in t else ""))
    return rows


def bench_torch(cfg, log) -> dict:
    if torch is None:
        log("  torch not installed: torch loop skipped (pip install torch)")
        return {"skipped": "torch not installed"}
    Z = dataset(10, 50)
    T = cfg["torch_steps"]
    big = T * 200
    t = rounds({"torch": lambda: torch_run(Z, T), "engine": lambda: engine_run(Z, TORCH_CONV, big)}, cfg["rounds"]).wall
    out = {"N": 10, "d": 50, "torch_steps_per_s": rate(T, t["torch"]), "engine_steps_per_s": rate(big, t["engine"]),
           "version": torch.__version__}
    out["engine_over_torch"] = out["engine_steps_per_s"] / out["torch_steps_per_s"]
    log(f"  torch.optim.Adam loop {out['torch_steps_per_s']:,.0f} steps/s; engine (same convention) "
        f"{out['engine_steps_per_s']:,.0f}: {out['engine_over_torch']:,.0f}x")
    return out


def bench_lanes(cfg, log) -> list[dict]:
    Zs = [dataset(10, 50) * (1.0 + 0.01 * i) for i in range(16)]
    specs = [OptimizerSpec("inc-adam", beta2=0.99 + 0.0005 * i) for i in range(16)]
    out = []
    for steps, cps in ((cfg["lane_steps"], 2), (max(100, cfg["lane_steps"] // 100), 30),
                       (max(100, cfg["lane_steps"] // 1000), 10)):
        run_lanes(Zs[:2], specs[:2], 10)
        t = rounds({"lanes": lambda: run_lanes(Zs, specs, steps, checkpoints=cps),
                    "sequential": lambda: [run(Z, s, steps, checkpoints=cps) for Z, s in zip(Zs, specs, strict=True)]},
                   cfg["rounds"]).wall
        row = {"runs": 16, "N": 10, "d": 50, "steps": steps, "checkpoints": cps,
               "lanes_s": statistics.median(t["lanes"]), "sequential_s": statistics.median(t["sequential"]),
               "speedup": ratio(t, "lanes", "sequential")}
        out.append(row)
        log(f"  16 runs x {steps:,} steps ({cps} checkpoints): lanes {row['lanes_s']:.3f} s, sequential "
            f"{row['sequential_s']:.3f} s -> {row['speedup']:.2f}x")
    return out


def bench_optimizers(cfg, log) -> list[dict]:
    rows = []
    for n, d in ((50, 20), (10, 50)):
        Z = dataset(n, d)
        con = {}
        for label, kw in OPTIMIZERS:
            b = OptimizerSpec(**kw).resolved(n).batch_size
            steps = max(10, cfg["work"] // (4 * b))
            engine_run(Z, kw, 3)
            con[label] = (lambda kw=kw, steps=steps: engine_run(Z, kw, steps), steps, b)
        t = rounds({k: v[0] for k, v in con.items()}, cfg["rounds"]).wall
        for label, (_, steps, b) in con.items():
            r = {"N": n, "d": d, "optimizer": label, "batch_size": b, "steps_per_s": rate(steps, t[label])}
            r["sample_grads_per_s"] = r["steps_per_s"] * b
            rows.append(r)
            log(f"  N={n:<3} d={d:<3} {label:<20} b={b:<3} {r['steps_per_s']:>14,.0f} steps/s")
    return rows


HORIZON_CODE = """
import json, resource, sys, time
import numpy as np
from ibverify.data.generators import gr
from ibverify.engine import run
from ibverify.optim import OptimizerSpec
steps = int(sys.argv[1])
Z = np.ascontiguousarray(gr(10, 50, np.random.default_rng(1)).Z)
run(Z, OptimizerSpec("inc-adam"), 10)  # numba cache load / compile before the timed part
c0, w0 = time.process_time(), time.perf_counter()
r = run(Z, OptimizerSpec("inc-adam"), steps, checkpoints=30) if steps else None
def peak_rss_mb():
    # VmHWM: this process's own high-water mark (ru_maxrss can carry the parent's over fork + exec)
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
out = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0, "peak_rss_mb": peak_rss_mb()}
if r is not None:
    out.update(min_margin=float((Z @ r.w).min()), diagnostics=r.diagnostics)
print(json.dumps(out))
"""


def bench_horizon(cfg, log) -> dict:
    """One long Inc-Adam run in a fresh process: CPU time and peak RSS; and a process that only
    imports and warms the engine (the floor of peak RSS)."""
    def child(steps):
        p = subprocess.run([sys.executable, "-c", HORIZON_CODE, str(steps)], capture_output=True, text=True,
                           cwd=ROOT, timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(p.stderr.strip()[-500:])
        return json.loads(p.stdout.strip().splitlines()[-1])

    base = child(0)
    res = child(cfg["horizon"])
    out = {"steps": cfg["horizon"], **res, "import_only_peak_rss_mb": base["peak_rss_mb"],
           "steps_per_cpu_s": cfg["horizon"] / max(res["cpu_s"], 1e-9)}
    out["projected_cpu_s_for_1e8"] = 1e8 / out["steps_per_cpu_s"]
    log(f"  inc-adam N=10 d=50: {cfg['horizon']:,} steps in {res['cpu_s']:.2f} CPU s ({res['wall_s']:.2f} s wall), "
        f"peak RSS {res['peak_rss_mb']:.0f} MB (import only: {base['peak_rss_mb']:.0f} MB), "
        f"min margin {res['min_margin']:.1f}, frame shifts {res['diagnostics']['frame_shifts']}")
    return out


def bench_tiers(tiers, log) -> dict:
    out = {}
    for tier in tiers:
        with tempfile.TemporaryDirectory() as tmp:
            w0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-m", "ibverify", "verify", "--tier", tier, "--report", tmp],
                               cwd=ROOT, capture_output=True, text=True)
            out[tier] = {"wall_s": time.perf_counter() - w0, "exit_status": p.returncode}
        log(f"  tier {tier}: {out[tier]['wall_s']:.1f} s wall, exit {p.returncode}")
    return out


# ---------------------------------------------------------------- output

def targets(res) -> list[tuple[str, float | None, float, bool | None]]:
    sc = {(r["N"], r["d"]): r for r in res["scaling"]}
    long_lanes = res["lanes"][0]["speedup"] if res["lanes"] else None
    h = res["horizon"]
    vals = [("engine/hand d=20", sc.get((10, 20), {}).get("engine_over_hand")),
            ("engine/hand d=1000", sc.get((10, 1000), {}).get("engine_over_hand")),
            ("engine/jax N=10 d=50", sc.get((10, 50), {}).get("engine_over_jax")),
            ("lanes speed-up", long_lanes),
            ("1e8 CPU s", h.get("projected_cpu_s_for_1e8")), ("1e8 peak RSS MB", h.get("peak_rss_mb"))]
    out = []
    for name, v in vals:
        goal = TARGETS[name]
        ok = None if v is None else (v <= goal if name.startswith("1e8") else v >= goal)
        out.append((name, v, goal, ok))
    return out


def markdown(res) -> str:
    m = res["machine"]
    L = [f"Measured {res['created']} on {m['cpus']} CPUs ({m['platform']}), python {m['python']}, numba {m['numba']}, "
         f"jax {m['jax']}, torch {m['torch']}; {res['config']['rounds']} interleaved rounds, medians.",
         f"Load: `{res['load_start']}` at start, `{res['load_end']}` at end.", "",
         "Inc-Adam, papers' convention (ε = 0, no bias correction, η_t = 0.1 (t+1)^(−1/2)), steps/s:", ""]
    L += table(["N", "d", "engine `run()`", "hand-written numba", "JAX `lax.scan` + optax", "engine/hand",
                "engine/JAX"],
               [[r["N"], r["d"], f"{r['engine_steps_per_s']:,.0f}", f"{r['hand_steps_per_s']:,.0f}",
                 f"{r['jax_steps_per_s']:,.0f}" if "jax_steps_per_s" in r else "–", f"{r['engine_over_hand']:.2f}×",
                 f"{r['engine_over_jax']:.1f}×" if "engine_over_jax" in r else "–"] for r in res["scaling"]])
    tr = res["torch"]
    L += ["", ("torch: not installed (skipped)." if "skipped" in tr else
               f"torch {tr['version']} `torch.optim.Adam` per-sample loop (N = 10, d = 50, torch convention): "
               f"{tr['torch_steps_per_s']:,.0f} steps/s; the engine on the same update {tr['engine_steps_per_s']:,.0f} "
               f"steps/s ({tr['engine_over_torch']:,.0f}×)."), "",
          "Lanes: 16 Inc-Adam runs (N = 10, d = 50, different data and β2), one `run_lanes` call vs 16 `run()` calls:",
          ""]
    L += table(["steps per run", "checkpoints", "lanes (s)", "sequential (s)", "speed-up"],
               [[f"{r['steps']:,}", r["checkpoints"], f"{r['lanes_s']:.3f}", f"{r['sequential_s']:.3f}",
                 f"{r['speedup']:.2f}×"] for r in res["lanes"]])
    L += ["", "Every optimizer through `run()` (steps/s; a step is b sample gradients):", ""]
    L += table(["N", "d", "optimizer", "b", "steps/s", "sample gradients/s"],
               [[r["N"], r["d"], r["optimizer"], r["batch_size"], f"{r['steps_per_s']:,.0f}",
                 f"{r['sample_grads_per_s']:,.0f}"] for r in res["optimizers"]])
    h = res["horizon"]
    L += ["", f"Horizon: {h['steps']:,} Inc-Adam steps (N = 10, d = 50) in {h['cpu_s']:.2f} CPU s "
              f"({h['wall_s']:.2f} s wall; {h['steps_per_cpu_s']:,.0f} steps per CPU second), peak RSS "
              f"{h['peak_rss_mb']:.0f} MB (a process that only imports and warms the engine: "
              f"{h['import_only_peak_rss_mb']:.0f} MB); final min margin {h['min_margin']:.1f}.", ""]
    L += table(["target (issue 12)", "measured", "goal", "met"],
               [[name, "–" if v is None else f"{v:.3g}", f"{'≤' if name.startswith('1e8') else '≥'} {goal:g}",
                 "–" if ok is None else ("yes" if ok else "**no**")] for name, v, goal, ok in targets(res)])
    if res.get("tiers"):
        L += [""] + [f"Tier {k}: {v['wall_s']:.1f} s to a verdict (exit {v['exit_status']})."
                     for k, v in res["tiers"].items()]
    return "\n".join(L)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one round (smoke test, seconds)")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 5; --quick 1)")
    ap.add_argument("--json", default=str(HERE / "results.json"), metavar="PATH", help="write results here")
    ap.add_argument("--markdown", default=None, metavar="PATH", help="also write the markdown tables here")
    ap.add_argument("--tiers", default="", help="comma-separated tiers to time with `ibverify verify` (default none)")
    ap.add_argument("--quiet", action="store_true", help="print only the final tables")
    args = ap.parse_args(argv)
    cfg = dict(QUICK if args.quick else NORMAL)
    if args.rounds:
        cfg["rounds"] = args.rounds

    def log(msg):
        if not args.quiet:
            print(msg, flush=True)

    res = {"schema": SCHEMA, "created": harness.created(), "quick": args.quick, "config": cfg,
           "machine": harness.machine(torch=getattr(torch, "__version__", None), jax=getattr(jax, "__version__", None)),
           "load_start": harness.uptime()}
    log(f"{res['created']}  {res['load_start']}")
    log("agreement (same update) ...")
    res["agreement"] = agree = check_agreement(cfg)
    log(f"  max relative difference {agree['max_rel']:.1e} (tolerance {agree['tolerance']:g}): "
        + ("OK" if agree["ok"] else "MISMATCH"))
    log("scaling in N and d (Inc-Adam, papers' convention) ...")
    res["scaling"] = bench_scaling(cfg, log)
    log("torch peer ...")
    res["torch"] = bench_torch(cfg, log)
    log("lanes vs sequential ...")
    res["lanes"] = bench_lanes(cfg, log)
    log("every optimizer ...")
    res["optimizers"] = bench_optimizers(cfg, log)
    log("horizon and peak memory (fresh process) ...")
    res["horizon"] = bench_horizon(cfg, log)
    tiers = [t for t in args.tiers.split(",") if t]
    res["tiers"] = bench_tiers(tiers, log) if tiers else {}
    res["load_end"] = harness.uptime()
    res["targets"] = [{"target": n, "measured": v, "goal": g, "met": ok} for n, v, g, ok in targets(res)]
    out = harness.write_json(args.json, res)
    md = markdown(res)
    if args.markdown:
        Path(args.markdown).write_text(md + "\n")
    print(md)
    print(f"JSON: {out}")
    if not agree["ok"]:
        print("benchmark invalid: the compared loops do not compute the same update", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
