"""What every command shares: the one-line-error parser, JSON output, data loading, exit codes."""

from __future__ import annotations

import argparse
import json
import math
import sys
from contextlib import contextmanager
from pathlib import Path

from ..errors import IbverifyError
from ..jsonio import plain
from ..optim.table import KNOBS

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 2  # one code for Ctrl-C in every command (train's checkpointed stop raises IbverifyError)


# the --optimizer help of `train` and `bias`: the names of other libraries' optimizers (ibverify.optim.adapters;
# torch's Muon pair: ibverify.optim.torchmuon; tests/cli/test_help_current.py holds the help to these)
FOREIGN_HELP = ("or a PyTorch or optax optimizer as shipped: torch:NAME[:key=value,...] (e.g. torch:Adam:eps=0), "
                "optax:NAME[:key=value,...] (e.g. optax:adam:eps=0), on the linear model and the block models; "
                "torch's Muon takes the matrix blocks only, so on a model with other blocks name a partner for them: "
                "torch:Muon[:key=value,...]+PARTNER[:key=value,...] (e.g. torch:Muon:weight_decay=0+Adam:eps=0)")
RATES = ("lr", "lr_matrix", "lr_vector")   # step-size knobs: a finite number > 0, checked as the options are parsed


class Parser(argparse.ArgumentParser):
    """One-line errors (IbverifyError), no usage dump. Every command that takes a step size (--lr, --lr-matrix,
    --lr-vector: train, bias) has it checked here, before any file is read: a finite number > 0 (inf, nan, 0 and
    negative values are one line and exit 2)."""

    def error(self, message):
        command = self.prog.partition(" ")[2]   # "ibverify compare" → "compare"; the top-level parser: ""
        raise IbverifyError(f"{command}: {message}" if command else message)

    def parse_known_args(self, args=None, namespace=None):
        ns, rest = super().parse_known_args(args, namespace)
        for k in RATES:
            v = getattr(ns, k, None)
            if v is not None and not (math.isfinite(v) and v > 0):
                self.error(f"--{k.replace('_', '-')} must be a finite number > 0, got {v:g}")
        return ns, rest


def dump(obj, path: str | None = None) -> None:
    text = json.dumps(plain(obj, keep_nonfinite=True), indent=2, ensure_ascii=False)
    if path in (None, "-"):
        print(text)
    else:
        Path(path).write_text(text + "\n")


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_data(path, quiet: bool = False, intercept: bool = False, network: bool = False):
    """Load and validate a dataset and say "loaded N × d from FILE" on stdout (not with --json, whose
    output carries n, d and the inert coordinates instead; stderr is kept for the one-line error). `network`: the
    data feed a homogeneous network (what no such model separates is refused, not linear inseparability)."""
    from ..data import load_dataset  # start-up time: --help never loads ibverify.data

    with csv_lines_named(path):
        D = load_dataset(path, intercept=intercept, network=network)
    if not quiet:
        inert = D.inert
        note = (f"; {len(inert)} inert coordinate{'s' if len(inert) != 1 else ''} (zero in every sample) set "
                f"aside: {inert.tolist()}") if len(inert) else ""
        extra = " (the last column is the intercept's, all ones)" if intercept else ""
        print(f"loaded {D.n} × {D.d} from {path}{extra}{note}", flush=True)
    return D


