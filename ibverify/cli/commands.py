"""The `ibverify` command line.

Exit status: 0 success; 1 `verify` found an unexpected verdict or `compare` a regression; 2 bad
input of any kind (one line on stderr, never a traceback) and also an interrupt (Ctrl-C) in every
command (a `train --checkpoint` run saves first and says how to resume). Output cut short by its
reader (`ibverify claims | head -1`) ends quietly with status 0.
Start-up stays light: heavy modules (cvxpy, scipy, numba, sympy, sklearn, matplotlib, dask) are
imported inside the commands that use them, and the network-model options of `train` are added only
when `train` is parsed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

from .. import IbverifyError, __version__
from ..jsonio import plain

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 2  # one code for Ctrl-C in every command (train's checkpointed stop raises IbverifyError)
STILL_MOVING_RAD = 1e-3  # angle between the last two checkpoint directions above which `train` warns
PSTAR_MAX_ENTRIES = 50_000  # `train` computes the predicted p* when n·d is at most this (cheap)
ORACLE_MAX_ENTRIES = 2_000_000  # ... and the ℓ2/ℓ∞ max-margin oracles when n·d is at most this


class _Parser(argparse.ArgumentParser):
    """One-line errors; `defer(fn)` adds arguments only when this (sub)parser parses arguments that
    need them: fn(parser, args) with args None (add unconditionally) or the argument strings."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._deferred: list = []

    def defer(self, fn) -> None:
        self._deferred.append(fn)

    def run_deferred(self, args=None) -> None:
        self._deferred = [fn for fn in self._deferred if not fn(self, args)]

    def parse_known_args(self, args=None, namespace=None):
        self.run_deferred(list(sys.argv[1:] if args is None else args))
        return super().parse_known_args(args, namespace)

    def error(self, message):  # one line, no usage dump
        raise IbverifyError(f"{self.prog}: {message}")


def _dump(obj, path: str | None = None) -> None:
    text = json.dumps(plain(obj, keep_nonfinite=True), indent=2, ensure_ascii=False)
    if path in (None, "-"):
        print(text)
    else:
        Path(path).write_text(text + "\n")


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- claims
def cmd_claims(args) -> int:
    from ..claims import load_registry

    claims = load_registry(args.claims_dir)
    if args.markdown:
        print(markdown_table(claims))
        return 0
    if args.json:
        _dump([{"id": c.id, "paper": c.paper, "result": c.result, "status": c.status, "expect": c.expect,
                "tiers": list(c.tiers), "check": c.check, "statement": c.statement} for c in claims])
        return 0
    w = max(len(c.id) for c in claims)
    print(f"{'id':<{w}}  {'status':<13}  {'tiers':<16}  result")
    for c in claims:
        print(f"{c.id:<{w}}  {c.status:<13}  {','.join(c.tiers):<16}  {c.result}")
    return 0


def markdown_table(claims) -> str:
    """The README's claim table (tests/test_readme.py keeps README.md equal to this)."""
    rows = ["| id | status | result | tiers |", "|---|---|---|---|"]
    for c in claims:
        rows.append(f"| `{c.id}` | {c.status} | {c.result.replace('|', '/')} | {', '.join(c.tiers)} |")
    return "\n".join(rows)


# ---------------------------------------------------------------- train / margin / predict
def _load(path, quiet: bool = False):
    """Load and validate a dataset and say "loaded N × d from FILE" on stdout (not with --json, whose
    output carries n, d and the inert coordinates instead; stderr is kept for the one-line error)."""
    from ..data import load_dataset

    D = load_dataset(path)
    if not quiet:
        inert = D.inert
        note = (f"; {len(inert)} inert coordinate{'s' if len(inert) != 1 else ''} (zero in every sample) set "
                f"aside: {inert.tolist()}") if len(inert) else ""
        print(f"loaded {D.n} × {D.d} from {path}{note}", flush=True)
    return D


def _data_json(path, D) -> dict:
    return {"file": str(path), "n": D.n, "d": D.d, "inert_coordinates": D.inert.tolist()}


