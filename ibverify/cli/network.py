"""`ibverify train --model ...` for paper-2 models: `add_arguments(parser)` and `train(args) -> dict`.

The lead's `train` parser already defines --data, --optimizer, --steps, --lr (η0), --lr-decay (p in
η_t = η0 t^(−p)), --beta1, --beta2, --eps, --bias-correction, --loss, --seed, --checkpoints, --json; this module
adds only the options it needs and reads the others when present.
"""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np

from .. import IbverifyError
from ..jsonio import plain

MODELS = ("linear", "two-layer", "deep", "deep-linear", "matrix-linear")


class _DefaultP(float):
    """The shared parser's --lr-decay default (0.5, the linear engine's): network runs replace it by 1 − 1/(2L)."""


def default_p(L: float) -> float:
    """The midpoint of the theorem's range 1 − 1/L < p ≤ 1 for η_t = η0 t^(−p): p = 1 − 1/(2L)."""
    return 1.0 - 1.0 / (2.0 * L)


def _add(parser, *names, **kw):
    if any(n in parser._option_string_actions for n in names):
        return
    parser.add_argument(*names, **kw)


def add_arguments(parser) -> None:
    _add(parser, "--model", choices=MODELS, default=None,
         help="paper-2 model (network run); data: digits | teacher | linear | .npz with X, y")
    _add(parser, "--width", type=int, default=16, help="hidden width (two-layer, deep, deep-linear)")
    _add(parser, "--q", type=float, default=2.0,
         help="ReLU power of the two-layer and deep nets (q > 1 smooth; q = 1 ReLU, two-layer only)")
    _add(parser, "--depth", type=int, default=2,
         help="trained layers K of deep-linear (K matrices) and deep (K − 1 matrices and the output vector)")
    _add(parser, "--n", type=int, default=None, help="sample count (digits: class-balanced subset)")
    _add(parser, "--d", type=int, default=6, help="input dimension of synthetic data")
    _add(parser, "--eta-m", type=float, default=None, help="Muon base rate η_M (muon-signum, muon-adam)")
    _add(parser, "--eta-a", type=float, default=None, help="Signum/Adam base rate η_A (muon-signum, muon-adam)")
    _add(parser, "--init-scale", type=float, default=0.5, help="scale of the random initialization (networks)")
    _add(parser, "--kkt-tau", type=float, default=0.01, help="active-set tolerance of the face KKT residual")
    act = parser._option_string_actions.get("--lr-decay")
    if act is not None and type(act.default) is float:
        act.default = _DefaultP(act.default)
        act.help = (f"{act.help or 'learning-rate decay exponent'}; network runs default to "
                    "p = 1 − 1/(2L), inside the theorems' 1 − 1/L < p ≤ 1")


def _data(args):
    from ..data import netdata as datasets  # start-up time: the parser and --help never load the models

    kind = getattr(args, "data", None) or "teacher"
    seed = getattr(args, "seed", 0) or 0
    if kind in ("digits", "teacher", "linear"):
        return datasets.make_data(kind, n=getattr(args, "n", None), d=getattr(args, "d", 6), seed=seed)
    if str(kind).endswith(".npz"):
        z = np.load(kind)
        X, y = datasets.validate(z["X"], z["y"])
        return datasets.NetData(X, y, str(kind))
    raise IbverifyError(f"--data {kind!r}: network runs take digits, teacher, linear or an .npz file")


def _build(args):
    """(data, model, θ0, optimizer, p, warnings) from the parsed options."""
    from .. import models  # start-up time, as in _data
    from ..optim import logframe as optim
    data = _data(args)
    kind = args.model or "two-layer"
    if kind == "matrix-linear":
        if data.X.ndim != 3:
            raise IbverifyError("matrix-linear needs input matrices (an .npz with X of shape (n, p, r))")
        model = models.MatrixLinear(*data.X.shape[1:])
    else:
        if data.X.ndim != 2:
            raise IbverifyError(f"{kind} needs vector inputs")
        model = models.make_model(kind, data.X.shape[1], width=args.width, q=args.q, depth=args.depth)
    seed = getattr(args, "seed", 0) or 0
    rng = np.random.default_rng(seed)
    theta0 = (model.init(rng, getattr(args, "init_scale", 0.5)) if model.L > 1
              else {k: np.zeros(s) for k, s in model.blocks.items()})
    p = getattr(args, "lr_decay", None)
    if p is None or isinstance(p, _DefaultP):
        p = default_p(model.L)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", optim.ScheduleWarning)
        opt = optim.make_optimizer(args.optimizer, eta0=getattr(args, "lr", 0.1), p=p,
                                   beta=getattr(args, "beta1", 0.9), beta2=getattr(args, "beta2", 0.99),
                                   bias_correction=bool(getattr(args, "bias_correction", True)),
                                   eps=getattr(args, "eps", 0.0) or 0.0, eta_m=getattr(args, "eta_m", None),
                                   eta_a=getattr(args, "eta_a", None), params=theta0, L=model.L)
    return data, model, theta0, opt, p, [str(w.message) for w in caught]


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
    e = getattr(args, "engine", None)
    if e == "mpmath":
        raise IbverifyError("network runs have the compiled and reference engines (not mpmath)")
    return e


