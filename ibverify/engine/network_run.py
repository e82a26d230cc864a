"""Driving the compiled network kernels: compile (model, optimizer chain) to arrays, run, save, resume.

`compile_problem(model, opt, theta0)` returns a `NetProblem` (or raises `Unsupported` for a model or chain the
kernels do not cover: the caller then uses the numpy reference). `NetState` holds everything a run needs to
continue (θ, moments, frames and the polar blocks' kept rotations, step, counters) as flat arrays, in the layout
that `ibverify.engine.checkpoint.Saver` saves atomically and restores bit-identically (its `w, m, v, s, diag, t`).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from .. import models as mdl
from ..optim import logframe as op
from ..optim.logframe import Scaled, merge
from . import network as NK
from .kernels import EXPONENTIAL, LOGISTIC


class Unsupported(Exception):
    """The model or optimizer chain has no compiled kernel (use the reference engine)."""


@dataclass
class NetProblem:
    model_code: int
    dims: np.ndarray          # CHAIN: [d, h_1, ..., 1]; TWO_LAYER: [d, m]; DEEP: [d, h_1, ..., h_{K−1}]
    qpow: float
    X: np.ndarray             # (n, d) float64 (matrix inputs flattened)
    y: np.ndarray
    loss: int
    blocks: np.ndarray        # (nb, 4) int64: offset, rows, cols, group
    granges: np.ndarray       # (ng, 2) int64: each group's contiguous slice [lo, hi) of θ
    gcfg: np.ndarray          # (ng, N_GCFG) float64
    names: list[str]
    shapes: list[tuple[int, ...]]
    groups: list[tuple[str, ...]]
    keep_at: np.ndarray       # (nb,) int64: each polar block's offset in the kept rotations (NK.keep_layout), or −1
    keep_size: int

    @property
    def size(self) -> int:
        return int(sum(int(np.prod(s)) for s in self.shapes))

    def flat(self, theta) -> np.ndarray:
        return np.concatenate([np.asarray(theta[k], float).ravel() for k in self.names])

    def params(self, vec: np.ndarray) -> dict:
        out, i = {}, 0
        for k, s in zip(self.names, self.shapes, strict=True):
            size = int(np.prod(s))
            out[k] = np.array(vec[i:i + size], dtype=float).reshape(s)
            i += size
        return out

    def fingerprint(self) -> dict:
        """What a resumed run must share with the saved one (besides the data, hashed by the Saver)."""
        return {"model": int(self.model_code), "dims": self.dims.tolist(), "q": self.qpow, "loss": self.loss,
                "blocks": self.blocks.tolist(), "gcfg": self.gcfg.tolist(), "names": self.names,
                "keep": [self.keep_at.tolist(), self.keep_size]}


def _model_arrays(model, X):
    X = np.asarray(X, dtype=np.float64)
    if isinstance(model, mdl.TwoLayer):
        return NK.TWO_LAYER, np.array([model.d, model.m], np.int64), float(model.q), X
    if isinstance(model, mdl.DeepReLU):
        return NK.DEEP, np.array(model.dims, np.int64), float(model.q), X
    if isinstance(model, mdl.DeepLinear):
        if model.K > 4:
            raise Unsupported("deep-linear with more than 4 matrices")
        return NK.CHAIN, np.array(model.dims, np.int64), 1.0, X
    if isinstance(model, mdl.Linear):
        return NK.CHAIN, np.array([model.d, 1], np.int64), 1.0, X
    if isinstance(model, mdl.MatrixLinear):
        return NK.CHAIN, np.array([model.p * model.r, 1], np.int64), 1.0, X.reshape(X.shape[0], -1)
    raise Unsupported(f"model {getattr(model, 'name', type(model).__name__)!r}")


def _chain_row(chain) -> list[float]:
    """One group's chain [EMA|Adam]? [NormalizeL2|Sign|Polar|NewtonSchulz5]? Schedule as a config row."""
    ts = list(chain.ts) if isinstance(chain, op.Chain) else None
    if not ts or not isinstance(ts[-1], op.Schedule):
        raise Unsupported("a chain that does not end in a schedule")
    row = [0.0] * NK.N_GCFG
    row[NK.G_ETA], row[NK.G_P] = ts[-1].eta0, ts[-1].p
    body = ts[:-1]
    if body and isinstance(body[0], op.EMA):
        row[NK.G_MOMENT], row[NK.G_B1] = NK.M_EMA, body[0].beta
        body = body[1:]
    elif body and isinstance(body[0], op.Adam):
        a = body[0]
        row[NK.G_MOMENT], row[NK.G_B1], row[NK.G_B2] = NK.M_ADAM, a.b1, a.b2
        row[NK.G_BC], row[NK.G_EPS] = float(bool(a.bc)), a.eps
        body = body[1:]
    kinds = {op.NormalizeL2: NK.D_L2, op.Sign: NK.D_SIGN, op.Polar: NK.D_POLAR, op.NewtonSchulz5: NK.D_NS5}
    if len(body) == 1 and type(body[0]) in kinds:
        row[NK.G_DIR] = kinds[type(body[0])]
    elif body or row[NK.G_MOMENT] != NK.M_ADAM:
        raise Unsupported("an unrecognised transform chain")
    return row


