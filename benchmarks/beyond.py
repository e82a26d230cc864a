"""Questions the two seed papers leave open, measured (issue 22 point 4; docs/beyond.md).

    python benchmarks/beyond.py adam-batch   # per-sample vs full-batch Adam (paper 1's convention) on the two-layer net
    python benchmarks/beyond.py lr-decay     # Signum / momentum-gd / Muon below the LR-MSD threshold 1 − 1/L = 2/3
    python benchmarks/beyond.py ns5          # which geometry Newton–Schulz Muon (muon-ns5) prefers
    python benchmarks/beyond.py plot         # the SVG figures of docs/beyond.md from the JSON files

Every measurement uses `ibverify bias`'s datasets (checks.bias.draws: seeded teacher sets for the two-layer net,
discriminating rank-1-teacher matrix sets for the matrix model) and its rules (checks.bias.judge_dataset: Fenchel
KKT residuals in every geometry and the cross-geometry rule on the two-layer net, certified margin gaps on the
matrix model), only at horizons of its own (--first, --cap: an undecided dataset is extended ×10 up to the cap).
Each subcommand prints a markdown table and writes JSON (default docs/figures/beyond-<name>.json) with, per
configuration and dataset, every geometry's decision, final value, fitted slope, horizon and the scored curve.
Seeded and deterministic (the compiled kernels); CPU seconds are reported per configuration.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ibverify.checks import bias  # noqa: E402
from ibverify.checks import rules  # noqa: E402
from ibverify.optim import OptimizerSpec  # noqa: E402

FIG = ROOT / "docs" / "figures"
PAPER1_ADAM = {"eps": 0.0, "bias_correction": False, "beta1": 0.9, "beta2": 0.999}


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def measure(name: str, model: str, spec: OptimizerSpec, problems, first: int, cap: int, batch=None) -> dict:
    """Every geometry of `model` on each problem (bias.judge_dataset), tallied per geometry (bias.tally_geometry)."""
    t0 = time.process_time()
    rows = []
    for pr in problems:
        sp = bias.resolved_spec(spec, model, pr.n)
        res = bias.judge_dataset(model, pr, sp, "fast", batch=batch, horizons=(first, cap))
        rows.append({"dataset": pr.tag, "geometries": {
            g: {**j.to_json(), "curve": j.curve} for g, j in res.items()}})
        line = ", ".join(f"{g} {j.word} ({j.value:.3g}, slope {j.slope:.2g})" for g, j in res.items())
        print(f"  {name} {pr.tag}: T = {next(iter(res.values())).horizon:.2g}: {line}", flush=True)
    geos = list(rows[0]["geometries"])
    tally = {g: bias.tally_geometry([r["geometries"][g]["decision"] for r in rows]) for g in geos}
    return {"name": name, "model": model, "spec": spec.to_json(), "batch": batch, "first": first, "cap": cap,
            "tally": tally, "supported": [g for g in geos if tally[g] == rules.SUPPORTED], "datasets": rows,
            "cpu_seconds": round(time.process_time() - t0, 1)}


def table(results: list[dict]) -> str:
    lines = ["| configuration | model | dataset | T | " + " | ".join(_geos(results)) + " |",
             "|---|---|---|---|" + "---|" * len(_geos(results))]
    for r in results:
        for d in r["datasets"]:
            g = d["geometries"]
            T = max(v["horizon"] for v in g.values())
            cells = [_cell(g[k]) if k in g else "" for k in _geos(results)]
            lines.append(f"| {r['name']} | {r['model']} | {d['dataset']} | {T:.2g} | " + " | ".join(cells) + " |")
        cells = [f"**{r['tally'][k]}**" if k in r["tally"] else "" for k in _geos(results)]
        lines.append(f"| {r['name']} | {r['model']} | **tally** ({r['cpu_seconds']:.0f} CPU-s) | | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def _geos(results):
    out = []
    for r in results:
        out += [g for g in r["tally"] if g not in out]
    return out


def _cell(v: dict) -> str:
    q = v.get("residual", v.get("margin_gap"))
    short = {"supported": "S", "contradicted": "C", "inconclusive": "I", "set aside": "A"}[v["decision"]]
    return f"{short} {q:.3g} ({v['slope']:+.2f})"


def save(results: list[dict], out: Path, what: str) -> None:
    doc = {"what": what, "date": time.strftime("%Y-%m-%d", time.gmtime()), "commit": commit(), "results": results}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, default=float))
    print(f"\n{what} ({doc['date']}, commit {doc['commit']}); S/C/I/A = supported/contradicted/inconclusive/set "
          "aside, value (residual or margin gap) at T and its fitted log-log slope\n")
    print(table(results))
    print(f"\nwritten: {out}")


def cmd_adam_batch(a) -> None:
    probs = bias.generated("two-layer", a.seed, a.datasets)
    results = []
    for b, name in ((None, "full-batch Adam"), (1, "per-sample Adam")):
        spec = OptimizerSpec.from_params({**PAPER1_ADAM, "beta2": a.beta2}, name="adam")
        results.append(measure(name, "two-layer", spec, probs, a.first, a.cap, batch=b))
    save(results, Path(a.out or FIG / f"beyond-adam-batch{'' if a.beta2 == 0.999 else f'-b2-{a.beta2:g}'}"
                                      f"{'' if a.seed == 0 else f'-seed{a.seed}'}.json"),
         f"Adam (ε = 0, no bias correction, β1 = 0.9, β2 = {a.beta2}, lr 0.1, lr_decay 0.83), full batch vs "
         "per-sample (cyclic), two-layer ReLU² net")


def cmd_lr_decay(a) -> None:
    probs = bias.generated("two-layer", a.seed, a.datasets)
    results = []
    for opt in a.optimizers.split(","):
        for p in (float(x) for x in a.decays.split(",")):
            spec = OptimizerSpec.from_params({"lr_decay": p}, name=opt)
            results.append(measure(f"{opt} p={p:g}", "two-layer", spec, probs, a.first, a.cap))
    save(results, Path(a.out or FIG / "beyond-lr-decay.json"),
         "two-layer ReLU² net (L = 3, LR-MSD threshold 1 − 1/L = 2/3), η_t = lr · t^(−p)")


def cmd_ns5(a) -> None:
    results = []
    for model in a.models.split(","):
        probs = bias.generated(model, a.seed, a.datasets)
        first, cap = (a.first_matrix, a.cap_matrix) if model == "matrix" else (a.first, a.cap)
        for opt in a.optimizers.split(","):
            spec = OptimizerSpec.from_params({}, name=opt)
            results.append(measure(opt, model, spec, probs, first, cap))
    save(results, Path(a.out or FIG / "beyond-ns5.json"), "Newton–Schulz Muon (muon-ns5) against exact-polar Muon")


LETTER = {rules.SUPPORTED: "S", rules.CONTRADICTED: "C", rules.INCONCLUSIVE: "I", rules.SET_ASIDE: "A"}


def cmd_plot(a) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "ibverify"   # reproducible SVG ids
    matplotlib.rcParams["svg.fonttype"] = "none"
    style = {"l2": ("C0", "ℓ2"), "linf": ("C1", "ℓ∞"), "msp": ("C2", "max-spectral"), "hybrid": ("C4", "hybrid"),
             "spectral": ("C2", "spectral")}
    docs = {}
    for src in sorted(FIG.glob("beyond-*.json")):
        stem, doc = src.stem.removeprefix("beyond-"), json.loads(src.read_text())
        if "-seed" in stem:   # per-seed reruns of one measurement: one figure, a row block per seed
            base, seed = stem.rsplit("-seed", 1)
            for r in doc["results"]:
                r["name"] = f"{r['name']} (seed {seed})"
            if base in docs:
                docs[base]["results"] += doc["results"]
                continue
            stem = base
        docs[stem] = doc
    for stem, doc in docs.items():
        res = doc["results"]
        cols = min(5, max(len(r["datasets"]) for r in res))
        rows_of = [-(-len(r["datasets"]) // cols) for r in res]
        fig, axes = plt.subplots(sum(rows_of), cols, figsize=(2.5 * cols, 1.9 * sum(rows_of) + 0.6), squeeze=False)
        for ax in axes.ravel():
            ax.axis("off")
        row = 0
        for r, nrows in zip(res, rows_of, strict=True):
            for j, d in enumerate(r["datasets"]):
                ax = axes[row + j // cols][j % cols]
                ax.axis("on")
                words = set()
                for g, v in d["geometries"].items():
                    words.add(v["decision"])
                    if not v.get("curve") or not v["curve"][0]:
                        continue
                    c, lab = style.get(g, ("k", g))
                    ax.loglog(v["curve"][0], v["curve"][1], "o-", ms=2.5, lw=1, color=c,
                              label=f"{lab}: {LETTER[v['decision']]}")
                tag = ",".join(x for x in d["dataset"].split(",") if not x.startswith(("data", "init")))
                aside = " — set aside" if words == {rules.SET_ASIDE} else ""
                ax.set_title(f"{r['name']} | {tag}{aside}", fontsize=6.5)
                ax.tick_params(labelsize=5.5)
                if ax.get_legend_handles_labels()[0]:
                    ax.legend(fontsize=5.5, handlelength=1.2, borderpad=0.2, labelspacing=0.2)
                else:   # nothing scored: the run never separated its data (every unit dead)
                    ax.set_xticks([]), ax.set_yticks([])
                    why = next(iter(d["geometries"].values()))["reason"]
                    ax.text(0.5, 0.5, "\n".join(why[i:i + 40] for i in range(0, min(len(why), 120), 40)),
                            ha="center", va="center", fontsize=5.5, transform=ax.transAxes)
            row += nrows
        fig.supylabel("Fenchel KKT residual (two-layer) / margin gap (matrix)", fontsize=7)
        fig.supxlabel("step t (scored checkpoints of the last two decades)", fontsize=7)
        fig.suptitle(f"{doc['what']}\n{doc['date']}, commit {doc['commit']}; S/C/I/A = supported / contradicted / "
                     "inconclusive / set aside", fontsize=7)
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / (1.9 * sum(rows_of) + 0.6)))
        out = Path(a.to or FIG) / f"beyond-{stem}.{a.ext}"
        fig.savefig(out, metadata={"Date": None})
        plt.close(fig)
        print(f"written: {out}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, fn in (("adam-batch", cmd_adam_batch), ("lr-decay", cmd_lr_decay), ("ns5", cmd_ns5)):
        s = sub.add_parser(name)
        s.add_argument("--seed", type=int, default=0, help="seed of bias.draws (default 0)")
        s.add_argument("--datasets", type=int, default=4)
        s.add_argument("--first", type=int, default=300_000, help="first horizon (two-layer)")
        s.add_argument("--cap", type=int, default=3_000_000, help="largest horizon (two-layer)")
        s.add_argument("--out", default=None)
        s.set_defaults(func=fn)
        if name == "adam-batch":
            s.add_argument("--beta2", type=float, default=0.999)
        if name == "lr-decay":
            s.add_argument("--optimizers", default="signum,momentum-gd,muon")
            s.add_argument("--decays", default="0.5,0.6,0.83")
        if name == "ns5":
            s.add_argument("--models", default="matrix,two-layer")
            s.add_argument("--optimizers", default="muon-ns5,muon")
            s.add_argument("--first-matrix", type=int, default=1_000_000)
            s.add_argument("--cap-matrix", type=int, default=10_000_000)
    p = sub.add_parser("plot")
    p.add_argument("--ext", default="svg", choices=("svg", "png"), help="figure format (png: a preview)")
    p.add_argument("--to", default=None, help="folder (default docs/figures)")
    p.set_defaults(func=cmd_plot)
    a = ap.parse_args(argv)
    a.func(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
