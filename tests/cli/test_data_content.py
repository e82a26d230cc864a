"""A user's data file is known by its content wherever a result is reused or recorded (issue 32 item 4): the resume
cache and the check hash hold the sha256 of the file's bytes, not only its path, so `verify --data f.csv --resume`
after an edit of f.csv judges the edited file; a row names the file and its sha256, and its reproduce command
re-runs it on that file; a file edited while its claim runs makes an error row, never cached. One cheap claim
(data.det-adam-linf, smoke tier: one run of 3·10⁴ steps) on 8 samples."""

import dataclasses
import hashlib
import json
import os
import shlex

import numpy as np
import pytest

from ibverify import claims as registry
from ibverify.cli import main
from ibverify.runner.claim import claim_cache

CLAIM = "data.det-adam-linf"
SCALE = np.array([1.0, 5.0, 0.2, 3.0])   # the edit: features rescaled


def write_csv(path, scale=None):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((8, 4)) * (np.ones(4) if scale is None else scale)
    y = np.where(np.arange(8) % 2, 1.0, -1.0)
    np.savetxt(path, np.c_[X, y], delimiter=",", fmt="%.6f")   # N = 8 in d = 4: separable (certified at load)


@pytest.fixture
def f(tmp_path):
    path = tmp_path / "f.csv"
    write_csv(path)
    return path


def verify(capsys, data, tmp_path, *extra) -> dict:
    """The one row of `verify CLAIM --data FILE --tier smoke` (in this process)."""
    return run(capsys, tmp_path, ["verify", CLAIM, "--data", str(data), "--tier", "smoke", *extra])


def run(capsys, tmp_path, argv) -> dict:
    main([*argv, "--sequential", "-q", "--report", str(tmp_path / "r"), "--json", "-"])
    (row,) = json.loads(capsys.readouterr().out)["claims"]
    assert row["verdict"] != "error", row["error"]
    return row


def test_resume_after_the_file_is_edited_judges_the_edited_file(f, tmp_path, capsys):
    cache = str(tmp_path / "cache")
    first = verify(capsys, f, tmp_path, "--cache", cache)
    write_csv(f, SCALE)
    second = verify(capsys, f, tmp_path, "--cache", cache)
    fresh = verify(capsys, f, tmp_path, "--no-cache")
    assert second["outcome"]["figures"] == fresh["outcome"]["figures"]
    assert second["outcome"]["figures"] != first["outcome"]["figures"]
    assert second["data"]["sha256"] == fresh["data"]["sha256"] != first["data"]["sha256"]
    assert verify(capsys, f, tmp_path, "--cache", cache)["runtime_s"] == second["runtime_s"]   # the cache still works


def test_check_hash_and_cache_key_follow_the_bytes_not_the_path_or_its_mtime(f, tmp_path):
    (base,) = registry.select(registry.load_registry(), [CLAIM], "smoke")
    claim = dataclasses.replace(base, params={**base.params, "data_file": str(f), "intercept": False})

    def keys():
        return claim.check_hash(), claim_cache(tmp_path / "cache", claim, "smoke", 0).folder

    before = keys()
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns + 10**10, st.st_mtime_ns + 10**10))   # touched: same bytes, newer mtime
    assert keys() == before
    write_csv(f, SCALE)
    edited = keys()
    assert edited[0] != before[0] and edited[1] != before[1]
    write_csv(f)   # the original bytes again: the original check
    assert keys() == before
    assert claim.data_files() == {str(f): hashlib.sha256(f.read_bytes()).hexdigest()}


def test_row_and_report_name_the_file_and_its_sha256_and_reproduce_uses_it(f, tmp_path, capsys):
    row = verify(capsys, f, tmp_path, "--no-cache", "--intercept")
    path, sha = str(f.resolve()), hashlib.sha256(f.read_bytes()).hexdigest()
    assert row["data"] == {"file": path, "sha256": sha, "intercept": True}
    cmd = shlex.split(row["reproduce"])
    assert cmd[:3] == ["ibverify", "verify", CLAIM]
    assert cmd[cmd.index("--data") + 1] == path and "--intercept" in cmd
    saved = json.loads((tmp_path / "r" / "results.json").read_text())["claims"][0]
    assert saved["data"] == row["data"]
    pages = [tmp_path / "r" / "index.html", *(tmp_path / "r" / "claims").glob("*.html")]
    assert len(pages) == 2
    for page in pages:
        html = page.read_text()
        assert sha in html and path in html, page.name
    assert cmd[-2:] == ["--tier", "smoke"]
    again = run(capsys, tmp_path, [*cmd[1:], "--no-cache"])   # the reproduce command re-judges the same data
    assert again["outcome"]["figures"] == row["outcome"]["figures"] and again["data"] == row["data"]


def test_a_file_edited_while_its_claim_runs_gives_an_error_row_never_cached(f, tmp_path, capsys, monkeypatch):
    from ibverify.checks import proxy

    loaded = proxy.datasets

    def edit_then_load(p):
        out = loaded(p)
        write_csv(f, SCALE)   # edited after the check read it: the row would name bytes it was not computed from
        return out

    monkeypatch.setattr(proxy, "datasets", edit_then_load)
    cache = tmp_path / "cache"
    main(["verify", CLAIM, "--data", str(f), "--tier", "smoke", "--sequential", "-q", "--cache", str(cache),
          "--report", str(tmp_path / "r"), "--json", "-"])
    (row,) = json.loads(capsys.readouterr().out)["claims"]
    assert row["verdict"] == "error" and "changed while the claim ran" in row["error"]
    assert not list(cache.rglob("row.json"))
