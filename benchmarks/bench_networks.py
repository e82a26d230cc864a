"""Network steps/s: the compiled engine (ibverify.engine.network) vs the numpy reference vs jitted JAX.

    python benchmarks/bench_networks.py [--rounds 5] [--optimizers signum,adam,muon] [--json PATH] [--long STEPS]
        [--long-optimizers signum,muon] [--markdown PATH]

Model: the two-layer ReLU² net f(x) = Σ_j a_j max(0, w_j·x)², width 16, on the teacher set n = 30, d = 6
(logistic loss, full batch, float64). The JAX implementation is the same model and optimizer: the same log-frame
gradient (logsumexp of the per-sample log-weights, ĝ = ∇ℒ/e^S), moments held as e^s m̂, the same directions
(sign, ℓ2, exact polar via jnp.linalg.svd, M/‖M‖ for a vector block, m̂/√v̂), jax_enable_x64, the whole run one
jitted lax.scan, XLA restricted to one thread. Agreement first: after 300 steps each engine's θ must match the
reference to 1e−9 relative, else exit 1. Rates: median over `rounds` interleaved rounds (each engine once per
round, the order rotated per round; `harness.py`), wall clock and CPU time (time.process_time) both; ratios are
medians of per-round ratios; the load average is printed before and after. --markdown PATH: also write the
results as the markdown table of benchmarks/README.md.
--long STEPS: additionally time one compiled run of STEPS steps per --long-optimizers (default signum) end to end,
as a CLI run would.
--shipped: instead, the per-step cost of Muon as the libraries ship it (`SHIPPED`: torch's Muon with Adam at ε = 0
on the vector, its Newton–Schulz in bfloat16 as shipped and in float64, and optax.contrib.muon at eps = 0), run by
the block engine's reference loop (the only engine of a foreign optimizer), against the engine's own `muon` and
`muon-adam` rows (compiled and numpy reference) on the same problem, at lr 0.05 t^−0.8.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(HERE), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)

import harness  # noqa: E402
from ibverify.data import netdata as datasets  # noqa: E402
from ibverify import models  # noqa: E402
from ibverify.optim.optimizers import make_optimizer  # noqa: E402
from ibverify.engine import block as train  # noqa: E402

WIDTH, N, D = 16, 30, 6
ETA, P, B1, B2 = 0.05, 0.8, 0.9, 0.999
OPTS = ("nsd-l2", "momentum-gd", "signum", "adam", "muon", "muon-signum", "muon-adam")


def problem():
    data = datasets.make_data("teacher", n=N, d=D, seed=0)
    model = models.TwoLayer(D, WIDTH, 2.0)
    theta0 = model.init(np.random.default_rng(1), 0.5)
    return model, data.X, data.y, theta0


def make_opt(name, theta0):
    return make_optimizer(name, lr=ETA, lr_decay=P, beta1=B1, beta2=B2, lr_matrix=ETA, lr_vector=ETA / 2,
                                params=theta0, warn=False)


# ------------------------------------------------------------------------------------------------ JAX
def jax_runner(name, X, y, theta0):
    """A jitted lax.scan of `steps` steps of optimizer `name`; returns run(steps) -> (W, a)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    Xj, yj = jnp.asarray(X), jnp.asarray(y)
    mom = {"nsd-l2": None, "momentum-gd": "ema", "signum": "ema", "adam": "adam", "muon": "ema",
           "muon-signum": "ema", "muon-adam": ("ema", "adam")}[name]

    def ghat(W, a):
        h = Xj @ W.T
        r = jnp.maximum(h, 0.0)
        q = yj * ((r * r) @ a)
        lw = -jnp.logaddexp(0.0, q)
        S = jax.scipy.special.logsumexp(lw)
        c = -(jnp.exp(lw - S) * yj)
        C = (2.0 * r * c[:, None]) * a[None, :]
        return (C.T @ Xj, (r * r).T @ c), S

    def mix(m, s, g, S, beta, power=1):
        gp, sb = (g if power == 1 else g * g), power * S
        s2 = jnp.maximum(s, sb)
        out = beta * jnp.exp(s - s2) * m + (1 - beta) * jnp.exp(sb - s2) * gp
        z = jnp.max(jnp.abs(out))
        z = jnp.where(z > 0, z, 1.0)
        return out / z, s2 + jnp.log(z)

    def polar(M):
        U, _, Vt = jnp.linalg.svd(M, full_matrices=False)
        return U @ Vt

    def unit(v):
        return v / jnp.linalg.norm(v)

    def adam_dir(m, sm, v, sv, t):
        bc1, bc2 = 1 - B1 ** t, 1 - B2 ** t
        return m / (bc1 * jnp.sqrt(v / bc2) * jnp.exp(sv / 2 - sm))

    def step(state, t):
        W, a, mW, ma, vW, va, s = state
        (gW, ga), S = ghat(W, a)
        eta = ETA * t ** (-P)
        first = t == 1.0
        s = jnp.where(first, jnp.array([S, S, 2 * S, 2 * S]), s)  # first step: frames at the gradient
        if mom is None:
            n = jnp.sqrt(jnp.sum(gW * gW) + jnp.sum(ga * ga))
            dW, da = gW / n, ga / n
        else:
            mW, s0 = mix(mW, s[0], gW, S, B1)
            ma, s1 = mix(ma, s[1], ga, S, B1)
            s = s.at[0].set(s0).at[1].set(s1)
            if name == "momentum-gd":
                fa = jnp.exp(s1 - s0)
                n = jnp.sqrt(jnp.sum(mW * mW) + jnp.sum((fa * ma) ** 2))
                dW, da = mW / n, fa * ma / n
            elif name == "signum":
                dW, da = jnp.sign(mW), jnp.sign(ma)
            elif name in ("muon", "muon-signum", "muon-adam"):
                dW = polar(mW)
                if name == "muon":
                    da = unit(ma)
                elif name == "muon-signum":
                    da = jnp.sign(ma) * 0.5
                else:
                    va, s3 = mix(va, s[3], ga, S, B2, 2)
                    s = s.at[3].set(s3)
                    da = 0.5 * adam_dir(ma, s1, va, s3, t)
            else:  # adam
                vW, s2 = mix(vW, s[2], gW, S, B2, 2)
                va, s3 = mix(va, s[3], ga, S, B2, 2)
                s = s.at[2].set(s2).at[3].set(s3)
                dW, da = adam_dir(mW, s0, vW, s2, t), adam_dir(ma, s1, va, s3, t)
        return (W - eta * dW, a - eta * da, mW, ma, vW, va, s), None

    W0, a0 = jnp.asarray(theta0["W"]), jnp.asarray(theta0["a"])
    zeros = (jnp.zeros_like(W0), jnp.zeros_like(a0))
    init = (W0, a0, zeros[0], zeros[1], zeros[0], zeros[1], jnp.zeros(4))
    cache = {}

    def run(steps):
        if steps not in cache:
            cache[steps] = jax.jit(lambda st: jax.lax.scan(step, st, jnp.arange(1.0, steps + 1.0))[0])
        out = cache[steps](init)
        out[0].block_until_ready()
        return {"W": np.asarray(out[0]), "a": np.asarray(out[1])}

    return run


