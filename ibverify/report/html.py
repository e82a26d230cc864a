"""The HTML report: `index.html` + `claims/<id>.html`, rendered from a results dict alone.

Self-contained (inline CSS, SVG and JS; no network; works from file://) and written atomically:
pages are rendered into a temp dir inside `out_dir`, then moved into place with os.replace,
claim pages first and index.html last, so a crash never leaves a half-written file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from html import escape
from pathlib import Path

from ..claims import STATUSES
from .schema import error_line, validate_results
from .svg import group_series, plot, sparkline

VERDICT_CLASS = {"holds": "good", "refuted": "good", "does not hold": "bad", "not refuted": "bad",
                 "finding": "info", "error": "warn"}
STATUS_NOTE = {
    "reconstructed": "Reconstructed claim: the paper's exact statement or dataset was not available; this "
                     "claim encodes the spec's labelled reconstruction.",
    "control": "Negative control: the claim is expected to be false; the suite passes only if it is refuted.",
    "beyond": "Beyond the papers: an exploration reported as a finding, not as pass/fail of a paper.",
}

CSS = """
:root{--fg:#1f2328;--muted:#656d76;--bg:#fff;--panel:#f6f8fa;--line:#d0d7de;--link:#0969da}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#8d96a0;--bg:#0d1117;--panel:#161b22;
--line:#30363d;--link:#4493f8}}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);
max-width:1180px;margin:0 auto;padding:24px}
a{color:var(--link);text-decoration:none}a:hover{text-decoration:underline}
h1{font-size:24px;margin:8px 0}h1 code{font-size:22px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid var(--line)}
code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace}
.muted,.meta{color:var(--muted)}
table{border-collapse:collapse;width:100%}th,td{padding:6px 8px;border-bottom:1px solid var(--line);
text-align:left;vertical-align:top}thead th{font-size:13px;color:var(--muted)}
tr.paper th{background:var(--panel);font-size:14px;padding-top:12px}td.num,td.badges{white-space:nowrap}td.num{text-align:right}
.badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600;white-space:nowrap;
border:1px solid transparent}
.good{background:#dafbe1;color:#116329}.bad{background:#ffebe9;color:#a40e26}.info{background:#ddf4ff;color:#0550ae}
.warn{background:#fff8c5;color:#7d4e00}
.s-paper{background:#eaeef2;color:#424a53}.s-derived{background:#eaeef2;color:#424a53;border:1px solid #8c959f}.s-reconstructed{background:#fff1e5;color:#953800;border:1px dashed #bc4c00}
.s-control{background:#fbefff;color:#6639ba}.s-beyond{background:#dafbe1;color:#0a5d45}
.yes{color:#1a7f37;font-weight:700}.no{color:#cf222e;font-weight:700}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}.card{flex:1;min-width:140px;padding:12px 16px;
border:1px solid var(--line);border-radius:10px;color:var(--fg)}.card b{display:block;font-size:26px}
.card.good b{color:#1a7f37}.card.bad b{color:#cf222e}.card.warn b{color:#9a6700}
.card.good,.card.bad,.card.warn{background:none}
form#filters{display:flex;gap:16px;flex-wrap:wrap;align-items:center;padding:10px 12px;background:var(--panel);
border-radius:10px;margin-bottom:8px}
.note{padding:10px 14px;border-radius:8px;margin:12px 0;border-left:4px solid}
.note.reconstructed{background:#fff1e5;border-color:#bc4c00;color:#953800}.note.control{background:#fbefff;
border-color:#8250df;color:#6639ba}.note.beyond{background:#ddf4ff;border-color:#0969da;color:#0550ae}
blockquote{margin:12px 0;padding:8px 16px;border-left:4px solid var(--line);background:var(--panel)}
.cmd{display:flex;gap:8px;align-items:stretch}.cmd pre{flex:1;margin:0;padding:10px 12px;background:var(--panel);
border:1px solid var(--line);border-radius:8px;user-select:all;overflow-x:auto}
button{font:inherit;padding:4px 12px;border-radius:8px;border:1px solid var(--line);background:var(--bg);color:var(--fg);
cursor:pointer}
.plots{display:flex;flex-wrap:wrap;gap:16px}.plots svg{max-width:100%;height:auto;background:var(--panel);
border-radius:8px;color:var(--fg)}
pre.error{background:#ffebe9;color:#82071e;padding:10px;border-radius:8px;white-space:pre-wrap}
pre.value{margin:0;white-space:pre-wrap;max-height:240px;overflow:auto}
"""

GUARD_JS = "window.addEventListener('error',function(e){document.body.setAttribute('data-jserror',e.message)});"

INDEX_JS = GUARD_JS + """
(function(){
var f=document.getElementById('filters'),rows=document.querySelectorAll('tr.claim');
function boxes(){return Array.prototype.slice.call(f.querySelectorAll('input[name=status]'))}
function apply(){
 var st=boxes().filter(function(b){return b.checked}).map(function(b){return b.value});
 var v=f.verdict.value,e=f.expected.value,n=0;
 rows.forEach(function(r){var show=st.indexOf(r.dataset.status)>=0&&(!v||r.dataset.verdict===v)&&
  (!e||r.dataset.expected===e);r.hidden=!show;if(show)n++});
 document.querySelectorAll('tbody.group').forEach(function(g){g.hidden=!g.querySelector('tr.claim:not([hidden])')});
 document.getElementById('shown').textContent=n+' of '+rows.length+' claims shown';
 document.body.setAttribute('data-shown',n)}
function readHash(){
 var p=new URLSearchParams(location.hash.slice(1)),st=p.get('status');
 boxes().forEach(function(b){b.checked=!st||st.split(',').indexOf(b.value)>=0});
 f.verdict.value=p.get('verdict')||'';f.expected.value=p.get('expected')||'';apply()}
function writeHash(){
 var p=new URLSearchParams(),all=boxes(),on=all.filter(function(b){return b.checked});
 if(on.length<all.length)p.set('status',on.map(function(b){return b.value}).join(','));
 if(f.verdict.value)p.set('verdict',f.verdict.value);if(f.expected.value)p.set('expected',f.expected.value);
 location.hash=p.toString();apply()}
f.addEventListener('change',writeHash);window.addEventListener('hashchange',readHash);readHash();
document.body.setAttribute('data-js','ok')})();
"""

CLAIM_JS = GUARD_JS + """
document.querySelectorAll('button[data-copy]').forEach(function(b){b.addEventListener('click',function(){
 var el=document.getElementById(b.dataset.copy),t=el.textContent;
 function select(){var r=document.createRange();r.selectNodeContents(el);var s=getSelection();
  s.removeAllRanges();s.addRange(r);b.textContent='selected (Ctrl+C)'}
 if(navigator.clipboard){navigator.clipboard.writeText(t).then(function(){b.textContent='copied'},select)}
 else select()})});
document.body.setAttribute('data-js','ok');
"""


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
        return f"{v:.6g}"
    return escape(str(v)) if isinstance(v, (int, str)) else escape(_pretty(v))


def _pretty(v) -> str:
    """Strings as they are; other values as JSON, with matrices one row per line."""
    if isinstance(v, str):
        return v
    if isinstance(v, list) and v and all(isinstance(r, list) for r in v):
        return "[\n " + ",\n ".join(json.dumps(r) for r in v) + "\n]"
    return json.dumps(v, ensure_ascii=False, indent=None if not isinstance(v, dict) else 1)


def _runtime(s) -> str:
    if s is None:
        return "—"
    return f"{s:.2f} s" if s < 60 else f"{int(s // 60)}m {s % 60:02.0f}s"


def _badges(c: dict) -> str:
    v = c["verdict"]
    mark = ('<span class="yes" title="as expected">✓</span>' if c["as_expected"]
            else '<span class="no" title="not as expected">✗</span>')
    return (f'<span class="badge s-{c["status"]}">{escape(c["status"])}</span> '
            f'<span class="badge {VERDICT_CLASS[v]}">{escape(v)}</span> {mark}')


def _kv(d: dict) -> str:
    if not d:
        return '<p class="muted">none</p>'
    rows = "".join(f"<tr><th>{escape(str(k))}</th><td><code>{_num(v)}</code></td></tr>" for k, v in d.items())
    return f"<table>{rows}</table>"


def _tolerances(d: dict) -> str:
    if not d:
        return '<p class="muted">none</p>'
    rows = []
    for k, t in d.items():
        value, why = (t.get("value"), t.get("why", "")) if isinstance(t, dict) else (t, "")
        rows.append(f"<tr><th>{escape(k)}</th><td><code>{_num(value)}</code></td><td>{escape(str(why))}</td></tr>")
    return "<table><thead><tr><th>tolerance</th><th>value</th><th>why</th></tr></thead>" + "".join(rows) + "</table>"


def _table(rows: list[dict]) -> str:
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    head = "".join(f"<th>{escape(str(k))}</th>" for k in cols)
    body = "".join("<tr>" + "".join(f"<td>{_num(r.get(k))}</td>" for k in cols) + "</tr>" for r in rows)
    return f'<table class="per-seed"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _page(title: str, body: str, js: str) -> str:
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n"
            f"<script>{js}</script>\n</body></html>\n")


def _key_figure(c: dict) -> str:
    if c["outcome"] and c["outcome"].get("figure"):
        return c["outcome"]["figure"]
    return error_line(c.get("error"))


def index_page(results: dict, names: dict[str, str]) -> str:
    claims, s = results["claims"], results["summary"]
    versions = " · ".join(f"{escape(k)} {escape(v or 'n/a')}" for k, v in results["versions"].items())
    counts = " · ".join(f'<span class="badge s-{st}">{st}</span> {sum(c["status"] == st for c in claims)}'
                        for st in STATUSES)
    groups: dict[str, list[dict]] = {}
    for c in claims:
        groups.setdefault(c["paper"], []).append(c)
    tbodies = []
    for paper, members in groups.items():
        rows = [f'<tr class="paper"><th colspan="6">{escape(paper)}</th></tr>']
        for c in members:
            series = (c["outcome"] or {}).get("series") or []
            rows.append(
                f'<tr class="claim" data-status="{c["status"]}" data-verdict="{escape(c["verdict"])}" '
                f'data-expected="{"yes" if c["as_expected"] else "no"}">'
                f'<td><a href="claims/{names[c["id"]]}"><code>{escape(c["id"])}</code></a></td>'
                f'<td>{escape(c["result"])}</td><td class="badges">{_badges(c)}</td>'
                f'<td>{escape(_key_figure(c))}</td><td>{sparkline(series[0]) if series else ""}</td>'
                f'<td class="num">{_runtime(c["runtime_s"])}</td></tr>')
        tbodies.append('<tbody class="group">' + "\n".join(rows) + "</tbody>")
    boxes = " ".join(f'<label><input type="checkbox" name="status" value="{st}" checked> '
                     f'<span class="badge s-{st}">{st}</span></label>' for st in STATUSES)
    vopts = "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in VERDICT_CLASS)
    body = f"""<header><h1>ibverify report</h1>
<p class="meta">tier <b>{escape(results['tier'])}</b> · seed {results['seed']} · created {escape(results['created'])}
<br>{versions}</p></header>
<section class="cards">
<a class="card" href="#"><b>{s['total']}</b>claims</a>
<a class="card good" href="#expected=yes"><b>{s['as_expected']}</b>as expected</a>
<a class="card bad" href="#expected=no"><b>{s['unexpected']}</b>unexpected</a>
<a class="card warn" href="#verdict=error"><b>{s['errors']}</b>errors</a></section>
<p>{counts}</p>
<form id="filters"><span>status {boxes}</span>
<label>verdict <select name="verdict"><option value="">any</option>{vopts}</select></label>
<label>expectation <select name="expected"><option value="">any</option><option value="yes">as expected</option>
<option value="no">unexpected</option></select></label><span id="shown" class="muted">{len(claims)} claims</span></form>
<table id="claims"><thead><tr><th>claim</th><th>paper result</th><th>status · verdict · expected</th>
<th>key figure</th><th>trend</th><th>runtime</th></tr></thead>
{''.join(tbodies)}</table>
<p class="muted">Rendered from results.json alone. Reproduce the whole run:
<code>ibverify verify --tier {escape(results['tier'])}</code></p>"""
    return _page(f"ibverify report ({results['tier']})", body, INDEX_JS)


def claim_page(c: dict, names: dict[str, str]) -> str:
    o = c["outcome"] or {}
    nav = '<a href="../index.html">← all claims</a> · <a href="#plots">evidence</a> · <a href="#reproduce">reproduce</a>'
    parts = [f"<nav>{nav}</nav>", f'<h1><code>{escape(c["id"])}</code></h1>',
             f'<p>{_badges(c)} <span class="muted">expected: {escape(c["expect"])}</span></p>']
    if c["status"] in STATUS_NOTE:
        parts.append(f'<div class="note {c["status"]}">{escape(STATUS_NOTE[c["status"]])}</div>')
    parts.append(f'<p><b>Paper result:</b> {escape(c["result"])} <span class="muted">— {escape(c["paper"])}</span></p>'
                 f'<blockquote class="statement">{escape(c["statement"])}</blockquote>')
    if o.get("figure"):
        parts.append(f'<p><b>Key figure:</b> {escape(o["figure"])}</p>')
    if c["verdict"] == "error" or c.get("error"):
        text = c.get("error") or "the check returned no truth value (holds = null) for a claim that needs one"
        parts.append(f'<h2 id="error">Error</h2><pre class="error">{escape(text)}</pre>')
    parts.append(f'<h2 id="reproduce">Reproduce</h2><div class="cmd"><pre><code id="cmd">'
                 f'{escape(c["reproduce"])}</code></pre><button type="button" data-copy="cmd">copy</button></div>')
    plots = [plot(members, title) for title, members in group_series(o.get("series") or [])]
    parts.append('<h2 id="plots">Evidence</h2>' + (f'<div class="plots">{"".join(plots)}</div>' if plots
                                                  else '<p class="muted">no evidence series recorded</p>'))
    if o.get("details"):
        parts.append(f'<p>{escape(o["details"])}</p>')
    if o.get("examples"):
        parts.append(f'<p class="muted">{o["examples"]} generated example(s)</p>')
    if o.get("counterexample") is not None:
        rows = "".join(f'<tr><th>{escape(str(k))}</th><td><pre class="value">{escape(_pretty(v))}</pre></td></tr>'
                       for k, v in o["counterexample"].items())
        parts.append(f'<h2 id="counterexample">Counterexample (shrunk)</h2><table class="counterexample">{rows}</table>')
    if o.get("table"):
        parts.append(f'<h2 id="table">Per-seed results</h2>{_table(o["table"])}')
    if o.get("figures"):
        parts.append(f'<h2>Figures</h2>{_kv(o["figures"])}')
    if c.get("controls"):
        links = ", ".join(f'<a href="{names[x]}"><code>{escape(x)}</code></a>' if x in names
                          else f"<code>{escape(x)}</code>" for x in c["controls"])
        parts.append(f"<p><b>Negative controls:</b> {links}</p>")
    if c.get("assumptions"):
        items = "".join(f"<li>{escape(a)}</li>" for a in c["assumptions"])
        parts.append(f"<h2>Assumptions</h2><ul>{items}</ul>")
    parts.append(f'<h2>Convention</h2>{_kv(c.get("convention") or {})}')
    parts.append(f'<h2>Parameters ({escape(c["tier"])} tier)</h2>{_kv(c["params"])}')
    parts.append(f'<h2>Tolerances</h2>{_tolerances(c["tolerances"])}')
    parts.append(f'<h2>Run</h2>{_kv({"check": c["check"], "check_hash": c["check_hash"], "tier": c["tier"], "seed": c["seed"], "runtime": _runtime(c["runtime_s"])})}')
    return _page(f'{c["id"]} — {c["verdict"]}', "\n".join(parts), CLAIM_JS)


def _write_synced(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def render_report(results: dict, out_dir: str | os.PathLike) -> Path:
    """Render index.html and claims/<id>.html into `out_dir` from `results` only; returns index.html."""
    validate_results(results)
    out = Path(out_dir)
    names = page_names(results["claims"])
    pages = {f"claims/{names[c['id']]}": claim_page(c, names) for c in results["claims"]}
    pages["index.html"] = index_page(results, names)  # last: moved into place after every claim page
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out, prefix=".report-"))
    try:
        for rel, text in pages.items():
            _write_synced(tmp / rel, text)
        (out / "claims").mkdir(exist_ok=True)
        for rel in pages:
            os.replace(tmp / rel, out / rel)
        for stale in (out / "claims").glob("*.html"):
            if f"claims/{stale.name}" not in pages:
                stale.unlink()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out / "index.html"
