"""The HTML report: `index.html`, `claims/<id>.html` and `figures/<id>-<k>.{svg,csv}` (`.pdf` at the full tier),
from a results dict alone.

Pages come from the jinja2 templates in `templates/` (autoescaped); figures from matplotlib
(`figures.py`): each plot is inline SVG in its claim page, with a PDF and a CSV of its data beside
the report for a paper. Self-contained (inline CSS, SVG and JS; no network; works from file://) and
written atomically (`atomic.atomic_write_all`): every file is rendered and written to a temporary file
beside its target before the first os.replace; figures and claim pages are moved into place first and
index.html last, so a crash never leaves a half-written file; files of claims no longer in the results
are removed. To keep other claims' pages when re-running one claim, publish through
`publishing.publish`, which merges the run into the folder's results first.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
from importlib import resources
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from ..atomic import atomic_write_all
from ..claims import STATUSES
from .figures import FigureMaker, figure_key, reuse, svg_file
from .schema import error_line, validate_results
from .svg import group_series, sparkline

VERDICT_CLASS = {"holds": "good", "refuted": "good", "does not hold": "bad", "not refuted": "bad",
                 "finding": "info", "error": "warn", "inconclusive": "warn", "not applicable": "na"}
STATUS_NOTE = {
    "reconstructed": "Reconstructed claim: the paper's exact statement or dataset was not available; this "
                     "claim encodes the spec's labelled reconstruction.",
    "law": "A law of the suite's own, found by measurement beyond the papers: a prediction with a tolerance, judged "
           "on fresh data at each seed; it passes when it holds, and its control must be refuted.",
    "control": "Negative control: the claim is expected to be false; the suite passes only if it is refuted.",
    "beyond": "Beyond the papers: an exploration reported as a finding, not as pass/fail of a paper.",
}
TEMPLATES = Path(__file__).with_name("templates")
OUTPUT_DIRS = ("claims", "figures")
# the power of the verdict rules (written by benchmarks/power.py): package data beside this module, read at report
# time through importlib.resources, so an installed copy (a wheel) renders the same resolution lines as a checkout
POWER_JSON = "power.json"
# a claim's check (and the halves it judges, for checks.classic.log_rate) → (power family, claim-level rule) of
# power.json; the claim is covered when its own tolerances equal those the family was measured with
POWER_RULES = {
    ("ibverify.checks.classic:log_rate", ("K", "rho", "slope")): ("log-rate", "all_of: Soudry (K, ρ, slope)"),
    ("ibverify.checks.classic:log_rate", ("K", "norm", "approach")): ("log-rate", "all_of: Wang (K, norm, approach)"),
    ("ibverify.checks.per_sample:signum_beta_trend", ()): ("ℓ∞ rate", "judge_rate_invariant: ℓ∞ gap, gap·‖w‖∞"),
    ("ibverify.checks.gronich_nets:network_kkt", ()): ("network KKT", "judge_separation: network KKT (gronich_nets)"),
    ("ibverify.checks.classic_nets:smoothed_margin", ()): ("smoothed margin", "judge_nondecreasing: γ̃ (Lyu–Li)"),
}
LAW_KEY = "law parameter"   # the table-row key of a law's fit (checks.laws.LAW_KEY)


def page_names(claims: list[dict]) -> dict[str, str]:
    """claim id -> file name under claims/ (safe characters only, unique)."""
    names: dict[str, str] = {}
    for c in claims:
        base = re.sub(r"[^A-Za-z0-9._-]+", "_", c["id"]).strip(".") or "claim"
        name, k = base, 2
        while f"{name}.html" in names.values():
            name, k = f"{base}-{k}", k + 1
        names[c["id"]] = f"{name}.html"
    return names


def _num(v) -> str:
    if isinstance(v, bool) or v is None:
        return {True: "✓", False: "✗", None: "—"}[v]
    if isinstance(v, float):
        return number_text(v)
    return str(v) if isinstance(v, (int, str)) else _pretty(v)


def number_text(v: float, digits: int = 6) -> str:
    """v with `digits` significant digits, or more where those would print it as a whole number it is not (a cosine
    0.99999996 reads 0.99999996, not 1; a ratio 1.9999999 not 2), so no value rounds out of its range."""
    text = f"{v:.{digits}g}"
    if not math.isfinite(v):
        return text
    while digits < 17 and float(text) != v and not any(ch in text for ch in ".en"):  # a whole number: "1", "40"
        digits += 1
        text = f"{v:.{digits}g}"
    return text


EXAMPLE_KEY = re.compile(r"^(?P<name>[^\[\]]+)\[(?P<ex>[^\[\]]+)\]$")


def figure_tables(figures: dict, series: list[dict] | None = None) -> tuple[dict, dict]:
    """A claim's named figures split for its page: those of the claim as a whole (a key/value table), and the
    per-example ones (keys `name[example]`, e.g. `residual[0]`) as one row per example and one column per name,
    so that each example is listed once. Rows are labelled from the plots' groups ("example 0: signum (n=16,…)")
    where there is one. Returns (whole, {"cols": [...], "rows": [{"example": label, name: value, ...}, ...]})."""
    whole: dict = {}
    rows: dict[str, dict] = {}
    cols: list[str] = []
    for k, v in (figures or {}).items():
        m = EXAMPLE_KEY.match(k)
        if not m:
            whole[k] = v
            continue
        rows.setdefault(m["ex"], {})[m["name"]] = v
        if m["name"] not in cols:
            cols.append(m["name"])
    labels = {}
    for s in series or []:
        found = re.match(r"^example (\S+?): (.*)$", s.get("group") or "")
        if found:
            labels.setdefault(found[1], found[2])
    out = [{"example": ex + (f": {labels[ex]}" if ex in labels else ""), **vals} for ex, vals in rows.items()]
    return whole, {"cols": cols, "rows": out}


def detail_sections(details: str) -> list[dict]:
    """A check's details as sections of a head and a list: parts joined with " || " (sub-checks) are sections,
    and within each the " | "-separated parts after the first are its items (one per example, in the checks'
    format "preamble | example 0: … | example 1: …")."""
    out = []
    for part in str(details or "").split(" || "):
        head, *items = [x.strip() for x in part.split(" | ")]
        if head or items:
            out.append({"head": head, "items": [x for x in items if x]})
    return out


def _pretty(v) -> str:
    """Strings as they are; other values as JSON, with matrices one row per line."""
    if isinstance(v, str):
        return v
    if isinstance(v, list) and v and all(isinstance(r, list) for r in v):
        return "[\n " + ",\n ".join(json.dumps(r) for r in v) + "\n]"
    return json.dumps(v, ensure_ascii=False, indent=None if not isinstance(v, dict) else 1)


def _runtime(s) -> str:
    """Seconds as "12.34 s", "1m 05s" or "2h 03m": rounded once, so no field ever reads 60."""
    if s is None:
        return "—"
    if round(s, 2) < 60:
        return f"{s:.2f} s"
    t = round(s)
    if t < 3600:
        return f"{t // 60}m {t % 60:02d}s"
    t = round(s / 60)
    return f"{t // 60}h {t % 60:02d}m"


@lru_cache(maxsize=1)
def environment():
    import jinja2  # start-up time: jinja2 (`ibverify compare` renders nothing)

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(num=_num, pretty=_pretty, runtime=_runtime)
    env.globals.update(verdict_class=VERDICT_CLASS, status_note=STATUS_NOTE)
    return env


def _key_figure(c: dict) -> str:
    o = c["outcome"] or {}
    if o.get("inconclusive"):
        return f"not decided: {o['inconclusive']} — {o.get('figure', '')}"
    if o.get("figure"):
        return o["figure"]
    return error_line(c.get("error"))


def _spark(c: dict) -> str:
    series = (c["outcome"] or {}).get("series") or []
    return sparkline(series[0]) if series else ""


def unique_rows(rows: list[dict]) -> tuple[list[dict], int]:
    """Rows with exact repeats (same content) dropped, first kept; and how many were dropped."""
    seen: set[str] = set()
    out = []
    for r in rows:
        key = json.dumps(r, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out, len(rows) - len(out)


def reproduce_run(results: dict) -> list[str]:
    """The commands that re-run this report's rows: its tier and seed, the claims it holds by id, and `--data FILE`
    (`--intercept`) for the rows judged on a user's file; one command per data file (rows without one: the claims'
    own data). Made from the rows, so a report of three named claims gives those three, not the whole registry."""
    groups: dict[tuple, list[str]] = {}
    for c in results["claims"]:
        d = c.get("data") if isinstance(c.get("data"), dict) else None
        key = (d.get("file", ""), bool(d.get("intercept"))) if d else None
        groups.setdefault(key, []).append(c["id"])
    out = []
    for key, ids in groups.items():
        data = f" --data {shlex.quote(key[0])}" + (" --intercept" if key[1] else "") if key else ""
        seed = f" --seed {results['seed']}" if results.get("seed") else ""
        out.append(f"ibverify verify {' '.join(shlex.quote(i) for i in dict.fromkeys(ids))}{data} "
                   f"--tier {results['tier']}{seed}")
    return out


def index_page(results: dict, names: dict[str, str], stale: Mapping[str, str] | None = None) -> str:
    """The index; `stale`: claim id → why its row is stale (a badge on its line, a card counting them)."""
    groups: dict[str, list[dict]] = {}
    for c in results["claims"]:
        groups.setdefault(c["paper"], []).append(c)
    counts = [(st, sum(c["status"] == st for c in results["claims"])) for st in STATUSES]
    return environment().get_template("index.html.j2").render(
        r=results, names=names, groups=list(groups.items()), status_counts=counts, key_figure=_key_figure,
        spark=_spark, provenance=provenance_groups(results["claims"]), data_files=data_groups(results["claims"]),
        reproduce=reproduce_run(results), stale=stale or {})


def data_groups(rows: list[dict]) -> list[tuple[tuple[str, str], int]]:
    """(data file, sha256) → number of rows, for rows judged on a user's file (`verify --data`)."""
    out: dict[tuple, int] = {}
    for c in rows:
        if isinstance(c.get("data"), dict):
            key = (c["data"].get("file", ""), c["data"].get("sha256", ""))
            out[key] = out.get(key, 0) + 1
    return list(out.items())


