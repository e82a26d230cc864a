"""`ibverify verify --data FILE` (issue 21 item 3): the data.* claims judged on a user's dataset, three-valued."""

import json

import numpy as np
import pytest

from ibverify.cli import main


@pytest.fixture
def gaussian(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((8, 12))
    y = np.where(np.arange(8) % 2, 1.0, -1.0)
    path = tmp_path / "mine.npz"
    np.savez(path, X=X, y=y)        # N < d: separable; ŵ2, ℓ∞ and the fixed point differ
    return path


def test_bad_data_file_is_one_line_and_exit_2_before_anything_runs(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    assert main(["verify", "--data", str(bad), "--sequential", "-q", "--report", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bad.npz" in err and not (tmp_path / "r").exists()


def test_data_runs_only_the_data_claims_and_intercept_needs_data(gaussian, tmp_path, capsys):
    assert main(["verify", "baek.gr-inc-adam-l2", "--data", str(gaussian), "-q", "--report", str(tmp_path)]) == 2
    assert "--data runs the data.* claims only" in capsys.readouterr().err
    assert main(["verify", "data.", "--intercept", "-q", "--report", str(tmp_path)]) == 2
    assert "--intercept applies to --data FILE only" in capsys.readouterr().err


def test_the_data_claims_judge_the_users_file(gaussian, tmp_path, capsys):
    out = tmp_path / "r"
    rc = main(["verify", "data.inc-adam-fixed-point", "data.control.inc-adam-linf", "--data", str(gaussian),
               "--tier", "fast", "--sequential", "--no-cache", "-q", "--report", str(out), "--json", "-"])
    res = json.loads(capsys.readouterr().out)
    rows = {c["id"]: c for c in res["claims"]}
    assert set(rows) == {"data.inc-adam-fixed-point", "data.control.inc-adam-linf"}
    for c in rows.values():
        assert c["params"]["data_file"] == str(gaussian.resolve())
        assert "mine.npz (N=8, d=12)" in json.dumps(c["outcome"]["table"], ensure_ascii=False)
    ctl = rows["data.control.inc-adam-linf"]
    assert ctl["verdict"] == "refuted" and "goes to the fixed-point answer" in json.dumps(ctl["outcome"]["table"])
    assert rows["data.inc-adam-fixed-point"]["verdict"] in ("holds", "inconclusive")
    assert rc == (0 if rows["data.inc-adam-fixed-point"]["verdict"] == "holds" else 3)
    assert (out / "index.html").exists()
