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


# Rendered before the site is built (docs/gen_full_report.py: .ci/run and the mkdocs hook), not in git: a link into
# it is checked against what the generator writes, not against the working tree.
GENERATED = ("full-report/",)


def _generated(target: str) -> bool:
    return target.startswith(GENERATED) or target.startswith(tuple(f"docs/{g}" for g in GENERATED))


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_relative_links_point_at_files(page):
    text = re.sub(r"```.*?```", "", (DOCS / page).read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:|#", target) or _generated(target) and target.split("#")[0] == "full-report/index.html":
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


# ---------------------------------------------------------------- issue 35: the documentation is true and
# self-contained (nothing cites a file outside the repository)

PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _prose(path: Path) -> str:
    return re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)   # code blocks: examples


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_a_page_cites_is_in_the_repository(page):
    """Links, `.md` names and code-span paths resolve to files inside the repository (the project's specification
    documents, NUMERICS.md and CLAIMS.md, live outside it)."""
    text = _prose(page)
    cited = {t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:|#", t)}
    cited |= set(re.findall(r"(?<![\w/.-])((?:\.\./|[\w-]+/)*[\w.-]+\.md)\b", text))
    cited |= {t for t in re.findall(r"`([^`\s]+)`", text) if t.startswith("../")}
    for target in sorted(cited):
        if _generated(target) and target.endswith("full-report/index.html"):   # rendered at build (see GENERATED)
            continue
        where = [(base / target).resolve() for base in (page.parent, ROOT, DOCS)]
        inside = [w for w in where if w.is_relative_to(ROOT) and w.exists()]
        assert inside, f"{page.relative_to(ROOT)} cites {target}, which is not a file of the repository"


def test_no_claim_cites_a_document_outside_the_repository():
    for path in sorted((ROOT / "claims").glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        for name in ("NUMERICS.md", "CLAIMS.md"):
            assert name not in text, f"{path.name} cites {name}, which is not in the repository"
        assert not re.search(r"\.\./", text), f"{path.name} cites a path above the repository"


def _first_sh_block(text: str) -> list[str]:
    return re.search(r"```sh\n(.*?)```", text, re.S).group(1).strip().splitlines()


def test_the_readme_and_the_docs_home_give_the_same_first_commands():
    readme = _first_sh_block((ROOT / "README.md").read_text(encoding="utf-8"))
    assert readme == _first_sh_block((DOCS / "index.md").read_text(encoding="utf-8"))
    assert readme == _first_sh_block((DOCS / "getting-started.md").read_text(encoding="utf-8"))


HAND_WRITTEN = ["README.md", "docs/index.md", "docs/getting-started.md", "docs/own-data.md", "docs/commands.md",
                "docs/tutorial.md", "docs/reading-a-report.md", "docs/development.md"]


@pytest.mark.parametrize("page", HAND_WRITTEN)
def test_claim_counts_in_the_guides_are_the_registrys(page):
    """A guide's "N claims" is the registry's count (historical measurements with their commit live in
    ARCHITECTURE.md and benchmarks.md)."""
    n = len(load_registry(ROOT / "claims"))
    for count in re.findall(r"\b(\d+) claims\b", (ROOT / page).read_text(encoding="utf-8")):
        assert int(count) == n, f"{page} says {count} claims; the registry has {n}"


def test_the_quick_start_report_path_is_where_verify_writes_it(tmp_path, monkeypatch, capsys):
    """README and getting-started name the report the first command writes: check it on a one-claim run in a
    fresh folder."""
    from ibverify.cli import main

    said = {re.search(r"`(reports/[^`]*index\.html)`", (ROOT / p).read_text(encoding="utf-8")).group(1)
            for p in ("README.md", "docs/getting-started.md")}
    assert said == {"reports/index.html"}
    monkeypatch.chdir(tmp_path)
    rc = main(["--claims-dir", str(ROOT / "claims"), "verify", "baek.epoch-map-det", "--tier", "smoke",
               "--sequential", "--no-cache", "-q"])
    capsys.readouterr()
    assert rc == 0
    assert (tmp_path / "reports" / "index.html").is_file() and (tmp_path / "reports" / "results.json").is_file()


# ---------------------------------------------------------------- issue 34: the full record, generated


def _gen_full():
    spec = importlib.util.spec_from_file_location("gen_full_report", DOCS / "gen_full_report.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_full_tier_section_equals_the_baseline_and_the_code():
    """docs/full-tier.md's generated section is what gen_full_report makes of ci/baseline-full.json and this code's
    check hashes (gen_full_report --check): no hand-typed figure, and a changed check shows up as a stale row."""
    gen = _gen_full()
    text = (DOCS / "full-tier.md").read_text(encoding="utf-8")
    assert gen.START in text and gen.END in text
    assert gen.render(text, *gen._inputs(), seeds=gen._seed_records()) == text, (
        "run: python docs/gen_full_report.py --section")


class _Stub:
    def __init__(self, cid: str, h: str, tiers=("full",)):
        self.id, self._h, self.tiers = cid, h, {t: {} for t in tiers}

    def check_hash(self) -> str:
        return self._h


def _row(cid: str, h: str) -> dict:
    return {"id": cid, "check_hash": h, "verdict": "holds", "expect": "holds", "as_expected": True, "runtime_s": 60.0,
            "commit": "abc1234def", "dirty": False, "created": "2026-12-02T00:00:00Z",
            "outcome": {"figure": "a | b"}}


def test_full_tier_section_says_whether_the_baseline_is_current():
    gen = _gen_full()
    rows = [_row("a.one", "h1"), _row("a.two", "h2")]
    base = {"tier": "full", "seed": 0, "created": "2026-12-02T00:00:00Z", "claims": rows,
            "summary": {"total": 2, "as_expected": 2, "unexpected": 0, "errors": 0}}
    fresh = gen.section(base, [_Stub("a.one", "h1"), _Stub("a.two", "h2"), _Stub("a.fast-only", "h", ("fast",))])
    assert "baseline is current" in fresh and "not current" not in fresh and "`abc1234`" in fresh
    assert "| `a.one` | holds | yes | current | 60 s wall | — | a \\| b |" in fresh
    rows[0].update(cpu_s=42.4, outcome={"figure": "f", "horizons": [
        {"decision": "supported", "horizon": 10**6, "reached": 10**6},
        {"decision": "supported", "horizon": 10**6, "reached": 10**6},
        {"decision": "contradicted", "horizon": 10**7, "reached": 10**7},
        {"decision": "inconclusive", "horizon": None, "reached": 10**7}]})
    costed = gen.section(base, [_Stub("a.one", "h1"), _Stub("a.two", "h2")])
    assert "| `a.one` | holds | yes | current | 42 CPU-s | 1e+06 ×2, 1e+07 ×1, undecided at 1e+07 ×1 | f |" in costed
    assert fresh.startswith(gen.START + "\n\n**2 of 2 rows current.**\n\n*Generated by")
    said = lambda claim, commit: f"changed under {claim.id} since {commit}."   # noqa: E731
    stale = gen.section(base, [_Stub("a.one", "h1"), _Stub("a.two", "doctored"), _Stub("a.three", "h3")], said)
    assert "**The committed full baseline is not current:**" in stale and "is current:" not in stale
    assert stale.startswith(gen.START + "\n\n**1 of 3 rows current.**\n\n")
    assert ("- `a.two`: made at `abc1234`, verdict then holds (as expected); changed under a.two since abc1234def."
            in stale and "Missing (1): `a.three`." in stale)
    assert "| `a.three` | — | — | missing |" in stale
    assert ("of the 3 claims with a full tier, 1 has a current row, 1 has a row whose check hash differs" in stale
            and "and 1 has no row." in stale)
    both = gen.section(base, [_Stub("a.one", "x"), _Stub("a.two", "y"), _Stub("a.3", "z"), _Stub("a.4", "w")], said)
    assert "0 have a current row, 2 have a row whose check hash differs" in both and "and 2 have no row." in both
    assert "**0 of 4 rows current.**" in both
    rows[1].update(verdict="does not hold", as_expected=False, commit="")   # its verdict then, as it was
    assert ("- `a.two`: made at an unrecorded commit, verdict then does not hold (expected holds); changed under "
            "a.two since ." in gen.section(base, [_Stub("a.one", "h1"), _Stub("a.two", "y")], said))


def test_a_stale_rows_changed_modules_are_those_of_its_check_hash_that_git_says_changed(monkeypatch):
    """changed_since: the files `git diff --name-only COMMIT` lists, intersected with the modules the claim's check
    hash covers (a module outside it is not named), and the claim file; said when git or the commit is missing."""
    from ibverify.claims import load_registry

    gen = _gen_full()
    claim = next(c for c in load_registry(ROOT / "claims") if c.id == "baek.batch-size-drift")
    assert "ibverify.engine.run" in gen.code_modules(claim) and "ibverify.cli.verify" not in gen.code_modules(claim)
    monkeypatch.setitem(gen._CHANGED, "c1", {"ibverify/engine/run.py", "ibverify/cli/verify.py", "docs/index.md",
                                             "claims/baek.batch-size-drift.toml", "ibverify/checks/proxy.py"})
    said = gen.changed_since(claim, "c1")
    assert said == ("modules under it changed since: `ibverify.checks.proxy`, `ibverify.engine.run`; its claim file "
                    "changed: `claims/baek.batch-size-drift.toml`.")
    monkeypatch.setitem(gen._CHANGED, "c2", {"ibverify/cli/verify.py"})
    assert gen.changed_since(claim, "c2") == "no module under it changed since."
    assert gen.changed_since(claim, "") == "no commit recorded, so the modules changed since are not listed."
    listed = gen._git_changed("0" * 40)   # a commit no checkout has
    assert listed == (f"commit `{'0' * 7}` is not in this checkout's history (or this is no git checkout), so the "
                      "modules changed since are not listed.")

    def no_git(*a, **k):
        raise FileNotFoundError("git")
    monkeypatch.setattr(gen.subprocess, "run", no_git)
    assert gen._git_changed("abc") == "git is unavailable here, so the modules changed since are not listed."


def test_full_tier_section_names_the_costliest_rows_and_their_share():
    """The rows with the most CPU seconds, in that order (ties by id), with their share of the recorded CPU time; a
    row without cpu_s is neither ranked nor counted."""
    gen = _gen_full()
    cpu = {"a.one": 10.0, "a.two": 60.0, "a.three": 20.0, "a.four": 10.0, "a.five": None}
    rows = [{**_row(i, i), "cpu_s": c} for i, c in cpu.items()]
    base = {"tier": "full", "seed": 0, "created": "2026-12-02T00:00:00Z", "claims": rows,
            "summary": {"total": 5, "as_expected": 5, "unexpected": 0, "errors": 0}}
    text = gen.section(base, [_Stub(i, i) for i in cpu])
    assert "2 min of CPU over the 4 rows that record it" in text
    assert gen._costliest(rows, 2) == ("The 2 costliest rows hold 80% of that CPU time: `a.two` (60 CPU-s), `a.three` "
                                       "(20 CPU-s) (a row counts 0 CPU-s for examples and runs it reused from the "
                                       "resume cache).")
    assert "rows hold 100% of that CPU time: `a.two` (60 CPU-s), `a.three` (20 CPU-s), `a.four` (10 CPU-s), `a.one`" \
        in text


def test_full_tier_section_gives_an_inconclusive_rows_fitted_crossings():
    """An unexpected inconclusive row is listed with the span of its examples' fitted crossings (from the rule's
    "on track" words in its details); a row whose details give none, and a contradicted row, get no such clause."""
    gen = _gen_full()
    on_track = {"figure": "f", "details": "a: inconclusive (on track: reaches 0.01 at ≈ 3.9e+10 steps (slope -0.28)) | "
                                          "b: inconclusive (on track: reaches 0.01 at ≈ 6.4e+11 steps (slope -0.24)) | "
                                          "c: supported"}
    rows = [{**_row("a.one", "h1"), "verdict": "inconclusive", "as_expected": False, "outcome": on_track},
            {**_row("a.two", "h2"), "verdict": "inconclusive", "as_expected": False, "outcome": {"figure": "g"}},
            {**_row("a.three", "h3"), "verdict": "does not hold", "as_expected": False, "outcome": on_track}]
    base = {"tier": "full", "seed": 0, "created": "2026-12-02T00:00:00Z", "claims": rows,
            "summary": {"total": 3, "as_expected": 0, "unexpected": 3, "errors": 0}}
    text = gen.section(base, [_Stub("a.one", "h1"), _Stub("a.two", "h2"), _Stub("a.three", "h3")])
    assert ("- `a.one`: inconclusive (expected holds): f; fitted crossing of the bound at ≈ 3.9e+10–6.4e+11 steps "
            "(2 undecided example(s) on track)") in text
    assert "- `a.two`: inconclusive (expected holds): g\n" in text
    assert "- `a.three`: does not hold (expected holds): f\n" in text
    rows[0]["outcome"] = {"figure": "f", "details": "a: inconclusive (on track: reaches 0.01 at ≈ 2e+09 steps)"}
    assert "at ≈ 2e+09 steps (1 undecided" in gen.section(base, [_Stub("a.one", "h1")])


def test_the_full_report_is_generated_not_committed():
    import subprocess

    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "docs/full-report"], capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    assert listed.stdout.strip() == "", "docs/full-report/ is rendered by docs/gen_full_report.py, not committed"
    assert "docs/full-report/" in (ROOT / ".gitignore").read_text()
    assert "docs/gen_full_report.py" in (ROOT / "mkdocs.yml").read_text()      # the hook renders it before a build
    run = (ROOT / ".ci" / "run").read_text()
    render = re.search(r"^python3 docs/gen_full_report\.py(\s+#.*)?$", run, re.M)   # renders (not --check)
    assert render and render.start() < run.index("mkdocs build --strict")
    gate = re.search(r"^ibverify compare --fresh ci/baseline-full\.json(.*)$", run, re.M)
    assert gate and gate.group(1).strip() == "", "the freshness gate fails CI: no --report-only, no `|| true`"
