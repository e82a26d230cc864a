"""ibverify's Python API, for notebooks and scripts: `bias`, `verify` and `train` (docs/python-api.md).

    import ibverify
    r = ibverify.bias("signum", models=["linear"], tier="smoke")
    r.models          # == the `models` list of `ibverify bias --optimizer signum --model linear --tier smoke --json`
    r.to_json()       # == that whole JSON object (its seconds and cpu_seconds are this call's)
    r.plot()          # one matplotlib Figure per model

    v = ibverify.verify(["xie-li.adamw-box"], tier="smoke")
    v.rows            # == the `claims` rows of `ibverify verify … --json -` (results.json)
    v.as_expected     # every verdict the expected one

    t = ibverify.train("adam", "data.npz", steps=1000)
    t.checkpoints, t.theta, t.diagnostics, t.to_json()   # the run; to_json() == `ibverify train … --json`

One implementation: each function goes the command's own way (no second implementation). `bias` builds the specs
with `optim.adapters.to_spec` and calls `cli.bias.answers` (runner.bias.identify_all), as `ibverify bias` does;
`verify` selects the claims with `cli.verify.select_claims` and runs them with `runner.verify.verify`, as
`ibverify verify`; `train` fills the `train` command's parsed options (the parser's defaults, then the arguments)
and calls `cli.train.train_linear` or `cli.network.train_run`, as `ibverify train`. What stands for an optimizer
(a name of the table, a file path.py[:function], a PyTorch optimizer `torch:NAME[:k=v,...]`, a `torch.optim.Optimizer`
subclass or a functools.partial of one (float64: optim.torchadapt), an optax optimizer `optax:NAME[:k=v,...]`, an optax
function, partial or inject_hyperparams transformation (float64: optim.optaxadapt), a `UserOptimizer`, an
`OptimizerSpec`) is decided in one place: `optim.adapters.to_spec`.

Errors: bad input raises `IbverifyError` with a one-line message (the command line's exit 2), raised here, not from
deep inside; RuntimeWarning and UserWarning (overflow, solver chatter) are silenced as on the command line. Nothing
is printed: no progress unless `progress=True` (then as the commands show it: a bar on a terminal, tqdm's notebook
bar in a notebook, plain lines in a log: ibverify.progress).

The API is the stable surface: these three functions, their keyword arguments and the result classes' fields and
methods. `import ibverify` stays light: this module loads on first use of `ibverify.bias` (and friends), numpy and
the engine only when a function runs.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

from .errors import IbverifyError
from .cli.bias import BIAS_MODELS, BIAS_TIERS
from .cli.output import one_line
from .cli.verify import mark_of
from .jsonio import plain
from .optim.table import KNOBS

F = TypeVar("F", bound=Callable[..., Any])


def _one_line_errors(fn: F) -> F:
    """Bad input: one IbverifyError line raised from the API function itself (as the command line's exit 2)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # overflow etc.: every result is checked finite
                warnings.simplefilter("ignore", UserWarning)     # solver chatter: statuses are checked instead
                return fn(*args, **kwargs)
        except IbverifyError as e:
            err = IbverifyError(one_line(e))
        except (OSError, ValueError, ArithmeticError, MemoryError) as e:
            err = IbverifyError(one_line(f"{type(e).__name__}: {e}"))
        raise err from None
    return wrapper  # type: ignore[return-value]


def _json(obj: Any) -> Any:
    """What the command's --json prints, read back: plain JSON types (NaN and ±inf kept as floats)."""
    return json.loads(json.dumps(plain(obj, keep_nonfinite=True), ensure_ascii=False))


def _names(value: Any, what: str) -> list[str] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, (str, os.PathLike)) else list(value)
    if not all(isinstance(v, str) for v in items):
        raise IbverifyError(f"{what} must be a string or a list of strings, got {value!r}")
    return items


def _choice(value: Any, choices: tuple, what: str) -> Any:
    if value not in choices:
        raise IbverifyError(f"unknown {what} {value!r}; use one of {', '.join(map(str, choices))}")
    return value


