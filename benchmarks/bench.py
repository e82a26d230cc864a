"""ibverify benchmarks: steps/s per optimizer and engine, baselines, tier times, horizon per CPU-minute.

    python benchmarks/bench.py [--quick] [--json PATH] [--tiers smoke,fast] [--full]

Measured (see benchmarks/README.md):
  * agreement first: the engine (reference and compiled), the hand-written numba loop and the
    torch.optim.Adam loop must compute the same per-sample Adam update (≤ 1e-10 relative over a few
    hundred steps), else the run exits 1;
  * steps/s for every optimizer of `ibverify.engine.run` on engines compiled / reference / mpmath,
    plus the bare engine kernel (kernels.run_chunk, no run()/sampler overhead) for Adam;
  * baselines on the same data and update: torch.optim.Adam per-sample Python loop (float64, batch 1,
    cyclic) and a minimal hand-written numba loop (benchmarks/baseline_kernel.py);
  * ratios compiled/torch (target ≥ 1000×) and compiled/hand-written (target ≥ 0.5×);
  * wall time to a verdict per registry tier (`ibverify verify --tier T --quiet`), per-claim runtime_s;
  * horizon per CPU-minute: per-sample steps of Inc-Adam on GR data N = 10, d = 50.
Every rate is the median of `repeats` measurements of ≥ `min_time` s each (time.perf_counter), after
warm-up (numba compilation); CPU-time rates (time.process_time) are recorded next to them because
the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
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
from ibverify.data.generators import gr  # noqa: E402
from ibverify.engine import kernels as K  # noqa: E402
from ibverify.engine import run  # noqa: E402
from ibverify.optim import OptimizerSpec, Sampler  # noqa: E402

try:  # optional, never a dependency of ibverify
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

SCHEMA = "ibverify.bench/1"
OPTIMIZERS = [  # (label, spec kwargs)
    ("inc-adam", dict(name="inc-adam")),
    ("det-adam", dict(name="det-adam")),
    ("adam-b5-reshuffle", dict(name="adam", batch_size=5, order="reshuffle")),
    ("signum", dict(name="signum")),
    ("gd", dict(name="gd")),
    ("ngd", dict(name="ngd")),
    ("adam-proxy", dict(name="adam-proxy")),
]
ADAM_LABELS = ("inc-adam", "det-adam", "adam-b5-reshuffle")
# torch.optim.Adam convention, batch 1, cyclic, constant lr: the update all baselines compute
TORCH_LR = 1e-3
TORCH_CONV = dict(name="adam", batch_size=1, order="cyclic", lr=TORCH_LR, lr_decay=0.0, beta1=0.9,
                  beta2=0.999, eps=1e-8, bias_correction=True)
PAPER_CONV = dict(name="inc-adam")  # paper 1: eps = 0, no bias correction, lr 0.1 (t+1)^(-1/2)
TARGET_TORCH, TARGET_HAND = 1000.0, 0.5

QUICK = dict(min_time=0.01, repeats=1, work=1 << 10, agree_steps=60, horizon_steps=5_000, mp_steps=1)
NORMAL = dict(min_time=0.5, repeats=3, work=1 << 17, agree_steps=400, horizon_steps=10_000_000, mp_steps=2)


# ---------------------------------------------------------------- data and timing helpers

def datasets(quick: bool) -> dict[str, np.ndarray]:
    return {"gr-N50-d20": np.ascontiguousarray(gr(50, 20, np.random.default_rng(0)).Z),
            "gr-N10-d50": np.ascontiguousarray(gr(10, 50, np.random.default_rng(1)).Z)}


def measure(fn, unit_steps: int, min_time: float, repeats: int, start: int = 1) -> dict:
    """fn(k) does k units of `unit_steps` steps. Calibrate k so one call takes ≥ min_time, then take
    the median of `repeats` calls. Returns steps/s (wall and CPU) and the raw numbers."""
    k = start
    while True:
        w0, c0 = time.perf_counter(), time.process_time()
        fn(k)
        wall = time.perf_counter() - w0
        if wall >= min_time:
            break
        k = max(k + 1, int(k * min(16.0, 1.3 * min_time / max(wall, 1e-4))))
    walls, cpus = [wall], [time.process_time() - c0]
    for _ in range(repeats - 1):
        w0, c0 = time.perf_counter(), time.process_time()
        fn(k)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    steps = k * unit_steps
    wall_med, cpu_med = statistics.median(walls), statistics.median(cpus)
    return {"steps_per_s": steps / wall_med, "cpu_steps_per_s": steps / max(cpu_med, 1e-9),
            "us_per_step": wall_med / steps * 1e6, "steps": steps, "seconds": walls, "cpu_seconds": cpus}


def rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


# ---------------------------------------------------------------- the runners being compared

def engine_run(Z, kw, steps, engine="compiled"):
    return run(Z, OptimizerSpec(**kw), steps, checkpoints=2, engine=engine, dps=50).w


def kernel_state(d):
    return [np.zeros(d) for _ in range(4)] + [np.zeros(K.N_DIAG, dtype=np.int64)]


def kernel_args(spec):
    return (spec.lr, spec.lr_decay, spec.beta1, spec.beta2, spec.eps, spec.bias_correction,
            K.LOGISTIC if spec.loss == "logistic" else K.EXPONENTIAL, True)


def engine_kernel_run(Z, kw, idx):
    """The engine's compiled kernel called directly (no run()/Sampler overhead)."""
    spec = OptimizerSpec(**kw).resolved(Z.shape[0])
    w, m, v, s, diag = kernel_state(Z.shape[1])
    K.run_chunk(KIND[spec.name], Z, idx, w, m, v, s, 0, *kernel_args(spec), diag)
    return w, diag


