"""`ibverify train`: one command for every model and every optimizer of the table.

Without --model the linear model is trained sample by sample on a data file (the vector implementation);
with --model a block model (a linear model, matrix or deep linear models, two-layer or deep ReLU^q nets) is
trained full batch (the block implementation). Both read the same knobs (`ibverify.optim.table.KNOBS`),
whose defaults come from the optimizer's row of the table.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from ..errors import IbverifyError
from ..optim.table import KNOBS, ORDERS, ROWS, names
from .network import MODELS, run_network
from .output import (FOREIGN_HELP, add_intercept_option, check_optimizer, nonneg_int, data_json, dump, first_call,
                     kernel_note, load_data, say, spec_from_args)

STILL_MOVING_RAD = 1e-3  # angle between the last two checkpoint directions above which `train` warns
PSTAR_MAX_ENTRIES = 50_000  # `train` computes the predicted p* when n·d is at most this (cheap)
ORACLE_MAX_ENTRIES = 2_000_000  # ... and the ℓ2/ℓ∞ max-margin oracles when n·d is at most this


def add_train_parser(sub, parser_class) -> None:
    rows = "\n".join(textwrap.fill(f"{r.name}{' (= ' + ', '.join(r.aliases) + ')' if r.aliases else ''} ({r.geometry}; "
                                    f"{'/'.join(r.models)}): {r.update}", 100, initial_indent="  ",
                                    subsequent_indent="      ", break_on_hyphens=False) for r in ROWS)
    intro = textwrap.fill("Run an optimizer on the linear model sample by sample (default), or on a block model "
                          "(--model) full batch. Step sizes η_t = lr · t^(−lr_decay), t = 1, 2, …; a knob not given "
                          "takes the optimizer's default from the optimizer table.", 100)
    t = sub.add_parser("train", help="run an optimizer on a dataset", formatter_class=_Raw,
                       description=intro + "\n\noptimizers (own geometry; models):\n" + rows)
    t.add_argument("--data", required=True, metavar="FILE",
                   help=".npz (arrays X, y) or .csv (comma-separated, label ±1 in the last column, optional header); "
                        "with --model also digits | teacher | linear (generated)")
    t.add_argument("--optimizer", required=True, metavar="NAME",
                   help="one of: " + ", ".join(names()) + "; or your own: path/to/file.py[:function] (the protocol: "
                        "`ibverify bias --help`, docs/commands.md); " + FOREIGN_HELP)
    t.add_argument("--model", choices=MODELS, default=None,
                   help="a block model, trained full batch (default: the linear model, sample by sample)")
    g = t.add_mutually_exclusive_group()
    g.add_argument("--epochs", type=int, default=None,
                   help="horizon in epochs of ceil(n/B) steps (default 1000; full batch: one step an epoch)")
    g.add_argument("--steps", type=int, default=None, help="horizon in steps (must be >= 1; --model: default 10000)")
    k = t.add_argument_group("knobs (default: the optimizer's row of the table)")
    k.add_argument("--lr", type=float, default=None, help=KNOBS["lr"] + " (default 0.1; nsd-l2, momentum-gd on "
                   "block models 0.5; the spectral family 0.3)")
    k.add_argument("--lr-decay", type=float, default=None, help=KNOBS["lr_decay"])
    k.add_argument("--beta1", type=float, default=None, help=KNOBS["beta1"] + " (default 0.9)")
    k.add_argument("--beta2", type=float, default=None, help=KNOBS["beta2"] + " (default 0.999)")
    k.add_argument("--eps", type=float, default=None, help=KNOBS["eps"] + " (default 0, the papers' convention)")
    k.add_argument("--bias-correction", action=_BoolOpt, default=None,
                   help=KNOBS["bias_correction"] + " (default: on for adam on a block model and muon-adam; off "
                        "for inc-adam, det-adam and adam on the linear model)")
    k.add_argument("--weight-decay", type=float, default=None, metavar="LAMBDA",
                   help=KNOBS["weight_decay"] + " (default 0.01)")
    k.add_argument("--batch-size", type=int, default=None, metavar="B",
                   help=KNOBS["batch_size"] + " (adam: default 1; inc-adam is 1; det-adam, adam-proxy full batch)")
    k.add_argument("--order", choices=ORDERS, default=None, help=KNOBS["order"] + " (default cyclic)")
    k.add_argument("--lr-matrix", "--eta-m", type=float, default=None, help=KNOBS["lr_matrix"] + " (default 0.1)")
    k.add_argument("--lr-vector", "--eta-a", type=float, default=None, help=KNOBS["lr_vector"] + " (default 0.1)")
    t.add_argument("--loss", choices=("logistic", "exponential"), default=None, help="loss (default logistic)")
    t.add_argument("--seed", type=nonneg_int("--seed"), default=None,
                   help="seed of the sample order, and of θ0 and generated data with --model (default 0)")
    t.add_argument("--engine", choices=("compiled", "reference", "mpmath"), default=None,
                   help="compiled (numba, log frame; the default where the optimizer has a kernel, else reference), "
                        "reference (numpy, step by step) or mpmath (linear model only: high precision)")
    t.add_argument("--checkpoints", type=int, default=None, metavar="K",
                   help="log-spaced steps at which θ is recorded (default 30; --model: 20)")
    t.add_argument("--checkpoint", default=None, metavar="FILE", help="save the run state here (atomic)")
    t.add_argument("--checkpoint-every", type=float, default=5.0, metavar="SEC",
                   help="seconds between saves of --checkpoint (default 5)")
    t.add_argument("--resume", action="store_true", help="continue from --checkpoint FILE")
    t.add_argument("--no-compare", dest="compare", action="store_false",
                   help="skip the comparison with ŵ2, the ℓ∞ face and p* (no convex solves)")
    n = t.add_argument_group("block models (--model)")
    n.add_argument("--width", type=int, default=16, help="hidden width (two-layer, deep, deep-linear)")
    n.add_argument("--q", type=float, default=2.0,
                   help="ReLU power of the two-layer and deep nets (q > 1 smooth; q = 1 ReLU, two-layer only)")
    n.add_argument("--depth", type=int, default=2,
                   help="trained layers K of deep-linear (K matrices) and deep (K − 1 matrices and the output vector)")
    n.add_argument("--n", type=int, default=None, help="sample count of generated data (digits: class-balanced)")
    n.add_argument("--d", type=int, default=6, help="input dimension of generated data")
    n.add_argument("--init-scale", type=float, default=0.5, help="scale of the random θ0 (models of degree > 1)")
    n.add_argument("--standardize", action="store_true",
                   help="centre every feature of the data file at its mean and divide it by its standard deviation "
                        "before training (the nets have no bias: on features all >= 0, e.g. wine or iris, their units "
                        "die; docs/own-data.md)")
    n.add_argument("--kkt-tau", type=float, default=0.01, help="active-set tolerance of the face KKT residual")
    add_intercept_option(t)
    t.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    t.add_argument("--quiet", "-q", action="store_true", help="no progress (bar or log lines), no 'loaded' line")
    t.set_defaults(func=cmd_train)


class _Raw(argparse.RawDescriptionHelpFormatter):
    """Keeps the optimizer list's line breaks in --help."""