# ----------------------------------------------------------------------------------------------- engines
def runners(name, model, X, y, theta0):
    def compiled(steps):
        return train.run(model, X, y, make_opt(name, theta0), steps, theta0, checkpoints=[steps],
                         engine="compiled").theta

    def reference(steps):
        return train.run(model, X, y, make_opt(name, theta0), steps, theta0, checkpoints=[steps],
                         engine="reference").theta

    return {"compiled": compiled, "reference": reference, "jax": jax_runner(name, X, y, theta0)}


STEPS = {"compiled": 200_000, "reference": 2_000, "jax": 50_000}
SHIPPED = ("torch:Muon:weight_decay=0+Adam:eps=0", "torch:Muon:weight_decay=0,ns_float64=True+Adam:eps=0",
           "optax:contrib.muon:eps=0")


def shipped(rounds: int) -> dict:
    """{row: {steps_per_s, cpu_steps_per_s, us_per_step}} of SHIPPED and the table's muon and muon-adam (module
    docstring), `rounds` interleaved rounds."""
    from ibverify.optim.adapters import to_spec

    model, X, y, theta0 = problem()
    eng = {}
    for name in SHIPPED:
        spec = to_spec(name, {"lr": ETA, "lr_decay": P})
        eng[name] = (2_000, lambda n, s=spec: train.run(model, X, y, make_optimizer(s, params=theta0, L=3.0,
                                                                                    warn=False), n, theta0,
                                                        checkpoints=[n], engine="reference"))
    for name in ("muon", "muon-adam"):
        for e, n in (("compiled", 200_000), ("reference", 2_000)):
            eng[f"{name} ({e})"] = (n, lambda k, m=name, e=e: train.run(model, X, y, make_opt(m, theta0), k, theta0,
                                                                       checkpoints=[k], engine=e))
    for n, f in eng.values():
        f(min(n, 2_000))   # warm-up: numba load, jit
    t = harness.rounds({k: (lambda f=f, n=n: f(n)) for k, (n, f) in eng.items()}, rounds)
    out = {}
    for k, (n, _) in eng.items():
        out[k] = {"steps_per_s": harness.rate(n, t.wall[k]), "cpu_steps_per_s": harness.rate(n, t.cpu[k])}
        out[k]["us_per_step"] = 1e6 / out[k]["cpu_steps_per_s"]
        print(f"{k:55s} {out[k]['steps_per_s']:>10,.0f} steps/s  (CPU {out[k]['cpu_steps_per_s']:>10,.0f}/s, "
              f"{out[k]['us_per_step']:8.1f} µs a step)", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median reported)")
    ap.add_argument("--optimizers", default=",".join(OPTS), help="comma-separated optimizer names")
    ap.add_argument("--json", default=None, help="write the measurements here")
    ap.add_argument("--long", type=int, default=0, help="also time one compiled run of this many steps")
    ap.add_argument("--long-optimizers", default="signum", help="comma-separated optimizers of the --long runs")
    ap.add_argument("--markdown", default=None, metavar="PATH", help="also write the markdown table here")
    ap.add_argument("--shipped", action="store_true", help="only the shipped Muons against the table's (SHIPPED)")
    args = ap.parse_args(argv)
    if args.shipped:
        created, load_before = harness.created(), harness.load_average(" ")
        print(f"two-layer ReLU², width {WIDTH}, n = {N}, d = {D}; load average before: {load_before}")
        out = {"shipped": shipped(args.rounds), "created": created, "load_before": load_before,
               "load_after": harness.load_average(" "), "rounds": args.rounds}
        print(f"load average after: {out['load_after']}")
        if args.json:
            harness.write_json(args.json, out)
        return 0
    model, X, y, theta0 = problem()
    created, load_before = harness.created(), harness.load_average(" ")
    print(f"two-layer ReLU², width {WIDTH}, n = {N}, d = {D}; load average before: {load_before} "
          f"({os.cpu_count()} CPUs)")
    results = {}
    for name in args.optimizers.split(","):
        eng = runners(name, model, X, y, theta0)
        ref = eng["reference"](301)  # a Run records θ_t before step t: θ_301 = θ0 after 300 steps
        errs = harness.vs_reference(ref, {"compiled": eng["compiled"](301), "jax": eng["jax"](300)})
        for e in ("compiled", "jax"):
            if errs[f"{e}_vs_reference"] > 1e-9:
                print(f"{name}: {e} disagrees with the reference after 300 steps ({errs[f'{e}_vs_reference']:.2e})",
                      file=sys.stderr)
                return 1
            eng[e](STEPS[e])  # warm-up: numba load, XLA compile of this scan length
        t = harness.rounds({e: (lambda f=f, n=STEPS[e]: f(n)) for e, f in eng.items()}, args.rounds)
        results[name] = {e: {"steps_per_s": harness.rate(STEPS[e], t.wall[e]),
                             "cpu_steps_per_s": harness.rate(STEPS[e], t.cpu[e]),
                             "rounds": [STEPS[e] / s for s in t.wall[e]]} for e in eng}
        r = results[name]
        com, jx = r["compiled"], r["jax"]
        print(f"{name:12s} compiled {com['steps_per_s']:>10,.0f}/s (cpu {com['cpu_steps_per_s']:>10,.0f})"
              f"  jax {jx['steps_per_s']:>9,.0f}/s (cpu {jx['cpu_steps_per_s']:>9,.0f})"
              f"  numpy {r['reference']['steps_per_s']:>7,.0f}/s"
              f"  compiled/jax {r['compiled']['steps_per_s'] / r['jax']['steps_per_s']:5.2f}×"
              f"  compiled/numpy {r['compiled']['steps_per_s'] / r['reference']['steps_per_s']:6.0f}×", flush=True)
    out = {"model": {"kind": "two-layer", "width": WIDTH, "n": N, "d": D, "q": 2}, "results": results}
    if args.long:
        out["long"] = []
        for name in args.long_optimizers.split(","):
            w0, c0 = time.perf_counter(), time.process_time()
            train.run(model, X, y, make_opt(name, theta0), args.long, theta0, engine="compiled")
            w, c = time.perf_counter() - w0, time.process_time() - c0
            out["long"].append({"optimizer": name, "steps": args.long, "wall_s": w, "cpu_s": c})
            print(f"long run: {args.long:.3g} {name} steps in {w:.1f} s wall, {c:.1f} s CPU "
                  f"(10⁸ steps ≈ {1e8 / args.long * c / 60:.1f} CPU-min)", flush=True)
    out["load_after"] = harness.load_average(" ")   # after the --long runs too
    print(f"load average after: {out['load_after']}")
    out.update(created=created, load_before=load_before, rounds=args.rounds)
    if args.json:
        harness.write_json(args.json, out)
    if args.markdown:
        Path(args.markdown).write_text("\n".join(markdown(out)) + "\n")
    return 0


def markdown(out: dict) -> list[str]:
    """The README's table: steps/s (wall; CPU in parentheses) of each engine, and compiled/JAX."""
    head = [f"Measured {out['created']}, {out['rounds']} interleaved rounds, medians; load average "
            f"{out['load_before']} → {out['load_after']} on {os.cpu_count()} CPUs.", ""]
    rows = []
    for name, r in out["results"].items():
        com, jx, ref = r["compiled"], r["jax"], r["reference"]
        rows.append([name, f"{com['steps_per_s']:,.0f} ({com['cpu_steps_per_s']:,.0f})",
                     f"{jx['steps_per_s']:,.0f} ({jx['cpu_steps_per_s']:,.0f})", f"{ref['steps_per_s']:,.0f}",
                     f"{com['steps_per_s'] / jx['steps_per_s']:.2f}×"])
    return head + harness.table(["optimizer", "compiled steps/s (CPU)", "JAX steps/s (CPU)", "numpy steps/s",
                                 "compiled/JAX"], rows)


if __name__ == "__main__":
    sys.exit(main())
