"""`ibverify train --model ...`: a block model trained full batch (`train(args) -> dict`, `run_network`).

The options are `train`'s (cli/train.py): the same knobs as the linear model, the table's defaults.
"""

from __future__ import annotations

import json
import sys
import warnings

from ..errors import IbverifyError
from .output import check_optimizer, first_call, kernel_note, spec_from_args
from ..jsonio import plain

MODELS = ("linear", "two-layer", "deep", "deep-linear", "matrix-linear")
GENERATED = ("digits", "teacher", "linear")


def _data(args):
    """(the data recipe of --data, the --standardize transform or None): a generated dataset
    (recipes.cli.generated_data), input matrices of an .npz (matrix-linear; arrays known by their bytes), a user's file
    (recipes.cli.user_file, known by its sha256; a network model's data need only be separable by a network) or, with
    --standardize, the user's file standardized (`standardized`; arrays known by their bytes)."""
    from ..data.files import NETWORK_MODELS, load_matrices  # start-up time: the parser and --help never load data
    from ..recipes import DataRecipe
    from ..recipes.cli import generated_data, user_file

    kind = args.data
    if getattr(args, "standardize", False):
        return _standardized_file(args)
    if kind in GENERATED:
        return generated_data(kind, args.n, args.d, args.seed or 0), None
    if str(kind).endswith(".npz") and args.model == "matrix-linear":  # input matrices: X of shape (n, p, r)
        return DataRecipe.of_dataset(load_matrices(kind)), None   # one line for a damaged archive or inseparable data
    return user_file(kind, intercept=args.intercept, network=args.model in NETWORK_MODELS), None


def standardized(D):
    """(D with every feature centred at its mean and divided by its standard deviation, the means, the scales): the
    `--standardize` of `train --model`. A constant feature is centred only (scale 1): it becomes 0, an inert
    coordinate. Why: the nets here have no bias (f(c·x) = c^L f(x)), so on features that are all ≥ 0 (wine, iris,
    pixel counts) w_j·x has one sign on nearly every sample, and a step that makes it ≤ 0 on all of them kills unit
    j for good (σ = σ' = 0 there); centred features put every unit's hyperplane through the data, and unit scale
    keeps a feature in thousands (wine's proline) from blowing up the first steps."""
    import numpy as np  # start-up time: the parser and --help never import numpy
    from ..data.dataset import make

    X = D.X.reshape(D.n, -1)
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return make((X - mean) / scale, D.y, f"{D.name} standardized"), mean, scale


def _standardized_file(args):
    """--standardize: the user's file read (files.read_dataset), standardized, then --intercept's column of ones
    appended, refused as the unstandardized file would be (its model must be able to separate it)."""
    from ..data.files import NETWORK_MODELS, linear_refusal, network_refusal, read_dataset, with_intercept
    from ..recipes import DataRecipe

    if args.data in GENERATED:
        raise IbverifyError(f"--standardize applies to a data file, not to generated data ({args.data})")
    if args.model == "matrix-linear":
        raise IbverifyError("--standardize applies to vector inputs, not to matrix-linear's input matrices")
    D, mean, scale = standardized(read_dataset(args.data))
    if args.intercept:   # after standardizing: the column of ones stays ones
        D = with_intercept(D)
    why = network_refusal(D) if args.model in NETWORK_MODELS else linear_refusal(D, args.intercept)
    if why is not None:
        raise IbverifyError(why)
    return DataRecipe.of_dataset(D), {"mean": mean.tolist(), "scale": scale.tolist()}


def _problem(args, store):
    """(data recipe, model recipe, data, model, spec, --standardize transform or None): the block model and
    optimizer spec of the parsed options, the data and model built by `store`. The optimizer is checked first: an
    unknown name is refused before any file is read."""
    from ..data.files import require_run_scale, x_degree  # start-up time, as in _data
    from ..recipes.cli import train_model
    from .output import csv_lines_named

    check_optimizer(args.optimizer)
    with csv_lines_named(args.data):   # a ragged CSV: the error names its line
        drec, prep = _data(args)
        data = store.data(drec)
    spec = spec_from_args(args)
    if args.data not in GENERATED:
        require_run_scale(data, 2 * x_degree(args.model, args.q, args.depth), "the squared gradients")
    kind = args.model
    if kind == "matrix-linear":
        if data.X.ndim != 3:
            raise IbverifyError("matrix-linear needs input matrices (an .npz with X of shape (n, p, r))")
    elif data.X.ndim != 2:
        raise IbverifyError(f"{kind} needs vector inputs")
    mrec = train_model(kind, args.width, args.q, args.depth)
    model = mrec.build(data)
    return drec, mrec, data, model, spec.for_block(model.L), prep


