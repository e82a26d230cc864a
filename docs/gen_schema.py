"""Write the claim-file key tables of docs/adding-a-claim.md from the schema (ibverify/claim_schema.py).

    python docs/gen_schema.py            # (re)write the section between the schema markers
    python docs/gen_schema.py --check    # exit 1 if the committed section differs from the schema

.ci/run runs the check; tests/test_docs.py checks the same, so a changed schema needs `python docs/gen_schema.py`
in the same commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "adding-a-claim.md"
START, END = "<!-- schema:start -->", "<!-- schema:end -->"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def _type(k) -> str:
    """`int or str` in [lo, hi]: choices (a table cell: `|` of a union written as `or`)."""
    out = f"`{k.type.replace('|', ' or ')}`"
    if k.range_text():
        out += " " + k.range_text()
    if k.choices:
        out += ": " + ", ".join(k.choices)
    return _cell(out)


def _rows(table) -> list[str]:
    return ["| key | type | meaning |", "|---|---|---|"] + [
        f"| `{k.name}` | {_type(k)} | {_cell(k.meaning)} |" for k in sorted(table.values(), key=lambda k: k.name)]


def section() -> str:
    """The generated Markdown between the markers (markers included)."""
    from ibverify import claim_schema as S

    parts = [START, "",
             "*Generated from `ibverify/claim_schema.py` by `python docs/gen_schema.py`; do not edit here.* "
             "Loading a claim file with an unknown or ill-typed key fails with one line naming the file, the "
             "section, the key and the closest valid key.", "",
             "### Top level", "", *_rows(S.TOP), "",
             "### `[convention]`", "", *_rows(S.CONVENTION), "",
             "### `[params]` and `[tiers.smoke|fast|full]`", "",
             "A tier table overrides `[params]`, so both use this vocabulary; so do the entries of `cases`, "
             "`runs`, `families` and `datasets` and the table `run_overrides`. Data: `dataset` always names the "
             "generator, `datasets` is a list of dataset groups, `dataset_count` the number of generated datasets "
             "and `problem` the degree-1 model and data pair.", "",
             *_rows(S.PARAMS), "",
             "`run` (a table in `[params]`):", "", *_rows(S.RUN), "",
             "### `[tolerances]`", "",
             "Each tolerance is `name = { value = ..., why = \"...\" }` (or a bare number):", "",
             *_rows(S.TOLERANCE_FIELDS), "",
             "Tolerance names:", "", *_rows(S.TOLERANCES), "", END]
    return "\n".join(parts)


def render(text: str) -> str:
    """`text` with its schema section replaced by the generated one."""
    if START not in text or END not in text:
        raise SystemExit(f"{OUT.relative_to(ROOT)} has no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    return head + section() + rest.split(END, 1)[1]


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    old = OUT.read_text(encoding="utf-8")
    new = render(old)
    if "--check" in argv:
        if new != old:
            print(f"{OUT.relative_to(ROOT)} differs from the claim schema: run python docs/gen_schema.py",
                  file=sys.stderr)
            return 1
        return 0
    OUT.write_text(new, encoding="utf-8")
    print(f"wrote the schema section of {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
