"""README.md and the documentation pages stay true: the quick start, the documented commands and their options,
the optimizer table, the links. (The claim catalogue = the registry: tests/test_docs.py.)"""

import re
import shlex
from pathlib import Path

import pytest

from ibverify.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
# Hand-written pages (the generated catalogue quotes registry text, e.g. a paper named "ibverify numerics").
PAGES = {"README.md": README, **{f"docs/{p.name}": p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))
                                 if p.name != "claims.md"}}


def test_first_code_block_is_the_two_quick_start_commands():
    block = re.search(r"```sh\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert block == ["pip install . && ibverify verify --tier smoke baek.", "pip install '.[test]' && pytest"]


def documented_commands(text: str) -> list[str]:
    """Every `ibverify COMMAND ...` written in a code span or as a console line ('$ ibverify ...')."""
    spans = re.findall(r"`(ibverify [^`]+)`", text) + re.findall(r"^\$ (ibverify .+)$", text, re.M)
    return [s.replace("\\|", "|") for s in spans]


def test_documented_commands_reader():
    text = "run `ibverify verify --tier smoke\\|fast` or\n$ ibverify margin --data x.csv\n`ibverify.cli` is a module"
    assert documented_commands(text) == ["ibverify verify --tier smoke|fast", "ibverify margin --data x.csv"]


@pytest.mark.parametrize("page", sorted(PAGES))
def test_documented_commands_and_options_exist(page):
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices
    top = {o for a in parser._actions for o in a.option_strings}
    valued = {o for a in parser._actions if a.nargs != 0 for o in a.option_strings}
    seen = 0
    for line in documented_commands(PAGES[page]):
        words = shlex.split(line.replace("'", "")) if line.count("'") % 2 == 0 else line.split()
        # the command: the first word that is neither an option nor the value of a top-level one (--claims-dir DIR)
        name = next((w for i, w in enumerate(words[1:], 1) if not w.startswith("-") and words[i - 1] not in valued),
                    None)
        if name is None or not re.fullmatch(r"[a-z]+", name) or name.upper() == name:
            continue
        assert name in sub, f"{page}: `{line}` names no ibverify command"
        known = top | {o for a in sub[name]._actions for o in a.option_strings}
        for opt in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line):
            assert opt in known, f"{page}: `{line}`: ibverify {name} has no option {opt}"
        seen += 1
    if page in ("docs/commands.md", "docs/own-data.md"):
        assert seen >= 5, f"{page}: expected its command lines to be read"


def test_ci_runs_the_readme_test_command():
    assert re.search(r"^(time )?IBVERIFY_REPORT=reports pytest$", (ROOT / ".ci/run").read_text(), re.M)


def test_optimizer_table_matches_the_table():
    from ibverify.optim.table import markdown

    page = (ROOT / "docs/commands.md").read_text()
    assert markdown() in page, "docs/commands.md's optimizer table differs from ibverify.optim.table.markdown()"


def test_readme_links_point_at_files():
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", README) if not re.match(r"[a-z]+:|#", t)]
    assert targets, "README links nowhere"
    missing = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert not missing, f"README links to missing files: {missing}"
