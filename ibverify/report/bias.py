"""The report page of `ibverify bias --report DIR`: DIR/index.html, DIR/figures/bias-*.{svg,csv} and DIR/bias.json,
from the command's output dicts alone (one per optimizer) and a provenance dict.

Per optimizer and model: the answer table (geometry → supported / contradicted / inconclusive, a support with its
resolution, "to within δ"; its evidence line and tally, and each dataset's decision, resolution and reason), and one
log–log figure per dataset of every geometry's judged series over steps (the margin gap 1 − γ/γ* on the linear and
matrix models, the Fenchel KKT residual on the two-layer net; the `curve` of each dataset in the output). Figures are
drawn by figures.FigureMaker, pages by the report's jinja2 environment (template bias.html.j2); files are written
atomically, index.html last.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..errors import IbverifyError
from ..atomic import atomic_write_all
from ..jsonio import plain
from .figures import FigureMaker, figure_key, svg_file
from .html import environment, power_table

WORD_CLASS = {"supported": "good", "contradicted": "bad", "inconclusive": "warn"}
WORDS = tuple(WORD_CLASS)
YLABEL = {"margin_gap": "1 − γ/γ*", "residual": "KKT residual"}
PREFIX = "bias-"   # every figure file of this page; others in DIR/figures are left alone


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("._") or "x"


def quantity(entry: dict) -> str:
    """What a dataset's curve measures: the key of its judged value (margin_gap or residual)."""
    return next((q for q in YLABEL if q in entry), "residual")


def model_series(model: dict) -> list[tuple[str, list[dict]]]:
    """(dataset tag, [one series per geometry]) for each dataset of a model's answer, from the evidence's curves."""
    out: dict[str, list[dict]] = {}
    for g, ev in model["evidence"].items():
        for d in ev["datasets"]:
            curve = d.get("curve")
            series = out.setdefault(d["dataset"], [])
            if curve:
                series.append({"name": g, "x": curve["steps"], "y": curve["values"], "xlabel": "step",
                               "ylabel": YLABEL[quantity(d)], "log_x": True, "log_y": True})
    return list(out.items())


def resolution_text(model: dict, g: str, power: dict | None = None) -> str:
    """Geometry g's resolution on a model entry of the answer, as `ibverify bias` prints a support: "to within
    0.12 % (increments, agreeing with the iterate's bound; the iterate alone 0.31 %)" (a margin gap, in percent, then
    which estimate gave
    it, `estimate_text`), "KKT residual of the l2 margin problem within 0.002" (the two-layer net:
    what δ bounds there), "unresolved" (none). `power`: the power table (default: the package's)."""
    res = model["evidence"][g].get("resolution")
    if res is None:
        return "unresolved"
    if model["model"] == "two-layer":
        return f"KKT residual of the {g} margin problem within {res:.3g}"
    return f"to within {100 * res:.2g} %" + estimate_text(model["evidence"][g].get("increment_estimate"), power)


def increment_misses(power: dict | None = None) -> tuple[int, int] | None:
    """(finite increment δ below the limit's certified gap by more than the truth's tolerance, finite increment δ)
    over the power table's linear `bias` rows (every geometry, decision and tier, the held-out draw's included;
    docs/power.md); None where the table or its estimates are absent. `power`: the table (default: the package's
    ibverify/report/power.json)."""
    power = power if power is not None else power_table()
    sec = (power or {}).get("bias_linear") or {}
    cur = sec.get("current") or sec.get("baseline")
    if not cur:
        return None
    tol = cur["settings"]["truth_tol"]
    rows = cur["rows"] + ((sec.get("held_out") or {}).get("rows") or [])
    incs = [(r["true_gap"], r["estimates"]["increment"]) for r in rows
            if (r.get("estimates") or {}).get("increment") is not None]
    if not incs:
        return None
    return sum(t > d + tol for t, d in incs), len(incs)


