"""ci/migrate_check_hash_accelerators.py (one-off, issue 50 item 3): on a constructed baseline, a row current under the
old rule gets the new rule's hash, a row already current under the new one and a stale row are left, and nothing but
check_hash values changes in the file's text."""

from __future__ import annotations

import importlib.util
import json

import pytest

from ibverify import codehash
from ibverify.errors import IbverifyError

SCRIPT = codehash.ROOT.parent / "ci" / "migrate_check_hash_accelerators.py"
_spec = importlib.util.spec_from_file_location("migrate", SCRIPT)
migrate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(migrate)

HASHES = {"a": ("old-a", "new-a"), "b": ("old-b", "new-b"), "c": ("old-c", "new-c")}


def _baseline(tmp_path, rows):
    f = tmp_path / "baseline.json"
    f.write_text(json.dumps({"tier": "full", "claims": rows}, indent=1, ensure_ascii=False) + "\n")
    return f


def test_each_row_by_the_rule(tmp_path):
    rows = [{"id": "a", "check_hash": "old-a", "verdict": "holds"}, {"id": "b", "check_hash": "new-b"},
            {"id": "c", "check_hash": "made-elsewhere"}, {"id": "gone", "check_hash": "old-a-not-its-own"}]
    f = _baseline(tmp_path, rows)
    before = f.read_text()
    line = migrate.migrate(f, HASHES)
    assert line.startswith(f"{f}: 1 rows migrated to the new rule, 1 already current under it, 2 left")
    assert line.endswith(": c, gone")
    assert f.read_text() == before.replace('"check_hash": "old-a"', '"check_hash": "new-a"')
    assert [r["check_hash"] for r in json.loads(f.read_text())["claims"]] == [
        "new-a", "new-b", "made-elsewhere", "old-a-not-its-own"]


def test_nothing_to_migrate_leaves_the_file_untouched(tmp_path):
    f = _baseline(tmp_path, [{"id": "b", "check_hash": "new-b"}])
    mtime = f.stat().st_mtime_ns
    assert "0 rows migrated" in migrate.migrate(f, HASHES) and f.stat().st_mtime_ns == mtime


def test_a_hash_that_appears_twice_in_the_text_is_refused(tmp_path):
    f = _baseline(tmp_path, [{"id": "a", "check_hash": "old-a"}, {"id": "other", "check_hash": "old-a"}])
    text = f.read_text()
    with pytest.raises(IbverifyError, match="not once"):
        migrate.migrate(f, HASHES)
    assert f.read_text() == text