def _spec_from_args(args):
    from ..optim import OptimizerSpec

    return OptimizerSpec(args.optimizer, batch_size=args.batch_size, order=args.order, lr=args.lr,
                         lr_decay=args.lr_decay, beta1=args.beta1, beta2=args.beta2, eps=args.eps,
                         bias_correction=args.bias_correction, loss=args.loss, seed=args.seed)


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
    if not 2 <= args.checkpoints <= 100_000:
        raise IbverifyError(f"--checkpoints must be in 2..100000, got {args.checkpoints}")
    return int(steps)


def direction_change(ws, cps) -> dict:
    """Angle (radians) between the directions at the last two checkpoints: 2·asin(‖â − b̂‖/2),
    accurate for small angles; nonzero means the run has not reached its limit direction."""
    import numpy as np

    a, b = ws[-2], ws[-1]
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    angle = float(2 * np.arcsin(min(1.0, np.linalg.norm(a / na - b / nb) / 2))) if na > 0 and nb > 0 else None
    return {"from_step": int(cps[-2]), "to_step": int(cps[-1]), "angle_rad": angle,
            "still_moving": angle is None or angle > STILL_MOVING_RAD}


def compare_to_theory(Z, w, spec, n: int, d: int) -> dict:
    """Where the run's w stands: cosine and ℓ2 margin gap to ŵ2, ℓ∞ margin gap to the ℓ∞ face (by
    margin: ℓ∞ solutions may be non-unique), cosine to the predicted p* (per-sample Adam family, when
    n·d ≤ PSTAR_MAX_ENTRIES); the oracles only for n·d ≤ ORACLE_MAX_ENTRIES. Gaps are (γ − γ(w))/γ.
    Unavailable parts say why."""
    import numpy as np

    from ..oracles import max_margin, normalized_margin

    u = w / np.linalg.norm(w)
    out: dict = {}
    try:
        if n * d > ORACLE_MAX_ENTRIES:
            raise IbverifyError(f"not computed for n·d = {n * d} > {ORACLE_MAX_ENTRIES} (use ibverify margin)")
        l2, li = max_margin(Z, "l2"), max_margin(Z, "linf")
        out["l2"] = {"gamma": l2.margin, "cos": float(u @ l2.direction),
                     "margin_gap": (l2.margin - normalized_margin(Z, w, "l2")) / l2.margin}
        out["linf"] = {"gamma": li.margin, "margin_gap": (li.margin - normalized_margin(Z, w, "linf")) / li.margin}
    except IbverifyError as e:
        out["oracles_unavailable"] = str(e)
    b = spec.batch_size
    if spec.name in ("inc-adam", "adam-proxy") or (spec.name == "adam" and b < n):
        if n * d > PSTAR_MAX_ENTRIES:
            out["p_star_unavailable"] = f"not computed for n·d = {n * d} > {PSTAR_MAX_ENTRIES} (use ibverify predict)"
        else:
            from ..theory import predict

            try:
                pr = predict(Z, b=1 if spec.name == "adam-proxy" else b)
                out["p_star"] = {"cos": float(u @ np.asarray(pr["direction"])), "batch_size": pr["batch_size"]}
            except IbverifyError as e:
                out["p_star_unavailable"] = str(e)
    return out