def _datasets(k: int, n: int) -> str:
    return f"{k} of {n} dataset{'s' if n != 1 else ''}"


def estimate_text(est: dict | None, power: dict | None = None) -> str:
    """Which estimate gave a degree-1 δ (checks.bias.increment_estimate), as the answer says it after "to within
    δ": " (increments, agreeing with the iterate's bound; the iterate alone 0.31 %)" where every dataset states the
    increments' δ (their measured gap within the iterate's δ; 0.31 %: the largest iterate δ); " (increments on 1 of
    2 datasets, agreeing with the iterate's bound there, the iterate's on the rest; the iterate alone 0.31 %)";
    " (iterate); the increments estimate 0.12 % (a point estimate, not a bound: in the
    power table it fell below the certified gap 16 times in 900)" where none does; " (iterate; the increments
    unresolved)". Then where it happened: "; the estimates disagree on k of n datasets (the iterate's δ stated
    there)", "; the iterate's δ raised to the increments' measured gap on k of n datasets (their series not
    falling)". "" without the estimate (the two-layer net)."""
    if not est:
        return ""
    n, used = est["datasets"], est.get("used", "iterate")
    it = est.get("iterate")
    if used != "iterate":
        alone = f"; the iterate alone {100 * it:.2g} %" if it is not None else ""
        out = (f" (increments, agreeing with the iterate's bound{alone})" if used == "increment" else
               f" (increments on {_datasets(est['increments'], n)}, agreeing with the iterate's bound there, the "
               f"iterate's on the rest{alone})")
    elif est["value"] is None:
        out = " (iterate; the increments unresolved)"
    else:
        miss = increment_misses(power)
        where = (f": in the power table it fell below the certified gap {miss[0]} time{'s' if miss[0] != 1 else ''} "
                 f"in {miss[1]}" if miss else "")
        out = f" (iterate); the increments estimate {100 * est['value']:.2g} % (a point estimate, not a bound{where})"
    if est["disagree"]:
        out += f"; the estimates disagree on {_datasets(est['disagree'], n)} (the iterate's δ stated there)"
    if est.get("raised"):
        out += (f"; the iterate's δ raised to the increments' measured gap on {_datasets(est['raised'], n)} (their "
                f"series not falling)")
    return out


def _delta(model: dict, g: str) -> str:
    """δ of a geometry not supported, for the undecided line: "3.4 %", "0.012 (KKT residual)", "unresolved"."""
    res = model["evidence"][g].get("resolution")
    if res is None:
        return "unresolved"
    return f"{res:.3g} (KKT residual)" if model["model"] == "two-layer" else f"{100 * res:.2g} %"


def bounded_text(b: dict) -> str:
    """A bounded-norm outcome (checks.bias.bounded_norm, with its settings) in words."""
    held = ("held by " + ", ".join(b["settings"]) + " (a margin-maximizing run needs ‖θ‖ → ∞: set it to 0)"
            if b.get("settings") else
            "no weight decay is recorded in its settings: look for one (torch.optim.Muon's default is 0.1) or a "
            "step whose sum converges")
    moved = f"{'rose' if b['rise'] >= 0 else 'fell'} {100 * abs(b['rise']):.2g} %"
    return (f"‖θ‖ stopped growing on {b['dataset']}: it {moved} over steps {b['from']:.3g}–{b['to']:.3g} (‖θ‖₂ = "
            f"{b['norm']:.4g}); {held}")


def hybrid_c_lines(model: dict) -> list[str]:
    """A model's `hybrid_c` (runner.bias.with_hybrid_c) as text lines, one per distinct (c, source) naming its
    datasets (`ibverify bias`'s text and report)."""
    groups: dict = {}
    for r in model.get("hybrid_c", []):
        groups.setdefault((r["c"], r["source"]), []).append(r["dataset"])
    out = []
    for (c, source), tags in groups.items():
        on = ", ".join(tags)
        out.append(f"hybrid judged at c = {c:.4g} on {on} ({source})" if c is not None else
                   f"hybrid not judged on {on}: {source}")
    return out


