"""The claim-file schema (ibverify/claim_schema.py, issue 32): a misspelt key in any section fails at loading with
one line naming the file, the section and the key and suggesting the right one; an ill-typed or out-of-range value
fails; the old data-selector names fail with their new name; the CLI turns it into one stderr line and exit 2;
every registry claim validates."""

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ibverify import IbverifyError, claim_schema
from ibverify.claims import load_claim, load_registry
from _hang_guard import HANG_GUARD_S
from _isolation import subprocess_env

ROOT = Path(__file__).resolve().parents[2]

BASE = """\
id = "t.x"
paper = "p"
result = "r"
status = "paper"
statement = "s"
check = "ibverify.checks.per_sample:direction_converges"
assumptions = ["a"]
[convention]
eps = 0.0
bias_correction = false
[params]
optimizer = "gd"
dataset = "gr"
target = "l2"
n = [3, 8]
[tolerances]
cos_min = { value = 0.99, why = "w" }
[tiers.smoke]
examples = 2
"""


def write(tmp_path, text=BASE) -> Path:
    f = tmp_path / "t.x.toml"
    f.write_text(text)
    return f


def error(tmp_path, old, new) -> str:
    assert old in BASE
    f = write(tmp_path, BASE.replace(old, new, 1))
    with pytest.raises(IbverifyError) as e:
        load_claim(f)
    msg = str(e.value)
    assert "\n" not in msg
    return msg.removeprefix(f"{f}: ")


def test_the_base_claim_loads(tmp_path):
    c = load_claim(write(tmp_path))
    assert c.params_for("smoke") == {"optimizer": "gd", "dataset": "gr", "target": "l2", "n": [3, 8], "examples": 2}


def test_top_level_misspelt_key(tmp_path):
    assert error(tmp_path, 'assumptions = ["a"]', 'asumptions = ["a"]') == \
        "[top level] unknown key 'asumptions' (did you mean 'assumptions'?)"


def test_convention_misspelt_key(tmp_path):
    assert error(tmp_path, "bias_correction = false", "bias_corection = false") == \
        "[convention] unknown key 'bias_corection' (did you mean 'bias_correction'?)"


def test_params_misspelt_key(tmp_path):
    assert error(tmp_path, 'target = "l2"', 'target = "l2"\nbeta22 = 0.9') == \
        "[params] unknown key 'beta22' (did you mean 'beta2'?)"


def test_tolerance_misspelt_name_and_field(tmp_path):
    assert error(tmp_path, "cos_min = {", "cos_mn = {") == \
        "[tolerances] unknown key 'cos_mn' (did you mean 'cos_min'?)"
    assert error(tmp_path, 'why = "w"', 'wy = "w"') == \
        "[tolerances.cos_min] unknown key 'wy' (did you mean 'why'?)"


def test_tier_misspelt_key(tmp_path):
    assert error(tmp_path, "examples = 2", "exmaples = 8") == \
        "[tiers.smoke] unknown key 'exmaples' (did you mean 'examples'?)"
    assert error(tmp_path, "[tiers.smoke]", "[tiers.fsat]") == \
        "[tiers] unknown key 'fsat' (did you mean 'fast'?)"


def test_nested_table_misspelt_key(tmp_path):
    assert error(tmp_path, "examples = 2", 'datasets = [{ dataset = "gr", nn = 3 }]') == \
        "[tiers.smoke.datasets[0]] unknown key 'nn' (did you mean 'n'?)"


def test_ill_typed_values(tmp_path):
    assert error(tmp_path, "examples = 2", 'examples = "eight"') == \
        "[tiers.smoke] examples = 'eight': must be int"
    assert error(tmp_path, "n = [3, 8]", "n = [3, 8.5]") == "[params] n = [3, 8.5]: must be int or list[int]"
    assert error(tmp_path, "bias_correction = false", "bias_correction = 0") == \
        "[convention] bias_correction = 0: must be bool"
    assert error(tmp_path, "value = 0.99", 'value = "high"') == "[tolerances.cos_min] value = 'high': must be float"


