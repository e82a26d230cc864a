"""A run's recipe: data, model, optimizer spec, θ0, horizon, checkpoints and engine options, each as content.

`DataRecipe` names a data source of `DATA_SOURCES` with its keyword arguments (a generator and its seed, a
scikit-learn split, a user's file known by its sha256) or holds arrays known by their exact bytes;
`ModelRecipe` names a model kind of `MODEL_KINDS` with its arguments (the input size comes from the data);
`Recipe` adds the optimizer spec and the horizon. `Recipe.key()` is a hash of every field's content (the spec's
JSON, the optimizer's name and a user file's sha256 included, a data file's sha256, arrays by bytes), so two
recipes share a run exactly when they would train the same run; `Recipe.lineage()` leaves out the horizon
(steps and checkpoints): the runs one example is extended through.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import IbverifyError
from .. import models as M
from ..cache import fingerprint
from ..claims import file_sha256
from ..data import Dataset, gaussian, gr, load_dataset, shifted_diagonal
from ..data import netdata
from ..data.dataset import make
from ..data.files import separability_certificate
from ..data.generators import gr_draw, gr_orthogonal
from ..optim import OptimizerSpec


def sklearn_split(split: str) -> Dataset:
    """`name:avb` → scikit-learn's shipped `name` (iris, wine, breast_cancer, digits) restricted to classes a
    (label −1) and b (+1), raw features, validated like a user's file (separable by certificate)."""
    from sklearn import datasets as skd  # start-up time: scikit-learn, only for data of its own

    name, _, pair = split.partition(":")
    a, _, b = pair.partition("v")
    X, y = getattr(skd, f"load_{name}")(return_X_y=True)
    keep = (y == int(a)) | (y == int(b))
    D = make(X[keep], np.where(y[keep] == int(b), 1.0, -1.0), f"scikit-learn {split}")
    separability_certificate(D)
    return D


def _seeded(gen: Callable) -> Callable[..., Dataset]:
    def source(n: int, d: int, seed: int, **kw) -> Dataset:
        return gen(int(n), int(d), np.random.default_rng(int(seed)), **kw)
    return source


# data sources: name → function(**args) → Dataset ("file" and "arrays" are DataRecipe's own)
DATA_SOURCES: dict[str, Callable[..., Dataset]] = {
    "gr": _seeded(gr),
    "gaussian": _seeded(gaussian),
    "gr-orthogonal": _seeded(gr_orthogonal),
    "gr-draw": gr_draw,
    "shifted-diagonal": lambda a, delta: shifted_diagonal(np.asarray(a, dtype=float), delta),
    "sklearn": lambda split: sklearn_split(split),
    "teacher": netdata.teacher_two_layer,
    "linear": netdata.linear_separable,
    "matrix": netdata.matrix_separable,
    "matrix-vector": netdata.matrix_vector_separable,
    "digits": netdata.digits_even_odd,
}


def _plain(v: Any) -> Any:
    """A hashable, canonical form of an argument (lists → tuples, numpy scalars → Python numbers)."""
    if isinstance(v, np.ndarray):
        return tuple(_plain(x) for x in v.tolist())
    if isinstance(v, (list, tuple)):
        return tuple(_plain(x) for x in v)
    if isinstance(v, np.generic):
        return v.item()
    return v


def _args(kw: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, _plain(v)) for k, v in kw.items()))


@dataclass(frozen=True)
class DataRecipe:
    """Where a run's data come from: `source` (a DATA_SOURCES name, "file" or "arrays") and its arguments;
    `digest`: the content of a file (sha256 of its bytes) or of arrays (their exact bytes)."""
    source: str
    args: tuple[tuple[str, Any], ...] = ()
    digest: str = ""
    arrays: tuple = field(default=(), compare=False, repr=False)   # (X, y) of source "arrays"

    @classmethod
    def generated(cls, source: str, **args) -> "DataRecipe":
        if source not in DATA_SOURCES:
            raise IbverifyError(f"unknown data source {source!r} (one of {', '.join(DATA_SOURCES)})")
        return cls(source, _args(args))

    @classmethod
    def file(cls, path: str | Path, *, intercept: bool = False, separable: bool = True,
             network: bool = False) -> "DataRecipe":
        """A user's .csv/.npz file, known by the sha256 of its bytes (an edited file is other data); `separable`:
        refused unless its model can separate it (`network`: a homogeneous network, else a linear model)."""
        args = {"path": str(path), "intercept": bool(intercept), "separable": bool(separable)}
        if network:
            args["network"] = True
        return cls("file", _args(args), file_sha256(path))

    @classmethod
    def of_arrays(cls, X: np.ndarray, y: np.ndarray | None = None, name: str = "data") -> "DataRecipe":
        """Data given as arrays (e.g. drawn by a hypothesis strategy): y None means X is label-folded Z."""
        X = np.asarray(X)
        y = np.ones(X.shape[0]) if y is None else np.asarray(y)
        return cls("arrays", _args({"name": name}), fingerprint((X, y)), (X, y))

    @classmethod
    def of_dataset(cls, D: Dataset) -> "DataRecipe":
        return cls.of_arrays(D.X, D.y, D.name)

    def build(self) -> Dataset:
        kw = dict(self.args)
        if self.source == "arrays":
            X, y = self.arrays
            return Dataset(X, y, kw["name"])
        if self.source == "file":
            if file_sha256(kw["path"]) != self.digest:
                raise IbverifyError(f"{kw['path']}: the file changed since its recipe was made")
            return load_dataset(kw["path"], require_separable=kw["separable"], intercept=kw["intercept"],
                                network=kw.get("network", False))
        return DATA_SOURCES[self.source](**kw)

    def identity(self) -> dict:
        return {"source": self.source, "args": dict(self.args), "digest": self.digest}


