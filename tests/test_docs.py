"""The documentation site stays consistent without mkdocs at test time: every page of mkdocs.yml's nav exists,
every relative link between pages points at a file, and the generated claim catalogue (docs/claims.md) equals
what docs/gen_claims.py makes of the registry, so it lists every claim id."""

import importlib.util
import re
from pathlib import Path

import pytest

from ibverify.claims import load_registry

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _gen():
    spec = importlib.util.spec_from_file_location("gen_claims", DOCS / "gen_claims.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def nav_pages(text: str) -> list[str]:
    """The .md files named in mkdocs.yml's nav (a plain reading: `- Title: page.md` lines under `nav:`)."""
    nav = re.search(r"^nav:\n((?:[ \t]+.*\n|\n)+)", text, re.M)
    assert nav, "mkdocs.yml has no nav"
    return re.findall(r"^\s*-\s*(?:[^:\n]+:\s*)?(\S+\.md)\s*$", nav.group(1), re.M)


def test_nav_reader_finds_pages_and_misses_nothing():
    text = "site_name: x\nnav:\n  - Home: index.md\n  - Guide:\n      - A b: a.md\n  - c.md\ntheme: x\n"
    assert nav_pages(text) == ["index.md", "a.md", "c.md"]


def test_every_nav_entry_is_a_file():
    pages = nav_pages((ROOT / "mkdocs.yml").read_text())
    assert "index.md" in pages and "claims.md" in pages
    missing = [p for p in pages if not (DOCS / p).is_file()]
    assert not missing, f"mkdocs.yml nav names pages that do not exist: {missing}"


def test_every_page_is_in_the_nav():
    pages = set(nav_pages((ROOT / "mkdocs.yml").read_text()))
    stray = sorted(p.name for p in DOCS.glob("*.md") if p.name not in pages)
    assert not stray, f"pages not in mkdocs.yml's nav: {stray}"


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_relative_links_point_at_files(page):
    text = re.sub(r"```.*?```", "", (DOCS / page).read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:|#", target):
            continue
        path = target.split("#")[0]
        assert (DOCS / path).exists(), f"{page}: link to {target}, which is not under docs/"


def test_catalogue_equals_the_registry():
    expected = _gen().catalogue(load_registry(ROOT / "claims"))
    assert (DOCS / "claims.md").read_text(encoding="utf-8") == expected, "run: python docs/gen_claims.py"


def test_catalogue_lists_every_claim_id():
    text = (DOCS / "claims.md").read_text(encoding="utf-8")
    for c in load_registry(ROOT / "claims"):
        assert f"### {c.id} {{#{c.id}}}" in text, f"{c.id} has no section in docs/claims.md"
        assert f"[`{c.id}`](#{c.id})" in text, f"{c.id} is not in the catalogue's overview table"


def test_catalogue_text_is_escaped():
    md = _gen().md
    assert md("c* = T(c*) and m_k, [0, 1], a|b <x>") == r"c\* = T(c\*) and m\_k, \[0, 1\], a\|b &lt;x>"
    assert md("keeps `x_y*` code") == "keeps `x_y*` code"
    assert md("- not a list\n\n2. nor this") == "\\- not a list\n\n2\\. nor this"


def _gen_schema():
    spec = importlib.util.spec_from_file_location("gen_schema", DOCS / "gen_schema.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_claim_keys_section_equals_the_schema():
    """docs/adding-a-claim.md's generated key tables are the schema's (gen_schema --check), one row per key."""
    from ibverify import claim_schema as S

    gen = _gen_schema()
    text = (DOCS / "adding-a-claim.md").read_text(encoding="utf-8")
    assert gen.render(text) == text, "run: python docs/gen_schema.py"
    assert gen.main(["--check"]) == 0
    part = text.split(gen.START, 1)[1].split(gen.END, 1)[0]
    for table in (S.TOP, S.CONVENTION, S.PARAMS, S.RUN, S.TOLERANCES, S.TOLERANCE_FIELDS):
        for k in table.values():
            assert f"| `{k.name}` | {gen._type(k)} | {gen._cell(k.meaning)} |" in part, k.name
    stale = text.replace("| `examples` | `int` ≥ 1 |", "| `examples` | `str` |")
    assert stale != text
    assert gen.render(stale) == text   # a hand edit of the section is what --check reports