def test_out_of_range_and_choices(tmp_path):
    assert error(tmp_path, "examples = 2", "examples = -1") == \
        "[tiers.smoke] examples = -1: out of range (must be ≥ 1)"
    assert error(tmp_path, "eps = 0.0", "beta2 = 1.5") == "[convention] beta2 = 1.5: out of range (must be [0, 1])"
    assert error(tmp_path, 'dataset = "gr"', 'dataset = "gausian"') == \
        f"[params] dataset = 'gausian': must be one of {', '.join(claim_schema.DATASETS)} (did you mean 'gaussian'?)"
    assert error(tmp_path, 'status = "paper"', 'status = "papr"').startswith(
        "[top level] status = 'papr': must be one of paper, derived")


def test_old_data_selector_names_fail_with_the_new_name(tmp_path):
    assert error(tmp_path, 'dataset = "gr"', 'data = "teacher"') == \
        "[params] unknown key 'data' (renamed: did you mean 'dataset'?)"
    assert error(tmp_path, "examples = 2", "data = [{ n = 10, d = 50 }]") == \
        "[tiers.smoke] unknown key 'data' (renamed: did you mean 'datasets'?)"
    assert error(tmp_path, 'target = "l2"', 'kind = "vector"') == \
        "[params] unknown key 'kind' (renamed: did you mean 'problem'?)"
    assert error(tmp_path, "examples = 2", "datasets = 3") == \
        "[tiers.smoke] datasets = 3: must be list[table] (did you mean 'dataset_count'?)"


def test_a_foreign_check_keeps_its_own_names_but_declared_ones_are_typed(tmp_path):
    text = BASE.replace("ibverify.checks.per_sample:direction_converges", "mine:check")
    c = load_claim(write(tmp_path, text.replace('target = "l2"', 'marker = "m"')))
    assert c.params["marker"] == "m"
    f = write(tmp_path, text.replace("examples = 2", 'examples = "two"'))
    with pytest.raises(IbverifyError, match=r"\[tiers.smoke\] examples = 'two': must be int$"):
        load_claim(f)
    f = write(tmp_path, text.replace("eps = 0.0", "epss = 0.0"))   # the convention is ibverify's anyway
    with pytest.raises(IbverifyError, match=r"unknown key 'epss' \(did you mean 'eps'\?\)$"):
        load_claim(f)


@pytest.mark.parametrize("args", [["claims"], ["verify", "--tier", "smoke", "t.x"]])
def test_cli_exits_2_with_one_line(tmp_path, args):
    (tmp_path / "claims").mkdir()
    write(tmp_path / "claims", BASE.replace("examples = 2", "exmaples = 8"))
    r = subprocess.run([sys.executable, "-m", "ibverify", "--claims-dir", str(tmp_path / "claims"), *args],
                       capture_output=True, text=True, timeout=HANG_GUARD_S, env=subprocess_env(), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == [f"ibverify: error: {tmp_path / 'claims' / 't.x.toml'}: [tiers.smoke] unknown key "
                                     "'exmaples' (did you mean 'examples'?)"]


def test_every_registry_claim_validates():
    files = sorted((ROOT / "claims").glob("*.toml"))
    assert len(files) >= 120
    for f in files:
        assert claim_schema.validate(tomllib.loads(f.read_text()), f) is None
    assert len(load_registry(ROOT / "claims")) == len(files)


def test_the_renamed_selectors_are_used_by_the_registry():
    claims = {c.id: c for c in load_registry(ROOT / "claims")}
    assert claims["gronich.beyond.relu"].params["dataset"] == "teacher"
    assert claims["gronich.degree1.adam-linf"].params["problem"] == "vector"
    assert [g["n"] for g in claims["baek.proxy-fixed-point"].tiers["full"]["datasets"]][:1] == [10]
    assert claims["gronich.control.muon-polar-not-spectral"].tiers["smoke"]["dataset_count"] == 1


def test_every_optimizer_knob_and_read_tolerance_is_declared():
    from ibverify.optim.table import KNOBS

    assert set(KNOBS) <= set(claim_schema.PARAMS)
    assert claim_schema.PARAMS["beta2"].lo == 0 and claim_schema.PARAMS["beta2"].hi == 1
    used = {n for c in load_registry(ROOT / "claims") for n in c.tolerances}
    assert used <= set(claim_schema.TOLERANCES)