def compile_problem(model, opt, theta0, X, y, loss: str) -> NetProblem:
    code, dims, qpow, Xf = _model_arrays(model, X)
    names = list(model.blocks)
    if list(theta0) != names:
        raise Unsupported("parameter blocks differ from the model's")
    shapes = [tuple(np.shape(theta0[k])) for k in names]
    if isinstance(opt.chain, op.Partition):
        groups = [tuple(ks) for ks, _ in opt.chain.groups.values()]
        rows = [_chain_row(ch) for _, ch in opt.chain.groups.values()]
    else:
        groups, rows = [tuple(names)], [_chain_row(opt.chain)]
    where = {k: gi for gi, ks in enumerate(groups) for k in ks}
    if sorted(where) != sorted(names):
        raise Unsupported("groups do not cover the blocks exactly once")
    table, off = [], 0
    for k, s in zip(names, shapes, strict=True):
        r, c = (1, s[0]) if len(s) == 1 else s
        table.append([off, r, c, where[k]])
        off += r * c
    granges = []
    for gi in range(len(groups)):
        mine = [(o, o + r * c) for o, r, c, g in table if g == gi]
        if any(a[1] != b[0] for a, b in zip(mine, mine[1:], strict=False)):
            raise Unsupported("a group whose blocks are not contiguous")
        granges.append([mine[0][0], mine[-1][1]])
    blocks, gcfg = np.array(table, np.int64), np.array(rows, np.float64)
    keep_at, keep_size = NK.keep_layout(blocks, gcfg)
    return NetProblem(code, dims, qpow, np.ascontiguousarray(Xf), np.ascontiguousarray(y, dtype=np.float64),
                      LOGISTIC if loss == "logistic" else EXPONENTIAL, blocks, np.array(granges, np.int64), gcfg,
                      names, shapes, groups, keep_at, keep_size)


class _NoSampler:
    """Full batch: nothing to sample (the Saver records a sampler state)."""

    def state(self):
        return None

    def restore(self, _state):
        pass


