"""The `ibverify` command line. Bad input of any kind: one line on stderr, exit status 2."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from . import IbverifyError, __version__

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise IbverifyError(f"{self.prog}: {message}")


def _dump(obj, path: str | None = None) -> None:
    text = json.dumps(obj, indent=2, ensure_ascii=False, default=_jsonable)
    if path in (None, "-"):
        print(text)
    else:
        Path(path).write_text(text + "\n")


def _jsonable(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    raise TypeError(f"not JSON-serializable: {type(o).__name__}")


# ---------------------------------------------------------------- claims
def cmd_claims(args) -> int:
    from .claims import load_registry

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
def _spec_from_args(args):
    from .optim import OptimizerSpec

    return OptimizerSpec(args.optimizer, batch_size=args.batch_size, order=args.order, lr=args.lr,
                         lr_decay=args.lr_decay, beta1=args.beta1, beta2=args.beta2, eps=args.eps,
                         bias_correction=args.bias_correction, loss=args.loss, seed=args.seed)


def cmd_train(args) -> int:
    from .networks_bridge import is_network_run, train_network

    if is_network_run(args):
        _dump(train_network(args)) if args.json else print(json.dumps(train_network(args), default=_jsonable))
        return 0
    from .data import load_dataset
    from .engine import run
    from .oracles import normalized_margin
    from .progress import Progress

    D = load_dataset(args.data)
    spec = _spec_from_args(args).resolved(D.n)
    if args.steps is not None and args.epochs is not None:
        raise IbverifyError("give --epochs or --steps, not both")
    steps = args.steps if args.steps is not None else (args.epochs or 1000) * max(1, D.n // spec.batch_size)
    if steps < 1:
        raise IbverifyError("--steps/--epochs must be >= 1")
    bar = Progress(args.optimizer, enabled=None if not args.quiet else False)
    r = run(D.Z, spec, steps, checkpoints=args.checkpoints, engine=args.engine, progress=bar.steps,
            save_to=args.checkpoint, save_every=args.checkpoint_every, resume=args.resume)
    bar.close()
    nw = np.linalg.norm(r.w)
    out = {
        "optimizer": spec.to_json(), "engine": args.engine, "steps": r.steps,
        "w": r.w, "direction": r.w / nw if nw > 0 else r.w,
        "margins": {k: normalized_margin(D.Z, r.w, k) for k in ("l2", "linf", "l1")},
        "min_margin": float(np.min(D.Z @ r.w)),
        "diagnostics": r.diagnostics, "seconds": round(r.seconds, 4),
    }
    if r.diagnostics.get("frozen"):
        print(f"warning: the run is frozen: its last {r.diagnostics['stalled_streak']} steps left w unchanged "
              f"although the gradient was nonzero (float64 resolution reached)", file=sys.stderr)
    if args.json:
        _dump(out)
    else:
        print(f"{args.optimizer}: {r.steps} steps in {r.seconds:.2f}s; normalized margins "
              + ", ".join(f"{k} {v:.6g}" for k, v in out["margins"].items()))
    return 0


def cmd_margin(args) -> int:
    from .data import load_dataset
    from .oracles import max_margin

    D = load_dataset(args.data)
    r = max_margin(D.Z, args.norm)
    out = {"norm": r.norm, "direction": r.direction, "margin": r.margin, "duals": r.duals,
           "support": r.support, "certificate": r.certificate}
    if args.json:
        _dump(out)
    else:
        print(f"{args.norm} max margin γ = {r.margin:.10g}; support vectors {r.support.tolist()}")
    return 0


def cmd_predict(args) -> int:
    from .data import load_dataset

    try:
        from .theory import predict
    except ImportError as e:
        raise IbverifyError(f"predict is not available: {e}") from None
    D = load_dataset(args.data)
    out = predict(D.Z)
    if args.json:
        _dump(out)
    else:
        for k, v in out.items():
            if isinstance(v, (list, np.ndarray)) and len(v) > 12:
                v = f"[{len(v)} values; --json for all]"
            print(f"{k}: {v}")
    return 0


# ---------------------------------------------------------------- report / compare
def cmd_report(args) -> int:
    from .report import load_results, render_report

    path = render_report(load_results(args.results), Path(args.out))
    print(f"report written: {path}")
    return 0


def cmd_compare(args) -> int:
    from .report import compare_command

    return compare_command(args.baseline, args.results)


# ---------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ibverify", description=__doc__)
    p.add_argument("--version", action="version", version=f"ibverify {__version__}")
    p.add_argument("--claims-dir", default=None, help="claim registry folder (default ./claims)")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    c = sub.add_parser("claims", help="list the claim registry")
    c.add_argument("--json", action="store_true")
    c.add_argument("--markdown", action="store_true", help="the README claim table")
    c.set_defaults(func=cmd_claims)

    from .verify_cli import add_verify_parser

    add_verify_parser(sub)

    t = sub.add_parser("train", help="run an optimizer on a dataset")
    t.add_argument("--data", required=True, help=".npz (X, y) or .csv (label ±1 last column)")
    t.add_argument("--optimizer", required=True)
    t.add_argument("--batch-size", type=int, default=None)
    t.add_argument("--order", choices=("cyclic", "reshuffle", "replacement"), default="cyclic")
    g = t.add_mutually_exclusive_group()
    g.add_argument("--epochs", type=int, default=None)
    g.add_argument("--steps", type=int, default=None)
    t.add_argument("--lr", type=float, default=0.1, help="η0 in η_t = η0 (t+1)^(−a)")
    t.add_argument("--lr-decay", type=float, default=0.5,
                   help="a in η_t = η0 (t+1)^(−a) for linear models; p in η0 t^(−p) with --model (networks)")
    t.add_argument("--beta1", type=float, default=0.9)
    t.add_argument("--beta2", type=float, default=0.999)
    t.add_argument("--eps", type=float, default=0.0)
    t.add_argument("--bias-correction", action="store_true")
    t.add_argument("--loss", choices=("logistic", "exponential"), default="logistic")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--engine", choices=("compiled", "reference", "mpmath"), default="compiled")
    t.add_argument("--checkpoints", type=int, default=30, help="log-spaced evidence points")
    t.add_argument("--checkpoint", default=None, metavar="FILE", help="save the run state here (atomic)")
    t.add_argument("--checkpoint-every", type=float, default=5.0, metavar="SEC")
    t.add_argument("--resume", action="store_true", help="continue from --checkpoint FILE")
    t.add_argument("--json", action="store_true")
    t.add_argument("--quiet", "-q", action="store_true")
    from .networks_bridge import add_network_arguments

    add_network_arguments(t)
    t.set_defaults(func=cmd_train)

    m = sub.add_parser("margin", help="certified max margin of a dataset")
    m.add_argument("--data", required=True)
    m.add_argument("--norm", choices=("l2", "linf", "l1"), default="l2")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_margin)

    pr = sub.add_parser("predict", help="predicted per-sample Adam direction (AdamProxy fixed point)")
    pr.add_argument("--data", required=True)
    pr.add_argument("--json", action="store_true")
    pr.set_defaults(func=cmd_predict)

    r = sub.add_parser("report", help="render the HTML report from a results.json")
    r.add_argument("results")
    r.add_argument("--out", default="reports")
    r.set_defaults(func=cmd_report)

    cp = sub.add_parser("compare", help="regression gate: compare results against a baseline")
    cp.add_argument("baseline")
    cp.add_argument("results")
    cp.set_defaults(func=cmd_compare)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except IbverifyError as e:
        print(f"ibverify: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("ibverify: interrupted", file=sys.stderr)
        return 130
    except (OSError, ValueError) as e:
        print(f"ibverify: error: {type(e).__name__}: {e}".splitlines()[0], file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
