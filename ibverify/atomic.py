"""The one atomic file writer: `atomic_write(path, data)`, and `atomic_write_all(files)` for a set of files.

Each file's data go to a new temporary file `.<name>.<random>.tmp` in the target's folder, which is then
renamed over the target (`os.replace`), so a reader, a crash or a kill at any moment sees the old file
or the new one, never a torn one; on an error every temporary file is removed and the files not yet
renamed are left as they were. Used by the results file, the resume cache, the run checkpoints and the
HTML report.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path


def atomic_write(path: str | os.PathLike, data: bytes | str, *, durable: bool = True) -> Path:
    """Replace the file `path` by `data` (str is written as UTF-8) atomically; creates the folder if needed.

    The new file gets the mode a plain open() would give it (0o666 & ~umask: the kernel applies the
    umask). `durable`: fsync the file before the rename and its folder after it, so the new content
    also survives a power loss; without it the write is atomic against a killed process only (the
    resume cache, which writes many small files, needs no more). Returns the path."""
    return atomic_write_all({path: data}, durable=durable)[0]


def atomic_write_all(files: Mapping[str | os.PathLike, bytes | str], *, durable: bool = True) -> list[Path]:
    """`atomic_write` for several files, all written before the first rename: the renames then run in
    the order of `files` (put an index last). An error while writing leaves every target untouched; one
    during the renames leaves the files before it new and the rest old, each whole."""
    staged: list[tuple[Path, Path]] = []
    try:
        for target, data in files.items():
            path = Path(target)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = _new_temp(path)
            staged.append((tmp, path))
            with os.fdopen(fd, "wb") as f:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    if durable:
        for folder in dict.fromkeys(path.parent for _, path in staged):
            _fsync_folder(folder)
    return [path for _, path in staged]


def _new_temp(path: Path) -> tuple[int, Path]:
    """A new file `.<name>.<random>.tmp` beside `path`, open for writing (O_EXCL: never one in use)."""
    while True:
        tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def _fsync_folder(folder: Path) -> None:
    """Make the renames in `folder` durable (best effort: some file systems cannot sync a folder)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