def indices(Z, kw, steps):
    spec = OptimizerSpec(**kw).resolved(Z.shape[0])
    return Sampler(Z.shape[0], spec.batch_size, spec.order, spec.seed).next(steps)


def hand_run(Z, kw, steps):
    spec = OptimizerSpec(**kw).resolved(Z.shape[0])
    assert spec.batch_size == 1 and spec.order == "cyclic" and spec.loss == "logistic"
    return baseline_kernel.run_adam(Z, steps, spec.lr, spec.lr_decay, spec.beta1, spec.beta2, spec.eps,
                                    spec.bias_correction)


def torch_run(Z, steps, lr=TORCH_LR):
    """torch.optim.Adam per-sample Python loop: float64, batch 1, cyclic order, constant lr."""
    Zt = torch.tensor(Z, dtype=torch.float64)
    w = torch.zeros(Z.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([w], lr=lr, betas=(0.9, 0.999), eps=1e-8)
    n = Z.shape[0]
    for t in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.softplus(-(Zt[t % n] @ w))
        loss.backward()
        opt.step()
    return w.detach().numpy().copy()


KIND = {"inc-adam": K.ADAM, "det-adam": K.ADAM, "adam": K.ADAM, "signum": K.SIGNUM, "gd": K.GD,
        "ngd": K.NGD, "adam-proxy": K.PROXY}


# ---------------------------------------------------------------- sections

def check_agreement(Z, cfg) -> dict:
    """Same update everywhere, before anything is timed."""
    T = cfg["agree_steps"]
    out = {"steps": T, "tolerance": 1e-10, "dataset": "gr-N50-d20"}
    ref_t = engine_run(Z, TORCH_CONV, T, "reference")
    out["torch_convention"] = {
        "compiled_vs_reference": rel(engine_run(Z, TORCH_CONV, T, "compiled"), ref_t),
        "handwritten_vs_reference": rel(hand_run(Z, TORCH_CONV, T), ref_t),
    }
    if torch is not None:
        out["torch_convention"]["torch_vs_reference"] = rel(torch_run(Z, T), ref_t)
    ref_p = engine_run(Z, PAPER_CONV, T, "reference")
    out["paper_convention"] = {
        "compiled_vs_reference": rel(engine_run(Z, PAPER_CONV, T, "compiled"), ref_p),
        "handwritten_vs_reference": rel(hand_run(Z, PAPER_CONV, T), ref_p),
    }
    vals = [v for sec in ("torch_convention", "paper_convention") for v in out[sec].values()]
    out["max_rel"] = max(vals)
    out["ok"] = bool(out["max_rel"] <= out["tolerance"])
    return out


def warm_up(Z):
    """Compile (or load from cache) every numba kernel with the argument types used below."""
    for _, kw in OPTIMIZERS:
        engine_run(Z, kw, 3)
    for kw in (TORCH_CONV, PAPER_CONV, dict(name="adam", batch_size=5, order="reshuffle")):
        engine_kernel_run(Z, kw, indices(Z, kw, 3))
    hand_run(Z, TORCH_CONV, 3)
    hand_run(Z, PAPER_CONV, 3)


def bench_rates(data, cfg, log) -> list[dict]:
    rows = []
    mt, rp, work = cfg["min_time"], cfg["repeats"], cfg["work"]

    def add(ds, engine, label, b, r, **extra):
        row = {"dataset": ds, "engine": engine, "optimizer": label, "batch_size": b,
               "sample_grads_per_s": r["steps_per_s"] * b, **r, **extra}
        rows.append(row)
        log(f"  {ds:<11} {engine:<16} {label:<18} b={b:<3} {r['steps_per_s']:>14,.0f} steps/s "
            f"{r['us_per_step']:>11.3f} µs/step")

    for ds, Z in data.items():
        n = Z.shape[0]
        for label, kw in OPTIMIZERS:
            b = OptimizerSpec(**kw).resolved(n).batch_size
            H = max(1, work // b)  # horizon of one fresh compiled run (same for every repeat)
            add(ds, "compiled", label, b,
                measure(lambda k: [engine_run(Z, kw, H) for _ in range(k)], H, mt, rp), horizon=H)
            if label in ADAM_LABELS:
                idx = indices(Z, kw, H)
                add(ds, "engine-kernel", label, b,
                    measure(lambda k: [engine_kernel_run(Z, kw, idx) for _ in range(k)], H, mt, rp), horizon=H)
            add(ds, "reference", label, b,
                measure(lambda k: engine_run(Z, kw, 20 * k, "reference"), 20, mt, rp))
            add(ds, "mpmath", label, b,
                measure(lambda k: engine_run(Z, kw, k, "mpmath"), 1, mt, rp, start=cfg["mp_steps"]), dps=50)
    return rows


def bench_baselines(data, cfg, log) -> dict:
    """Same update (torch convention, and paper convention for the hand-written loop) on each dataset."""
    mt, rp, work = cfg["min_time"], cfg["repeats"], cfg["work"]
    out = {}
    for ds, Z in data.items():
        H = work
        res = {"horizon": H}
        for conv, kw in (("torch_convention", TORCH_CONV), ("paper_convention", PAPER_CONV)):
            idx = indices(Z, kw, H)
            r = {
                "compiled": measure(lambda k: [engine_run(Z, kw, H) for _ in range(k)], H, mt, rp),
                "engine_kernel": measure(lambda k: [engine_kernel_run(Z, kw, idx) for _ in range(k)], H, mt, rp),
                "handwritten": measure(lambda k: [hand_run(Z, kw, H) for _ in range(k)], H, mt, rp),
            }
            r["min_margin_end"] = float((Z @ hand_run(Z, kw, H)).min())  # well below float64 underflow
            res[conv] = r
        if torch is not None:
            res["torch_loop"] = measure(lambda k: torch_run(Z, 50 * k), 50, mt, rp)
        else:
            res["torch_loop"] = None
            res["torch_note"] = "torch not installed: torch loop skipped (pip install torch==2.13.0)"
        tc = res["torch_convention"]
        ratios = {
            "compiled_over_handwritten": tc["compiled"]["steps_per_s"] / tc["handwritten"]["steps_per_s"],
            "engine_kernel_over_handwritten": tc["engine_kernel"]["steps_per_s"] / tc["handwritten"]["steps_per_s"],
            "paper_compiled_over_handwritten": (res["paper_convention"]["compiled"]["steps_per_s"]
                                                / res["paper_convention"]["handwritten"]["steps_per_s"]),
            "cpu_compiled_over_handwritten": tc["compiled"]["cpu_steps_per_s"] / tc["handwritten"]["cpu_steps_per_s"],
        }
        if res["torch_loop"]:
            tl = res["torch_loop"]["steps_per_s"]
            ratios["compiled_over_torch"] = tc["compiled"]["steps_per_s"] / tl
            ratios["handwritten_over_torch"] = tc["handwritten"]["steps_per_s"] / tl
            ratios["cpu_compiled_over_torch"] = tc["compiled"]["cpu_steps_per_s"] / res["torch_loop"]["cpu_steps_per_s"]
        res["ratios"] = ratios
        res["targets"] = {
            "compiled_over_torch>=1000": (ratios["compiled_over_torch"] >= TARGET_TORCH) if res["torch_loop"] else None,
            "compiled_over_handwritten>=0.5": ratios["compiled_over_handwritten"] >= TARGET_HAND,
        }
        out[ds] = res
        log(f"  {ds}: " + ", ".join(f"{k} {v:,.3g}" for k, v in ratios.items()))
    return out


def bench_horizon(cfg, log) -> dict:
    """Per-sample Inc-Adam steps per CPU-minute on GR data N = 10, d = 50 (one long run from w = 0)."""
    Z = np.ascontiguousarray(gr(10, 50, np.random.default_rng(1)).Z)
    T = cfg["horizon_steps"]
    w0, c0 = time.perf_counter(), time.process_time()
    r = run(Z, OptimizerSpec("inc-adam"), T, checkpoints=30)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    per_min = T / max(cpu, 1e-9) * 60
    out = {"dataset": "gr-N10-d50", "optimizer": "inc-adam", "steps": T, "wall_s": wall, "cpu_s": cpu,
           "steps_per_cpu_minute": per_min, "projected_cpu_s_for_1e8": 1e8 / per_min * 60,
           "min_margin_end": float((Z @ r.w).min()), "diagnostics": r.diagnostics,
           "finite": bool(np.all(np.isfinite(r.ws)))}
    log(f"  inc-adam N=10 d=50: {T:,} steps in {cpu:.2f} CPU s → {per_min:,.3g} steps/CPU-minute "
        f"(1e8 steps ≈ {out['projected_cpu_s_for_1e8']:.0f} CPU s), min margin {out['min_margin_end']:.0f}, "
        f"frame shifts {r.diagnostics.get('frame_shifts')}")
    return out


CLAIM_LINE = re.compile(r"^(ok |!! )(\S+)\s+(\S+)\s+(.+?)\s+(\d+\.\d)s(?:\s|$)")


def bench_tiers(tiers, log) -> dict:
    """Wall time of `ibverify verify --tier T` (a fresh process) and each claim's runtime_s.

    runtime_s is read from the results.json the command writes, or, if it wrote none, from the
    per-claim lines it prints (so a failing results writer does not hide the timings)."""
    out = {}
    for tier in tiers:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "ibverify.cli", "verify", "--tier", tier, "--report", tmp]
            w0 = time.perf_counter()
            p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            wall = time.perf_counter() - w0
            res = {"wall_s": wall, "exit_status": p.returncode, "command": f"ibverify verify --tier {tier}"}
            claims = {}
            for line in p.stdout.splitlines():
                mt = CLAIM_LINE.match(line)
                if mt:
                    claims[mt.group(2)] = {"runtime_s": float(mt.group(5)), "verdict": mt.group(4).strip(),
                                           "as_expected": mt.group(1) == "ok "}
            res["source"] = "stdout"
            try:
                data = json.loads((Path(tmp) / "results.json").read_text())
                res["summary"] = data.get("summary")
                claims = {c["id"]: {"runtime_s": c.get("runtime_s"), "verdict": c.get("verdict"),
                                    "as_expected": c.get("as_expected")} for c in data.get("claims", [])}
                res["source"] = "results.json"
            except (OSError, ValueError) as e:
                res["error"] = f"no results.json: {e}; stderr: {p.stderr.strip()[-300:]}"
            res["claims"] = claims
            res["sum_runtime_s"] = sum(c["runtime_s"] or 0.0 for c in claims.values())
        out[tier] = res
        log(f"  tier {tier}: {wall:.1f} s wall, exit {p.returncode}, {len(claims)} claims, "
            f"sum runtime_s {res['sum_runtime_s']:.1f} s" + (f"; {res['error']}" if "error" in res else ""))
    return out


# ---------------------------------------------------------------- output

def table(result) -> str:
    lines = []
    rows = result["rates"]
    by = {}
    for r in rows:
        by.setdefault((r["dataset"], r["optimizer"]), {})[r["engine"]] = r
    engines = ["compiled", "engine-kernel", "reference", "mpmath"]
    lines.append(f"{'dataset':<11} {'optimizer':<18} {'b':>3} " + " ".join(f"{e:>16}" for e in engines)
                 + "   (steps/s, median)")
    for (ds, opt), es in by.items():
        b = next(iter(es.values()))["batch_size"]
        cells = [f"{es[e]['steps_per_s']:>16,.0f}" if e in es else f"{'-':>16}" for e in engines]
        lines.append(f"{ds:<11} {opt:<18} {b:>3} " + " ".join(cells))
    lines.append("")
    lines.append("same update (torch.optim.Adam convention: batch 1, cyclic, eps 1e-8, bias correction, lr const):")
    for ds, res in result["baselines"].items():
        tc = res["torch_convention"]
        tl = res["torch_loop"]["steps_per_s"] if res["torch_loop"] else float("nan")
        rt = res["ratios"]
        hw, cp, ek = tc["handwritten"], tc["compiled"], tc["engine_kernel"]
        lines.append(f"  {ds}: compiled {cp['steps_per_s']:,.0f}  engine kernel {ek['steps_per_s']:,.0f}"
                     f"  hand-written {hw['steps_per_s']:,.0f}  torch {tl:,.0f} steps/s (wall)")
        ct = rt.get("compiled_over_torch", float("nan"))
        lines.append(f"      compiled/torch {ct:,.0f}x (target >= {TARGET_TORCH:.0f}x)"
                     f"   compiled/hand-written {rt['compiled_over_handwritten']:.2f}x (target >= {TARGET_HAND}x)"
                     f"   engine-kernel/hand-written {rt['engine_kernel_over_handwritten']:.2f}x")
        lines.append(f"      CPU-time: compiled/torch {rt.get('cpu_compiled_over_torch', float('nan')):,.0f}x"
                     f"   compiled/hand-written {rt['cpu_compiled_over_handwritten']:.2f}x"
                     f"   [paper convention: compiled/hand-written {rt['paper_compiled_over_handwritten']:.2f}x]")
        if not res["torch_loop"]:
            lines.append(f"      {res['torch_note']}")
    if result.get("tiers"):
        lines.append("")
        for tier, r in result["tiers"].items():
            lines.append(f"tier {tier}: {r['wall_s']:.1f} s to a verdict (exit {r['exit_status']}), "
                         f"{len(r['claims'])} claims, runtime_s sum {r['sum_runtime_s']:.1f} s")
            for cid, c in sorted(r["claims"].items(), key=lambda kv: -(kv[1]["runtime_s"] or 0)):
                lines.append(f"    {cid:<44} {c['runtime_s'] or 0:8.1f} s  {c['verdict']}")
    h = result["horizon"]
    lines.append(f"horizon: {h['steps_per_cpu_minute']:,.3g} per-sample Inc-Adam steps per CPU-minute (N=10, d=50); "
                 f"1e8 steps ≈ {h['projected_cpu_s_for_1e8']:.0f} CPU s")
    return "\n".join(lines)


def machine() -> dict:
    import numba

    info = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "numpy": np.__version__, "numba": numba.__version__, "torch": getattr(torch, "__version__", None)}
    try:
        info["loadavg_start"] = os.getloadavg()
    except OSError:
        pass
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (smoke test, seconds); no tier timing")
    ap.add_argument("--json", default=str(HERE / "results.json"), metavar="PATH",
                    help="write results here (default benchmarks/results.json)")
    ap.add_argument("--tiers", default=None,
                    help="comma-separated tiers to time (default smoke,fast; none with --quick)")
    ap.add_argument("--full", action="store_true", help="also time the full tier (long)")
    ap.add_argument("--quiet", action="store_true", help="print only the final table")
    args = ap.parse_args(argv)
    cfg = dict(QUICK if args.quick else NORMAL)
    tiers = [t for t in (args.tiers or ("" if args.quick else "smoke,fast")).split(",") if t and t != "none"]
    if args.full and "full" not in tiers:
        tiers.append("full")

    def log(msg):
        if not args.quiet:
            print(msg, flush=True)

    mach = machine()
    data = datasets(args.quick)
    Z0 = data["gr-N50-d20"]
    log("warm-up (numba compilation / cache load) ...")
    warm_up(Z0)
    log("agreement (same update) ...")
    agree = check_agreement(Z0, cfg)
    log(f"  max relative difference over {agree['steps']} steps: {agree['max_rel']:.2e} "
        f"(tolerance {agree['tolerance']:g}) -> {'OK' if agree['ok'] else 'MISMATCH'}")
    for sec in ("torch_convention", "paper_convention"):
        log(f"  {sec}: " + ", ".join(f"{k} {v:.1e}" for k, v in agree[sec].items()))
    log("steps/s per optimizer and engine ...")
    rates = bench_rates(data, cfg, log)
    log("baselines (same update) ...")
    baselines = bench_baselines(data, cfg, log)
    log("horizon per CPU-minute ...")
    horizon = bench_horizon(cfg, log)
    tier_res = {}
    if tiers:
        log("time to a verdict per tier ...")
        tier_res = bench_tiers(tiers, log)
    result = {"schema": SCHEMA, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "quick": args.quick, "config": cfg, "machine": mach, "agreement": agree, "rates": rates,
              "baselines": baselines, "horizon": horizon, "tiers": tier_res,
              "targets": {"compiled_over_torch": TARGET_TORCH, "compiled_over_handwritten": TARGET_HAND}}
    try:
        result["machine"]["loadavg_end"] = os.getloadavg()
    except OSError:
        pass
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=float))
    print(table(result))
    print(f"JSON: {out}")
    if not agree["ok"]:
        print("benchmark invalid: the compared loops do not compute the same update", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
