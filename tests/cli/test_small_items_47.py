"""Issue 47 item 6: a ragged CSV's error names its line; a step size that is not a finite number > 0 (--lr,
--lr-matrix, --lr-vector; inf, nan, 0, negative) is one line and exit 2 in every command that takes it, before any
file is read; `train` refuses an unknown optimizer before it reads (and says "loaded") the data; its text header
names the optimizer by its canonical name (an alias: the table's row)."""

import json

import numpy as np
import pytest

from ibverify.cli import main
from ibverify.cli.commands import build_parser
from ibverify.cli.output import ragged_csv_line

TOY = "x1,x2,x3,label\n2.0,1.0,0.5,1\n1.5,-0.5,1.0,1\n-1.0,-2.0,0.3,-1\n-2.0,0.5,-1.0,-1\n"


def ib(capsys, *args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc, out, err):
    assert rc == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not out.strip(), out            # nothing was loaded or printed before the refusal
    return err.strip()


# ---------------------------------------------------------------- a ragged CSV names its line
RAGGED = "a,b,label\n1,2,1\n3,4,-1\n\n5,6,7,1\n-1,-2,-1\n"   # line 5 has 4 cells (line 4 is blank)


@pytest.mark.parametrize("argv", [["margin"], ["predict"], ["train", "--optimizer", "gd"],
                                  ["train", "--model", "two-layer", "--optimizer", "gd", "--steps", "2"],
                                  ["train", "--model", "two-layer", "--optimizer", "gd", "--steps", "2",
                                   "--standardize"],
                                  ["verify", "--tier", "smoke", "--quiet"]])
def test_a_ragged_csv_is_refused_naming_its_line(capsys, tmp_path, argv):
    p = tmp_path / "ragged.csv"
    p.write_text(RAGGED)
    err = one_line_error(*ib(capsys, *argv, "--data", p))
    assert err == "ibverify: error: ragged.csv: line 5 has 4 columns but line 2, the first row, has 3: '5,6,7,1'"


@pytest.mark.parametrize("text,expected", [
    (RAGGED, "ragged.csv: line 5 has 4 columns but line 2, the first row, has 3: '5,6,7,1'"),
    ("1,2,1\n3,4,5,-1\n", "ragged.csv: line 2 has 4 columns but line 1, the first row, has 3: '3,4,5,-1'"),  # no header
    ("1,2,3,1\n3,4,-1\n", "ragged.csv: line 2 has 3 columns but line 1, the first row, has 4: '3,4,-1'"),
    ("a,b,label\n1,2,1\n3,4,-1\n", None),          # every row as wide as the first: not ragged
    ("a,b\n1,2,1\n3,4,-1\n", None),                # a header of another width: the reader's own error (line 1)
    ("a,b,label\n1,2,1\n3,4,5,-1\nx,y,1\n", None),  # a non-numeric line: the reader's own error names it
    ("1,x,1\n3,4,5,-1\n", None),                   # line 1 mixes numbers and text: the reader's own error
])
def test_ragged_csv_line_finds_the_first_line_of_another_width(tmp_path, text, expected):
    p = tmp_path / "ragged.csv"
    p.write_text(text)
    assert ragged_csv_line(p) == expected
    assert ragged_csv_line(tmp_path / "absent.csv") is None
    q = tmp_path / "ragged.npz"
    q.write_text(text)
    assert ragged_csv_line(q) is None              # an .npz is not read as CSV


