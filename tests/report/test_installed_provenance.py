"""Issue 35 item 4: an installed copy (`pip install .`, no git checkout) is named by its version and the hash of its
source in every row and report, not "no git checkout"."""

import subprocess

import pytest

from ibverify import __version__
from ibverify.codehash import package_code_hash
from ibverify.report import html
from ibverify.runner import claim as runner_claim


def _no_git(*a, **k):
    raise FileNotFoundError("git")


def test_provenance_outside_a_checkout_names_version_and_source_hash(monkeypatch):
    monkeypatch.setattr(runner_claim.subprocess, "run", _no_git)
    p = runner_claim.provenance.__wrapped__()   # uncached: git is patched here
    assert p == {"commit": "", "dirty": None, "version": __version__, "source_hash": package_code_hash()}
    assert len(p["source_hash"]) >= 40


def test_provenance_in_a_checkout_keeps_the_commit_and_adds_the_source_hash(monkeypatch):
    seen = []

    def git(argv, **k):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, "abc123\n" if "rev-parse" in argv else "", "")

    package_code_hash()
    monkeypatch.setattr(runner_claim.subprocess, "run", git)
    p = runner_claim.provenance.__wrapped__()   # uncached: git is patched here
    assert p["commit"] == "abc123" and p["dirty"] is False and p["source_hash"] == package_code_hash(), seen


ROW = {"id": "x.one", "paper": "P", "result": "r", "status": "paper", "statement": "s", "expect": "holds",
       "verdict": "holds", "as_expected": True, "tier": "smoke", "seed": 0, "runtime_s": 1.0, "outcome": None,
       "error": None, "created": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize("commit", ["", "0123456789abcdef0123"])
def test_the_report_index_names_the_installed_code(commit):
    row = {**ROW, "commit": commit, "dirty": None if not commit else False, "version": "9.9",
           "source_hash": "feedbeef" * 8}
    groups = html.provenance_groups([row])
    assert groups == [{"code": commit[:12] or "ibverify 9.9", "dirty": False, "source": row["source_hash"], "rows": 1,
                       "first": row["created"], "last": row["created"]}]
    results = {"tier": "smoke", "seed": 0, "created": row["created"], "claims": [row], "versions": {},
               "summary": {"total": 1, "as_expected": 1, "unexpected": 0, "inconclusive": 0, "errors": 0}}
    try:
        page = html.index_page(results, html.page_names([row]))
    except (KeyError, TypeError) as e:   # the page needs more of a row than this one has
        pytest.fail(f"index_page: {e!r}")
    assert "no git checkout" not in page
    assert (commit[:12] or "ibverify 9.9") in page and "feedbeeffeed" in page
