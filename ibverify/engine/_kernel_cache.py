"""numba's on-disk kernel cache, keyed by the engine's source text.

numba recompiles a cached kernel when the kernel's own file changes, but not when a jitted function it calls
from another file does (network → polar, lanes → kernels): after such an edit it would silently run the old
code. While the engine's modules are imported (their kernels are bound to a cache folder then),
numba.config.CACHE_DIR points at <base>/numba-<h>, h a hash of every engine source file, so any edit of any of
them gives a fresh folder. <base> is $NUMBA_CACHE_DIR if set, else the engine's __pycache__, else (read-only
install) ~/.cache/ibverify. Folders of other hashes under <base> are removed (best effort).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path

import numba

ENGINE = Path(__file__).resolve().parent


def source_hash(folder: Path = ENGINE) -> str:
    """sha256 (16 hex digits) of the names and bytes of the folder's *.py files, in name order."""
    h = hashlib.sha256()
    for f in sorted(folder.glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _writable_base(folder: Path) -> Path | None:
    user = numba.config.CACHE_DIR
    for base in ([Path(user)] if user else [folder / "__pycache__", Path.home() / ".cache" / "ibverify"]):
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(base, os.W_OK):
            return base
    return None


@contextlib.contextmanager
def source_keyed_cache(folder: Path = ENGINE):
    """Within the block, numba caches kernels under <base>/numba-<source_hash(folder)> (see the module doc)."""
    old = numba.config.CACHE_DIR
    base = _writable_base(folder)
    if base is not None:
        target = base / f"numba-{source_hash(folder)}"
        for stale in base.glob("numba-*"):
            if stale != target:
                shutil.rmtree(stale, ignore_errors=True)
        numba.config.CACHE_DIR = str(target)
    try:
        yield
    finally:
        numba.config.CACHE_DIR = old
