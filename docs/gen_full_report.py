"""The full-tier record in the documentation, generated from ci/baseline-full.json (never committed by hand).

    python docs/gen_full_report.py            # write docs/full-tier.md's generated section, render the report
                                              # docs/full-report/ (git-ignored) and copy its README figure
    python docs/gen_full_report.py --check    # exit 1 if docs/full-tier.md's section differs from what it makes
    python docs/gen_full_report.py --section  # write the section only (seconds; no rendering)

The section (between the markers in docs/full-tier.md) is made from the baseline's rows and the registry's check
hashes (ibverify.report.freshness, as `ibverify compare --fresh` reads them): it opens with "N of M rows current",
then which claims are current, stale or missing (each stale row with the commit it was made at, its verdict then and
the modules under its check hash changed since: `git diff --name-only COMMIT` against this checkout, intersected with
the check's closure; where git or the commit is unavailable it says so), the verdicts, the runtimes, and the seed
agreement: per claim its verdict at seeds 0, 1 and 2 from the records ci/baseline-full-seed1.json and -seed2.json
(partial records, made in slices by `verify --stale … --costs ci/baseline-full.json`; a row not yet made is "—"),
with the claims whose verdicts differ between seeds named. So a change to a
check's code, a claim file or the baseline changes the page, and `--check` (tests/test_docs.py, .ci/run) asks for the
regenerated section in the same commit. The report (as `ibverify report ci/baseline-full.json --out
docs/full-report`, with each stale row marked STALE ROW on its page and in the index; figures reused when their key
is unchanged) is
rendered here before `mkdocs build`, by .ci/run and by mkdocs itself (this file is a mkdocs hook: `on_pre_build`
renders it when it is missing or older than the baseline); docs/figures/full-tier-readme.svg, the README's and the
home page's figure, is the report's first figure of FIGURE_CLAIM, copied.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("ibverify") is None:   # run from a checkout without an install (mkdocs loads the hook)
    sys.path.insert(0, str(ROOT))
BASELINE = ROOT / "ci" / "baseline-full.json"
SEED_RECORDS = {1: ROOT / "ci" / "baseline-full-seed1.json", 2: ROOT / "ci" / "baseline-full-seed2.json"}
PAGE = ROOT / "docs" / "full-tier.md"
REPORT = ROOT / "docs" / "full-report"
FIGURE_CLAIM = "baek.gr-inc-adam-l2"
FIGURE = ROOT / "docs" / "figures" / "full-tier-readme.svg"
START, END = "<!-- full-tier:start -->", "<!-- full-tier:end -->"


def _cell(text) -> str:
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;")


def _short(text: str, n: int = 110) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _ids(ids) -> str:
    return ", ".join(f"`{i}`" for i in ids)


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def seed_section(records: dict[int, dict], claims: list) -> list[str]:
    """The seed-agreement table: per claim with a full tier, its verdict in each record (seed → results dict), "—"
    where the record has no row yet, "(stale)" after a stale row's verdict; then the claims whose verdicts differ
    between the seeds that have a row, each with every seed's key figure."""
    from ibverify.report.freshness import freshness

    seeds = sorted(records)
    fresh = {s: freshness(records[s], claims, partial=True) for s in seeds}
    rows = {s: {r["id"]: r for r in records[s]["claims"]} for s in seeds}
    stale = {s: {i for i, _, _ in fresh[s].stale} for s in seeds}
    order = fresh[seeds[0]].order
    made = ", ".join(f"seed {s}: {len(rows[s])} of {len(order)} made, {fresh[s].current} current" for s in seeds)
    out = ["", "### Seed agreement", "", f"Rows per seed ({made}). A claim's verdicts agree when every seed that has "
           "a row gives the same verdict; a dash is a row not yet made.", ""]
    differ = []
    table = ["| claim | " + " | ".join(f"seed {s}" for s in seeds) + " | agree |",
             "|---|" + "---|" * (len(seeds) + 1)]
    for i in order:
        have = {s: rows[s][i]["verdict"] for s in seeds if i in rows[s]}
        cells = [(have[s] + (" (stale)" if i in stale[s] else "")) if s in have else "—" for s in seeds]
        agree = "—" if len(have) < 2 else "yes" if len(set(have.values())) == 1 else "**no**"
        if agree == "**no**":
            differ.append(i)
        table.append(f"| `{i}` | " + " | ".join(cells) + f" | {agree} |")
    if differ:
        out += [f"Verdicts that differ between seeds ({len(differ)}), each with its key figure per seed:", ""]
        def figure(r: dict) -> str:
            return _cell(_short((r.get("outcome") or {}).get("figure") or "", 160))

        out += [f"- `{i}`: " + "; ".join(f"seed {s} {rows[s][i]['verdict']}: {figure(rows[s][i])}"
                                         for s in seeds if i in rows[s]) for i in differ] + [""]
    else:
        out += ["No claim's verdict differs between the seeds that have its row.", ""]
    return out + table