def ragged_csv_line(path) -> str | None:
    """The one-line error naming the first line of a CSV file whose cell count differs from its first data row's, or
    None (not a .csv, unreadable, or a file that the reader, data/files.py, refuses for another reason first: it reads
    every line before it compares the rows' widths, and says only which widths it saw). The reader's own cell rules
    (files._number, files._bad_cell) decide what a numeric row and a header are."""
    from ..data.files import _bad_cell, _number  # start-up time: numpy

    p = Path(path)
    if p.suffix.lower() != ".csv":
        return None
    try:
        text = p.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    lines = [(k + 1, ln) for k, ln in enumerate(text.splitlines()) if ln.strip()]
    rows = []   # (line number, line, cell count) of the data rows
    for i, (lineno, ln) in enumerate(lines):
        cells = ln.split(",")
        if any(_number(c) is None for c in cells):
            if i == 0 and all(_number(c) is None for c in cells) and _bad_cell(p.name, lineno, ln, cells,
                                                                                header=True) is None:
                continue   # a header, as the reader takes it (its width is compared by the reader, by name)
            return None    # a line that is not numeric: the reader's own error names it
        rows.append((lineno, ln, len(cells)))
    if not rows:
        return None
    first = rows[0]
    bad = next((r for r in rows if r[2] != first[2]), None)
    if bad is None:
        return None
    return (f"{p.name}: line {bad[0]} has {bad[2]} columns but line {first[0]}, the first row, has {first[2]}: "
            f"{bad[1][:60]!r}")


@contextmanager
def csv_lines_named(path):
    """Around a load of `path`: a CSV whose rows have different numbers of columns gets the error of
    `ragged_csv_line` (naming the line) in place of the reader's, which names only the widths. The file is re-read
    only after a load failed."""
    try:
        yield
    except IbverifyError:
        why = ragged_csv_line(path) if isinstance(path, (str, Path)) else None
        if why is None:
            raise
        raise IbverifyError(why) from None


def data_json(path, D, intercept: bool = False) -> dict:
    return {"file": str(path), "n": D.n, "d": D.d, "intercept": intercept, "inert_coordinates": D.inert.tolist()}


def one_line(text: str) -> str:
    return " ".join(str(text).split()) or "unknown error"


def spec_from_args(args, what: str = "--optimizer"):
    """The OptimizerSpec of the parsed options (optim.adapters.to_spec: `args.optimizer` is a name, a file or, from the
    Python API, a UserOptimizer or OptimizerSpec): every knob given, the table's defaults for the rest (an optimizer
    file: its defaults, then the table's); a user's chains take a first step (or one line and exit 2)."""
    from ..optim.adapters import to_spec  # start-up time: numpy (the parser and --help never build a spec)

    return to_spec(args.optimizer, {k: getattr(args, k) for k in KNOBS if getattr(args, k, None) is not None},
                   what=what)


def check_optimizer(optimizer) -> None:
    """An --optimizer that is a name: one IbverifyError line unless the table (or an alias, optax:, torch:, a file)
    knows it (optim.adapters.check_name: no numpy, no solver imported), so a command refuses it before it reads any
    data; the knobs and a user's file are checked with the spec (`spec_from_args`)."""
    if isinstance(optimizer, str):
        from ..optim.adapters import check_name

        check_name(optimizer)


def add_intercept_option(parser) -> None:
    parser.add_argument("--intercept", action="store_true",
                        help="append a column of ones to X (a bias as the last weight; the linear model has none)")


def first_call(call) -> tuple[float, int]:
    """Run `call` (a 1-step run: the kernels compile, or load from numba's cache, at their first call) and return
    (its seconds, how many kernels it compiled), so that a command reports compiling apart from its run."""
    import time

    from ..engine import kernels_compiled  # numba: only once the input is known to be good
    k0, t0 = kernels_compiled(), time.perf_counter()
    call()
    return time.perf_counter() - t0, kernels_compiled() - k0


def kernel_note(seconds: float, compiled: int, engine: str) -> str:
    """'+ 8.1 s compiling 6 kernels: first run only, numba caches them', or '+ 0.4 s loading the compiled kernels'."""
    if compiled:
        return (f"+ {seconds:.2f} s compiling {compiled} kernel{'s' if compiled > 1 else ''}: first run only, "
                f"numba caches them")
    if engine == "compiled":
        return f"+ {seconds:.2f} s loading the compiled kernels"
    return f"+ {seconds:.2f} s for a first one-step call"


def nonneg_int(flag: str):
    """An argparse type: a non-negative integer, its error naming the option."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise IbverifyError(f"{flag} must be a non-negative integer, got {text!r}") from None
        if v < 0:
            raise IbverifyError(f"{flag} must be a non-negative integer, got {v}")
        return v
    return parse