def provenance_groups(rows: list[dict]) -> list[dict]:
    """One entry per distinct code that made rows (a merged report spans runs): {"code", "dirty", "source", "rows",
    "first", "last"} in order of first appearance, where code is the commit, or "ibverify VERSION" for an installed
    copy (no git checkout), named by its source hash; rows: how many; first/last: the earliest and latest `created`
    of those rows ("" where none records one). Rows made by the same code at different times are one entry."""
    out: dict[tuple, dict] = {}
    for c in rows:
        if "commit" in c:
            code = c["commit"][:12] or f"ibverify {c.get('version', '')}".strip()
            key = (code, bool(c.get("dirty")), c.get("source_hash", ""))
            g = out.setdefault(key, {"code": key[0], "dirty": key[1], "source": key[2], "rows": 0, "first": "",
                                     "last": ""})
            g["rows"] += 1
            when = c.get("created") or ""
            if when:
                g["first"] = min(g["first"] or when, when)
                g["last"] = max(g["last"], when)
    return list(out.values())


@dataclass
class PlotView:
    """What a claim page shows of one rendered plot."""

    anchor: str
    title: str
    svg: str
    svg_href: str
    pdf_href: str
    csv_href: str
    skipped: int
    log: bool


def horizon_text(horizons: list[dict]) -> str:
    """outcome.horizons in one line: how many examples each horizon decided, and how many none did, e.g.
    `10⁵: 3 supported; 10⁶: 1 contradicted; not decided by 10⁷: 1`."""
    groups: dict[tuple, int] = {}
    for h in horizons:
        key = (h.get("horizon") is None, h.get("horizon") if h.get("horizon") is not None else h.get("reached") or 0,
               h.get("decision", ""))
        groups[key] = groups.get(key, 0) + 1
    parts = []
    for (undecided, T, word), n in sorted(groups.items()):
        parts.append(f"not decided by {T:.3g}: {n}" if undecided else f"{T:.3g}: {n} {word}")
    return "; ".join(parts)


