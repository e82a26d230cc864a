"""`bias --data`: a ragged CSV's error names its line; the file's all-zero columns are named (a note on stderr and
`data.inert_coordinates` in --json); the text header says whose defaults an optimizer ran with (issue 47 items 2, 6)."""

import json

from ibverify.cli import main
from ibverify.cli.bias import text

RAGGED = "a,b,label\n1,2,1\n3,4,-1\n\n5,6,7,1\n-1,-2,-1\n"


def test_a_ragged_csv_is_refused_naming_its_line(capsys, tmp_path):
    p = tmp_path / "ragged.csv"
    p.write_text(RAGGED)
    rc = main(["bias", "--optimizer", "gd", "--data", str(p), "--model", "linear", "--tier", "smoke", "--quiet"])
    out, err = capsys.readouterr()
    assert rc == 2 and not out.strip()
    assert err.strip() == ("ibverify: error: ragged.csv: line 5 has 4 columns but line 2, the first row, has 3: "
                           "'5,6,7,1'")


def test_the_all_zero_columns_are_named(capsys, tmp_path):
    p = tmp_path / "z.csv"
    p.write_text("x1,x2,x3,x4,label\n2,0,1,0,1\n1,0,2,0,1\n-1,0,-2,0,-1\n-2,0,-0.5,0,-1\n")
    rc = main(["bias", "--optimizer", "gd", "--data", str(p), "--model", "linear", "--tier", "smoke", "--quiet",
               "--json"])
    out, err = capsys.readouterr()
    assert rc in (0, 1), err
    j = json.loads(out)
    j = j[0] if isinstance(j, list) else j
    assert j["data"] == {"file": str(p), "inert_coordinates": [1, 3]}
    assert "2 all-zero columns set aside (left at 0 by every optimizer): 1, 3" in err


def _answer(optimizer, knobs, **extra):
    return {"optimizer": optimizer, "knobs": knobs, "tier": "smoke", "seed": 0, "models": [], **extra}


def test_the_header_says_whose_defaults():
    assert text(_answer("adam", {})).splitlines()[0] == "adam (the table's defaults; tier smoke, seed 0)"
    assert text(_answer("adam", {"lr": 0.1})).splitlines()[0] == "adam (lr = 0.1; tier smoke, seed 0)"
    for name in ("torch:Adam(eps=0)", "optax:adam(eps=0.0)"):
        assert text(_answer(name, {})).splitlines()[0] == f"{name} (its own defaults; tier smoke, seed 0)"
    head = text(_answer("my", {}, source="my.py")).splitlines()[0]   # a user's file: its defaults, then the table's
    assert head == "my from my.py (the table's defaults; tier smoke, seed 0)"