def section(baseline: dict, claims: list, changed=None, seeds: dict[int, dict] | None = None) -> str:
    """The generated Markdown between the markers (markers included), from a results dict and the registry;
    `changed(claim, commit)`: the words for what changed under a stale row since its commit (default `changed_since`,
    from git); `seeds`: the records at other seeds (seed → results dict) for the seed-agreement table."""
    from ibverify.report.freshness import freshness, published_crossings

    changed = changed or changed_since
    fr = freshness(baseline, claims)
    rows = baseline["claims"]
    s = baseline["summary"]
    stale = {i for i, _, _ in fr.stale}
    commits = sorted({r.get("commit", "")[:7] for r in rows if r.get("commit")})
    days = sorted({r["created"][:10] for r in rows if r.get("created")})
    out = [START, "", f"**{fr.current} of {len(fr.order)} rows current.**", "",
           "*Generated by `python docs/gen_full_report.py` from `ci/baseline-full.json` and the check hashes of this "
           "commit's code; do not edit here.*", ""]
    if fr.current == len(fr.order) and not fr.dropped:
        out += [f"**The committed full baseline is current:** each of the {len(fr.order)} claims with a full tier has "
                "a row whose check hash is the code's, none made from uncommitted code.", ""]
    else:
        out += [f"**The committed full baseline is not current:** of the {len(fr.order)} claims with a "
                f"full tier, {_have(fr.current)} a current row, "
                f"{_have(len(stale))} a row whose check hash differs from the code's (stale: the check, the code under "
                f"it or the claim changed since the row was made) and {_have(len(fr.missing))} no row. A stale row's "
                "verdict below is that of older code and older rules; `ibverify compare --fresh "
                "ci/baseline-full.json` lists the same, and [refreshing it](development.md#the-full-record) re-runs "
                "exactly these claims.", ""]
        if stale:
            by_id = {c.id: c for c in claims}
            row_of = {r["id"]: r for r in rows}
            out += [f"Stale ({len(stale)}), each with the commit its row was made at, its verdict then and what "
                    "changed under it since:", ""]
            for i in sorted(stale):
                r = row_of[i]
                then = f"{r['verdict']} ({'as expected' if r['as_expected'] else 'expected ' + r['expect']})"
                at = (r.get("commit") or "")[:7]
                out.append(f"- `{i}`: made at " + (f"`{at}`" if at else "an unrecorded commit")
                           + f", verdict then {then}; {changed(by_id[i], r.get('commit') or '')}")
            out.append("")
        if fr.missing:
            out += [f"Missing ({len(fr.missing)}): {_ids(fr.missing)}.", ""]
        if fr.dirty:
            out += [f"Made from uncommitted code ({len(fr.dirty)}): {_ids(fr.dirty)}.", ""]
        if fr.dropped:
            out += [f"Rows of claims no longer in the registry ({len(fr.dropped)}): {_ids(fr.dropped)}.", ""]
    made = (f"rows made on {days[0]}" + (f" to {days[-1]}" if len(days) > 1 else "") if days
            else "rows without a date")
    made += (f", from commit(s) {', '.join(f'`{c}`' for c in commits)}" if commits
             else "; the rows carry no commit (written before rows recorded their provenance)")
    runtime = sum(float(r.get("runtime_s") or 0.0) for r in rows)
    cpu = [float(r["cpu_s"]) for r in rows if r.get("cpu_s") is not None]
    out += [f"The baseline (tier {baseline['tier']}, seed {baseline['seed']}, last written {baseline['created']}) "
            f"holds {s['total']} rows, {made}: **{s['as_expected']} of {s['total']} verdicts as expected**, "
            f"{s['unexpected']} unexpected, {s['errors']} errors. Its rows' runtimes add up to "
            f"{_hours(runtime)} (wall time of each claim; claims ran in parallel)"
            + (f", {_hours(sum(cpu))} of CPU over the {len(cpu)} rows that record it" if cpu else
               "; no row records its CPU time") + "."]
    if len(cpu) > 1:
        out += ["", _costliest(rows)]
    ex = s.get("examples")
    if ex:
        out += ["", f"Examples: {ex['supported']} supported, {ex['contradicted']} contradicted, "
                    f"{ex['inconclusive']} inconclusive, {ex['set_aside']} set aside."]
    unexpected = [r for r in rows if not r["as_expected"]]
    if unexpected:
        out += ["", "Not as expected, each with its evidence on its report page:", ""]
        out += [f"- `{r['id']}`: {r['verdict']} (expected {r['expect']}): "
                f"{_cell(_short((r.get('outcome') or {}).get('figure') or r.get('error') or '', 240))}"
                + (f"; {crossing}" if (crossing := published_crossings(r)) else "")
                for r in unexpected]
    out += ["", "The cost of each claim: its CPU seconds (or wall seconds where the row records no CPU time) and the "
            "horizon (steps or epochs) that decided each of its examples.",
            "", "| claim | verdict | as expected | row | cost | decided at | key figure |",
            "|---|---|---|---|---|---|---|"]
    for r in rows:
        state = ("stale" if r["id"] in stale else "dirty" if r["id"] in fr.dirty
                 else "not in registry" if r["id"] in fr.dropped else "current")
        fig = (r.get("outcome") or {}).get("figure") or r.get("error") or ""
        cost = (f"{float(r['cpu_s']):.0f} CPU-s" if r.get("cpu_s") is not None
                else f"{float(r.get('runtime_s') or 0):.0f} s wall")
        out.append(f"| `{r['id']}` | {r['verdict']} | {'yes' if r['as_expected'] else '**no**'} | {state} | "
                   f"{cost} | {_decided_at(r)} | {_cell(_short(fig))} |")
    for i in fr.missing:
        out.append(f"| `{i}` | — | — | missing | — | — | no row |")
    if seeds:
        out += seed_section({baseline["seed"]: baseline, **seeds}, claims)
    out += ["", END]
    return "\n".join(out)


