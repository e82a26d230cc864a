"""Resumable compiled runs: the whole state in one `.npz`, written atomically.

Written with `atomic.atomic_write` (a temporary file beside `<file>`, fsync, rename over `<file>`, fsync
the folder): a SIGKILL at any moment leaves either the previous or the new checkpoint, never a torn one
(at worst a stray `.<file>.<random>.tmp`, never read). Saves happen only at chunk boundaries, which
depend on the step count alone, so a resumed run replays exactly the same kernel calls and sampler
draws as an uninterrupted one: the final state is bit-identical.
A checkpoint records a fingerprint of (data, spec, horizon, checkpoints, log_frame); resuming
against anything else is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import signal
import time
from pathlib import Path

import numpy as np

from ..errors import IbverifyError
from ..atomic import atomic_write

VERSION = 1


class Saver:
    def __init__(self, path, every: float, Z, spec, cps, log_frame: bool):
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise IbverifyError(f"checkpoint folder {self.path.parent} does not exist; create it or choose another "
                                f"--checkpoint path")
        if self.path.is_dir():
            raise IbverifyError(f"--checkpoint {self.path} is a folder; give a file name")
        if not (every >= 0):
            raise IbverifyError(f"--checkpoint-every must be >= 0 seconds, got {every}")
        self.every = every
        self.last = time.monotonic()
        self.stop = False
        h = hashlib.sha256(np.ascontiguousarray(Z).tobytes())
        h.update(json.dumps([spec.to_json(), np.asarray(cps).tolist(), log_frame], sort_keys=True).encode())
        self.fingerprint = h.hexdigest()

    @contextlib.contextmanager
    def interruptible(self):
        """Ctrl-C sets a flag; the run saves at the next chunk boundary and stops."""
        def handler(signum, frame):
            self.stop = True

        try:
            old = signal.signal(signal.SIGINT, handler)
        except ValueError:  # not the main thread
            yield
            return
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, old)

    def maybe_save(self, st, ws, j: int) -> None:
        if self.stop:
            self.save(st, ws, j)
            raise IbverifyError(f"interrupted at step {st.t}; checkpoint kept in {self.path} (continue with --resume)")
        if time.monotonic() - self.last >= self.every:
            self.save(st, ws, j)

    def save(self, st, ws, j: int) -> None:
        meta = {"version": VERSION, "fingerprint": self.fingerprint, "t": int(st.t), "j": int(j),
                "sampler": st.sampler.state()}
        buf = io.BytesIO()
        np.savez(buf, w=st.w, m=st.m, v=st.v, s=st.s, diag=st.diag, ws=ws[:j], meta=np.array(json.dumps(meta)))
        try:
            atomic_write(self.path, buf.getvalue())
        except OSError as e:
            raise IbverifyError(f"cannot write checkpoint {self.path}: {e.strerror or e}") from None
        self.last = time.monotonic()

    def load(self, st, ws) -> int:
        if not self.path.exists():
            raise IbverifyError(f"no checkpoint to resume from: {self.path}")
        corrupt = IbverifyError(f"checkpoint {self.path} is corrupt; delete it or rerun without --resume")
        try:
            with np.load(self.path, allow_pickle=False) as f:
                meta = json.loads(str(f["meta"]))
                arrays = {k: f[k] for k in ("w", "m", "v", "s", "diag", "ws")}
        except Exception:  # empty, truncated, bit-flipped (Bad CRC-32), not an archive, keys missing
            raise corrupt from None
        if not isinstance(meta, dict):
            raise corrupt
        if meta.get("version") != VERSION or meta.get("fingerprint") != self.fingerprint:
            raise IbverifyError(f"checkpoint {self.path} belongs to a different run "
                                f"(data, optimizer or horizon differ)")
        try:
            for k in ("w", "m", "v", "s", "diag"):
                getattr(st, k)[:] = arrays[k]
            st.t = int(meta["t"])
            st.sampler.restore(meta["sampler"])
            j = int(meta["j"])
            ws[:j] = arrays["ws"]
        except Exception:  # the fingerprint matched but the arrays do not fit this run
            raise corrupt from None
        return j
