"""The power of the verdict rules (issue 33 item 1; docs/power.md): how often each rule supports a wrong limit and
contradicts a true one, measured on fresh runs that no claim judges.

    python benchmarks/power.py [--jobs 3] # runs everything (≈ 11 CPU-min + ≈ 10 for linear bias), writes ibverify/
                                          # report/power.json (package data), docs/power.md
    python benchmarks/power.py --check    # re-renders docs/power.md from the committed JSON (runs nothing); exit 1
                                          # when the page differs
    python benchmarks/power.py --render   # re-renders docs/power.md (and docs/figures/power-bias-linear.svg)
    python benchmarks/power.py --family bias-linear [--as-baseline]   # the linear-bias family only (≈ 10 CPU-min)

Data: GR datasets (data.generators.gr, n and d in [3, 10]) from numpy's default_rng(seed) with seed in
SEEDS = 10000…: the claims draw theirs with hypothesis at seeds 0–7, so no run here is a judged one. A dataset is kept
when it meets the claims' own hypotheses (strategies.linear: discriminating, and for the log-rate family the
non-degeneracy thresholds of soudry.gd-l2).

Each family feeds each run's series to the rules exactly as its claims do (the checks' own helpers compute the
series; the rules are called, never re-implemented) and extends an undecided run ×10 up to each tier's cap with
prop.sequential, the claims' own loop:

    log-rate   checks.classic.soudry_series → soudry_decision's halves (judge_invariant on K and on ‖ρ‖, judge_gap on
               the slope gap |a·γ2 − 1|, judge_gap on 1/‖w‖) and its all_of, with soudry.gd-l2's tolerances and
               horizons (fast: 1e4/u → 1e5/u steps; full: 1e5/u → 1e7/u); Wang's halves (K, norm, approach: judge_gap
               on 1 − cos(w, ŵ2) with no bound, approach_drop) and their all_of likewise, with its tolerances.
               Runs: GD at u = 0.9 (right, fast) and u = 0.1 (right, slow); precond-gd (wrong limit at GD's speed,
               table D and a milder D). The sign-like strawman controls (sign GD: K ×100 per decade) are not
               repeated here: they are no same-speed control, and their claims refute them.
    ℓ∞ rate    per_sample.signum_decision (judge_rate_invariant on the ℓ∞ gap and ‖w‖∞) and its gap half alone
               (judge_gap), with baek.signum-any-batch-linf's tolerances and horizons (fast: 1e6 → 1e7, full:
               3e6 → 3e7). Runs: full-batch Signum β = 0.9 (right, fast); per-sample Signum at the envelope's edge
               1 − β = 0.2/n (right, slow); diagonally preconditioned Signum w ← w − η D sign(m) (wrong limit at
               Signum's speed: the max margin of ‖D⁻¹w‖∞).

    network KKT  gronich_nets' judgement of one example (outside → (T2) → gronich_score.score → judge with the
               claim's approach evidence; rules.judge_separation, guard 1, min_drop 0.05) and `ibverify bias`'s
               (checks.bias.judge_dataset, final=False), on fresh teacher examples drawn as
               strategies.network.network_example draws them, data and init seeds 20000… (the claims': [0, 10000]),
               at the fast tier's horizons, ×10 once while undecided (Signum 3e5 → 3e6, MomentumGD 1e6 → 1e7; the full
               caps, ×10 to 1e8, do not fit). Runs: Signum → ℓ∞ and MomentumGD → ℓ2 at gronich.signum-linf's and
               gronich.momentum-gd-l2's settings (right); the same optimizer on the inputs scaled per coordinate by s,
               first layer mapped back (a fixed diagonal preconditioner on the first layer: its limit is a KKT point
               of a weighted geometry, at the optimizer's own speed; wrong, judged in the own geometry); the right
               runs judged in every other geometry (wrong geometry, same run: the controls' own method).
    smoothed margin  lyu-li.gd-smoothed-margin's check (γ̃ after ℒ < ℓ(0), rules.judge_nondecreasing, monotone_rtol)
               on the same fresh examples at its fast (1e4) and full (1e5) horizons: GD (right), Signum and Muon at
               its controls' settings (wrong); an example that does not get below ℓ(0) in time is set aside.

    linear bias  `ibverify bias --model linear` on near-miss limits (issue 45 item 2): power_bias_linear.py, its
               own docstring; regenerated alone by `--family bias-linear`, kept in power.json's `bias_linear`
               ({"baseline": before bias stated a resolution, "current"}).

precond-gd and the preconditioned Signum run as their change of variables (the same run, by the compiled kernels):
w ← w − η D g is GD on Z D^(1/2) with w = D^(1/2) v, and w ← w − η D sign(m) is Signum on Z D with w = D v
(tests/test_power.py holds the first to the table's precond-gd row).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ibverify.checks import classic, per_sample, prop, rules  # noqa: E402
from ibverify.data.generators import gr  # noqa: E402
from ibverify.engine import run as engine_run  # noqa: E402
from ibverify.engine.trajectory import log_checkpoints  # noqa: E402
from ibverify.optim import OptimizerSpec  # noqa: E402
from ibverify.optim.transforms import precond_diagonal  # noqa: E402
from ibverify.oracles import max_margin, normalized_margin  # noqa: E402
from ibverify.strategies import linear as S  # noqa: E402
import power_bias_linear as BL  # noqa: E402  (the linear-`bias` family, issue 45 item 2)

JSON = ROOT / "ibverify" / "report" / "power.json"   # package data: an installed report reads it
PAGE = ROOT / "docs" / "power.md"
SEED0 = 10_000            # data seeds SEED0, SEED0 + 1, …: disjoint from the claims' hypothesis seeds 0–7
RIGHT, SLOW, WRONG, WRONG_FAST = "right, fast", "right, slow", "wrong, same speed", "wrong, control"

# soudry.gd-l2's tolerances and data thresholds (claims/soudry.gd-l2.toml), Wang's norm_drop (wang.adam-eps-l2)
SOUDRY_TOL = {"k_rise_max": 0.15, "rho_rise_max": 0.1, "slope_gap_max": 0.05, "slope_gap_floor": 0.005,
              "trend_drop": 0.1, "norm_drop": 0.1, "approach_drop": 0.1, "decades": 2.0}
SOUDRY_DATA = {"slack_min": 0.15, "dual_min": 0.01, "rate_min": 0.1}
SOUDRY_TIERS = {"fast": (10_000, 1), "full": (100_000, 2)}       # steps (× 1/u) and extensions
# baek.signum-any-batch-linf's tolerances and horizons
SIGNUM_TOL = {"inv_rise": 2.0, "decades": 2.0, "trend_drop": 0.1, "gap_floor": 1e-5, "gap_max": 0.03}
SIGNUM_TIERS = {"fast": (1_000_000, 1), "full": (3_000_000, 1)}
MILD_D = (0.5, 1.0)       # a milder preconditioner: D_jj from 0.5 to 1 (limit nearer ŵ2)


def thresholds() -> dict:
    """The rules' constants and defaults this table places (tests/test_power.py: equal to rules.py's)."""
    import inspect
    inv = inspect.signature(rules.judge_invariant).parameters
    sep = inspect.signature(rules.judge_separation).parameters
    gap = inspect.signature(rules.judge_gap).parameters
    return {"FLAT": rules.FLAT, "STABLE": rules.STABLE, "FLOOR": rules.FLOOR, "OUT_OF_REACH": rules.OUT_OF_REACH,
            "judge_invariant.rise": inv["rise"].default, "judge_invariant.rise_max": inv["rise_max"].default,
            "judge_gap.min_drop": gap["min_drop"].default, "judge_gap.decades": gap["decades"].default,
            "judge_separation.guard": sep["guard"].default, "judge_separation.min_drop": sep["min_drop"].default}


# ------------------------------------------------------------------------------------------------------- data

def draw_dataset(seed: int, soudry: bool) -> np.ndarray | None:
    """GR data (n, d ∈ [3, 10]) from default_rng(seed), or None when it misses the claims' hypotheses: discriminating
    (ŵ2 ≥ 10 % below γ∞ in ℓ∞ margin), and for the log-rate family soudry.gd-l2's non-degeneracy."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(3, 11)), int(rng.integers(3, 11))
    Z = gr(n, d, rng).Z
    if not S.discrimination(Z).ok():
        return None
    if soudry:
        r = S.regularity(Z)
        if not (r.slack >= SOUDRY_DATA["slack_min"] and r.dual >= SOUDRY_DATA["dual_min"]
                and r.rate >= SOUDRY_DATA["rate_min"]):
            return None
    return Z