def headline(model: dict) -> str:
    """A model's answer worded as what is known (its `outcome`): the supported geometries with their resolutions;
    "none of these" when every geometry is contradicted; "undecided at T …: closest g, δ …; extend to …" when
    none is supported and some are still inconclusive; a bounded ‖θ‖; or "not judged". An entry without an
    outcome (an older bias.json): supported ones, else "none of these"."""
    if "not_judged" in model:
        return "not judged"
    sup = ", ".join(f"{g} ({resolution_text(model, g)})" for g in model["supported"])
    outcome = model.get("outcome")
    if outcome == "contradicted":
        return "none of these (every geometry contradicted)"
    if outcome == "undecided":
        u = model["undecided"]
        more = f" (--tier {u['tier']})" if u.get("tier") else " (beyond the fast tier)"
        return (f"undecided at T = {u['horizon']:.3g}: closest {u['closest']}, δ {_delta(model, u['closest'])}; "
                f"extend to {u['extend_to']:.3g} steps{more}")
    if outcome == "bounded-norm":
        return "‖θ‖ bounded: not judged against margin limits"
    return sup or "none of these"


def _rows(model: dict) -> list[dict]:
    """The answer table: one row per geometry, supported first."""
    rows = []
    for word in WORDS:
        for g in model[word]:
            ev = model["evidence"][g]
            rows.append({"geometry": g, "word": word, "cls": WORD_CLASS[word], "line": ev["line"],
                         "tally": ev["tally"], "datasets": ev["datasets"],
                         "within": resolution_text(model, g) if word == "supported" else ""})
    return rows


def _figures(answers: list[dict], maker) -> tuple[dict, dict]:
    """(views keyed by (optimizer index, model, dataset), files figures/bias-…{svg,csv})."""
    views, files = {}, {}
    for i, a in enumerate(answers):
        for m in a["models"]:
            for k, (tag, series) in enumerate(model_series(m), start=1):
                if not series:
                    continue
                base = f"{PREFIX}{i + 1}-{_slug(a['optimizer'])}-{m['model']}-{k}"
                title = f"{a['optimizer']} · {m['model']} · {tag}"
                p = maker().draw(series, title, {}, base, pdf=False)
                files[f"figures/{base}.svg"] = svg_file(p, figure_key(series, title, {}, base, pdf=False))
                files[f"figures/{base}.csv"] = p.csv
                views[(i, m["model"], tag)] = {"title": title, "svg": p.svg, "svg_href": f"figures/{base}.svg",
                                               "csv_href": f"figures/{base}.csv", "skipped": p.skipped}
    return views, files


def knob_texts(spec: dict) -> list[str]:
    """A model's resolved knobs as "knob = value" (a per-dataset value as compact JSON; the name and knobs that do
    not apply, None, left out; a foreign optimizer's own hyper-parameters: hyper_rows)."""
    out = []
    for k, v in spec.items():
        if k not in ("name", "hyperparameters") and v is not None:
            out.append(f"{k} = {json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v}")
    return out


def _texts(hp: dict) -> list[str]:
    return [f"{k} = {json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v}" for k, v in hp.items()]


def hyper_rows(answer: dict) -> list[tuple[str, list[str]]]:
    """A torch or optax optimizer's own hyper-parameters, as recorded in its spec (optim.foreign.ForeignSpec), one
    (label, ["key = value", …]) row per part: a Muon pair's Muon part, its partner's, and the c the pair implies
    (optim.torchmuon.implied_c); [] for an optimizer of the table or a user's file."""
    spec = next((m["spec"] for m in answer.get("models", []) if isinstance(m.get("spec"), dict)), {})
    hp = spec.get("hyperparameters")
    if not isinstance(hp, dict):
        return []
    lib = spec.get("library") or "its library"
    if isinstance(hp.get("muon"), dict) and isinstance(hp.get("partner_hyperparameters"), dict):
        return [("Muon's hyper-parameters (2-D blocks)", _texts(hp["muon"])),
                (f"{hp.get('partner', 'partner')}'s hyper-parameters (the other blocks)",
                 _texts(hp["partner_hyperparameters"])),
                ("c implied", [str(hp.get("c", "not recorded"))])]
    return [(f"{lib}'s hyper-parameters", _texts(hp))]