def _build(args, store=None):
    """(data, model, spec): the block model and optimizer spec of the parsed options."""
    from ..recipes import RunStore

    return _problem(args, store or RunStore())[2:5]


def _steps(args) -> int:
    steps, epochs = getattr(args, "steps", None), getattr(args, "epochs", None)
    if steps is not None and epochs is not None:
        raise IbverifyError("give --epochs or --steps, not both")
    n = steps if steps is not None else epochs          # full batch: one epoch is one step
    if n is None:
        return 10000
    if n < 1:
        raise IbverifyError(f"--steps/--epochs must be >= 1 (got {n})")
    return int(n)


def _engine(args) -> str | None:
    if args.engine == "mpmath":
        raise IbverifyError("--model runs have the compiled and reference engines (mpmath: the linear model only)")
    return args.engine


def train(args) -> dict:
    """Run the options of `args` on their block model; returns the JSON-ready result (progress on stderr:
    ibverify.progress). θ0 is drawn with --seed (zero for a degree-1 model)."""
    return train_run(args)[0]


def train_run(args) -> tuple[dict, object]:
    """`train` with the engine's Run: (the JSON-ready result, the Run). `ibverify train --model` and the Python API
    (`ibverify.train`) both come here."""
    import numpy as np  # start-up time: the parser and --help never import numpy
    from ..blocks import fro  # start-up time: numpy
    from ..geometry import analysis
    from ..optim.logframe import ScheduleWarning
    from ..oracles import kkt
    from ..progress import Progress  # start-up time: tqdm
    from ..recipes import RunStore, log_checkpoints  # start-up time: numba and cvxpy load only for a network run
    from ..recipes.cli import block_run

    store = RunStore()   # this command's runs
    drec, mrec, data, model, spec, prep = _problem(args, store)
    steps = _steps(args)
    recipe = block_run(drec, mrec, spec, steps, log_checkpoints(steps, args.checkpoints or 20),
                       (args.seed or 0) if model.L > 1 else None, args.init_scale, _engine(args))
    with warnings.catch_warnings():  # the kernels compile (or load from the cache) at their first call: timed apart
        warnings.simplefilter("ignore", ScheduleWarning)   # (from θ0 = 0, in a store of its own)
        compile_s, compiled = first_call(lambda: RunStore().run(recipe.replace(steps=1, checkpoints=(1,),
                                                                               init_seed=None)))
    bar = Progress(f"train {spec.name} · {data.name} ({model.name})", enabled=False if args.quiet else None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ScheduleWarning)
        try:
            run_ = store.run(recipe, progress=bar.steps, save_to=args.checkpoint, save_every=args.checkpoint_every,
                             resume=bool(args.resume))
        finally:
            bar.close()
    opt = run_.optimizer
    c = getattr(opt.geometry, "c", 1.0)
    th = run_.theta
    out = {
        "model": model.describe(), "data": data.name, "n": data.n, "d": int(np.prod(data.X.shape[1:])),
        "optimizer": opt.name, "hyper": opt.hyper, "spec": spec.to_json(),
        # adagrad's row, a user's optimizer file: no own geometry ("adaptive"); run diagnostics and KKT residual in ℓ2
        "geometry": "adaptive" if spec.row.geometry == "adaptive" else opt.geometry.name,
        "steps": steps, "engine": run_.engine, "seconds": run_.seconds, "compile_seconds": compile_s,
        "kernels_compiled": compiled,
        "diverged": run_.diverged,
        "warnings": [str(w.message) for w in caught if issubclass(w.category, ScheduleWarning)],
        "underflow": run_.underflow, "q_min": run_.q_min[-1], "log_loss": run_.log_loss[-1],
        "margins": analysis.margins(model, th, data.X, data.y, c) if run_.q_min[-1] > 0 else None,
        "signatures": analysis.signatures(model, th, c),
        "theta": {k: v.tolist() for k, v in th.items()},
        "checkpoints": [{"step": t, "q_min": q, "log_loss": ll, "alignment": a, "tracking": trk, "adam_dev": ad,
                         "norm_l2": fro(thk)}
                        for t, q, ll, a, trk, ad, thk in zip(run_.checkpoints, run_.q_min, run_.log_loss, run_.align,
                                                             run_.track, run_.adam_dev, run_.thetas, strict=False)],
        "kkt": None,
        "standardized": prep,
        "units_alive": None if run_.diverged else units_alive(model, th, data.X),
    }
    out["dead_units"] = dead_units(out["units_alive"], data.X, prep is not None)
    if run_.q_min[-1] > 0:   # the trend first, in step order: each solve starts from the last one's active set, and
        trend = residual_trend(opt.geometry, model, run_, data)   # the horizon's Fenchel residual is then remembered
        k = kkt.kkt_residual(opt.geometry, model, th, data.X, data.y, tau=args.kkt_tau)
        out["kkt"] = {"geometry": opt.geometry.name, **k.to_json()}
        out["kkt_trend"] = trend
    return plain(out), run_