def datasets(count: int, soudry: bool) -> list[tuple[int, np.ndarray]]:
    out, seed = [], SEED0 + (0 if soudry else 5000)
    while len(out) < count:
        Z = draw_dataset(seed, soudry)
        if Z is not None:
            out.append((seed, Z))
        seed += 1
    return out


# ------------------------------------------------------------------------------------------------------ runs

def horizons(base: int, extensions: int) -> list[int]:
    return [base * 10 ** k for k in range(extensions + 1)]


def run_union(Z, spec, cap: int, sets: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """One run to `cap` recording every checkpoint of `sets` (the claims' checkpoints at each horizon): a shorter run
    is a prefix of a longer one (deterministic engines), so each horizon's series is read off this run."""
    cps = np.unique(np.concatenate(sets))
    r = engine_run(Z, spec, int(cap), checkpoints=cps)
    return r.checkpoints.astype(np.int64), np.asarray(r.ws, float)


def at_steps(cps, ws, want) -> tuple[np.ndarray, np.ndarray]:
    idx = np.searchsorted(cps, want)
    assert np.array_equal(cps[idx], want)
    return want.astype(float), ws[idx]


def soudry_checkpoints(T: int) -> np.ndarray:
    """log_rate's checkpoints at horizon T (10 per decade)."""
    return log_checkpoints(T, int(10 * np.log10(T)) + 1)


def precond_run(Z, lr: float, D: np.ndarray, cap: int, sets) -> tuple[np.ndarray, np.ndarray]:
    """w ← w − η D ∇L(w) as GD on Z D^(1/2): v ← v − η ∇L(Z D^(1/2) v), w = D^(1/2) v."""
    r = np.sqrt(D)
    spec = OptimizerSpec.from_params({"optimizer": "gd"}, lr=lr, lr_decay=0.0)
    cps, vs = run_union(Z * r, spec, cap, sets)
    return cps, vs * r


def soudry_runs(Z: np.ndarray) -> list[dict]:
    """The log-rate family's runs on one dataset: (kind, label, lr fraction u, runner(cap, sets))."""
    beta = classic.logistic_smoothness(Z)
    d = Z.shape[1]
    mild = np.geomspace(*MILD_D, d) if d > 1 else np.ones(1)

    def gd(u):
        spec = OptimizerSpec.from_params({"optimizer": "gd"}, lr=u * 2.0 / beta, lr_decay=0.0)
        return lambda cap, sets: run_union(Z, spec, cap, sets)

    def pre(u, D):
        return lambda cap, sets: precond_run(Z, u * 2.0 / beta, D, cap, sets)

    cos_table = S.precond_limit(Z).cos_l2
    cos_mild = S.precond_limit(Z, mild).cos_l2
    return [
        {"kind": RIGHT, "run": "gd u=0.9", "u": 0.9, "go": gd(0.9)},
        {"kind": SLOW, "run": "gd u=0.1", "u": 0.1, "go": gd(0.1)},
        {"kind": WRONG, "run": "precond-gd (table D) u=0.5", "u": 0.5, "go": pre(0.5, precond_diagonal(d)),
         "limit_cos": cos_table},
        {"kind": WRONG, "run": "precond-gd (D 0.5…1) u=0.5", "u": 0.5, "go": pre(0.5, mild), "limit_cos": cos_mild},
    ]


SOUDRY_RULES = {   # rule label → the halves of soudry_decision it judges
    "judge_invariant: K ≤ ×(1+k_rise_max), ×rise contradicts": ("K",),
    "judge_invariant: ‖ρ‖": ("rho",),
    "judge_gap: slope gap |a·γ2 − 1|": ("slope",),
    "judge_gap: 1/‖w‖ (Wang's norm half)": ("norm",),
    "judge_gap: 1 − cos(w, ŵ2) (Wang's approach half)": ("approach",),
    "all_of: Soudry (K, ρ, slope)": ("K", "rho", "slope"),
    "all_of: Wang (K, norm, approach)": ("K", "norm", "approach"),
}
HALF_NAME = {rule: "+".join(h) for rule, h in SOUDRY_RULES.items()}
# each claim's decision (an all_of) and the rule labels of its halves judged alone
CLAIM_HALVES = {
    "all_of: Soudry (K, ρ, slope)": ("judge_invariant: K ≤ ×(1+k_rise_max), ×rise contradicts",
                                     "judge_invariant: ‖ρ‖", "judge_gap: slope gap |a·γ2 − 1|"),
    "all_of: Wang (K, norm, approach)": ("judge_invariant: K ≤ ×(1+k_rise_max), ×rise contradicts",
                                         "judge_gap: 1/‖w‖ (Wang's norm half)",
                                         "judge_gap: 1 − cos(w, ŵ2) (Wang's approach half)"),
}


def judge_soudry(Z, cps, ws, base: int, cap: int, halves) -> dict:
    def at(T: int, final: bool) -> prop.Example:
        x, w = at_steps(cps, ws, soudry_checkpoints(T))
        ev = classic.soudry_series(Z, w, x)
        dec, parts = classic.soudry_decision(x, ev, SOUDRY_TOL, final, halves)
        k0 = np.flatnonzero(x >= x[-1] / 10 * (1 - 1e-9))[0]
        return prop.Example(True, {"K_ratio": float(ev["K"][-1] / ev["K"][k0]),
                                   "a_gamma": float(ev["a"][-1] * ev["gamma_l2"]),
                                   "gap_ratio": float(ev["gap"][-1] / ev["gap"][k0])}, reason=dec.reason,
                            decision=dec.word)
    ex = prop.sequential(at, base, cap)
    return {"decision": ex.word, "decided_at": ex.decided_at, "horizon": ex.figures["horizon"],
            "K_ratio": ex.figures["K_ratio"], "a_gamma": ex.figures["a_gamma"], "gap_ratio": ex.figures["gap_ratio"],
            "reason": ex.reason[:300]}


def log_rate_family(count: int) -> list[dict]:
    out = []
    for seed, Z in datasets(count, soudry=True):
        for r in soudry_runs(Z):
            caps = {t: int(round(s / r["u"])) for t, (s, _) in SOUDRY_TIERS.items()}
            tiers = {t: (caps[t], caps[t] * 10 ** e) for t, (_, e) in SOUDRY_TIERS.items()}
            sets = [soudry_checkpoints(T) for base, c in tiers.values() for T in horizons(base, round(
                math.log10(c / base)))]
            t0 = time.process_time()
            cps, ws = r["go"](max(c for _, c in tiers.values()), sets)
            for tier, (base, cap) in tiers.items():
                for rule, halves in SOUDRY_RULES.items():
                    res = judge_soudry(Z, cps, ws, base, cap, halves)
                    out.append({"family": "log-rate", "rule": rule, "tier": tier, "cap": cap, "seed": seed,
                                "n": Z.shape[0], "d": Z.shape[1], "kind": r["kind"], "run": r["run"],
                                "limit_cos": r.get("limit_cos"), **res})
            print(f"log-rate seed {seed} {r['run']}: {time.process_time() - t0:.1f} CPU s; "
                  + ", ".join(f"{o['tier']} {o['rule'][:14]} {o['decision']}" for o in out[-2 * len(SOUDRY_RULES):]
                              if "all_of" in o["rule"]), flush=True)
    return out


# ------------------------------------------------------------------------------------------------- ℓ∞ rate

def signum_series(Z, x, ws) -> tuple[np.ndarray, np.ndarray]:
    """per_sample.signum_curves' series from iterates: the relative ℓ∞ gap (γ∞ − γ∞(w))/γ∞ and ‖w‖∞."""
    gamma = max_margin(Z, "linf").margin
    gap = np.array([(gamma - normalized_margin(Z, w, "linf")) / gamma for w in ws])
    return gap, np.max(np.abs(ws), axis=1)


def signum_spec(optimizer: str, b: int, beta: float, n: int) -> OptimizerSpec:
    """As per_sample.signum_curves builds it (batch b, β1 = β2 = β)."""
    return OptimizerSpec.from_params({"optimizer": optimizer}, batch_size=None if optimizer == "inc-adam" else b,
                                     beta1=beta, beta2=beta, seed=0).resolved(n)


def signum_runs(Z: np.ndarray) -> list[dict]:
    n, d = Z.shape
    D = precond_diagonal(d)
    lim = D * max_margin(Z * D, "linf").direction
    g = max_margin(Z, "linf").margin
    wrong_gap = float((g - normalized_margin(Z, lim, "linf")) / g)

    def plain(optimizer, b, beta):
        spec = signum_spec(optimizer, b, beta, n)
        return lambda cap, sets: run_union(Z, spec, cap, sets)

    def pre(b, beta):
        spec = signum_spec("signum", b, beta, n)

        def go(cap, sets):
            cps, vs = run_union(Z * D, spec, cap, sets)
            return cps, vs * D
        return go

    edge = 1.0 - 0.2 / n
    return [
        {"kind": RIGHT, "run": "signum full batch β=0.9", "beta": 0.9, "go": plain("signum", n, 0.9)},
        {"kind": SLOW, "run": "signum b=1 β=1−0.2/n", "beta": edge, "go": plain("signum", 1, edge)},
        {"kind": WRONG, "run": "precond signum (table D) full batch β=0.9", "beta": 0.9, "go": pre(n, 0.9),
         "limit_gap": wrong_gap},
    ]


SIGNUM_RULES = {"judge_rate_invariant: ℓ∞ gap, gap·‖w‖∞": "both", "judge_gap: ℓ∞ gap alone": "gap"}


def judge_signum(Z, cps, ws, base: int, cap: int, which: str) -> dict:
    def at(T: int, final: bool) -> prop.Example:
        x, w = at_steps(cps, ws, log_checkpoints(T, 31))
        gap, sc = signum_series(Z, x, w)
        if which == "both":
            dec = per_sample.signum_decision(x, gap, sc, SIGNUM_TOL["gap_max"], SIGNUM_TOL, final)
        else:
            dec = rules.judge_gap(x, gap, SIGNUM_TOL["gap_max"], decades=SIGNUM_TOL["decades"],
                                  min_drop=SIGNUM_TOL["trend_drop"], final=final, floor=SIGNUM_TOL["gap_floor"])
        inv = gap * sc
        before = rules.value_before(x, inv, 1.0)
        return prop.Example(True, {"gap": float(gap[-1]), "inv_ratio": float(inv[-1] / before) if before else math.nan},
                            reason=dec.reason, decision=dec.word)
    ex = prop.sequential(at, base, cap)
    return {"decision": ex.word, "decided_at": ex.decided_at, "horizon": ex.figures["horizon"],
            "gap": ex.figures["gap"], "inv_ratio": ex.figures["inv_ratio"], "reason": ex.reason[:300]}


def linf_family(count: int) -> list[dict]:
    out = []
    for seed, Z in datasets(count, soudry=False):
        for r in signum_runs(Z):
            tiers = {}
            for t, (s, e) in SIGNUM_TIERS.items():
                base = per_sample.signum_horizon(s, r["beta"])
                tiers[t] = (base, base * 10 ** e)
            sets = [log_checkpoints(T, 31) for base, cap in tiers.values() for T in horizons(
                base, round(math.log10(cap / base)))]
            t0 = time.process_time()
            cps, ws = r["go"](max(c for _, c in tiers.values()), sets)
            for tier, (base, cap) in tiers.items():
                for rule, which in SIGNUM_RULES.items():
                    res = judge_signum(Z, cps, ws, base, cap, which)
                    out.append({"family": "ℓ∞ rate", "rule": rule, "tier": tier, "cap": cap, "seed": seed,
                                "n": Z.shape[0], "d": Z.shape[1], "kind": r["kind"], "run": r["run"],
                                "limit_gap": r.get("limit_gap"), **res})
            print(f"ℓ∞ seed {seed} {r['run']}: {time.process_time() - t0:.1f} CPU s; "
                  + ", ".join(f"{o['tier']} {o['rule'][:12]} {o['decision']}" for o in out[-4:]), flush=True)
    return out


# ------------------------------------------------------------------------------------------------- networks

NET_SEED0 = 20_000     # data and init seeds 20000…: the claims' hypothesis draws data_seed and seed in [0, 10000]
# gronich.signum-linf / gronich.momentum-gd-l2: optimizer settings, the fast tier's horizon (cap ×10, extensions 1)
NET_RUNS = {"signum": {"lr": 0.1, "lr_decay": 0.7, "beta1": 0.9, "steps": 300_000},
            "momentum-gd": {"lr": 0.5, "lr_decay": 0.8, "beta1": 0.9, "steps": 1_000_000}}
NET_TOL = {"guard": 1.0, "min_drop": 0.05, "rate_bound": 0.05, "decades": 2.0}
INPUT_SCALE = 1.0      # the weighted runs' s_j = 10^(INPUT_SCALE·(j/(d−1) − ½)): max/min 10
# lyu-li.gd-smoothed-margin (right) and its controls: settings, tolerance, tiers (steps; no extension)
LYU_RUNS = {"gd": {"lr": 0.1, "lr_decay": 0.0}, "signum": {"lr": 0.1, "lr_decay": 0.7, "beta1": 0.9},
            "muon": {"lr": 0.3, "lr_decay": 0.7, "beta1": 0.9}}
LYU_TOL = {"monotone_rtol": 1e-9, "decades": 2.0, "checkpoints_per_decade": 12}
LYU_TIERS = {"fast": 10_000, "full": 100_000}
WRONG_GEOM = "wrong geometry, same run"


def net_examples(count: int) -> list[dict]:
    """Fresh examples as strategies.network.network_example draws them (n ∈ [16, 24], d ∈ [3, 5], width ∈ {6, 8,
    10}), from default_rng(seed), seed = NET_SEED0 + k, which is also the data and init seed."""
    out = []
    for k in range(count):
        seed = NET_SEED0 + k
        rng = np.random.default_rng(seed)
        out.append({"dataset": "teacher", "n": int(rng.integers(16, 25)), "d": int(rng.integers(3, 6)),
                    "width": int(rng.choice([6, 8, 10])), "data_seed": seed, "seed": seed})
    return out


def coordinate_scale(d: int, amplitude: float) -> np.ndarray:
    return np.ones(1) if d == 1 else 10.0 ** (amplitude * (np.arange(d) / (d - 1) - 0.5))


def net_cfg(ex: dict, optimizer: str, steps: int) -> dict:
    """gronich_nets.run_example's configuration: 13 checkpoints from steps/1000 to steps."""
    return {"model": "two-layer", "q": 2.0, "loss": "logistic", "optimizer": optimizer, **NET_RUNS[optimizer],
            **{k: v for k, v in ex.items() if k != "seed"}, "steps": int(steps), "start": max(1, steps // 1000),
            "checkpoints": 13}


def net_run(ex: dict, optimizer: str, steps: int, weighted: bool):
    """(run, model, data): the claim's run, or (weighted) the same optimizer on the inputs scaled per coordinate by
    s, its first layer mapped back (W = W'·diag(s)): the optimizer preconditioned by a fixed diagonal on the first
    layer (MomentumGD: D = s²; Signum: D = s), at its own speed, judged on the original data."""
    import dataclasses
    from ibverify.recipes import DataRecipe, RunStore
    from ibverify.recipes.settings import network as network_recipe
    store = RunStore.process()
    rec = network_recipe(net_cfg(ex, optimizer, steps), int(ex["seed"]))
    data = store.data(rec.data)
    if not weighted:
        return store.run(rec, warn=False), store.model(rec), data
    s = coordinate_scale(data.X.shape[1], INPUT_SCALE)
    r = store.run(rec.replace(data=DataRecipe.of_arrays(data.X * s, data.y, name="scaled")), warn=False)
    first = "W1" if "W1" in r.thetas[0] else "W"
    back = [None if th is None else {**th, first: th[first] * s} for th in r.thetas]
    th0 = None if r.theta0 is None else {**r.theta0, first: r.theta0[first] * s}
    return dataclasses.replace(r, block_thetas=back, theta0=th0), store.model(rec), data


def judge_net(ex: dict, optimizer: str, geometry: str, weighted: bool, cap_factor: int = 10) -> dict:
    """gronich_nets' judgement of one example in `geometry` (its judge_at: outside → (T2) → score → judge with the
    claim's approach evidence), extended ×10 from the fast tier's horizon up to its cap (prop.sequential)."""
    from ibverify.checks import gronich_nets as N
    from ibverify.checks import gronich_score as GS

    def at(T: int, final: bool) -> prop.Example:
        r, model, data = net_run(ex, optimizer, T, weighted)
        out = N.outside(r, model, data, final)
        if out is not None:
            return prop.Example(True, {}, reason="not separated", decision=out[0])
        t2, _, _ = GS.judge_direction(r.checkpoints, r.thetas, N.T2_DIR_MAX, N.T2_DROP, final)
        sc = GS.score(r, model, data, getattr(r.optimizer.geometry, "c", 1.0), NET_TOL["decades"])
        j = GS.judge(sc, geometry, guard=NET_TOL["guard"], min_drop=NET_TOL["min_drop"], decades=NET_TOL["decades"],
                     bound=NET_TOL["rate_bound"], final=final, approach=GS.approach(r, model, data, sc, geometry))
        word, why = j.decision, "; ".join(j.reasons)
        if t2.word == rules.CONTRADICTED:
            word, why = rules.SET_ASIDE, f"outside (T2): {t2.reason}"
        elif t2.word != rules.SUPPORTED and word == rules.SUPPORTED:
            word, why = rules.INCONCLUSIVE, f"(T2) not yet shown: {t2.reason}"
        figs = {"ratio": float(j.figures["residual_ratio"]), "residual": float(j.figures["residual"])}
        return prop.Example(True, figs, reason=why, decision=word)
    base = NET_RUNS[optimizer]["steps"]
    e = prop.sequential(at, base, base * cap_factor)
    return {"decision": e.word, "decided_at": e.decided_at, "horizon": e.figures["horizon"],
            "ratio": e.figures.get("ratio"), "residual": e.figures.get("residual"), "reason": e.reason[:300]}


def judge_bias(ex: dict, optimizer: str) -> dict[str, str]:
    """`ibverify bias`'s judgement of the two-layer model (checks.bias.judge_dataset) on this example, with the
    claim's optimizer settings, from the fast tier's horizon to its cap: {geometry: decision}."""
    from ibverify.checks import bias
    from ibverify.recipes import DataRecipe, ModelRecipe
    data = DataRecipe.generated("teacher", n=ex["n"], d=ex["d"], m_teacher=4, q=2.0, seed=ex["data_seed"])
    pr = bias.Problem(f"teacher {ex['data_seed']}", data, ModelRecipe.of("two-layer", width=ex["width"], q=2.0),
                      init_seed=ex["seed"], n=ex["n"])
    spec = bias.resolved_spec(OptimizerSpec.from_params({"optimizer": optimizer, **{
        k: v for k, v in NET_RUNS[optimizer].items() if k != "steps"}}), "two-layer", ex["n"])
    base = NET_RUNS[optimizer]["steps"]
    out = bias.judge_dataset("two-layer", pr, spec, "fast", horizons=(base, base * 10))
    return {g: {"decision": j.word, "reason": j.reason[:200], "horizon": j.horizon} for g, j in out.items()}


NET_RULES = ("judge_separation: network KKT (gronich_nets)",
             "judge_separation: `ibverify bias` two-layer (judge_dataset)")


def network_family(count: int) -> list[dict]:
    """Signum → ℓ∞ and MomentumGD → ℓ2 (right), the same optimizers diagonally preconditioned on the first layer
    (wrong limit, same speed), and the right runs judged in every other geometry (the controls' own method)."""
    from ibverify.optim import info
    out = []
    for ex in net_examples(count):
        for optimizer in NET_RUNS:
            own = info(optimizer).geometry
            t0 = time.process_time()
            row = {"family": "network KKT", "tier": "fast", "seed": ex["seed"], "n": ex["n"], "d": ex["d"],
                   "width": ex["width"]}
            cap = NET_RUNS[optimizer]["steps"] * 10
            out.append({**row, "rule": NET_RULES[0], "cap": cap, "kind": RIGHT, "run": f"{optimizer} in {own}",
                        **judge_net(ex, optimizer, own, False)})
            out.append({**row, "rule": NET_RULES[0], "cap": cap, "kind": WRONG,
                        "run": f"{optimizer}, first layer preconditioned D = s{'²' if own == 'l2' else ''}, in {own}",
                        **judge_net(ex, optimizer, own, True)})
            from ibverify.checks import gronich_score as GS
            from ibverify.models import TwoLayer
            for g in GS.applicable(TwoLayer(ex["d"], ex["width"], 2.0)):
                if g != own:
                    out.append({**row, "rule": NET_RULES[0], "cap": cap, "kind": WRONG_GEOM,
                                "run": f"{optimizer} in {g}", **judge_net(ex, optimizer, g, False)})
            for g, j in judge_bias(ex, optimizer).items():
                out.append({**row, "rule": NET_RULES[1], "cap": cap, "kind": RIGHT if g == own else WRONG_GEOM,
                            "run": f"{optimizer} in {g}", **j})
            print(f"network seed {ex['seed']} {optimizer}: {time.process_time() - t0:.1f} CPU s; "
                  + ", ".join(f"{o['kind'][:5]} {o['run'][-12:]} {o['decision']}" for o in out[-3:]), flush=True)
    return out


def lyu_li_family(count: int) -> list[dict]:
    """lyu-li.gd-smoothed-margin's check on fresh examples: γ̃ after ℒ < ℓ(0) (classic_nets.smoothed_margin_series)
    judged by rules.judge_nondecreasing at each tier's horizon; GD (right) and its controls Signum, Muon."""
    from ibverify.blocks import flatten
    from ibverify.checks.classic_nets import THRESHOLD, smoothed_margin_series
    from ibverify.recipes import RunStore
    from ibverify.recipes.settings import network as network_recipe
    out = []
    for ex in net_examples(count):
        for optimizer, knobs in LYU_RUNS.items():
            t0 = time.process_time()
            for tier, steps in LYU_TIERS.items():
                cfg = {"model": "two-layer", "q": 2.0, "loss": "logistic", "optimizer": optimizer, "init_scale": 0.5,
                       **knobs, **{k: v for k, v in ex.items() if k != "seed"}, "steps": steps, "start": 1,
                       "checkpoints": int(LYU_TOL["checkpoints_per_decade"] * math.log10(steps)) + 1}
                rec = network_recipe(cfg, int(ex["seed"]))
                store = RunStore.process()
                r, model = store.run(rec, warn=False), store.model(rec)
                x, ll = np.asarray(r.checkpoints, float), np.asarray(r.log_loss, float)
                nrm = np.array([np.linalg.norm(flatten(t)) for t in r.thetas])
                gam = smoothed_margin_series(ll, nrm, model.L, "logistic")
                below = np.flatnonzero(ll < THRESHOLD["logistic"])
                res = {"decision": rules.SET_ASIDE, "reason": "ℒ ≥ ℓ(0) up to the horizon", "threshold_step": None,
                       "min_step": None}
                if len(below) and not r.diverged:
                    k0 = int(below[0])
                    dec = rules.judge_nondecreasing(x[k0:], gam[k0:], LYU_TOL["monotone_rtol"],
                                                    decades=LYU_TOL["decades"])
                    g = gam[k0:]
                    res = {"decision": dec.word if dec.word in (rules.SUPPORTED, rules.CONTRADICTED)
                           else rules.SET_ASIDE, "reason": dec.reason[:200], "threshold_step": float(x[k0]),
                           "min_step": float((np.diff(g) / np.abs(g[:-1])).min()) if len(g) > 1 else None}
                out.append({"family": "smoothed margin", "rule": "judge_nondecreasing: γ̃ (Lyu–Li)", "tier": tier,
                            "cap": steps, "seed": ex["seed"], "n": ex["n"], "d": ex["d"], "width": ex["width"],
                            "kind": RIGHT if optimizer == "gd" else WRONG_FAST, "run": optimizer, "horizon": steps,
                            **res})
            print(f"lyu-li seed {ex['seed']} {optimizer}: {time.process_time() - t0:.1f} CPU s; "
                  + ", ".join(f"{o['tier']} {o['decision']}" for o in out[-2:]), flush=True)
    return out


# ------------------------------------------------------------------------------------------------- the table

KINDS = (RIGHT, SLOW, WRONG, WRONG_FAST, WRONG_GEOM)
WRONG_KINDS = (WRONG, WRONG_FAST, WRONG_GEOM)
# halves whose statement holds on every run here (‖w‖ → ∞ on each run, right or wrong limit): their support on a
# wrong-limit run is not a false support, and no run of this table can contradict them (issue 33 item 3)
CONSEQUENCES = ("judge_gap: 1/‖w‖ (Wang's norm half)",)


def tabulate(runs: list[dict]) -> list[dict]:
    """Per (family, rule, tier, kind): counts of each decision; false support = supported on a wrong limit, false
    contradiction = contradicted on a right one."""
    rows = {}
    for r in runs:
        key = (r["family"], r["rule"], r["tier"], r["kind"])
        row = rows.setdefault(key, {"family": r["family"], "rule": r["rule"], "tier": r["tier"], "kind": r["kind"],
                                    "caps": set(), "n": 0, rules.SUPPORTED: 0, rules.CONTRADICTED: 0,
                                    rules.INCONCLUSIVE: 0, rules.SET_ASIDE: 0})
        row["n"] += 1
        row[r["decision"]] += 1
        row["caps"].add(r["cap"])
    out = []
    for row in rows.values():
        row["caps"] = [min(row["caps"]), max(row["caps"])]
        wrong = row["kind"] in WRONG_KINDS and row["rule"] not in CONSEQUENCES
        row["false_support"] = row[rules.SUPPORTED] if wrong else None
        row["false_contradiction"] = None if wrong else row[rules.CONTRADICTED]
        out.append(row)
    order = {k: i for i, k in enumerate(KINDS)}
    rule_order = {r: i for i, r in enumerate([*SOUDRY_RULES, *SIGNUM_RULES, *NET_RULES])}
    return sorted(out, key=lambda r: (r["family"], rule_order.get(r["rule"], 99), r["tier"] != "fast",
                                      order[r["kind"]]))


LYU_RULE = "judge_nondecreasing: γ̃ (Lyu–Li)"
# the per-example decisions that decide a verdict about a limit (a half alone decides no claim: soudry.gd-l2 and
# Nacson judge all_of(K, ρ, slope), Wang all_of(K, norm, approach), the Signum claims judge_rate_invariant, the
# network KKT claims and `ibverify bias` judge_separation). Lyu–Li's check is no limit: a Signum or Muon run whose γ̃
# happens not to go down at its checkpoints is supported per run, and its controls' verdicts are the tally over
# their examples (lyu_li_verdicts)
CLAIM_LEVEL = ("all_of: Soudry (K, ρ, slope)", "all_of: Wang (K, norm, approach)",
               "judge_rate_invariant: ℓ∞ gap, gap·‖w‖∞", *NET_RULES)


def lyu_li_verdicts(runs: list[dict]) -> dict[tuple[str, str], tuple[bool | None, str]]:
    """(optimizer, tier) → rules.tally over the fresh examples with ≥ 2/3 supported (the claims' min_supported):
    what lyu-li.gd-smoothed-margin (gd) and its controls (signum, muon: must not hold) would decide on them."""
    out = {}
    for r in runs:
        if r["rule"] == LYU_RULE:
            out.setdefault((r["run"], r["tier"]), []).append(r["decision"])
    return {k: rules.tally(w, math.ceil(2 * len([x for x in w if x != rules.SET_ASIDE]) / 3)) for k, w in out.items()}


def done_when(table: list[dict], tier: str = "full", only=None) -> dict:
    """The issue's figures at the full tier's caps (tier "largest": each family's largest tier measured), over every
    rule (or the rules `only`): false supports (need 0) and the largest false-contradiction share (need ≤ 5 %)."""
    if tier == "largest":
        tiers = {}
        for r in table:
            tiers.setdefault(r["family"], set()).add(r["tier"])
        pick = {f: "full" if "full" in t else "fast" for f, t in tiers.items()}
        rows = [r for r in table if r["tier"] == pick[r["family"]]]
    else:
        rows = [r for r in table if r["tier"] == tier]
    rows = [r for r in rows if only is None or r["rule"] in only]
    fs = sum(r["false_support"] or 0 for r in rows)
    fc = max((r["false_contradiction"] / r["n"] for r in rows if r["false_contradiction"] is not None), default=0.0)
    return {"false_support": fs, "max_false_contradiction": fc}


def run_key(r: dict) -> tuple:
    return r["family"], r["tier"], r["seed"], r["run"]


def claim_false_supports(runs: list[dict]) -> list[dict]:
    """Wrong-limit runs on which a claim's decision (CLAIM_LEVEL) is supported: must be none (issue 33's done-when
    as the lead reads it: the decisions that decide a verdict)."""
    return [r for r in runs if r["rule"] in CLAIM_LEVEL and r["kind"] in WRONG_KINDS
            and r["decision"] == rules.SUPPORTED]


def withheld(runs: list[dict]) -> list[dict]:
    """Per claim, half and tier: the wrong-limit runs that the half judged alone supports, and for each of them the
    claim's decision on the same run and the other halves that are not supported there (which withhold it)."""
    by = {(r["rule"], run_key(r)): r for r in runs}
    out = []
    for claim, halves in CLAIM_HALVES.items():
        for half in halves:
            for tier in dict.fromkeys(r["tier"] for r in runs if r["rule"] == half):
                alone = [r for r in runs if r["rule"] == half and r["tier"] == tier and r["kind"] in WRONG_KINDS
                         and r["decision"] == rules.SUPPORTED]
                cases = []
                for r in alone:
                    k = run_key(r)
                    dec = by[(claim, k)]["decision"] if (claim, k) in by else None
                    others = [h for h in halves if h != half and (h, k) in by
                              and by[(h, k)]["decision"] != rules.SUPPORTED]
                    cases.append({"seed": r["seed"], "run": r["run"], "claim_decision": dec, "withheld_by": others})
                held = [c for c in cases if c["claim_decision"] not in (None, rules.SUPPORTED) and c["withheld_by"]]
                out.append({"claim": claim, "half": half, "tier": tier, "supports": len(alone), "cases": cases,
                            "withheld": len(held)})
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|")   # a table cell: |a·γ2 − 1| must not split it


def _share(k, n) -> str:
    return f"{k}/{n} ({k / n:.0%})" if n else "–"


def _caps(c) -> str:
    def f(v):
        e = int(math.floor(math.log10(v)))
        m = v / 10 ** e
        return f"{m:.2g}e{e}" if abs(m - round(m)) > 1e-9 or m != 1 else f"1e{e}"
    return f(c[0]) if c[0] == c[1] else f"{f(c[0])}–{f(c[1])}"


def render(data: dict) -> str:
    """docs/power.md from the JSON (the only input: --check compares this with the committed page)."""
    t = tabulate(data["runs"])
    dw = done_when(t, tier="largest")
    cw = done_when(t, tier="largest", only=CLAIM_LEVEL)
    bad = claim_false_supports(data["runs"])
    lyu_bad = [r for r in data["runs"] if r["rule"] == LYU_RULE and r["kind"] in WRONG_KINDS
               and r["decision"] == rules.SUPPORTED]
    lyu_fs = len(lyu_bad)
    lyu_list = [f"{r['run']} seed {r['seed']} {r['tier']} tier, γ̃ rising {r['reason'].split('(')[-1].rstrip(')')}"
                for r in lyu_bad]
    lines = [
        "# Power of the verdict rules",
        "",
        "<!-- generated by benchmarks/power.py from ibverify/report/power.json; do not edit (--check in CI) -->",
        "",
        "How often each rule of `ibverify/checks/rules.py` supports a **wrong** limit (false support) and",
        "contradicts a **true** one (false contradiction), measured on fresh runs that no claim judges (issue 33",
        f"item 1). Data: GR datasets (n, d ∈ [3, 10]) from numpy's `default_rng(seed)`, seeds {data['seeds']}: the",
        "claims draw theirs with hypothesis at seeds 0–7 (network examples: data and init seeds in [0, 10000]). Every",
        "run's series comes from the checks' own helpers and goes to the rules exactly as the claims feed them,",
        "extended ×10 while inconclusive up to each tier's cap (`prop.sequential`). Wrong limits at the **same",
        "speed**: diagonally preconditioned GD (`precond-gd`, limit the D^(−1/2)-weighted ℓ2 max margin, at GD's",
        "1/log t rate), diagonally preconditioned Signum (limit the max margin of ‖D⁻¹w‖∞, at Signum's rate), and on",
        "networks Signum / MomentumGD preconditioned by a fixed diagonal on the first layer (the optimizer run on",
        f"inputs scaled per coordinate by s_j = 10^({data['settings']['input_scale']:g}·(j/(d−1) − ½)), its first",
        "layer mapped back: a KKT direction of a weighted geometry, at the optimizer's own speed). The network rows",
        "also judge the right runs in every other geometry (the controls' own method: the same run, a wrong claim).",
        "The sign-like strawman controls are not repeated here (no same-speed control; their claims refute them).",
        "The families' setups are in `benchmarks/power.py`'s docstring.",
        "",
        f"Regenerate: `python benchmarks/power.py --jobs 3` ({data['cpu_minutes']:.1f} CPU-min on the 2-core",
        f"development machine, commit {data['commit']}, {data['date']}); `python benchmarks/power.py --check`",
        "re-renders this page from `ibverify/report/power.json` (shipped in the package: an installed report reads",
        "it) without running anything and fails if it differs (CI).",
        "",
        "## Done-when figures",
        "",
        "At the full tier's caps; the network KKT family at the fast tier's caps (3e5 → 3e6 steps for Signum,",
        "1e6 → 1e7 for MomentumGD): its full tier (1e7, ×10 to 1e8) does not fit the regeneration's budget.",
        "",
        f"- false supports of the per-example decisions that decide a verdict about a limit ({', '.join(CLAIM_LEVEL)})"
        " on wrong-limit runs:",
        f"  **{cw['false_support']}** (need 0; at every tier: {len(bad)})",
        f"- largest false-contradiction share of a rule on right-limit runs: **{dw['max_false_contradiction']:.0%}**"
        f" (need ≤ 5 %; the decisions that decide a verdict: {cw['max_false_contradiction']:.0%})",
        f"- false supports of the rules and halves each judged alone: {dw['false_support']} (reported, not a failure:",
        "  a half decides no verdict by itself; each is withheld below)",
        f"- `{LYU_RULE}` per run: {lyu_fs} control run(s) supported (" + (", ".join(lyu_list) or "none")
        + "): γ̃ did not go down at any of its checkpoints after ℒ < ℓ(0); the claims' verdicts over these",
        "  examples (rules.tally, ≥ 2/3 supported, any contradicted refutes): " + "; ".join(
            f"{o} {t}: {'holds' if v[0] else 'does not hold' if v[0] is False else 'inconclusive'} ({v[1]})"
            for (o, t), v in lyu_li_verdicts(data["runs"]).items()),
    ]
    if "bias_linear" in data:
        lines.append(f"- linear `bias`, near-miss limits: supports whose true gap exceeds the stated resolution: "
                     f"**{BL.done(data)}** (need 0; § linear `bias` below); finite δ below the certified gap, every "
                     f"geometry: **{BL.below_count(data)}** (need 0)")
    lines += [
        "",
        "## Halves judged alone that support a wrong limit",
        "",
        "A claim's decision is the all_of of its halves, so a half that supports a wrong-limit run alone decides",
        "nothing if another half of the same claim does not support that run. A preconditioner's limit near ŵ2",
        "(cos ≥ 0.98) is where a half alone can support it (the slope half's floor `slope_gap_floor` = 0.005 is",
        "a·γ2 within 0.5 % of 1, and a·γ2 → ≥ 1/cos; ‖ρ‖ grows only like (1/cos − 1)·ln t).",
        "",
        "| claim | half | tier | wrong-limit runs it alone supports | withheld by another half |"
        " runs (the halves that withhold each) |",
        "|---|---|---|---|---|---|",
    ]
    for w in withheld(data["runs"]):
        cases = "; ".join(f"{c['seed']} {c['run']} ({', '.join(HALF_NAME[h] for h in c['withheld_by']) or 'none'})"
                          for c in w["cases"])
        note = " (a consequence: holds on every run)" if w["half"] in CONSEQUENCES else ""
        lines.append(f"| {_cell(w['claim'])} | {_cell(w['half'])}{note} | {w['tier']} | {w['supports']} | "
                     f"{w['withheld']}/{w['supports']} | {_cell(cases)} |")
    lines += ["", "## Thresholds placed by this table", "", "| threshold | value |", "|---|---|"]
    lines += [f"| `{k}` | {v:g} |" for k, v in data["thresholds"].items()]
    lines += ["", "Claim tolerances the families judge with (the claims' TOMLs; tests/benchmarks/test_power.py):", ""]
    lines += [f"- {fam}: " + ", ".join(f"`{k}` = {v:g}" for k, v in tol.items())
              for fam, tol in data["tolerances"].items()]
    for fam in dict.fromkeys(r["family"] for r in t):
        lines += ["", f"## {fam}", "",
                  "| rule | tier | runs | cap (steps) | n | supported | contradicted | inconclusive | set aside |"
                  " false support | false contradiction |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in (r for r in t if r["family"] == fam):
            fs = (_share(r["false_support"], r["n"]) if r["false_support"] is not None
                  else "n/a: holds on every run" if r["rule"] in CONSEQUENCES and r["kind"] in WRONG_KINDS
                  else "")
            fc = _share(r["false_contradiction"], r["n"]) if r["false_contradiction"] is not None else ""
            lines.append(f"| {_cell(r['rule'])} | {r['tier']} | {r['kind']} | {_caps(r['caps'])} | {r['n']} | "
                         f"{r[rules.SUPPORTED]} | {r[rules.CONTRADICTED]} | {r[rules.INCONCLUSIVE]} "
                         f"({r[rules.INCONCLUSIVE] / r['n']:.0%}) | {r[rules.SET_ASIDE]} | {fs} | {fc} |")
    lines += ["", "## What the table shows", ""]
    lines += k_summary(data["runs"], data["thresholds"]["judge_invariant.rise"])
    lines += approach_summary(data["runs"])
    lines += ["- `judge_gap: 1/‖w‖` (Wang's norm half) is a consequence, not evidence for a direction: ‖w‖ → ∞ on",
              "  every run here, right or wrong limit, so it supports them all and no run can contradict it (issue 33",
              "  item 3)."]
    lines += net_summary(data["runs"])
    lines += ["", "## Per run", "", "Figures at the horizon that decided each run (or the cap): K ×/decade, a·γ2 and",
              "1 − cos ×/decade (log-rate; the Soudry verdict, then Wang's), ℓ∞ gap and gap·‖w‖∞ ×/decade (ℓ∞ rate;",
              "judge_rate_invariant), own/closest-other Fenchel residual ratio (network KKT, gronich_nets), the first",
              "step below ℓ(0) and the smallest relative step of γ̃ (smoothed margin).", "",
              "| family | tier | seed (n×d) | run | limit | verdict | horizon | figures |",
              "|---|---|---|---|---|---|---|---|"]
    shown = ("all_of: Soudry (K, ρ, slope)", "judge_rate_invariant: ℓ∞ gap, gap·‖w‖∞", NET_RULES[0], LYU_RULE)
    wang = {run_key(r): r for r in data["runs"] if r["rule"] == "all_of: Wang (K, norm, approach)"}
    for r in data["runs"]:
        if r["rule"] not in shown:
            continue
        verdict, lim = r["decision"], ""
        if r["family"] == "log-rate":
            lim = f"cos {r['limit_cos']:.3f} to ŵ2" if r.get("limit_cos") is not None else ""
            fig = f"K ×{r['K_ratio']:.3g}, a·γ2 {r['a_gamma']:.4g}"
            w = wang.get(run_key(r))
            if w is not None:
                verdict += f"; Wang {w['decision']}"
                fig += f"; 1 − cos ×{w['gap_ratio']:.3g}"
        elif r["family"] == "ℓ∞ rate":
            lim = f"ℓ∞ gap {r['limit_gap']:.3f}" if r.get("limit_gap") is not None else ""
            fig = f"gap {r['gap']:.3g}, ×{r['inv_ratio']:.3g}"
        elif r["family"] == "network KKT":
            fig = f"ratio {r['ratio']:.3g}" if r.get("ratio") is not None else r["reason"][:60]
        else:
            fig = (f"ℒ < ℓ(0) at {r['threshold_step']:.3g}, smallest step {r['min_step']:.3g}"
                   if r.get("threshold_step") is not None else r["reason"][:60])
        dims = f"{r['n']}×{r['d']}" + (f", m={r['width']}" if "width" in r else "")
        lines.append(f"| {r['family']} | {r['tier']} | {r['seed']} ({dims}) | {r['run']} | {lim} | "
                     f"{verdict} | {r['horizon']:.3g} | {fig} |")
    if "bias_linear" in data:
        lines += BL.render(data)
    return "\n".join(lines) + "\n"


def approach_summary(runs: list[dict]) -> list[str]:
    """Wang's approach half: 1 − cos(w, ŵ2) per decade at the horizon, right against same-speed wrong limits."""
    out = []
    for tier in ("fast", "full"):
        g = {kind: [r["gap_ratio"] for r in runs if r["rule"] == "all_of: Wang (K, norm, approach)"
                    and r["tier"] == tier and r["kind"] == kind] for kind in (RIGHT, SLOW, WRONG)}
        half = [r["decision"] for r in runs if r["rule"] == "judge_gap: 1 − cos(w, ŵ2) (Wang's approach half)"
                and r["tier"] == tier and r["kind"] == WRONG]
        if all(g.values()):
            right = g[RIGHT] + g[SLOW]
            out.append(f"- {tier} tier, Wang's approach half: 1 − cos(w, ŵ2) changes ×{min(right):.3g}–"
                       f"{max(right):.3g} per decade on the right runs and ×{min(g[WRONG]):.3g}–{max(g[WRONG]):.3g} on "
                       f"the same-speed wrong limits (falling ≥ 10 % per decade supports); alone it contradicts "
                       f"{half.count(rules.CONTRADICTED)}/{len(half)} of those wrong limits.")
    return out


def net_summary(runs: list[dict]) -> list[str]:
    """The network KKT rule's own/closest-other residual ratio at the deciding horizon, per kind of run."""
    out = []
    for rule in NET_RULES:
        rs = [r for r in runs if r["rule"] == rule]
        if not rs:
            continue
        parts = []
        for kind in (RIGHT, WRONG, WRONG_GEOM):
            k = [r for r in rs if r["kind"] == kind]
            v = [r["ratio"] for r in k if r.get("ratio") is not None and math.isfinite(r["ratio"])]
            if k:
                words = ", ".join(f"{sum(r['decision'] == w for r in k)} {w}" for w in rules.DECISIONS
                                  if any(r["decision"] == w for r in k))
                parts.append(f"{kind}: {words}" + (f" (ratio {min(v):.3g}–{max(v):.3g})" if v else ""))
        out.append(f"- `{rule}`: " + "; ".join(parts) + ".")
    lyu = [r for r in runs if r["rule"] == LYU_RULE]
    if lyu:
        for tier in ("fast", "full"):
            parts = []
            for run in LYU_RUNS:
                k = [r for r in lyu if r["tier"] == tier and r["run"] == run]
                parts.append(f"{run} " + ", ".join(f"{sum(r['decision'] == w for r in k)} {w}" for w in rules.DECISIONS
                                                   if any(r["decision"] == w for r in k)))
            out.append(f"- `{LYU_RULE}`, {tier} tier ({LYU_TIERS[tier]:.0e} steps): " + "; ".join(parts) + ".")
    return out


def k_summary(runs: list[dict], rise: float) -> list[str]:
    """The K half's per-decade rise at the cap, right against same-speed wrong limits, per tier (from the runs), and
    how many of those wrong limits the slope half contradicts."""
    out = []
    for tier in ("fast", "full"):
        ks = {kind: [r["K_ratio"] for r in runs if r["rule"].startswith("judge_invariant: K") and r["tier"] == tier
                     and r["kind"] == kind] for kind in (RIGHT, SLOW, WRONG)}
        slope = [r["decision"] for r in runs if r["rule"].startswith("judge_gap: slope") and r["tier"] == tier
                 and r["kind"] == WRONG]
        if all(ks.values()):
            right, wrong = ks[RIGHT] + ks[SLOW], ks[WRONG]
            out.append(f"- {tier} tier: K = (1 − cos)‖w‖² rises ×{min(wrong):.3g}–{max(wrong):.3g} over the last "
                       f"decade on the same-speed wrong limits (precond-gd), below the ×{rise:g} that contradicts, "
                       f"against ×{min(right):.3g}–{max(right):.3g} on the right ones; the slope half contradicts "
                       f"{slope.count(rules.CONTRADICTED)}/{len(slope)} of those wrong limits.")
    return out


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


FAMILIES = ("log_rate_family", "linf_family", "network_family", "lyu_li_family")


def _family(name: str, count: int) -> list[dict]:
    return globals()[name](count)


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the --jobs workers)."""
    import resource
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def measure(count: int, jobs: int = 1) -> dict:
    t0 = cpu_seconds()
    if jobs > 1:   # the families are independent: one worker process each (the same runs, in any order)
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(jobs) as pool:
            parts = list(pool.map(_family, FAMILIES, [count] * len(FAMILIES)))
    else:
        parts = [_family(f, count) for f in FAMILIES]
    runs = [r for part in parts for r in part]
    return {"seeds": f"{SEED0}… (log-rate) and {SEED0 + 5000}… (ℓ∞ rate), {count} datasets each (the first that meet "
                      f"the claims' hypotheses); networks: {count} teacher examples, seeds {NET_SEED0}…",
            "commit": commit(), "date": time.strftime("%Y-%m-%d"),
            "cpu_minutes": (cpu_seconds() - t0) / 60, "thresholds": thresholds(),
            "tolerances": {"log-rate": SOUDRY_TOL, "ℓ∞ rate": SIGNUM_TOL, "network KKT": NET_TOL,
                           "smoothed margin": LYU_TOL},
            "settings": {"network KKT": NET_RUNS, "input_scale": INPUT_SCALE, "smoothed margin": LYU_RUNS,
                         "smoothed margin tiers": LYU_TIERS},
            "runs": runs}


def check(json_path: Path = JSON, page: Path = PAGE) -> int:
    """0 when `page` equals the render of `json_path`, else 1 (with one line on stderr)."""
    want = render(json.loads(json_path.read_text()))
    if not page.exists() or page.read_text() != want:
        print(f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page} differs from the render of "
              f"{json_path.name}: run `python benchmarks/power.py --render`", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare docs/power.md with the render of the JSON")
    ap.add_argument("--render", action="store_true", help="re-render docs/power.md from the JSON")
    ap.add_argument("--datasets", type=int, default=6, help="datasets per family (default 6)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes, one family each (default 1)")
    ap.add_argument("--family", choices=("bias-linear",), help="measure this family only and merge it into the JSON")
    ap.add_argument("--as-baseline", action="store_true",
                    help="with --family bias-linear: record it as the baseline (before bias stated a resolution)")
    ap.add_argument("--held-out", action="store_true",
                    help="with --family bias-linear: measure it on the held-out draw (power_bias_linear.HELD_OUT)")
    ap.add_argument("--json", type=Path, default=JSON)
    ap.add_argument("--page", type=Path, default=PAGE)
    ap.add_argument("--figure", type=Path, default=BL.FIGURE)
    a = ap.parse_args(argv)
    if a.check:
        return check(a.json, a.page)
    if (a.as_baseline or a.held_out) and a.family is None:
        print("power.py: --as-baseline and --held-out need --family bias-linear", file=sys.stderr)
        return 2
    if not a.render:
        if a.datasets < 1 or a.jobs < 1:
            print("power.py: --datasets and --jobs must be ≥ 1", file=sys.stderr)
            return 2
        from ibverify.jsonio import plain
        old = json.loads(a.json.read_text()) if a.json.exists() else {}
        if a.family is None:
            new = measure(a.datasets, a.jobs)
            new["bias_linear"] = old.get("bias_linear")
        else:
            new = old
        if a.family is not None or new.get("bias_linear") is not None:   # the linear-bias family: measured too
            part = {**(BL.measure_held_out() if a.held_out else BL.measure()), "commit": commit(),
                    "date": time.strftime("%Y-%m-%d")}
            sec = new.get("bias_linear") or {"baseline": part, "current": None}
            sec["held_out" if a.held_out else "baseline" if a.as_baseline else "current"] = part
            new["bias_linear"] = sec
        a.json.write_text(json.dumps(plain(new), indent=1, ensure_ascii=False) + "\n")
    data = json.loads(a.json.read_text())
    a.page.write_text(render(data))
    if "bias_linear" in data:
        sec = data["bias_linear"]
        BL.figure(sec.get("current") or sec["baseline"], a.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