class _BoolOpt(argparse.BooleanOptionalAction):
    """--bias-correction / --no-bias-correction (None when neither is given: the table's default)."""


def _horizon(args, n: int, batch_size: int) -> int:
    if args.steps is not None and args.epochs is not None:
        raise IbverifyError("give --epochs or --steps, not both")
    if args.epochs is not None and args.epochs < 1:
        raise IbverifyError(f"--epochs must be >= 1, got {args.epochs}")
    if args.steps is not None and args.steps < 1:
        raise IbverifyError(f"--steps must be >= 1, got {args.steps}")
    epochs = args.epochs if args.epochs is not None else 1000
    steps = args.steps if args.steps is not None else epochs * max(1, -(-n // batch_size))
    if steps > 2**53:
        raise IbverifyError(f"horizon of {steps} steps is too long (at most 2^53)")
    if args.checkpoints is not None and not 2 <= args.checkpoints <= 100_000:
        raise IbverifyError(f"--checkpoints must be in 2..100000, got {args.checkpoints}")
    return int(steps)


def direction_change(ws, cps) -> dict:
    """Angle (radians) between the directions at the last two checkpoints: 2·asin(‖â − b̂‖/2),
    accurate for small angles; nonzero means the run has not reached its limit direction."""
    import numpy as np  # start-up time: the parser and --help never import numpy
    if len(ws) < 2:
        return {"from_step": None, "to_step": int(cps[-1]), "angle_rad": None, "still_moving": True}
    a, b = ws[-2], ws[-1]
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    angle = float(2 * np.arcsin(min(1.0, np.linalg.norm(a / na - b / nb) / 2))) if na > 0 and nb > 0 else None
    return {"from_step": int(cps[-2]), "to_step": int(cps[-1]), "angle_rad": angle,
            "still_moving": angle is None or angle > STILL_MOVING_RAD}


LIMIT_NAMES = {"l2": "ŵ2 (ℓ2 margin gap)", "linf": "the ℓ∞ face (ℓ∞ margin gap)", "p_star": "p* (1 − cos)"}
CONVERGED_GAP = 1e-3  # a gap at or below this counts as reached; the trend fits say when it would be


def _trend(cps, gaps) -> dict:
    """The gap's power law over the last decade of checkpoints and where it would reach CONVERGED_GAP."""
    import numpy as np  # start-up time: the parser and --help never import numpy
    from ..checks import rules  # start-up time: numpy
    fit = rules.rate_fit(cps, np.maximum(np.asarray(gaps, float), 1e-300), CONVERGED_GAP)
    return {"slope": fit.slope, "crossing_step": fit.crossing, "reached": fit.reached,
            "text": fit.describe(CONVERGED_GAP)}


def compare_to_theory(Z, ws, cps, spec, n: int, d: int) -> dict:
    """Where the run stands, at its last checkpoint and as a trend over the last decade: cosine and ℓ2 margin
    gap to ŵ2, ℓ∞ margin gap to the ℓ∞ face (by margin: ℓ∞ solutions may be non-unique), 1 − cosine to the
    predicted p* (per-sample Adam family, when n·d ≤ PSTAR_MAX_ENTRIES); the oracles only for
    n·d ≤ ORACLE_MAX_ENTRIES. Gaps are (γ − γ(w))/γ. Unavailable parts say why."""
    import numpy as np  # start-up time: the parser and --help never import numpy
    from ..oracles import max_margin, normalized_margin  # start-up time: --help never loads the oracles

    w = ws[-1]
    u = w / np.linalg.norm(w)
    out: dict = {}
    try:
        if n * d > ORACLE_MAX_ENTRIES:
            raise IbverifyError(f"not computed for n·d = {n * d} > {ORACLE_MAX_ENTRIES} (use ibverify margin)")
        l2, li = max_margin(Z, "l2"), max_margin(Z, "linf")
        g2 = [(l2.margin - normalized_margin(Z, v, "l2")) / l2.margin for v in ws]
        gi = [(li.margin - normalized_margin(Z, v, "linf")) / li.margin for v in ws]
        out["l2"] = {"gamma": l2.margin, "cos": float(u @ l2.direction), "margin_gap": g2[-1],
                     "trend": _trend(cps, g2)}
        out["linf"] = {"gamma": li.margin, "margin_gap": gi[-1], "trend": _trend(cps, gi)}
    except IbverifyError as e:
        out["oracles_unavailable"] = str(e)
    b = spec.batch_size
    if spec.name in ("inc-adam", "adam-proxy") or (spec.name == "adam" and b < n):
        if n * d > PSTAR_MAX_ENTRIES:
            out["p_star_unavailable"] = f"not computed for n·d = {n * d} > {PSTAR_MAX_ENTRIES} (use ibverify predict)"
        else:
            from ..theory import predict  # start-up time: cvxpy, scipy

            try:
                pr = predict(Z, b=1 if spec.name == "adam-proxy" else b)
                ps = np.asarray(pr["direction"])
                gp = [1 - float(v @ ps) / max(float(np.linalg.norm(v)), 1e-300) for v in ws]
                out["p_star"] = {"cos": float(u @ ps), "batch_size": pr["batch_size"], "trend": _trend(cps, gp)}
            except IbverifyError as e:
                out["p_star_unavailable"] = str(e)
    return out


def separation(Z, ws, cps) -> dict:
    """Whether the data are separated at the horizon (min_i z_i·w > 0), and since which checkpoint."""
    import numpy as np  # start-up time: the parser and --help never import numpy
    ok = [bool(np.min(Z @ v) > 0) for v in ws]
    since = next((int(cps[i]) for i in range(len(ok)) if all(ok[i:])), None)
    return {"now": ok[-1], "since_step": since}


def _train_summary(name, r, D, out) -> list[str]:
    m, cmp, mv = out["margins"], out["comparison"], out["direction_change"]
    lines = [f"{name}: {r.horizon} steps in {r.seconds:.2f} s on {D.n} × {D.d} data "
             f"({kernel_note(out['compile_seconds'], out['kernels_compiled'], r.engine)})",
             f"  final min margin min_i z_i·w = {out['min_margin']:.6g}; normalized margins "
             + ", ".join(f"{k} {v:.6g}" for k, v in m.items())]
    if "l2" in cmp:
        c = cmp["l2"]
        lines.append(f"  vs ℓ2 max margin ŵ2 (γ2 = {c['gamma']:.6g}): cos {c['cos']:.6f}, "
                     f"margin gap {c['margin_gap']:.3g} ({c['trend']['text']})")
        c = cmp["linf"]
        lines.append(f"  vs ℓ∞ face (γ∞ = {c['gamma']:.6g}): margin gap {c['margin_gap']:.3g} ({c['trend']['text']}; "
                     f"by margin: ℓ∞ solutions may be non-unique)")
    if "p_star" in cmp:
        lines.append(f"  vs predicted p* (ibverify predict, b = {cmp['p_star']['batch_size']}): "
                     f"cos {cmp['p_star']['cos']:.6f} (1 − cos {cmp['p_star']['trend']['text']})")
    for k in ("oracles_unavailable", "p_star_unavailable"):
        if k in cmp:
            lines.append(f"  ({k.replace('_', ' ')}: {cmp[k]})")
    if mv["angle_rad"] is not None:
        lines.append(f"  direction change over the last checkpoint interval (steps {mv['from_step']} → "
                     f"{mv['to_step']}): {mv['angle_rad']:.3g} rad")
    return lines


def cmd_train(args) -> int:
    if args.model is not None:
        return run_network(args)
    if getattr(args, "standardize", False):
        raise IbverifyError("--standardize applies to block models (--model ...); the linear model has no bias, so "
                            "centring its data changes what separates them (use --intercept)")
    out, r, D, notes = train_linear(args)
    if args.json:  # stdout stays pure JSON; the notes go to stderr
        dump(out)
        for note in notes:
            say(note)
    else:
        print("\n".join(_train_summary(r.spec.row.name, r, D, out) + notes))
    return 0


def train_linear(args) -> tuple[dict, object, object, list[str]]:
    """`train` without --model: (the --json output, the engine's Run, the dataset, the notes and warnings).
    `ibverify train` and the Python API (`ibverify.train`) both come here."""
    import numpy as np  # start-up time: the parser and --help never import numpy
    from ..oracles import normalized_margin  # start-up time: --help never loads the oracles
    from ..progress import Progress  # start-up time: tqdm

    check_optimizer(args.optimizer)   # an unknown name: one line before the file is read (and said loaded)
    D = load_data(args.data, quiet=args.quiet or args.json, intercept=args.intercept)   # a bad file: one line, fast
    spec = spec_from_args(args).resolved(D.n)
    steps = _horizon(args, D.n, spec.batch_size)
    from ..recipes import RunStore  # numba, cvxpy: imported once the input is known to be good
    from ..recipes.cli import user_file, vector_run

    # the run's data: the user's file, known by its sha256 (the store loads it as load_data did)
    recipe = vector_run(user_file(args.data, intercept=args.intercept), spec, steps, args.checkpoints or 30,
                        args.engine)
    store = RunStore()   # this command's runs

    # the kernels compile (or load from numba's cache) at their first call: timed apart from the run (in a store
    # of its own: a one-step run is no part of this command's)
    compile_s, compiled = first_call(lambda: RunStore().run(recipe.replace(steps=1, checkpoints=2)))
    bar = Progress(f"train {spec.row.name} · {Path(args.data).name} (linear model)",
                   enabled=None if not args.quiet else False)
    try:
        r = store.run(recipe, progress=bar.steps, save_to=args.checkpoint, save_every=args.checkpoint_every,
                      resume=args.resume)
    finally:
        bar.close()
    nw = np.linalg.norm(r.w)
    out = {
        "optimizer": spec.to_json(), "engine": r.engine, "steps": r.horizon,
        "data": data_json(args.data, D, args.intercept),
        "w": r.w, "direction": r.w / nw if nw > 0 else r.w,
        "margins": {k: normalized_margin(D.Z, r.w, k) for k in ("l2", "linf", "l1")},
        "min_margin": float(np.min(D.Z @ r.w)),
        "direction_change": direction_change(r.ws, r.checkpoints),
        "comparison": compare_to_theory(D.Z, r.ws, r.checkpoints, spec, D.n, D.d) if (args.compare and nw > 0) else {},
        "separated": separation(D.Z, r.ws, r.checkpoints),
        "diagnostics": r.diagnostics, "seconds": round(r.seconds, 4), "compile_seconds": round(compile_s, 4),
        "kernels_compiled": compiled,
    }
    notes = []
    if r.diagnostics.get("frozen"):
        notes.append(f"warning: the run is frozen: its last {r.diagnostics['stalled_streak']} steps left w unchanged "
                     f"although the gradient was nonzero (float64 resolution reached)")
    if not out["separated"]["now"]:
        notes.append(f"warning: the data are not separated yet (min margin {out['min_margin']:.3g} ≤ 0): no implicit "
                     f"bias to speak of; run longer or with a larger --lr")
    gaps = {k: c["trend"] for k, c in out["comparison"].items() if isinstance(c, dict) and "trend" in c}
    if gaps and not any(t["reached"] for t in gaps.values()):
        notes.append("note: not converged to any candidate limit (gap ≤ {:g}): ".format(CONVERGED_GAP)
                     + "; ".join(f"{LIMIT_NAMES[k]}: {t['text']}" for k, t in gaps.items()))
    mv = out["direction_change"]
    if mv["still_moving"] and not r.diagnostics.get("frozen"):
        ang = "undefined (w = 0)" if mv["angle_rad"] is None else f"{mv['angle_rad']:.2g} rad"
        notes.append(f"note: the direction is still moving ({ang} between steps {mv['from_step']} and "
                     f"{mv['to_step']}, > {STILL_MOVING_RAD:g}): the run has not reached its limit; a longer "
                     f"horizon gets closer")
    return out, r, D, notes
