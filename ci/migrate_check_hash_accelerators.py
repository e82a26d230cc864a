"""One-off migration of the committed baselines' check hashes to the accelerator rule (issue 50 item 3).

    python3 ci/migrate_check_hash_accelerators.py BASE BASELINE.json ...

BASE is the last commit of the old rule (ibverify/codehash.py there). The old rule's hash of a claim at this
commit is Claim.check_hash computed on this commit's code with codehash.py as it was at BASE (run in a child
process on such a copy; claims.py's statements are the same under both rules). A row whose stored hash equals it
was made from code identical to this commit's over the whole old closure but codehash.py, the hash rule itself,
which decides no verdict. The new rule counts a subset of that closure (checked here, claim by claim: new closure
⊆ old closure less ibverify.codehash), so the row is current under the new rule too: its hash is replaced by the
new rule's. A row not current under the old rule is left as it is (still stale). Nothing but `check_hash` values
changes: each is replaced in the file's text, and the result is checked to differ from the input only there.

Prints one line per file (migrated / already current under the new rule / left as it was). Exit 2 on bad input.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from ibverify import codehash
from ibverify.atomic import atomic_write
from ibverify.claims import load_registry
from ibverify.errors import IbverifyError

REPO = codehash.ROOT.parent

OLD_RULE = r"""
import json, sys
from ibverify import codehash
from ibverify.claims import load_registry
out = {}
for c in load_registry():
    c.function()
    mod = sys.modules[c.check.partition(":")[0]]
    skip = () if c.names_foreign_optimizer() else codehash.NOT_DECIDING
    mods = codehash.closure(codehash.ROOT, codehash.PACKAGE, mod.__name__, mod.__file__, skip)
    out[c.id] = [c.check_hash(), sorted(mods)]
print(json.dumps(out))
"""


def git(*args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True).stdout


def old_rule(base: str) -> dict[str, tuple[str, set[str]]]:
    """claim id → (old rule's hash at HEAD, old closure's modules), from a child process on HEAD's committed
    ibverify/ and claims/ with BASE's codehash.py."""
    if git("status", "--porcelain", "--", "ibverify", "claims").strip():
        raise IbverifyError("ibverify/ or claims/ has uncommitted changes: the hashes would not be HEAD's")
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=BytesIO(git("archive", "--format=tar", "HEAD", "ibverify", "claims"))) as tar:
            tar.extractall(tmp, filter="data")
        Path(tmp, "ibverify", "codehash.py").write_bytes(git("show", f"{base}:ibverify/codehash.py"))
        env = {**os.environ, "PYTHONPATH": tmp, "IBVERIFY_CLAIMS": str(Path(tmp, "claims"))}
        done = subprocess.run([sys.executable, "-c", OLD_RULE], cwd=tmp, env=env, capture_output=True, text=True)
        if done.returncode:
            raise IbverifyError(f"the old rule's child process failed: {done.stderr.strip().splitlines()[-1:]}")
        return {k: (h, set(m)) for k, (h, m) in json.loads(done.stdout).items()}


def pairs(base: str) -> dict[str, tuple[str, str]]:
    """claim id → (old rule's hash, new rule's hash) at HEAD, for the claims whose new closure ⊆ old closure less
    ibverify.codehash."""
    old = old_rule(base)
    out = {}
    for c in load_registry(REPO / "claims"):
        c.function()
        mod = sys.modules[c.check.partition(":")[0]]
        skip = () if c.names_foreign_optimizer() else codehash.NOT_DECIDING
        accelerated = () if mod.__name__ in codehash.KERNEL_JUDGES else codehash.ACCELERATED
        new = codehash.check_closure(codehash.ROOT, codehash.PACKAGE, mod.__name__, Path(mod.__file__), skip,
                                     accelerated)
        if c.id in old and set(new) <= old[c.id][1] - {"ibverify.codehash"}:
            out[c.id] = (old[c.id][0], c.check_hash())
    return out


def migrate(path: Path, hashes: dict[str, tuple[str, str]]) -> str:
    text = path.read_text(encoding="utf-8")
    done, current, left = [], [], []
    for row in json.loads(text)["claims"]:
        stored = row.get("check_hash")
        old, new = hashes.get(row["id"], (None, None))
        if stored and stored == new:
            current.append(row["id"])
        elif stored and stored == old:
            needle = f'"check_hash": "{stored}"'
            if text.count(needle) != 1:
                raise IbverifyError(f"{path}: check_hash {stored} of {row['id']} is not once in the file's text")
            text = text.replace(needle, f'"check_hash": "{new}"')
            done.append(row["id"])
        else:
            left.append(row["id"])
    before, after = json.loads(path.read_text(encoding="utf-8")), json.loads(text)
    for r in before["claims"] + after["claims"]:
        r.pop("check_hash", None)
    if before != after:
        raise IbverifyError(f"{path}: the migration would change more than check_hash values")
    if done:
        atomic_write(path, text)
    return (f"{path}: {len(done)} rows migrated to the new rule, {len(current)} already current under it, "
            f"{len(left)} left as they were (not current under the old rule){': ' + ', '.join(left) if left else ''}")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: migrate_check_hash_accelerators.py BASE BASELINE.json ...", file=sys.stderr)
        return 2
    try:
        hashes = pairs(argv[0])
        for name in argv[1:]:
            print(migrate(Path(name), hashes))
    except (IbverifyError, OSError, ValueError, KeyError, subprocess.CalledProcessError) as e:
        print(f"migrate: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