def _git_changed(commit: str) -> set[str] | str:
    """The repository paths that differ between `commit` and the working tree (`git diff --name-only COMMIT`: the
    code this commit's check hashes are made from), or why none can be given."""
    try:
        run = subprocess.run(["git", "-C", str(ROOT), "diff", "--name-only", commit, "--"], capture_output=True,
                             text=True, check=False)
    except OSError:
        return "git is unavailable here, so the modules changed since are not listed."
    if run.returncode != 0:
        return (f"commit `{commit[:7]}` is not in this checkout's history (or this is no git checkout), so the "
                "modules changed since are not listed.")
    return set(run.stdout.split())


_CHANGED: dict[str, set[str] | str] = {}   # commit → _git_changed(commit), once per process


def changed_since(claim, commit: str) -> str:
    """What changed under a stale row since `commit`: the modules of its check hash (Claim.code_modules) that differ
    between that commit and this checkout, and its claim file if it does."""
    if not commit:
        return "no commit recorded, so the modules changed since are not listed."
    if commit not in _CHANGED:
        _CHANGED[commit] = _git_changed(commit)
    paths = _CHANGED[commit]
    if isinstance(paths, str):
        return paths
    mods = [m for m, f in code_modules(claim).items() if _rel(f) in paths]
    said = f"modules under it changed since: {_ids(mods)}" if mods else "no module under it changed since"
    own = _rel(claim.path) if claim.path else ""
    return said + (f"; its claim file changed: `{own}`" if own and own in paths else "") + "."


def code_modules(claim) -> dict[str, Path]:
    """Module name → file of the ibverify code `claim`'s check hash covers, as Claim.check_hash takes it
    (codehash.check_modules: the check's module and every module of the package it imports, a compiled kernel of
    codehash.ACCELERATED through its reference, less codehash.NOT_DECIDING unless the claim names such an optimizer)."""
    from ibverify import codehash

    claim.function()
    mod = sys.modules[claim.check.partition(":")[0]]
    skip = () if claim.names_foreign_optimizer() else codehash.NOT_DECIDING
    return codehash.check_modules(mod.__name__, getattr(mod, "__file__", None), skip)


def _rel(path) -> str:
    """`path` relative to the repository root, as git names it ("" outside the repository)."""
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return ""