def test_a_csv_error_that_is_not_raggedness_keeps_the_readers_line(capsys, tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("a,b,label\n1,2,1\n3,4,5,-1\nx,y,1\n")
    err = one_line_error(*ib(capsys, "margin", "--data", p))
    assert "line 4 is not numeric" in err


def test_a_ragged_csv_with_a_header_of_the_rows_width_is_still_named(capsys, tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("a,b,label\n1,2,1\n3,4,-1\n1,2\n")
    err = one_line_error(*ib(capsys, "train", "--data", p, "--optimizer", "gd"))
    assert err.endswith("r.csv: line 4 has 2 columns but line 2, the first row, has 3: '1,2'")


# ---------------------------------------------------------------- step sizes
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "0", "-0.5"])
@pytest.mark.parametrize("flag", ["--lr", "--lr-matrix", "--lr-vector"])
@pytest.mark.parametrize("command", [["train", "--optimizer", "gd", "--data", "DATA"],
                                     ["train", "--optimizer", "gd", "--model", "two-layer", "--data", "DATA"],
                                     ["bias", "--optimizer", "gd"]])
def test_a_step_size_must_be_a_finite_positive_number(capsys, tmp_path, command, flag, value):
    p = tmp_path / "toy.csv"
    p.write_text(TOY)
    argv = [str(p) if a == "DATA" else a for a in command]
    err = one_line_error(*ib(capsys, *argv, f"{flag}={value}"))
    shown = f"{float(value):g}"
    assert err == f"ibverify: error: {command[0]}: {flag} must be a finite number > 0, got {shown}"


@pytest.mark.parametrize("value", ["1e-300", "0.1", "1e300"])
def test_a_finite_positive_step_size_is_taken_as_given(value):
    for argv in (["train", "--data", "x.csv", "--optimizer", "gd"], ["bias", "--optimizer", "gd"]):
        args = build_parser().parse_args([*argv, "--lr", value, "--lr-matrix", value, "--lr-vector", value])
        assert args.lr == args.lr_matrix == args.lr_vector == float(value)


# ---------------------------------------------------------------- the optimizer before the data
@pytest.mark.parametrize("model", [[], ["--model", "two-layer"]])
def test_train_refuses_an_unknown_optimizer_before_it_reads_the_data(capsys, tmp_path, model):
    p = tmp_path / "toy.csv"
    p.write_text(TOY)
    err = one_line_error(*ib(capsys, "train", "--data", p, "--optimizer", "nope", *model))   # no "loaded ..." line
    assert err.startswith("ibverify: error: unknown optimizer 'nope'")
    # the optimizer is judged first: a missing file is not what is reported
    err = one_line_error(*ib(capsys, "train", "--data", tmp_path / "absent.csv", "--optimizer", "nope", *model))
    assert err.startswith("ibverify: error: unknown optimizer 'nope'")
    # a good optimizer on the same good file: the data are loaded and said so
    rc, out, err = ib(capsys, "train", "--data", p, "--optimizer", "gd", "--epochs", "1", "--no-compare")
    assert rc == 0 and out.startswith(f"loaded 4 × 3 from {p}\n"), err


# ---------------------------------------------------------------- the canonical name in the text header
def test_train_text_header_names_the_optimizer_canonically(capsys, tmp_path):
    p = tmp_path / "toy.csv"
    p.write_text(TOY)
    rc, out, err = ib(capsys, "train", "--data", p, "--optimizer", "ngd", "--epochs", "2", "--no-compare", "-q")
    assert rc == 0, err
    assert out.splitlines()[0].startswith("nsd-l2: 2 steps in "), out       # ngd is an alias of nsd-l2 (full batch)
    rc, out2, err = ib(capsys, "train", "--data", p, "--optimizer", "ngd", "--epochs", "2", "--no-compare", "--json")
    assert rc == 0 and json.loads(out2)["optimizer"]["name"] == "ngd"       # the JSON keeps the name as given
    rc, out3, err = ib(capsys, "train", "--data", p, "--optimizer", "nsd-l2", "--epochs", "2", "--no-compare", "-q")
    assert rc == 0 and out3.splitlines()[1:] == out.splitlines()[1:]       # and the very same run
    w = np.asarray(json.loads(out2)["w"])
    assert np.all(np.isfinite(w)) and np.linalg.norm(w) > 0