def units_alive(model, theta, X) -> list[int] | None:
    """How many units of each hidden layer of a ReLU^q net are alive on the data: unit j of a layer is alive when its
    pre-activation h_j is > 0 on some sample (else σ(h_j) = σ'(h_j) = 0 on every sample: it gives nothing and gets no
    gradient, for good). None for the models without hidden units (linear, matrix-linear, deep-linear)."""
    import numpy as np  # start-up time: the parser and --help never import numpy
    from ..models import DeepReLU, TwoLayer

    if isinstance(model, TwoLayer):
        mats = [theta["W"]]
    elif isinstance(model, DeepReLU):
        mats = [theta[f"W{k}"] for k in range(1, model.K)]
    else:
        return None
    alive, z = [], np.asarray(X, float)
    for W in mats:
        h = z @ np.asarray(W).T
        alive.append(int(np.sum(np.any(h > 0, axis=0))))
        z = np.maximum(h, 0.0) ** model.q
    return alive


def dead_units(alive: list[int] | None, X, standardized: bool) -> str | None:
    """One line when a hidden layer has no unit alive (`units_alive`): f = 0 on every sample and its gradient 0, so the
    run can never move again; the line names the cause (features all ≥ 0, or steps too large for standardized
    data) and the option that helps. None while every layer has a live unit."""
    import numpy as np  # start-up time: the parser and --help never import numpy

    if not alive or min(alive) > 0:
        return None
    layer = "every hidden unit" if len(alive) == 1 else f"every unit of hidden layer {alive.index(0) + 1}"
    if standardized:
        cause = "the steps were too large for these (standardized) data: rerun with a smaller --lr"
    elif np.all(np.asarray(X) >= 0):
        cause = ("every feature of these data is ≥ 0 and the net has no bias, so w_j·x has one sign on nearly every "
                 "sample and a step that makes it ≤ 0 on all of them kills the unit: rerun with --standardize "
                 "(centre and scale each feature)")
    else:
        cause = "rerun with --standardize (centre and scale each feature) or a smaller --lr"
    return (f"{layer} is dead (σ(w_j·x_i) = 0 on every sample: f = 0 and its gradient 0, so no step can move this "
            f"run and a longer one cannot help): {cause}")


def mostly_dead(out: dict) -> str | None:
    """What to do instead of running longer when more than half the units of a hidden layer are dead (`units_alive`
    against the layer's width, from the model's blocks), or None: a dead unit never moves again, so a longer run
    fits the data with the few left."""
    alive = out.get("units_alive") or []
    widths = [shape[0] for shape in out["model"]["blocks"].values() if len(shape) == 2]
    for k, (a, w) in enumerate(zip(alive, widths, strict=False)):
        if 2 * a < w:
            layer = "" if len(alive) == 1 else f" of hidden layer {k + 1}"
            fix = ("rerun with a smaller --lr" if out.get("standardized") else
                   "rerun with --standardize (centre and scale each feature: the net has no bias) or a smaller --lr")
            return (f"{a} of {w} units{layer} alive (the others dead: w_j·x ≤ 0 on every sample, no gradient, for "
                    f"good), so a longer run is not the way: {fix}")
    return None


NET_CONVERGED = 0.05  # the network claims' rate bound: a Fenchel KKT residual at or below it counts as reached


def residual_trend(geometry, model, run_, data) -> dict | None:
    """The own-geometry Fenchel KKT residual at the separated checkpoints of the last decade, its power-law fit
    (rules.rate_fit, as the network claims) and the step at which it would reach NET_CONVERGED; None with fewer
    than 3 such checkpoints."""
    from ..checks import rules
    from ..oracles import kkt

    steps = [int(t) for t in run_.checkpoints]
    idx = [i for i, t in enumerate(steps) if t >= steps[-1] / 10 and run_.q_min[i] > 0]
    if len(idx) < 3:
        return None
    res = [kkt.fenchel_residual(geometry, model, run_.thetas[i], data.X, data.y) for i in idx]
    fit = rules.rate_fit([steps[i] for i in idx], res, NET_CONVERGED)
    return {"steps": [steps[i] for i in idx], "residual": res, "slope": fit.slope, "crossing_step": fit.crossing,
            "reached": fit.reached, "text": fit.describe(NET_CONVERGED)}