def _costliest(rows: list[dict], k: int = 5) -> str:
    """One sentence: the k rows with the most CPU seconds and their share of the CPU time the rows record (a row's
    cpu_s counts 0 for work it reused from the resume cache)."""
    timed = sorted((r for r in rows if r.get("cpu_s") is not None), key=lambda r: (-float(r["cpu_s"]), r["id"]))
    total = sum(float(r["cpu_s"]) for r in timed)
    top = timed[:k]
    share = sum(float(r["cpu_s"]) for r in top) / total if total > 0 else 0.0
    return (f"The {len(top)} costliest rows hold {share:.0%} of that CPU time: "
            + ", ".join(f"`{r['id']}` ({float(r['cpu_s']):.0f} CPU-s)" for r in top)
            + " (a row counts 0 CPU-s for examples and runs it reused from the resume cache).")


def _have(n: int) -> str:
    return f"{n} has" if n == 1 else f"{n} have"


def _decided_at(row: dict) -> str:
    """The examples by the horizon that decided them ("1e+06 ×5, 1e+07 ×1, undecided at 1e+07 ×1"); — when the row
    records none (a check without horizons, or a row older than outcome.horizons)."""
    hs = (row.get("outcome") or {}).get("horizons") or []
    if not hs:
        return "—"
    n: dict[tuple, int] = {}
    for h in hs:
        k = (h["horizon"] is None, h["horizon"] if h["horizon"] is not None else h["reached"])
        n[k] = n.get(k, 0) + 1
    return ", ".join(f"{'undecided at ' if undecided else ''}{t:.0e} ×{c}" for (undecided, t), c in sorted(n.items()))


def stale_notes(baseline: dict, claims: list, changed=None) -> dict[str, str]:
    """Claim id → why its row is stale, for the report's badge and banner (ibverify.report.html.render_report):
    the commit it was made at and what changed under it since (as in the section); {} when every row is current."""
    from ibverify.report.freshness import freshness

    fr = freshness(baseline, claims)
    changed = changed or changed_since
    by_id = {c.id: c for c in claims}
    return {i: f"Made at commit {fr.commits[i][:7] or '(unrecorded)'}; its check hash differs from this code's "
               f"({old or 'none'} in the baseline, {new or 'cannot hash'} now); "
               + changed(by_id[i], fr.commits[i]).replace("`", "") for i, old, new in fr.stale}


def render(text: str, baseline: dict, claims: list, seeds: dict[int, dict] | None = None) -> str:
    """The page text with its generated section replaced."""
    head, sep, rest = text.partition(START)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise SystemExit(f"{PAGE}: the markers {START} … {END} are missing")
    return head + section(baseline, claims, seeds=seeds) + tail


def _inputs():
    from ibverify.claims import load_registry
    from ibverify.report.schema import load_results

    return load_results(BASELINE), load_registry(ROOT / "claims")


def _seed_records() -> dict[int, dict]:
    from ibverify.report.schema import load_results

    return {s: load_results(p) for s, p in SEED_RECORDS.items() if p.exists()}


def render_report() -> None:
    """docs/full-report/ from the baseline (figures with an unchanged key reused) and the README figure copied."""
    from ibverify.report.html import page_names
    from ibverify.report.publishing import render_file

    baseline, claims = _inputs()
    render_file(BASELINE, REPORT, stale_notes(baseline, claims))
    stem = page_names(baseline["claims"])[FIGURE_CLAIM][: -len(".html")]
    src = REPORT / "figures" / f"{stem}-1.svg"
    if not FIGURE.exists() or FIGURE.read_bytes() != src.read_bytes():
        shutil.copyfile(src, FIGURE)


def on_pre_build(config, **kwargs) -> None:
    """mkdocs hook: render docs/full-report/ when it is missing or older than the baseline."""
    index = REPORT / "index.html"
    if not index.exists() or index.stat().st_mtime < BASELINE.stat().st_mtime:
        render_report()


def main(argv: list[str]) -> int:
    text = PAGE.read_text(encoding="utf-8")
    new = render(text, *_inputs(), seeds=_seed_records())
    if "--check" in argv:
        if new != text:
            print(f"{PAGE.relative_to(ROOT)} is out of date (the baseline or a check hash changed): "
                  "run `python docs/gen_full_report.py --section`", file=sys.stderr)
            return 1
        return 0
    if new != text:
        PAGE.write_text(new, encoding="utf-8")
    if "--section" not in argv:
        render_report()
        print(f"rendered {REPORT.relative_to(ROOT)}/index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
