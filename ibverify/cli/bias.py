"""`ibverify bias`: which geometry's KKT conditions does an optimizer's limit satisfy (ibverify.checks.bias)?

The knobs are `train`'s (the table's KNOBS, defaults from the optimizer's row), applied to every --optimizer given.
Several optimizers, --workers / --scheduler (Dask) and the provenance: ibverify.runner.bias; --report DIR:
ibverify.report.bias. Start-up stays light: numpy, the engine and the oracles load only once the arguments are parsed.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time

from ..errors import IbverifyError
from ..optim.table import KNOBS, ORDERS, names
from .output import FOREIGN_HELP, add_intercept_option, csv_lines_named, dump, nonneg_int

USER_NOTE = ("your own optimizer: --optimizer path/to/file.py[:function] (default function make). The function "
             "returns ibverify.optim.userfile.UserOptimizer(name, update, vector, block, knobs): "
             "vector = (spec, xp) -> transforms of ibverify.optim.transforms (linear model), "
             "block = (spec) -> transforms of ibverify.optim.logframe (matrix, two-layer), each the chain before the "
             "schedule, which ibverify appends "
             "(η_t = lr · t^(−lr_decay)); knobs = the defaults of the knobs it reads. Output: \"optimizer\" is its "
             "name, \"source\" the file (absolute path:function) and \"source_sha256\" its content's hash. "
             "Example: docs/examples/my_signum.py; protocol: docs/commands.md.")
BIAS_MODELS = ("linear", "matrix", "two-layer")
BIAS_TIERS = ("smoke", "fast")
TIER_NOTE = ("smoke: 1e5 steps on every model; fast (default): linear 1e6, matrix 1e5, two-layer 3e5 steps, an "
             "undecided dataset extended ×10 once")


class _Raw(argparse.RawDescriptionHelpFormatter):
    pass


class _BoolOpt(argparse.BooleanOptionalAction):
    pass


def add_bias_parser(sub) -> None:
    intro = textwrap.fill(
        "Run an optimizer on generated data where the geometries' max-margin directions differ, for every model its "
        "row of the optimizer table supports (vector: linear; block: matrix, two-layer), score every geometry (l1, "
        "l2, linf on the linear model; l2, linf, spectral on the matrix model; l2, linf, msp, hybrid on the "
        "two-layer net) with the project's three-valued rules, and answer per model which geometry's KKT "
        "conditions the run's limit satisfies: a geometry supported (with its resolution δ), \"none of these\" "
        "when every geometry is contradicted, \"undecided at T\" with the closest one and how far to extend, or a "
        "bounded ‖θ‖ (weight decay), which has no margin limit.", 100)
    b = sub.add_parser("bias", help="identify an optimizer's implicit bias (which geometry's KKT point)",
                       formatter_class=_Raw, description=intro + "\n\n" + textwrap.fill("tiers: " + TIER_NOTE, 100)
                       + "\n\n" + textwrap.fill(USER_NOTE, 100))
    b.add_argument("--optimizer", required=True, metavar="NAME", action="append",
                   help="one of: " + ", ".join(names()) + "; or your own: path/to/file.py[:function] (below); "
                        + FOREIGN_HELP + "; repeatable: several optimizers, each answered on the same datasets")
    b.add_argument("--tier", choices=BIAS_TIERS, default="fast", help=TIER_NOTE)
    b.add_argument("--seed", type=nonneg_int("--seed"), default=0, help="seed of the generated datasets (default 0)")
    b.add_argument("--datasets", type=nonneg_int("--datasets"), default=3, metavar="K",
                   help="generated datasets per model (default 3)")
    b.add_argument("--model", action="append", choices=BIAS_MODELS, default=None,
                   help="only this model (repeatable; default: every model the optimizer's row supports)")
    b.add_argument("--data", default=None, metavar="FILE",
                   help="your own dataset instead: .npz (X, y) or .csv (label ±1 in the last column) for the linear "
                        "and two-layer models, .npz with X of shape (n, p, r) for the matrix model")
    add_intercept_option(b)
    n = b.add_argument_group("the two-layer net on --data FILE (as `train --model two-layer`)")
    n.add_argument("--standardize", action="store_true",
                   help="centre every feature of the data file at its mean and divide it by its standard deviation "
                        "(the net has no bias: on features all >= 0, e.g. wine or iris, its units die); the "
                        "two-layer model only")
    n.add_argument("--width", type=int, default=None, metavar="M",
                   help="hidden units of the two-layer net on the data file (default 8; the generated datasets draw "
                        "their own)")
    k = b.add_argument_group("knobs (default: the optimizer's row of the table)")
    k.add_argument("--lr", type=float, default=None, help=KNOBS["lr"])
    k.add_argument("--lr-decay", type=float, default=None, help=KNOBS["lr_decay"])
    k.add_argument("--beta1", type=float, default=None, help=KNOBS["beta1"])
    k.add_argument("--beta2", type=float, default=None, help=KNOBS["beta2"])
    k.add_argument("--eps", type=float, default=None, help=KNOBS["eps"])
    k.add_argument("--bias-correction", action=_BoolOpt, default=None, help=KNOBS["bias_correction"])
    k.add_argument("--batch-size", type=int, default=None, metavar="B", help=KNOBS["batch_size"])
    k.add_argument("--order", choices=ORDERS, default=None, help=KNOBS["order"])
    k.add_argument("--lr-matrix", type=float, default=None, help=KNOBS["lr_matrix"])
    k.add_argument("--lr-vector", type=float, default=None, help=KNOBS["lr_vector"])
    b.add_argument("--loss", choices=("logistic", "exponential"), default=None, help="loss (default logistic)")
    b.add_argument("--json", action="store_true",
                   help="print one JSON object on stdout (a list of them, one per optimizer, with several)")
    b.add_argument("--report", default=None, metavar="DIR",
                   help="also write a report page: DIR/index.html (answer tables, provenance, a log-log figure "
                        "per dataset), DIR/figures/bias-*.svg and .csv, DIR/bias.json")
    w = b.add_mutually_exclusive_group()
    w.add_argument("--workers", type=int, default=None, metavar="N",
                   help="every (optimizer, model, dataset) as a task on a local Dask cluster of N processes "
                        "(default: in this process, one after the other)")
    w.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the tasks on an existing Dask cluster, e.g. tcp://host:8786")
    b.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    b.set_defaults(func=cmd_bias)


def _knobs(args) -> dict:
    """The knobs given (--seed is the datasets' seed here, not a knob: the sample order keeps its default)."""
    return {k: getattr(args, k) for k in KNOBS if k != "seed" and getattr(args, k, None) is not None}


def _load(path: str, intercept: bool = False, standardize: bool = False):
    """The user's dataset as a data recipe (recipes.cli.bias_data) and its inert (all-zero) columns, which every
    optimizer's run leaves at 0 (docs/own-data.md): a vector dataset (as `train`; whether it can feed
    each model is decided per model: checks.bias.plan; `intercept` appends a column of ones; `standardize` first
    centres and scales every feature, cli.network.standardized), or matrix inputs: an .npz with X of shape (n, p, r)
    (no intercept: the matrix model has none)."""
    D = _read(path, intercept, standardize)
    from ..recipes.cli import bias_data   # start-up time: the engine (numba); a damaged file is refused before it

    return bias_data(D), ([] if D.X.ndim == 3 else [int(k) for k in getattr(D, "inert", [])])


def _read(path: str, intercept: bool = False, standardize: bool = False):
    """The user's dataset as read and checked (numpy only: a damaged file is one line before any heavy import)."""
    from ..data import load_dataset  # start-up time: the parser and --help never import numpy
    from ..data.files import load_matrices, read_dataset, require_run_scale, with_intercept
    from .network import standardized

    if str(path).endswith(".npz"):
        D = load_matrices(path, require_separable=False)   # one line for a truncated, pickled or incomplete archive
        if D.X.ndim == 3:
            if intercept:
                raise IbverifyError(f"{path}: --intercept appends a column to n×d data; these are n×p×r matrices")
            if standardize:
                raise IbverifyError(f"{path}: --standardize applies to vector inputs, not to n×p×r matrices")
            # only the matrix model takes matrices; its block run squares gradients ∝ x (as train --model matrix-linear)
            return require_run_scale(D, 2, "the matrix model's squared gradients")
    if standardize:   # as `train --model … --standardize`: the columns of ones of --intercept appended after
        D = standardized(read_dataset(path))[0]
        return with_intercept(D) if intercept else D
    return load_dataset(path, require_separable=False, intercept=intercept)


def decade_lines(model: dict) -> list[str]:
    """A model's decades and switches (runner.decades.by_decade) as text lines ([] when none was read)."""
    rows = model.get("by_decade") or []
    if not rows:
        return []
    def ten(n: int) -> str:
        return f"1e{len(str(n)) - 1}"

    out = ["    by decade: " + ", ".join(f"{ten(r['from'])}–{ten(r['to'])} {r['geometry'] or 'none'}" for r in rows)]
    for s in model.get("switches", []):
        n = len(s["steps"])
        at = (f"at step ≈ {s['step']:.3g} (median over {n} dataset{'s' if n != 1 else ''})" if s["step"] is not None
              else "(no dataset's curves cross)")
        out.append(f"    switch: {s['from_geometry']} → {s['to_geometry']} {at}")
    return out


def text(out: dict) -> str:
    """The human answer: per model, its outcome worded as what is known (report.bias.headline: the supported
    geometries with their resolutions, "l2 (to within 0.31 %)"; "none of these" when every geometry is contradicted;
    "undecided at T …" with the closest geometry and how far to extend; a bounded ‖θ‖ with the setting that bounds
    it), the geometries with one line each, what each geometry means, the c the hybrid was judged at (or why it was
    not judged), and the two-layer net's units alive."""
    from ..report.bias import bounded_text, headline, hybrid_c_lines, resolution_text

    own = str(out["optimizer"]).startswith(("torch:", "optax:"))   # a library's optimizer reads no knob of the table
    knobs = (", ".join(f"{k} = {v}" for k, v in out["knobs"].items())
             or ("its own defaults" if own else "the table's defaults"))
    src = f" from {out['source']}" if "source" in out else ""
    lines = [f"{out['optimizer']}{src} ({knobs}; tier {out['tier']}, seed {out['seed']})"]
    for m in out["models"]:
        if "not_judged" in m:
            lines.append(f"  {m['model']}: not judged ({m['not_judged']})")
            continue
        lines.append(f"  {m['model']}: {headline(m)} (on {m['datasets']} dataset{'s' if m['datasets'] != 1 else ''}, "
                     f"{m['cpu_seconds']:.1f} CPU s)")
        if m.get("outcome") == "bounded-norm":
            lines.append("    " + bounded_text(m["bounded_norm"]))
        else:
            for word in ("supported", "contradicted", "inconclusive"):
                for g in m[word]:
                    e = m["evidence"][g]
                    within = f"; limit {resolution_text(m, g)}" if word == "supported" else ""
                    lines.append(f"    {word:<12} {g:<8} {e['line']} ({e['tally']}{within})")
        if m.get("bounding_settings"):
            held = ", ".join(m["bounding_settings"])
            lines.append(f"    note: {held} bounds ‖θ‖ in the limit (it still grew at this horizon): the margin "
                         f"limits judged here assume ‖θ‖ → ∞, which needs it off")
        for u in m.get("units_alive", []):
            dead = u["width"] - u["alive"]
            lines.append(f"    units alive on {u['dataset']}: {u['alive']} of {u['width']}"
                         + (f" ({dead} dead: w_j·x ≤ 0 on every sample, no gradient)" if dead else ""))
        for a in m.get("set_aside", []):
            lines.append(f"    set aside: {a['dataset']} ({a['reason']})")
        lines.extend(decade_lines(m))
        for u in m.get("underflow", []):
            what = ("float64 iterate frozen: {} from step {} (smallest margin {:.4g}), " if u.get("kind") == "frozen"
                    else "float64 underflow: {} by step {} (every margin ≥ {:.4g}), ")
            lines.append("    " + what.format(u["dataset"], u["step"], u["min_margin"])
                         + (f"judged at T = {u['judged_at']}" if u["judged_at"] is not None else "set aside"))
        for g, meaning in m.get("meanings", {}).items():
            lines.append(f"    {g} = {meaning}")
        lines.extend("    " + h for h in hybrid_c_lines(m))
    for model, why in out.get("skipped", {}).items():
        lines.append(f"  {model}: not run ({why})")
    return "\n".join(lines)


def advice(entry: dict, *, standardized: bool, width: int, tier: str, own_data: bool) -> str | None:
    """What to try for a two-layer model not judged on a user's file (runner.bias.answered appends it to the
    refusal): --standardize when most units died on raw data (the net has no bias), a smaller --lr when they died on
    standardized data, else a larger --width or a longer horizon; None for another model or a generated dataset."""
    if entry["model"] != "two-layer" or not own_data:
        return None
    units = [a for a in entry.get("set_aside", []) if "units_alive" in a]
    if not units:
        return None
    mostly_dead = any(2 * a["units_alive"] < a["width"] for a in units)
    if mostly_dead and not standardized:
        return ("most units are dead: try --standardize (centre and scale each feature: the net has no bias, so on "
                "features of one sign a step can kill a unit for good)")
    if mostly_dead:
        return "most units are dead on the standardized data: try a smaller --lr"
    longer = " or --tier fast (a longer horizon)" if tier != "fast" else ""
    return (f"try a larger --width (now {width}){longer}"
            + ("" if standardized else ", or --standardize (centre and scale each feature)"))


def _specs(args) -> list:
    """One OptimizerSpec per --optimizer (optim.adapters.to_spec, as `ibverify.bias`), every name, knob and user file
    checked before any run."""
    from ..optim.adapters import check_name, to_spec   # numpy, not the engine (numba) nor the solvers (cvxpy)

    for name in args.optimizer:   # every name before any file is loaded
        check_name(name)
    from ..optim.userprobe import probe   # start-up time: the engine and the geometries

    specs = [to_spec(name, _knobs(args), what="--optimizer", probe=False) for name in args.optimizer]
    for spec in specs:
        probe(spec)   # a user's optimizer file: its chains take a first step, or one line and exit 2
    return specs


def _workers(args) -> int:
    if args.workers is not None and args.workers < 1:
        raise IbverifyError(f"--workers must be >= 1, got {args.workers}")
    return args.workers or 1


def answers(specs: list, knobs: dict, *, tier: str, seed: int, datasets: int = 3, data_file: str | None = None,
            models: list[str] | None = None, quiet: bool = False, workers: int = 1, scheduler: str | None = None,
            on_cluster=lambda info: None, intercept: bool = False, note=lambda msg: None,
            standardize: bool = False, width: int | None = None) -> list[dict]:
    """The command's output dicts, one per spec (what --json prints): runner.bias.identify_all's answers with the
    knobs given, the wall-clock and CPU seconds. Progress on stderr unless `quiet` (ibverify.progress: a bar, a
    notebook bar or log lines). `ibverify bias` and the Python API (`ibverify.bias`) both come here. bias's own
    choices for adam and gd (runner.bias.conventions) are each given to `note` and listed in the answer's
    "conventions". `standardize`, `width` (with `data_file`, the two-layer model only): the file's features centred
    and scaled, the net's hidden width (default 8)."""
    if intercept and data_file is None:
        raise IbverifyError("--intercept applies to --data FILE only (the generated datasets need none)")
    for flag, given in (("--standardize", standardize), ("--width", width is not None)):
        if given and data_file is None:
            raise IbverifyError(f"{flag} applies to --data FILE on the two-layer model (the generated datasets "
                                f"draw their own widths and need no standardizing)")
    if width is not None and not 1 <= width <= 4096:
        raise IbverifyError(f"--width must be in 1..4096, got {width}")
    data, inert = None, []
    if data_file is not None:
        with csv_lines_named(data_file):   # a ragged CSV: the error names its line
            data, inert = _load(data_file, intercept, standardize)
    from ..checks.bias import plan
    from ..progress import Progress
    from ..runner.bias import conventions, identify_all  # start-up time: numpy, numba, cvxpy
    from ..runner.underflow import describe as describe_underflow

    chosen = []
    for spec in specs:   # every argument checked (plan) before a note is said; notes only where the linear model runs
        names, _ = plan(spec, tier=tier, datasets=datasets, data=data, data_name=str(data_file or ""), models=models)
        if standardize and set(names) - {"two-layer"}:
            raise IbverifyError(f"--standardize applies to the two-layer model ({spec.name} would also run "
                                f"{', '.join(m for m in names if m != 'two-layer')}: the linear model has no bias, so "
                                f"centring its data changes what separates them; use --intercept there); give "
                                f"--model two-layer")
        chosen.append(conventions(spec, knobs) if "linear" in names else (None, []))
    for _, notes in chosen:
        for msg in notes:
            note(msg)

    label = "bias " + ", ".join(s.name for s in specs)
    bar = Progress(label, enabled=False if quiet else None)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        found = identify_all(specs, tier=tier, seed=seed, datasets=datasets, data=data, data_name=str(data_file or ""),
                             models=models, say=bar.message, progress=bar.steps, workers=workers,
                             scheduler=scheduler, on_cluster=on_cluster, adjust=[a for a, _ in chosen],
                             width=width or 8,
                             advise=lambda m: advice(m, standardized=standardize, width=width or 8, tier=tier,
                                                     own_data=data_file is not None))
    finally:
        bar.close()
    seconds, cpu = round(time.perf_counter() - t0, 2), round(time.process_time() - c0, 2)
    if inert:   # said with the answer (a refused file gets its one error line alone)
        note(f"{data_file}: {len(inert)} all-zero column{'s' if len(inert) != 1 else ''} set aside (left at 0 by "
             f"every optimizer): {', '.join(map(str, inert[:12]))}{' …' if len(inert) > 12 else ''}")
    for a in found:   # a float64 run that underflowed: said on stderr (and in the answer's "underflow")
        for m in a["models"]:
            for u in m.get("underflow", []):
                note(describe_underflow(a["optimizer"], m["model"], u))
    return [{"optimizer": a["optimizer"], "knobs": dict(knobs), **{k: v for k, v in a.items() if k != "optimizer"},
             **({"conventions": notes} if notes else {}),
             **({"data": {"file": str(data_file), "inert_coordinates": inert,
                          **({"standardized": True} if standardize else {}),
                          **({"width": width} if width is not None else {})}} if data_file is not None else {}),
             "seconds": seconds, "cpu_seconds": cpu}
            for a, (_, notes) in zip(found, chosen, strict=True)]


def _refuse_early(args) -> None:
    """The refusals that need no heavy import (issue 53 item 5): every optimizer name, --workers, --intercept without
    --data, a damaged --data file, an unusable --report folder (nothing created), each one line before the engine,
    the solvers or torch load and before any file or folder is made."""
    from ..optim.adapters import check_name   # numpy only (a torch:/optax: name imports its library to be checked)

    for name in args.optimizer:
        check_name(name)
    _workers(args)
    if args.intercept and args.data is None:
        raise IbverifyError("--intercept applies to --data FILE only (the generated datasets need none)")
    if args.data is not None:
        with csv_lines_named(args.data):
            _read(args.data, args.intercept, args.standardize)
    if args.report is not None:
        from ..report.bias import check_folder  # start-up time: jinja2, matplotlib load only when it is written

        check_folder(args.report)


def cmd_bias(args) -> int:
    _refuse_early(args)
    specs = _specs(args)
    workers = _workers(args)
    folder = None
    if args.report is not None:
        from ..report.bias import check_folder

        folder = check_folder(args.report)   # checked, not created: render_bias_report makes it with the page
    ran_on = ["this process"]

    def cluster(info: str) -> None:
        ran_on[0] = info
        if not args.quiet:
            print(info, file=sys.stderr, flush=True)

    outs = answers(specs, _knobs(args), tier=args.tier, seed=args.seed, datasets=args.datasets, data_file=args.data,
                   models=args.model, quiet=args.quiet, workers=workers, scheduler=args.scheduler, on_cluster=cluster,
                   intercept=args.intercept, note=lambda msg: print(f"note: {msg}", file=sys.stderr, flush=True),
                   standardize=args.standardize, width=args.width)
    if folder is not None:
        from ..report.bias import render_bias_report
        from ..runner.bias import provenance

        prov = provenance(getattr(args, "argv", None) or ["bias"], tier=args.tier, seed=args.seed,
                          datasets=args.datasets, data_file=args.data, ran_on=ran_on[0])
        index = render_bias_report(outs, folder, prov)
        if not args.quiet:
            print(f"report: {index}", file=sys.stderr, flush=True)
    if args.json:
        dump(outs[0] if len(outs) == 1 else outs)
    else:
        print("\n".join(text(o) for o in outs))
    return 0