def bias_page(answers: list[dict], provenance: dict, views: dict) -> str:
    sections = []
    for i, a in enumerate(answers):
        models = [{"m": m, "rows": _rows(m), "knobs": knob_texts(m.get("spec") or {}), "headline": headline(m),
                   "hybrid_c": hybrid_c_lines(m),
                   "bounded": bounded_text(m["bounded_norm"]) if m.get("bounded_norm") else "",
                   "figures": [views[(i, m["model"], tag)] for tag, _ in model_series(m)
                               if (i, m["model"], tag) in views]} for m in a["models"]]
        sections.append({"a": a, "anchor": f"opt-{i + 1}", "models": models, "hyper": hyper_rows(a)})
    return environment().get_template("bias.html.j2").render(sections=sections, p=provenance,
                                                             word_class=WORD_CLASS)


def check_folder(out_dir: str | os.PathLike) -> Path:
    """The report folder, checked writable before any run and created by nothing here (a refused run leaves no empty
    folder): it is a writable folder, or absent with its nearest existing parent a writable folder; one IbverifyError
    line when not, or when it holds a `verify` report (results.json), which the page would overwrite.
    render_bias_report makes it (with figures/) when it writes the page."""
    out = Path(out_dir)
    if (out / "results.json").exists():
        raise IbverifyError(f"--report {out}: holds an `ibverify verify` report (results.json); use another folder")
    for d in (out, out / "figures"):
        if d.exists() and not d.is_dir():
            raise IbverifyError(f"--report {out}: cannot write there ({d} is a file, not a folder)")
    here = next((d for d in (out.absolute(), *out.absolute().parents) if d.exists()), None)
    where = out / "figures" if (out / "figures").is_dir() else here
    if here is None or not here.is_dir() or not os.access(here, os.W_OK | os.X_OK) \
            or not os.access(where, os.W_OK | os.X_OK):
        what = "not a folder" if here is not None and not here.is_dir() else "not writable"
        raise IbverifyError(f"--report {out}: cannot write there ({here if here != out.absolute() else out}: {what})")
    return out


def render_bias_report(answers: list[dict], out_dir: str | os.PathLike, provenance: dict) -> Path:
    """Write the page of `answers` (the output dicts of `ibverify bias`, one per optimizer) into `out_dir`; returns
    its index.html."""
    out = check_folder(out_dir)
    makers: list = []

    def maker():
        if not makers:   # matplotlib only when a figure is drawn
            makers.append(FigureMaker())
        return makers[0]

    try:
        (out / "figures").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise IbverifyError(f"--report {out}: cannot write there ({e.strerror or e})") from None
    views, files = _figures(answers, maker)
    files["bias.json"] = json.dumps(plain({"provenance": provenance, "answers": answers}, keep_nonfinite=True),
                                    indent=1, ensure_ascii=False) + "\n"
    files["index.html"] = bias_page(answers, provenance, views)   # last: moved into place after the figures
    try:
        atomic_write_all({out / rel: data for rel, data in files.items()})
        for stale in (out / "figures").iterdir():
            if stale.name.startswith(PREFIX) and stale.is_file() and f"figures/{stale.name}" not in files:
                stale.unlink()
    except OSError as e:
        raise IbverifyError(f"--report {out}: cannot write the report ({e.strerror or e})") from None
    return out / "index.html"