def _train_summary(name, r, D, out) -> list[str]:
    m, cmp, mv = out["margins"], out["comparison"], out["direction_change"]
    lines = [f"{name}: {r.steps} steps in {r.seconds:.2f}s on {D.n} × {D.d} data",
             f"  final min margin min_i z_i·w = {out['min_margin']:.6g}; normalized margins "
             + ", ".join(f"{k} {v:.6g}" for k, v in m.items())]
    if "l2" in cmp:
        c = cmp["l2"]
        lines.append(f"  vs ℓ2 max margin ŵ2 (γ2 = {c['gamma']:.6g}): cos {c['cos']:.6f}, "
                     f"margin gap {c['margin_gap']:.3g}")
        c = cmp["linf"]
        lines.append(f"  vs ℓ∞ face (γ∞ = {c['gamma']:.6g}): margin gap {c['margin_gap']:.3g} (by margin: ℓ∞ "
                     f"solutions may be non-unique)")
    if "p_star" in cmp:
        lines.append(f"  vs predicted p* (ibverify predict, b = {cmp['p_star']['batch_size']}): "
                     f"cos {cmp['p_star']['cos']:.6f}")
    for k in ("oracles_unavailable", "p_star_unavailable"):
        if k in cmp:
            lines.append(f"  ({k.replace('_', ' ')}: {cmp[k]})")
    if mv["angle_rad"] is not None:
        lines.append(f"  direction change over the last checkpoint interval (steps {mv['from_step']} → "
                     f"{mv['to_step']}): {mv['angle_rad']:.3g} rad")
    return lines


def cmd_train(args) -> int:
    from .network import is_network_run, run_network

    if is_network_run(args):
        return run_network(args)
    import numpy as np

    from ..oracles import normalized_margin
    from ..progress import Progress

    D = _load(args.data, quiet=args.quiet or args.json)
    spec = _spec_from_args(args).resolved(D.n)
    steps = _horizon(args, D.n, spec.batch_size)
    from ..engine import run  # numba: imported once the input is known to be good
    bar = Progress(args.optimizer, enabled=None if not args.quiet else False)
    try:
        r = run(D.Z, spec, steps, checkpoints=args.checkpoints, engine=args.engine, progress=bar.steps,
                save_to=args.checkpoint, save_every=args.checkpoint_every, resume=args.resume)
    finally:
        bar.close()
    nw = np.linalg.norm(r.w)
    out = {
        "optimizer": spec.to_json(), "engine": args.engine, "steps": r.steps,
        "data": _data_json(args.data, D),
        "w": r.w, "direction": r.w / nw if nw > 0 else r.w,
        "margins": {k: normalized_margin(D.Z, r.w, k) for k in ("l2", "linf", "l1")},
        "min_margin": float(np.min(D.Z @ r.w)),
        "direction_change": direction_change(r.ws, r.checkpoints),
        "comparison": compare_to_theory(D.Z, r.w, spec, D.n, D.d) if (args.compare and nw > 0) else {},
        "diagnostics": r.diagnostics, "seconds": round(r.seconds, 4),
    }
    notes = []
    if r.diagnostics.get("frozen"):
        notes.append(f"warning: the run is frozen: its last {r.diagnostics['stalled_streak']} steps left w unchanged "
                     f"although the gradient was nonzero (float64 resolution reached)")
    mv = out["direction_change"]
    if mv["still_moving"] and not r.diagnostics.get("frozen"):
        ang = "undefined (w = 0)" if mv["angle_rad"] is None else f"{mv['angle_rad']:.2g} rad"
        notes.append(f"note: the direction is still moving ({ang} between steps {mv['from_step']} and "
                     f"{mv['to_step']}, > {STILL_MOVING_RAD:g}): the run has not reached its limit; a longer "
                     f"horizon gets closer")
    if args.json:  # stdout stays pure JSON; the notes go to stderr
        _dump(out)
        for note in notes:
            _say(note)
    else:
        print("\n".join(_train_summary(args.optimizer, r, D, out) + notes))
    return 0


def cmd_margin(args) -> int:
    from ..oracles import max_margin

    D = _load(args.data, quiet=args.json)
    r = max_margin(D.Z, args.norm)
    out = {"data": _data_json(args.data, D), "norm": r.norm, "direction": r.direction, "margin": r.margin,
           "duals": r.duals, "support": r.support, "inert_coordinates": r.inert, "certificate": r.certificate}
    if args.json:
        _dump(out)
    else:
        print(f"{args.norm} max margin γ = {r.margin:.10g}; support vectors {r.support.tolist()}")
        if len(r.inert):
            print(f"inert coordinates (zero in every sample; direction 0 there): {r.inert.tolist()}")
    return 0