def _count(value: Any, what: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise IbverifyError(f"{what} must be an integer >= {low}, got {value!r}")
    return int(value)


def _path(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise IbverifyError(f"{what} must be a file path (str or pathlib.Path), got {type(value).__name__}")
    return os.fspath(value)


def _knobs(knobs: dict, what: str, exclude: tuple[str, ...] = ()) -> dict:
    bad = [k for k in knobs if k not in KNOBS or k in exclude]
    if bad:
        raise IbverifyError(f"unknown knob{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))} of {what}; "
                            f"the knobs are {', '.join(k for k in KNOBS if k not in exclude)}")
    return {k: v for k, v in knobs.items() if v is not None}


# ---------------------------------------------------------------- bias
@dataclass(frozen=True)
class BiasResult:
    """`ibverify.bias`'s answer: `models` is the `models` list of `ibverify bias … --json` (per model: supported,
    contradicted, inconclusive geometries, evidence with each dataset's curve and resolution, …); `to_json()` the
    whole object; `resolution()` how close to each supported geometry's optimum the limit is known to be."""

    optimizer: str
    knobs: dict
    tier: str
    seed: int
    models: list[dict]
    output: dict = field(repr=False)

    def to_json(self) -> dict:
        """The JSON object `ibverify bias --json` prints (a copy)."""
        return json.loads(json.dumps(self.output, ensure_ascii=False))

    def supported(self) -> dict[str, list[str]]:
        """Model → the geometries whose KKT conditions the limit satisfies (empty: none supported; `outcome` says
        whether every geometry was contradicted or the answer is still undecided)."""
        return {m["model"]: list(m.get("supported", [])) for m in self.models}

    def outcome(self) -> dict[str, str]:
        """Model → what is known (`--json`'s `outcome`): "supported" (a geometry's KKT conditions hold, to within
        its δ), "contradicted" (every geometry contradicted: none of these), "undecided" (none supported, some still
        inconclusive: the entry's `undecided` names the closest geometry, its δ and the horizon to extend to),
        "bounded-norm" (‖θ‖ stopped growing, e.g. under weight decay: no margin limit to judge; `bounded_norm`
        names the setting) or "not-judged"."""
        return {m["model"]: m.get("outcome", "supported" if m.get("supported") else "undecided")
                for m in self.models}

    def resolution(self) -> dict[str, dict[str, float | None]]:
        """Model → supported geometry → its resolution δ: the largest margin gap (the KKT residual on the two-layer
        net) the limit could still have on the supported datasets, given their measured gaps and rates (`--json`'s
        `evidence.<geometry>.resolution`; None: unresolved). A support reads "g (to within δ)", never "exactly g"."""
        return {m["model"]: {g: m["evidence"][g].get("resolution") for g in m.get("supported", [])}
                for m in self.models}

    def plot(self) -> list:
        """One matplotlib Figure per model (not judged: none), a panel per dataset: every geometry's judged series
        over steps, log–log (the figures of `ibverify bias --report`)."""
        return [_bias_figure(self.optimizer, m) for m in self.models if "not_judged" not in m]

    def __str__(self) -> str:
        from .cli.bias import text

        return text(self.output)


def _figure(panels: int, width: float = 5.0, height: float = 3.4):
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # start-up time: matplotlib on first plot only
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * panels, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(1, panels, squeeze=False)[0]


def _bias_figure(optimizer: str, model: dict):
    from .report.bias import model_series

    drawn = [(tag, series) for tag, series in model_series(model) if series]
    fig, axes = _figure(max(1, len(drawn)))
    for ax, (tag, series) in zip(axes, drawn, strict=False):
        for s in series:
            pts = [(x, y) for x, y in zip(s["x"], s["y"], strict=False) if x and y is not None and y > 0]
            word = next((w for w in ("supported", "contradicted", "inconclusive") if s["name"] in model.get(w, [])),
                        "")
            ax.loglog([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=2.5, label=f"{s['name']} ({word})")
        ax.set_title(tag, fontsize=9)
        ax.set_xlabel("step")
        ax.set_ylabel(series[0]["ylabel"])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    from .report.bias import headline

    fig.suptitle(f"{optimizer} · {model['model']}: {headline(model)}")
    return fig


@_one_line_errors
def bias(optimizer: Any, *, models: str | list[str] | None = None, data: str | os.PathLike | None = None,
         intercept: bool = False, tier: str = "fast", seed: int = 0, datasets: int = 3, progress: bool = False,
         **knobs: Any) -> BiasResult:
    """Which geometry's KKT conditions does `optimizer`'s limit satisfy, per model (`ibverify bias`).

    optimizer: a name of the optimizer table, a file "path/to/file.py[:function]", a UserOptimizer or an
    OptimizerSpec. models: "linear", "matrix", "two-layer" or a list (default: every model the optimizer runs).
    data: your own dataset file (.npz / .csv) instead of the generated ones; intercept: with `data`, append a column
    of ones (a bias; `bias --intercept`; not for matrix inputs). tier: "smoke" or "fast". seed: the
    generated datasets' seed; datasets: how many per model. knobs: the optimizer's knobs (lr=…, beta1=…; the table's
    names, `ibverify train --help`), the rest its defaults."""
    from .cli.bias import answers
    from .optim.adapters import to_spec

    ms = _names(models, "models")
    for m in ms or ():
        _choice(m, BIAS_MODELS, "model")
    given = _knobs(knobs, "bias (seed= is the datasets' seed)", exclude=("seed",))
    out = answers([to_spec(optimizer, given)], given, tier=_choice(tier, BIAS_TIERS, "tier"),
                  seed=_count(seed, "seed"), datasets=_count(datasets, "datasets"),
                  data_file=_path(data, "data"), models=ms, quiet=not progress,
                  intercept=bool(intercept))[0]
    out = _json(out)
    return BiasResult(out["optimizer"], out["knobs"], out["tier"], out["seed"], out["models"], out)


# ---------------------------------------------------------------- verify
@dataclass(frozen=True)
class VerifyResult:
    """`ibverify.verify`'s results: `rows` are the claims' rows of results.json (`ibverify verify --json -`: id,
    verdict, as_expected, outcome with its figures, …), in registry order; `as_expected` whether every verdict is
    the expected one; `ok` whether none is unexpected (`verify`'s exit status 0: a control "not applicable" to the
    data of `data=` is neither as expected nor unexpected); `to_json()` the whole results object (schema
    ibverify.results/1)."""

    tier: str
    seed: int
    rows: list[dict]
    summary: dict
    results: dict = field(repr=False)

    @property
    def as_expected(self) -> bool:
        return all(r["as_expected"] for r in self.rows)

    @property
    def ok(self) -> bool:
        return self.summary["unexpected"] == 0

    def verdicts(self) -> dict[str, str]:
        """Claim id → verdict."""
        return {r["id"]: r["verdict"] for r in self.rows}

    def to_json(self) -> dict:
        return json.loads(json.dumps(self.results, ensure_ascii=False))

    def __getitem__(self, key: int | str) -> dict:
        if isinstance(key, str):
            for r in self.rows:
                if r["id"] == key:
                    return r
            raise KeyError(key)
        return self.rows[key]

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        lines = []
        for r in self.rows:
            mark = mark_of(r)
            fig = (r["outcome"] or {}).get("figure") or r["error"] or ""
            lines.append(f"{mark}{r['id']:<40} {r['status']:<13} {r['verdict']:<13} {fig}")
        s = self.summary
        na = f", {s['not_applicable']} not applicable to this data" if s.get("not_applicable") else ""
        lines.append(f"{s['as_expected']}/{s['total']} verdicts as expected, {s['unexpected']} unexpected "
                     f"({s['inconclusive']} inconclusive, {s['errors']} errors){na}")
        return "\n".join(lines)


@_one_line_errors
def verify(ids: str | list[str] | None = None, *, tier: str = "fast", seed: int = 0,
           data: str | os.PathLike | None = None, intercept: bool = False, workers: int = 1,
           report: str | os.PathLike | None = None, claims_dir: str | os.PathLike | None = None) -> VerifyResult:
    """Run claims and return their rows (`ibverify verify`). ids: claim ids or prefixes ending in "." (default:
    every claim of the tier; with `data`, the data.* claims). tier: "smoke", "fast" or "full". seed: of every
    generated example. data: run the data.* claims on this .npz/.csv file (`intercept`: append a column of ones).
    workers: > 1 runs the claims on a local Dask cluster (default: in this process). report: also publish the report
    folder there (default: none written)."""
    from . import profiles
    from .cli.verify import _cache_root, _earlier_runtimes, _write_outputs, select_claims
    from .runner.verify import verify as run_claims

    args = argparse.Namespace(ids=_names(ids, "ids") or [], tier=_choice(tier, ("smoke", "fast", "full"), "tier"),
                              seed=_count(seed, "seed"), data=_path(data, "data"), intercept=bool(intercept),
                              claims_dir=_path(claims_dir, "claims_dir"), quiet=True, report=_path(report, "report"),
                              no_cache=False, cache=None, resume=False)
    profile = profiles.load(None)
    claims = select_claims(args)
    cache = _cache_root(args)
    if cache is not None:   # as `ibverify verify --tier full`: in-run checkpoints of resumable checks go there too
        os.environ["IBVERIFY_CACHE"] = str(cache)
    results = run_claims(claims, args.tier, args.seed, workers=_count(workers, "workers", 1),
                         cache=cache, profile=profile,
                         runtimes=_earlier_runtimes(argparse.Namespace(report=args.report or "reports",
                                                                       tier=args.tier)))
    if report is not None:
        _write_outputs(results, Path(args.report), None, replace=not args.ids)
    results = _json(results)
    return VerifyResult(results["tier"], results["seed"], results["claims"], results["summary"], results)


# ---------------------------------------------------------------- train
@dataclass(frozen=True)
class TrainResult:
    """`ibverify.train`'s run: `run` is the engine's Run (checkpoints, θ at each, diagnostics), `output` what
    `ibverify train … --json` prints (to_json()), `notes` the command's warnings and notes."""

    output: dict = field(repr=False)
    run: Any = field(repr=False)
    notes: list[str]
    data: Any = field(default=None, repr=False)

    @property
    def checkpoints(self) -> list[int]:
        """The steps at which θ was recorded."""
        return [int(t) for t in self.run.checkpoints]

    @property
    def thetas(self) -> list[dict]:
        """θ at each checkpoint: named blocks of numpy arrays ({"w": w} for the linear model)."""
        return self.run.thetas

    @property
    def theta(self) -> dict:
        """θ at the horizon (named blocks)."""
        return self.run.theta

    @property
    def w(self):
        """θ at the horizon, flattened (the linear model's w)."""
        return self.run.w

    @property
    def diagnostics(self) -> dict:
        """The run's diagnostics (engine.trajectory.DIAGNOSTICS: stalled steps, frozen, underflow, diverged, …)."""
        return plain(dict(self.run.diagnostics))

    @property
    def steps(self) -> int:
        return int(self.output["steps"])

    def to_json(self) -> dict:
        return json.loads(json.dumps(self.output, ensure_ascii=False))

    def plot(self):
        """One matplotlib Figure: the linear model's normalized margins (l2, linf, l1) at each checkpoint; a block
        model's per-checkpoint evidence (min margin q_min, log loss, alignment)."""
        import numpy as np

        steps = self.checkpoints
        if self.run.ws is not None:
            from .oracles import normalized_margin

            Z = self.data.Z
            panels = [("normalized margin", {k: [normalized_margin(Z, w, k) if np.any(w) else float("nan")
                                                 for w in self.run.ws] for k in ("l2", "linf", "l1")})]
        else:
            cp = self.output["checkpoints"]
            panels = [(k, {k: [c[k] for c in cp]}) for k in ("q_min", "log_loss", "alignment")]
        fig, axes = _figure(len(panels))
        for ax, (label, series) in zip(axes, panels, strict=True):
            for name, ys in series.items():
                ax.plot(steps, [np.nan if y is None else y for y in ys], marker="o", ms=2.5, label=name)
            ax.set_xscale("log")
            ax.set_xlabel("step")
            ax.set_ylabel(label)
            ax.grid(True, alpha=0.3)
            if len(series) > 1:
                ax.legend(fontsize=8)
        name = self.output["optimizer"]["name"] if isinstance(self.output["optimizer"], dict) else \
            self.output["optimizer"]
        fig.suptitle(f"{name}: {self.steps} steps")
        return fig


def _train_args(**values: Any) -> argparse.Namespace:
    """The `train` command's parsed options: the parser's defaults, then `values`."""
    from .cli.commands import build_parser

    args = build_parser().parse_args(["train", "--data", "-", "--optimizer", "-"])
    for k, v in values.items():
        setattr(args, k, v)
    return args


@_one_line_errors
def train(optimizer: Any, data: str | os.PathLike, *, model: str | None = None, steps: int | None = None,
          epochs: int | None = None, checkpoints: int | None = None, seed: int | None = None,
          engine: str | None = None, intercept: bool = False, compare: bool = True, width: int = 16, q: float = 2.0,
          depth: int = 2, n: int | None = None, d: int = 6, init_scale: float = 0.5, kkt_tau: float = 0.01,
          progress: bool = False, **knobs: Any) -> TrainResult:
    """Run `optimizer` on a dataset (`ibverify train`): the linear model sample by sample (model None), or a block
    model full batch (model "linear", "two-layer", "deep", "deep-linear", "matrix-linear"; data may then be a
    generated "digits", "teacher" or "linear" with n, d). Every other argument is the option of the same name
    (`ibverify train --help`): steps or epochs (horizon), checkpoints (how many, log-spaced), seed (sample order, θ0,
    generated data), engine, compare (the linear model: compare with ŵ2, the ℓ∞ face and p*); knobs: lr=…, beta1=…
    (the table's names), the rest the optimizer's defaults."""
    from .cli.network import MODELS, train_run
    from .cli.train import train_linear

    if model is not None:
        _choice(model, MODELS, "model")
    if engine is not None:
        _choice(engine, ("compiled", "reference", "mpmath"), "engine")
    given = _knobs(knobs, "train (seed= is its own argument)", exclude=("seed",))
    args = _train_args(optimizer=optimizer, data=_path(data, "data"), model=model, steps=steps, epochs=epochs,
                       checkpoints=checkpoints, seed=None if seed is None else _count(seed, "seed"), engine=engine,
                       intercept=bool(intercept), compare=bool(compare), width=width, q=q, depth=depth, n=n, d=d,
                       init_scale=init_scale, kkt_tau=kkt_tau, quiet=not progress, json=True, checkpoint=None,
                       resume=False, **given)
    if model is None:
        out, run, D, notes = train_linear(args)
    else:
        out, run = train_run(args)
        D, notes = None, list(out.get("warnings", []))
    return TrainResult(_json(out), run, notes, D)


__all__ = ["BiasResult", "TrainResult", "VerifyResult", "bias", "train", "verify"]
