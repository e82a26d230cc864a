"""README.md stays true: the quick start, the claim table (= the registry), the documented commands."""

import re
from pathlib import Path

from ibverify.claims import load_registry
from ibverify.cli import build_parser, markdown_table

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_first_code_block_is_the_two_quick_start_commands():
    block = re.search(r"```sh\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert block == ["pip install . && ibverify verify", "pip install '.[test]' && pytest"]


def test_claim_table_matches_registry():
    table = README.split("<!-- claims-table:start -->")[1].split("<!-- claims-table:end -->")[0].strip()
    assert table == markdown_table(load_registry(ROOT / "claims")), "run: ibverify claims --markdown"


def test_documented_subcommands_exist():
    sub = build_parser()._subparsers._group_actions[0].choices
    for name in re.findall(r"^\| `ibverify (\w+)", README, re.M):
        assert name in sub


def test_ci_runs_the_readme_test_command():
    assert re.search(r"^IBVERIFY_REPORT=reports pytest$", (ROOT / ".ci/run").read_text(), re.M)


def test_optimizer_table_matches_the_table():
    from ibverify.optim.table import markdown

    assert markdown() in README, "README's optimizer table differs from ibverify.optim.table.markdown()"