def cmd_predict(args) -> int:
    try:
        from ..theory import predict
    except ImportError as e:
        raise IbverifyError(f"predict is not available: {e}") from None
    D = _load(args.data, quiet=args.json)
    out = {"data": _data_json(args.data, D), **predict(D.Z, b=args.batch_size)}
    if args.json:
        _dump(out)
    else:
        for k, v in out.items():
            if k == "data":
                continue
            if isinstance(v, list) and len(v) > 12:
                v = f"[{len(v)} values; --json for all]"
            print(f"{k}: {v}")
    return 0


# ---------------------------------------------------------------- report / compare
def cmd_report(args) -> int:
    from ..report import report_command

    path = report_command(args.results, args.out)
    print(f"report written: {path}")
    return 0


def cmd_compare(args) -> int:
    from ..report import compare_command

    return compare_command(args.baseline, args.results)


# ---------------------------------------------------------------- parser
def _optimizer_names() -> tuple[str, ...]:
    from ..optim.spec import NAMES

    return NAMES


def _add_train_parser(sub) -> None:
    names = _optimizer_names()
    t = sub.add_parser("train", help="run an optimizer on a dataset", description=(
        "Run an optimizer on a linear model (or a paper-2 network with --model, whose options "
        "are listed here too). Optimizers: "
        + ", ".join(names) + "."))
    t.add_argument("--data", required=True, metavar="FILE",
                   help=".npz (arrays X, y) or .csv (comma-separated, label ±1 in the last column, optional header)")
    t.add_argument("--optimizer", required=True, metavar="NAME", help="one of: " + ", ".join(names))
    t.add_argument("--batch-size", type=int, default=None, metavar="B",
                   help="mini-batch size (adam: default 1; inc-adam is 1; det-adam, adam-proxy full batch)")
    t.add_argument("--order", choices=("cyclic", "reshuffle", "replacement"), default="cyclic",
                   help="sample order of mini-batches (default cyclic)")
    g = t.add_mutually_exclusive_group()
    g.add_argument("--epochs", type=int, default=None,
                   help="horizon in epochs of ceil(n/B) steps (default 1000; must be >= 1)")
    g.add_argument("--steps", type=int, default=None, help="horizon in steps (must be >= 1)")
    t.add_argument("--lr", type=float, default=0.1, help="η0 in η_t = η0 (t+1)^(−a) (default 0.1)")
    t.add_argument("--lr-decay", type=float, default=0.5,
                   help="a in η_t = η0 (t+1)^(−a) for linear models; p in η0 t^(−p) with --model (networks)")
    t.add_argument("--beta1", type=float, default=0.9, help="Adam β1 (first-moment decay, default 0.9)")
    t.add_argument("--beta2", type=float, default=0.999, help="Adam β2 (second-moment decay, default 0.999)")
    t.add_argument("--eps", type=float, default=0.0, help="Adam ε (default 0, the papers' convention)")
    t.add_argument("--bias-correction", action="store_true", help="Adam bias correction (off by default)")
    t.add_argument("--loss", choices=("logistic", "exponential"), default="logistic", help="loss (default logistic)")
    t.add_argument("--seed", type=int, default=0, help="seed of the sample order (default 0)")
    t.add_argument("--engine", choices=("compiled", "reference", "mpmath"), default="compiled",
                   help="compiled (numba, log frame), reference (numpy, step by step) or mpmath (high precision)")
    t.add_argument("--checkpoints", type=int, default=30, metavar="K",
                   help="log-spaced steps at which w is recorded (default 30)")
    t.add_argument("--checkpoint", default=None, metavar="FILE", help="save the run state here (atomic)")
    t.add_argument("--checkpoint-every", type=float, default=5.0, metavar="SEC",
                   help="seconds between saves of --checkpoint (default 5)")
    t.add_argument("--resume", action="store_true", help="continue from --checkpoint FILE")
    t.add_argument("--no-compare", dest="compare", action="store_false",
                   help="skip the comparison with ŵ2, the ℓ∞ face and p* (no convex solves)")
    t.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    t.add_argument("--quiet", "-q", action="store_true", help="no progress bar, no 'loaded' line")

    def network_arguments(parser, args) -> bool:
        """Add the paper-2 network options (importing their module, which is heavy) only for `--help`
        or when an option the linear parser does not know is given (e.g. --model)."""
        known = parser._option_string_actions
        if args is not None and not any(a in ("-h", "--help") or (a.startswith("-") and a.split("=")[0] not in known)
                                        for a in args):
            return False
        from .network import add_network_arguments

        add_network_arguments(parser)
        return True

    t.defer(network_arguments)
    t.set_defaults(func=cmd_train)