def claim_page(c: dict, names: dict[str, str], plots: list[PlotView] | None = None, power: dict | None = None,
               stale: str = "") -> str:
    """A claim's page; `power`: the power table (power_table()) for its resolution line, None for none; `stale`: why
    its row is stale ("": current; a badge and a banner at the top otherwise)."""
    rows, repeats = unique_rows((c["outcome"] or {}).get("table") or [])
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    run = {"check": c["check"], "check_hash": c["check_hash"], "tier": c["tier"], "seed": c["seed"],
           "runtime": _runtime(c["runtime_s"]),
           **({"CPU time": _runtime(c["cpu_s"])} if c.get("cpu_s") is not None else {}),
           **({"run at": c["created"]} if c.get("created") else {})}
    o = c["outcome"] or {}
    if o.get("horizons"):
        run["decided at horizon"] = horizon_text(o["horizons"])
    whole, per_example = figure_tables(o.get("figures") or {}, o.get("series"))
    resolution = [*law_lines(c), *([line] if (line := power_line(c, power)) else [])]
    return environment().get_template("claim.html.j2").render(
        c=c, names=names, plots=plots or [], table={"rows": rows, "cols": cols, "repeats": repeats}, run=run,
        whole_figures=whole, example_figures=per_example, details=detail_sections(o.get("details") or ""),
        resolution=resolution, stale=stale)


