"""`ibverify train` is one command for every model: a block-model run of a paper-2 claim's optimizer is the
claim's algorithm, and --help lists every optimizer of the table with its own geometry."""

import json

import numpy as np
import pytest

from ibverify.checks.rules import OUT_OF_REACH
from ibverify.recipes.settings import network_spec as run_spec
from ibverify.claims import load_registry
from ibverify.cli import main
from ibverify.data import netdata
from ibverify.engine import run
from ibverify.models import make_model
from ibverify.optim.table import ROWS, names


def test_train_two_layer_adam_runs_the_paper2_claims_algorithm(capsys):
    claim = {c.id: c for c in load_registry()}["gronich.adam-linf"]
    params = {**claim.convention, **claim.params_for("fast")}
    argv = ["train", "--data", "teacher", "--model", "two-layer", "--optimizer", "adam", "--steps", "300",
            "--lr-decay", str(params["lr_decay"]), "--beta1", str(params["beta1"]), "--beta2", str(params["beta2"]),
            "--lr", str(params["lr"]), "--seed", "3", "--json", "--quiet"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    spec = run_spec({**params, "steps": 300})
    knobs = {**spec.for_block(3.0).to_json(), "seed": 3}           # --seed also seeds θ0 and the data
    assert out["spec"] == knobs                                   # same knobs, bias correction on, ε = 0
    assert out["spec"]["bias_correction"] is True and out["spec"]["eps"] == 0.0
    data = netdata.make_data("teacher", d=6, seed=3)
    model = make_model("two-layer", 6, width=16, q=2.0)
    r = run(data, spec, 300, model=model, init_seed=3, init_scale=0.5, checkpoints=[300])
    for k, v in r.theta.items():                                  # and the very same trajectory
        assert np.array_equal(np.asarray(out["theta"][k]), v)


def test_train_adam_default_convention_follows_the_model(capsys):
    assert main(["train", "--data", "teacher", "--model", "linear", "--optimizer", "adam", "--steps", "5",
                 "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["spec"]["bias_correction"] is True      # paper 2 (block model)
    from ibverify.optim import OptimizerSpec

    assert OptimizerSpec("adam").resolved(4).bias_correction is False                  # paper 1 (vector model)


def test_train_help_lists_every_optimizer_with_its_own_geometry(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    for r in ROWS:
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(r.name + " ") or
                    ln.strip().startswith(r.name + " ("))
        assert f"({r.geometry}; " in line, line
    assert set(names()) <= set(text.replace(",", " ").replace("(", " ").replace(")", " ").split())


@pytest.mark.parametrize("content,argv_extra", [
    (b"not an npz", []),                                               # a damaged file
    (None, ["--seed", "-1"]),                                          # the option is named
])
def test_block_model_runs_take_bad_input_in_one_line(tmp_path, capsys, content, argv_extra):
    path = tmp_path / "data.npz"
    if content is None:
        np.savez(path, X=np.eye(4), y=np.array([1.0, -1.0, 1.0, -1.0]))
    else:
        path.write_bytes(content)
    rc = main(["train", "--data", str(path), "--model", "two-layer", "--optimizer", "muon", "--steps", "20", "-q",
               *argv_extra])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    if argv_extra:
        assert "--seed" in err


def test_block_model_runs_read_csv_files(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    path = tmp_path / "data.csv"
    rows = [",".join(f"{v:.6f}" for v in row) + f",{t}" for row, t in zip(X, y, strict=True)]
    path.write_text("a,b,c,label\n" + "\n".join(rows))
    assert main(["train", "--data", str(path), "--model", "linear", "--optimizer", "signum", "--steps", "50",
                 "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 12 and out["d"] == 3 and out["model"]["model"] == "linear"


def test_train_reports_the_kernels_first_call_apart_from_the_run(capsys, tmp_path):
    # issue 21: a first `train` reported ~49 s of compiling as run time ("1000 steps in 48.70s")
    path = tmp_path / "d.npz"
    np.savez(path, X=np.array([[1.0, 0.2], [0.8, -0.4], [-1.0, 0.1]]), y=np.array([1.0, 1.0, -1.0]))
    for argv in (["--data", str(path), "--optimizer", "inc-adam", "--steps", "100", "--no-compare"],
                 ["--data", "teacher", "--model", "two-layer", "--optimizer", "signum", "--steps", "100"]):
        assert main(["train", *argv, "--json", "-q"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["compile_seconds"] >= 0 and out["seconds"] >= 0
        assert main(["train", *argv, "-q"]) == 0
        first = next(ln for ln in capsys.readouterr().out.splitlines() if "100 steps in" in ln)
        assert ("s loading the compiled kernels)" in first or "kernels: first run only" in first)


def test_train_judges_convergence_on_the_gaps_with_a_fitted_rate(tmp_path, capsys):
    # issue 21: `train` said nothing when a run had not converged (or not even separated the data)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 5))
    path = tmp_path / "d.npz"
    np.savez(path, X=X, y=np.sign(X @ np.ones(5)))
    assert main(["train", "--data", str(path), "--optimizer", "det-adam", "--steps", "1000", "--json", "-q"]) == 0
    cap = capsys.readouterr()
    out = json.loads(cap.out)
    t = out["comparison"]["l2"]["trend"]
    assert out["separated"]["now"] and out["separated"]["since_step"] <= 1000
    assert t["slope"] < 0 and not t["reached"] and t["crossing_step"] > 1000     # falling, not there yet
    on_track = t["crossing_step"] <= OUT_OF_REACH   # the fitted crossing decides the wording (rules.RateFit)
    assert "not converged to any candidate limit" in cap.err
    assert ("on track" if on_track else "falling too slowly to reach") in cap.err
    assert main(["train", "--data", str(path), "--optimizer", "inc-adam", "--steps", "3", "-q"]) == 0
    assert "not separated yet" in capsys.readouterr().out


def test_block_model_train_judges_convergence_on_the_kkt_residual_trend(capsys):
    # issue 21 item 4: a network `train` printed the final KKT residual only, with no trend and no "not converged"
    argv = ["train", "--data", "teacher", "--model", "two-layer", "--optimizer", "signum", "--steps", "3000", "-q"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    tr = out["kkt_trend"]
    assert len(tr["steps"]) >= 3 and tr["steps"][-1] == 3000 and tr["steps"][0] >= 300
    assert len(tr["residual"]) == len(tr["steps"]) and tr["residual"][-1] == pytest.approx(out["kkt"]["fenchel"])
    assert not tr["reached"] and tr["slope"] < 0 and tr["crossing_step"] > 3000
    assert main(argv) == 0
    text = capsys.readouterr().out
    words = "on track: reaches 0.05 at ≈" if tr["crossing_step"] <= OUT_OF_REACH else "too slowly to reach 0.05"
    assert "over the last decade (steps" in text and words in text
    assert "note: not converged: the linf KKT residual" in text and "kkt_trend" not in text   # raw keys: --json only