def build_parser(full: bool = False) -> argparse.ArgumentParser:
    """The argument parser; `full=True` also adds the deferred (network) options right away."""
    p = _Parser(prog="ibverify", description=__doc__.split("\n\n")[0],
                epilog="optimizers (train --optimizer): " + ", ".join(_optimizer_names())
                + ". Exit status: 0 ok, 1 unexpected verdict/regression, 2 bad input or interrupted.")
    p.add_argument("--version", action="version", version=f"ibverify {__version__}")
    p.add_argument("--claims-dir", default=None, help="claim registry folder (default ./claims)")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser, metavar="COMMAND")

    c = sub.add_parser("claims", help="list the claim registry")
    c.add_argument("--json", action="store_true", help="the registry as JSON")
    c.add_argument("--markdown", action="store_true", help="the README claim table")
    c.set_defaults(func=cmd_claims)

    from .verify import add_verify_parser

    add_verify_parser(sub)
    _add_train_parser(sub)

    m = sub.add_parser("margin", help="certified max margin of a dataset")
    m.add_argument("--data", required=True, metavar="FILE", help=".npz (X, y) or .csv (label ±1 last column)")
    m.add_argument("--norm", choices=("l2", "linf", "l1"), default="l2", help="the geometry (default l2)")
    m.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    m.set_defaults(func=cmd_margin)

    pr = sub.add_parser("predict", help="predicted per-sample Adam direction (AdamProxy fixed point)")
    pr.add_argument("--data", required=True, metavar="FILE", help=".npz (X, y) or .csv (label ±1 last column)")
    pr.add_argument("--batch-size", type=int, default=1, metavar="B",
                    help="mini-batch size b < n of the Adam metric M_{N,b} (default 1: per-sample Adam)")
    pr.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    pr.set_defaults(func=cmd_predict)

    r = sub.add_parser("report", help="render the HTML report from a results.json")
    r.add_argument("results", help="results.json written by ibverify verify")
    r.add_argument("--out", default="reports", help="report folder (default reports/)")
    r.set_defaults(func=cmd_report)

    cp = sub.add_parser("compare", help="regression gate: compare results against a baseline")
    cp.add_argument("baseline", help="baseline results JSON (e.g. ci/baseline-fast.json)")
    cp.add_argument("results", help="results JSON of this run")
    cp.set_defaults(func=cmd_compare)
    if full:
        for action in sub.choices.values():
            if isinstance(action, _Parser):
                action.run_deferred()
    return p


def _one_line(text: str) -> str:
    return " ".join(str(text).split()) or "unknown error"


def _quiet_stdout() -> None:
    """After a broken pipe: send further output (and the interpreter's final flush) to /dev/null."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # overflow etc.: every result is checked finite
            warnings.simplefilter("ignore", UserWarning)     # solver chatter: statuses are checked instead
            args = build_parser().parse_args(argv)
            rc = args.func(args)
            sys.stdout.flush()  # a reader that went away shows up here, not in the interpreter's last flush
            return rc
    except IbverifyError as e:
        print(f"ibverify: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("ibverify: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except (OSError, ValueError, ArithmeticError, MemoryError) as e:
        print(_one_line(f"ibverify: error: {type(e).__name__}: {e}"), file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