# model kinds: name → function(data, **args) → model
MODEL_KINDS: dict[str, Callable[..., Any]] = {
    "linear": lambda D: M.Linear(D.X.shape[1]),
    "matrix-linear": lambda D: M.MatrixLinear(*D.X.shape[1:]),
    "matrix-vector-linear": lambda D, p, r, k: M.MatrixVectorLinear(p, r, k),
    "two-layer": lambda D, width=16, q=2.0: M.TwoLayer(D.X.shape[1], width, q),
    "deep-linear": lambda D, width=16, depth=2: M.make_model("deep-linear", D.X.shape[1], width=width, depth=depth),
    "deep": lambda D, width=16, q=2.0, depth=2: M.make_model("deep", D.X.shape[1], width=width, q=q, depth=depth),
}


@dataclass(frozen=True)
class ModelRecipe:
    """A model kind of MODEL_KINDS and its arguments; the input size is the data's."""
    kind: str
    args: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, kind: str, **args) -> "ModelRecipe":
        if kind not in MODEL_KINDS:
            raise IbverifyError(f"unknown model {kind!r} (one of {', '.join(MODEL_KINDS)})")
        return cls(kind, _args(args))

    def build(self, data: Dataset):
        return MODEL_KINDS[self.kind](data, **dict(self.args))


@dataclass(frozen=True)
class Recipe:
    """Everything one run is made of. model None: the linear model trained sample by sample on the data's
    label-folded Z (the vector loop); a ModelRecipe: the block loop, full batch on (X, y). θ0: `theta0`
    (blocks) or the model's init from `init_seed` (zero when both are None). `checkpoints`: a count or the step
    counts. `options`: engine keyword options that change the run (log_frame, dps, warn)."""
    data: DataRecipe
    spec: OptimizerSpec
    steps: int
    model: ModelRecipe | None = None
    checkpoints: int | tuple[int, ...] | None = None
    init_seed: int | None = None
    init_scale: float = 0.5
    theta0: Mapping[str, np.ndarray] | None = field(default=None, compare=False, repr=False)
    engine: str | None = None
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self):
        cps = self.checkpoints
        if cps is not None and not np.isscalar(cps):
            object.__setattr__(self, "checkpoints", tuple(int(c) for c in np.asarray(cps).ravel()))
        elif cps is not None:
            object.__setattr__(self, "checkpoints", int(cps))
        object.__setattr__(self, "steps", int(self.steps))
        object.__setattr__(self, "options", _args(dict(self.options)))

    def replace(self, **changes) -> "Recipe":
        return dataclasses.replace(self, **changes)

    def _content(self, horizon: bool) -> dict:
        out = {"data": self.data.identity(), "spec": self.spec.to_json(),
               "model": None if self.model is None else [self.model.kind, dict(self.model.args)],
               "init_seed": self.init_seed, "init_scale": float(self.init_scale),
               "theta0": None if self.theta0 is None else fingerprint(dict(self.theta0)),
               "engine": self.engine, "options": dict(self.options)}
        if horizon:
            out.update(steps=self.steps, checkpoints=self.checkpoints)
        return out

    def key(self) -> str:
        """The run's identity: a hash of every field's content."""
        return fingerprint(self._content(horizon=True))

    def lineage(self) -> str:
        """The identity but for the horizon: the runs one example is extended through."""
        return fingerprint(self._content(horizon=False))