class NetState:
    """θ (w), moments (m, v), frames (s: per group s_m, s_v, age_m, age_v; then the polar blocks' kept rotations),
    step t, counters (diag)."""

    def __init__(self, prob: NetProblem, theta0):
        self.prob = prob
        self.w = prob.flat(theta0).copy()
        self.m = np.zeros_like(self.w)
        self.v = np.zeros_like(self.w)
        self.s = np.zeros(len(prob.groups) * NK.N_SC + prob.keep_size)
        self.diag = np.zeros(NK.N_DIAG, np.int64)
        self.t = 0
        self.sampler = _NoSampler()
        self.diverged = False
        self.windows = None   # mini-batch runs (set_batch): the cyclic windows' (X, y), one per step of a period

    def set_batch(self, b: int) -> None:
        """Cyclic mini-batches of b samples: step t's gradient is over positions (t−1)·b, …, t·b − 1 of
        0, 1, …, n−1, 0, 1, … (window j = t − 1 mod n/gcd(n, b)); the kernel runs one step per call on its window."""
        n = self.prob.X.shape[0]
        period = n // math.gcd(n, int(b))
        idx = [(j * int(b) + np.arange(int(b))) % n for j in range(period)]
        self.windows = [(np.ascontiguousarray(self.prob.X[i]), np.ascontiguousarray(self.prob.y[i])) for i in idx]

    def frames(self) -> np.ndarray:
        """The per-group frames (a view of s: ng × N_SC)."""
        return self.s[:len(self.prob.groups) * NK.N_SC].reshape(-1, NK.N_SC)

    def kept(self) -> np.ndarray:
        """The polar blocks' kept rotations (a view of s, laid out by prob.keep_at)."""
        return self.s[len(self.prob.groups) * NK.N_SC:]

    def advance(self, steps: int) -> int:
        p = self.prob
        sc, keep = self.frames(), self.kept()
        if self.windows is not None:
            done = 0
            for _ in range(int(steps)):
                Xb, yb = self.windows[self.t % len(self.windows)]
                k = NK.advance(p.model_code, p.dims, p.qpow, Xb, yb, p.loss, p.blocks, p.granges, p.gcfg, self.w,
                               self.m, self.v, sc, keep, p.keep_at, self.t, 1, self.diag)
                self.t += int(k)
                done += int(k)
                if k < 1:
                    self.diverged = True
                    break
            return done
        done = NK.advance(p.model_code, p.dims, p.qpow, p.X, p.y, p.loss, p.blocks, p.granges, p.gcfg, self.w, self.m,
                          self.v, sc, keep, p.keep_at, self.t, int(steps), self.diag)
        self.t += int(done)
        if done < steps:
            self.diverged = True
        return int(done)

    def theta(self) -> dict:
        return self.prob.params(self.w)

    # ---- the optimizer's state as the reference `Optimizer` exposes it (for the run diagnostics)
    def momentum(self) -> Scaled | None:
        parts = []
        sc = self.frames()
        for gi, ks in enumerate(self.prob.groups):
            mom, b1 = self.prob.gcfg[gi, NK.G_MOMENT], self.prob.gcfg[gi, NK.G_B1]
            if mom == NK.M_ADAM or (mom == NK.M_EMA and b1 > 0):
                blocks = self.prob.params(self.m)
                parts.append(Scaled({k: blocks[k] for k in ks}, float(sc[gi, 0])))
        return merge(parts) if parts and self.t > 0 else None

    def adam_ratio(self) -> dict | None:
        out = {}
        sc = self.frames()
        r = np.zeros_like(self.w)
        scratch = np.zeros(NK.N_DIAG, np.int64)
        for gi, ks in enumerate(self.prob.groups):
            c = self.prob.gcfg[gi]
            if c[NK.G_MOMENT] != NK.M_ADAM or self.t == 0:
                continue
            lo, hi = self.prob.granges[gi]
            NK.adam_ratio(self.m, self.v, sc[gi, 0], sc[gi, 1], c[NK.G_B1], c[NK.G_B2], bool(c[NK.G_BC]),
                          c[NK.G_EPS], float(self.t), int(lo), int(hi), r, scratch)
            blocks = self.prob.params(r)
            out.update({k: blocks[k] for k in ks})
        return out or None

    def underflow(self) -> dict:
        names = {NK.DIAG_ALL_FLUSHED: "all_weights", NK.DIAG_MOMENTUM_ZERO: "momentum_zero",
                 NK.DIAG_V_UNDERFLOW: "adam_v_underflow", NK.DIAG_ZERO_DIRECTION: "zero_direction"}
        return {name: int(self.diag[i]) for i, name in names.items() if self.diag[i]}


class RunKey:
    """The run's identity for checkpoint fingerprints (`Saver` calls `to_json()`)."""

    def __init__(self, prob: NetProblem, theta0, steps: int):
        self.prob, self.steps = prob, steps
        self.theta0 = hashlib.sha256(prob.flat(theta0).tobytes()).hexdigest()

    def to_json(self) -> dict:
        return {"network": self.prob.fingerprint(), "theta0": self.theta0, "steps": int(self.steps)}

    def data(self) -> np.ndarray:
        return np.concatenate([self.prob.X.ravel(), self.prob.y])