def power_table(path: Path | None = None) -> dict | None:
    """The power table: `path`, or by default the package's own power.json (importlib.resources: a checkout and a
    wheel install alike); None where it is absent or unreadable."""
    try:
        if path is not None:
            return json.loads(Path(path).read_text(encoding="utf-8"))
        return json.loads(resources.files(__package__).joinpath(POWER_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _tol_value(c: dict, key: str):
    t = (c.get("tolerances") or {}).get(key)
    if t is not None:
        return float(t["value"] if isinstance(t, dict) else t)
    v = (c.get("params") or {}).get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _share(k: int, n: int) -> str:
    return f"{k} of {n}"


def power_line(c: dict, power: dict | None) -> str:
    """What the claim's verdict rule detects, from the power table: on the table's fresh wrong-limit runs how many
    it supported (false support), contradicted or left undecided, and on its right-limit runs how many it contradicted
    (false contradiction), at the claim's tier (else the nearest measured one); "" when the rule is not in the table
    or the claim's tolerances differ from those it was measured with (then a line says which)."""
    if not power:
        return ""
    halves = tuple((c.get("params") or {}).get("halves", ("K", "rho", "slope")))
    key = (c.get("check", ""), halves if c.get("check", "").endswith("classic:log_rate") else ())
    if key not in POWER_RULES:
        return ""
    family, rule = POWER_RULES[key]
    differ = []
    for k, v in (power.get("tolerances") or {}).get(family, {}).items():
        mine = _tol_value(c, k)
        if mine is not None and not math.isclose(mine, float(v), rel_tol=1e-12, abs_tol=0.0):
            differ.append(f"{k} = {number_text(mine)} here, {number_text(float(v))} there")
    src = f"power table ibverify/report/power.json (commit {power.get('commit', '?')}, {power.get('date', '?')})"
    if differ:
        return (f"The power of this rule ({rule}) was measured at other tolerances ({'; '.join(differ)}; {src}): "
                "no resolution line.")
    runs = [r for r in power.get("runs") or [] if r.get("rule") == rule]
    tiers = [t for t in (c.get("tier"), "fast", "full") if any(r.get("tier") == t for r in runs)]
    if not tiers:
        return ""
    tier = tiers[0]
    runs = [r for r in runs if r["tier"] == tier]
    kinds = list(dict.fromkeys(r["kind"] for r in runs))
    parts = []
    for kind in kinds:
        mine = [r for r in runs if r["kind"] == kind]
        n = len(mine)
        count = {w: sum(r["decision"] == w for r in mine)
                 for w in ("supported", "contradicted", "inconclusive", "set aside")}
        aside = f", set aside {count['set aside']}" if count["set aside"] else ""
        if kind.startswith("wrong"):
            parts.append(f"{kind}: supported {_share(count['supported'], n)} (contradicted {count['contradicted']}, "
                         f"undecided {count['inconclusive']}{aside})")
        else:
            parts.append(f"{kind}: contradicted {_share(count['contradicted'], n)} (supported {count['supported']}, "
                         f"undecided {count['inconclusive']}{aside})")
    at = f"the {tier} tier" + (f" (this run: {c.get('tier')})" if tier != c.get("tier") else "")
    return (f"Resolution of the rule {rule} on fresh runs no claim judges, at {at} and this claim's tolerances "
            f"({src}): " + "; ".join(parts) + ".")


def law_lines(c: dict) -> list[str]:
    """One line per law fit of the row (table rows with LAW_KEY, checks.laws.law_row): the fitted free parameter,
    its interval, the law's value and the alternatives the interval excludes (or not)."""
    out = []
    for r in (c.get("outcome") or {}).get("table") or []:
        if not isinstance(r, dict) or LAW_KEY not in r:
            continue
        lo, hi = (r.get("interval") or [None, None])[:2]
        a, b = (r.get("alternatives excluded") or [None, None])[:2]
        num = lambda v: "—" if v is None else number_text(float(v), 4)  # noqa: E731
        excluded = lo is not None and hi is not None and a is not None and b is not None and a < lo and hi < b
        allow = float(r.get("allowance") or 0.0)
        law = num(r.get("predicted")) + (f" ± {num(allow)} (allowance)" if allow else "")
        scope = f" ({r['scope']})" if r.get("scope") else ""
        out.append(f"Resolution of the law{scope}: "
                   f"{r[LAW_KEY]} fitted {num(r.get('fitted'))}, {float(r.get('level', 0.95)):.0%} interval "
                   f"[{num(lo)}, {num(hi)}] (half-width {num(None if lo is None or hi is None else (hi - lo) / 2)}); "
                   f"the law: {law}; the alternatives {num(a)} and {num(b)} "
                   f"{'are excluded' if excluded else 'are not both excluded'}; {r.get('decision', '')}.")
    return out


def render_figures(c: dict, stem: str, draw, previous: Path | None = None) -> tuple[list[PlotView], dict]:
    """A claim's plots: the views for its page and the files figures/<stem>-<k>.{svg,csv} (and .pdf at the full tier,
    the published one: a PDF is a third of a figure's drawing cost).

    `draw(members, title, tolerances, salt)` makes a `figures.Plot`; a figure found in `previous`
    (the report folder) with the same `figures.figure_key` is reused instead."""
    views, files = [], {}
    tolerances = c.get("tolerances") or {}
    pdf = c.get("tier") == "full"   # the published tier; smoke and fast reports link SVG and CSV
    for k, (title, members) in enumerate(group_series((c["outcome"] or {}).get("series") or []), start=1):
        salt, base = f"{stem}-{k}", f"{stem}-{k}"
        key = figure_key(members, title, tolerances, salt, pdf)
        p = ((reuse(previous, base, key, title, pdf) if previous else None)
             or draw(members, title, tolerances, salt, pdf))
        files.update({f"figures/{base}.svg": svg_file(p, key), f"figures/{base}.csv": p.csv,
                      **({f"figures/{base}.pdf": p.pdf} if pdf else {})})
        views.append(PlotView(f"fig-{k}", title, p.svg, f"../figures/{base}.svg",
                              f"../figures/{base}.pdf" if pdf else "", f"../figures/{base}.csv", p.skipped,
                              bool(p.any_log)))
    return views, files


def render_report(results: dict, out_dir: str | os.PathLike, stale: Mapping[str, str] | None = None) -> Path:
    """Render index.html, claims/<id>.html and figures/ into `out_dir` from `results` only; returns index.html.
    `stale`: claim id → why its row is stale (made by older code: docs/gen_full_report.py says which, from the
    registry's check hashes), marked on its page and in the index; None or {}: every row shown as it is."""
    stale = stale or {}
    validate_results(results)
    out = Path(out_dir)
    names = page_names(results["claims"])
    files: dict[str, str | bytes] = {}
    makers: list = []

    def draw(*args):
        if not makers:  # matplotlib is imported only when a figure must really be drawn (FigureMaker())
            makers.append(FigureMaker())
        return makers[0].draw(*args)

    power = power_table()
    for c in results["claims"]:
        stem = names[c["id"]][: -len(".html")]
        views, figs = render_figures(c, stem, draw, out / "figures")
        files.update(figs)
        files[f"claims/{names[c['id']]}"] = claim_page(c, names, views, power, stale.get(c["id"], ""))
    files["index.html"] = index_page(results, names, stale)  # last: moved into place after every other file
    for d in OUTPUT_DIRS:
        (out / d).mkdir(parents=True, exist_ok=True)
    atomic_write_all({out / rel: data for rel, data in files.items()})
    for d in OUTPUT_DIRS:
        for stale in (out / d).iterdir():
            if stale.is_file() and f"{d}/{stale.name}" not in files:
                stale.unlink()
    return out / "index.html"