def _g(x) -> str:
    return "n/a" if x is None else f"{x:.6g}"


def summary(out: dict) -> str:
    """The plain-text report of a network run: setup, final margins in every geometry, own KKT residual."""
    m, h = out["model"], out["hyper"]
    L = m["L"]
    blocks = ", ".join(f"{k} {'×'.join(map(str, s))}" for k, s in m["blocks"].items())
    rates = (f"lr_matrix = {h['lr_matrix']:g}, lr_vector = {h['lr_vector']:g}" if "lr_matrix" in h
             else f"lr = {h['lr']:g}")
    lines = [
        f"{out['optimizer']} on {m['model']} (L = {L:g}; {blocks}), data {out['data']} (n = {out['n']}, "
        f"d = {out['d']}); {rates}, η_t ∝ t^(−{h['lr_decay']:g}) (theorem range {1 - 1 / L:.4g} < lr_decay ≤ 1)"
        + "".join(f", {k} = {h[k]:g}" for k in ("beta1", "beta2", "eps") if k in h)
        + (f", bias correction {'on' if h['bias_correction'] else 'off'}" if "bias_correction" in h else ""),
        f"{out['steps']} steps in {out['seconds']:.2f} s ({out['engine']} engine; "
        f"{kernel_note(out['compile_seconds'], out['kernels_compiled'], out['engine'])})"
        + ("; DIVERGED" if out["diverged"] else ""),
        f"min margin q_min = {_g(out['q_min'])}, log loss = {_g(out['log_loss'])}",
    ]
    if out.get("standardized"):
        lines.append("data standardized (--standardize): every feature x_k ↦ (x_k − mean_k)/sd_k; θ and the margins "
                     "are in those units")
    if out.get("dead_units"):
        lines.append(f"warning: data not separated yet, and never will be in this run: {out['dead_units']}")
    elif out["margins"]:
        own = out["geometry"]
        lines.append("normalized margins min_i q_i/‖θ‖^L: " + ", ".join(
            f"{k} {_g(v)}{' (own)' if k == own else ''}" for k, v in out["margins"].items()))
    else:
        lines.append("data not separated yet (q_min ≤ 0): no margins, no KKT residual; "
                     + (mostly_dead(out) or "run longer"))
    if out["kkt"]:
        k = out["kkt"]
        where = (f"its own geometry ({k['geometry']})" if out["geometry"] != "adaptive"
                 else f"{k['geometry']} (it has no own geometry: adaptive)")
        lines.append(f"KKT residual in {where}: {_g(k['fenchel'])} (tolerance-free), "
                     f"face residual {_g(k['residual'])} on {k['support']} support points")
        tr = out.get("kkt_trend")
        if tr is None:
            lines.append("  (no trend: fewer than 3 separated checkpoints in the last decade)")
        else:
            lines.append(f"  over the last decade (steps {tr['steps'][0]} → {tr['steps'][-1]}): {tr['text']}")
    lines.append("signatures: " + ", ".join(f"{k} {_g(v)}" for k, v in out["signatures"].items()))
    tr = out.get("kkt_trend")
    if tr is not None and not tr["reached"]:
        when = (f"it would reach it at ≈ {tr['crossing_step']:.2g} steps" if tr["crossing_step"]
                else "not falling at this horizon")
        lines.append(f"note: not converged: the {out['kkt']['geometry']} KKT residual {_g(tr['residual'][-1])} is "
                     f"above {NET_CONVERGED:g} ({when}); a longer horizon (--steps) gets closer")
    for w in out["warnings"]:
        lines.append(f"warning: {w}")
    if out["underflow"]:
        lines.append(f"underflow counters: {out['underflow']}")
    return "\n".join(lines)


def run_network(args, stream=None) -> int:
    """The whole `train --model ...` command: progress on stderr (a bar, or log lines), then a plain summary, or the
    result as JSON with --json. Returns the exit status."""
    stream = stream or sys.stdout
    out = train(args)
    if getattr(args, "json", False):
        json.dump(out, stream, indent=1)
        stream.write("\n")
    else:
        print(summary(out), file=stream)
    return 0