def train(args) -> dict:
    """Run the network options of `args`; returns the JSON-ready result (progress bar on a terminal)."""
    from ..blocks import fro  # start-up time: numba and cvxpy load only for a network run
    from ..engine import train as tr
    from ..geometry import analysis
    from ..oracles import kkt
    from ..progress import Progress

    data, model, theta0, opt, p, caught = _build(args)
    steps = _steps(args)
    cps = tr.log_checkpoints(steps, getattr(args, "checkpoints", None) or 20)
    bar = Progress(f"{opt.name} ({model.name})", enabled=False if getattr(args, "quiet", False) else None)
    try:
        run = tr.run(model, data.X, data.y, opt, steps, theta0, loss=getattr(args, "loss", "logistic"),
                     checkpoints=cps, engine=_engine(args), progress=bar.steps,
                     save_to=getattr(args, "checkpoint", None), save_every=getattr(args, "checkpoint_every", 5.0),
                     resume=bool(getattr(args, "resume", False)))
    finally:
        bar.close()
    c = getattr(opt.geometry, "c", 1.0)
    th = run.theta
    out = {
        "model": model.describe(), "data": data.name, "n": data.n, "d": int(np.prod(data.X.shape[1:])),
        "optimizer": opt.name, "hyper": opt.hyper, "geometry": opt.geometry.name, "steps": steps,
        "engine": run.engine, "seconds": run.seconds, "diverged": run.diverged,
        "warnings": caught, "underflow": run.underflow,
        "q_min": run.q_min[-1], "log_loss": run.log_loss[-1],
        "margins": analysis.margins(model, th, data.X, data.y, c) if run.q_min[-1] > 0 else None,
        "signatures": analysis.signatures(model, th, c),
        "theta": {k: v.tolist() for k, v in th.items()},
        "checkpoints": [{"step": t, "q_min": q, "log_loss": ll, "alignment": a, "tracking": trk, "adam_dev": ad,
                         "norm_l2": fro(thk)}
                        for t, q, ll, a, trk, ad, thk in zip(run.steps, run.q_min, run.log_loss, run.align, run.track,
                                                             run.adam_dev, run.thetas, strict=False)],
        "kkt": None,
    }
    if run.q_min[-1] > 0:
        k = kkt.kkt_residual(opt.geometry, model, th, data.X, data.y, tau=getattr(args, "kkt_tau", 0.01))
        out["kkt"] = {"geometry": opt.geometry.name, **k.to_json()}
    return plain(out)


def _g(x) -> str:
    return "n/a" if x is None else f"{x:.6g}"


def summary(out: dict) -> str:
    """The plain-text report of a network run: setup, final margins in every geometry, own KKT residual."""
    m, h = out["model"], out["hyper"]
    L = m["L"]
    blocks = ", ".join(f"{k} {'×'.join(map(str, s))}" for k, s in m["blocks"].items())
    rates = (f"η_M = {h['eta_m']:g}, η_A = {h['eta_a']:g}" if "eta_m" in h else f"η0 = {h['eta0']:g}")
    lines = [
        f"{out['optimizer']} on {m['model']} (L = {L:g}; {blocks}), data {out['data']} (n = {out['n']}, "
        f"d = {out['d']}); {rates}, η_t ∝ t^(−{h['p']:g}) (theorem range {1 - 1 / L:.4g} < p ≤ 1), β = {h['beta']:g}",
        f"{out['steps']} steps in {out['seconds']:.2f} s ({out['engine']} engine)"
        + ("; DIVERGED" if out["diverged"] else ""),
        f"min margin q_min = {_g(out['q_min'])}, log loss = {_g(out['log_loss'])}",
    ]
    if out["margins"]:
        own = out["geometry"]
        lines.append("normalized margins min_i q_i/‖θ‖^L: " + ", ".join(
            f"{k} {_g(v)}{' (own)' if k == own else ''}" for k, v in out["margins"].items()))
    else:
        lines.append("data not separated yet (q_min ≤ 0): no margins, no KKT residual; run longer")
    if out["kkt"]:
        k = out["kkt"]
        lines.append(f"KKT residual in its own geometry ({k['geometry']}): {_g(k['fenchel'])} (tolerance-free), "
                     f"face residual {_g(k['residual'])} on {k['support']} support points")
    lines.append("signatures: " + ", ".join(f"{k} {_g(v)}" for k, v in out["signatures"].items()))
    for w in out["warnings"]:
        lines.append(f"warning: {w}")
    if out["underflow"]:
        lines.append(f"underflow counters: {out['underflow']}")
    return "\n".join(lines)


def add_network_arguments(parser) -> None:
    add_arguments(parser)


def is_network_run(args) -> bool:
    return getattr(args, "model", None) not in (None, "linear-vector")


def run_network(args, stream=None) -> int:
    """The whole `train --model ...` command: a progress bar on a terminal, then a plain summary, or the
    result as JSON with --json. Returns the exit status."""
    stream = stream or sys.stdout
    out = train(args)
    if getattr(args, "json", False):
        json.dump(out, stream, indent=1)
        stream.write("\n")
    else:
        print(summary(out), file=stream)
    return 0
