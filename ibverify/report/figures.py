"""Evidence plots drawn with matplotlib (Agg, imported on first use): inline SVG + PDF + CSV per figure.

One plot per group of series (see `svg.group_series`). Axes from `ticks.axis`: log where every series
asks for it and the data allow ≥ 3 labelled ticks, else linear; missing (null) and, on log axes,
non-positive values are not drawn (the line breaks there) and counted. Where one of the claim's
tolerances bounds the plotted quantity it is drawn as a dashed line (`tolerance_lines`); a series whose name starts
with `evidence.THRESHOLD` is a check's own threshold curve for the other series (e.g. the closest other geometry's
residual ÷ the guard), drawn dashed in near black.

Output is deterministic (fixed `svg.hashsalt` per figure, no dates, text kept as text in the SVG), so
re-rendering the same results gives the same bytes. One matplotlib Figure is reused for all plots, and
a figure whose inputs did not change (`figure_key`: series, title, tolerances and this code) is reused
from the report folder rather than drawn again, so re-running one claim re-draws only its own figures.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from html import escape
from importlib.metadata import version
from pathlib import Path

from ..evidence import THRESHOLD
from .ticks import Axis, axis

# (tolerance name, what its line is on the plot's y axis, words one of which the plot's y label, group or
# series names must contain). A tolerance dict may override: {"plot": "<word>", "line": <y value>}.
_ONE_MINUS = "1 − value"
TOLERANCE_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("cos_min", _ONE_MINUS, ("1 − cos",)),
    ("cos_gap", "value", ("1 − cos",)),
    ("r_min", _ONE_MINUS, ("|1 − r",)),
    ("gap_max", "value", ("γ∞ − γ∞(w)", "1 − γ/γ*")),
    ("margin_rel", "value", ("1 − γ/γ*",)),
    ("kkt_max", "value", ("kkt",)),
    ("kkt_tol", "value", ("kkt",)),
    ("resid_max", "value", ("resid",)),
    ("track_max", "value", ("tracking",)),
    ("signature_max", "value", ("signature",)),
    ("fp_tol", "value", ("t(c) − c",)),
    ("rtol", "value", ("error", "spread", "w_mpmath")),
)
# Type 3 PDF fonts: Type 42 (TrueType) subsetting by fontTools made the fast-tier report 4× slower.
RC = {"pdf.fonttype": 3, "svg.fonttype": "none", "font.size": 9.0}
PALETTE = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563")
TOL_COLOR = "#b91c1c"
THRESHOLD_COLOR = "#111827"  # a threshold curve (near black: the palette has reds)


@dataclass
class Plot:
    """One rendered figure: inline SVG, the files to write beside the report, and what it shows."""

    title: str
    svg: str
    pdf: bytes
    csv: str
    x: Axis | None
    y: Axis | None
    drawn: list[str] = field(default_factory=list)  # names of the series with at least one point drawn
    tolerances: list[tuple[str, float]] = field(default_factory=list)
    skipped: int = 0
    any_log: bool | None = None  # a log axis (so non-positive values were skipped); from x/y when drawn

    def __post_init__(self):
        if self.any_log is None:
            self.any_log = bool(self.x and self.x.log) or bool(self.y and self.y.log)


def _norm(text: str) -> str:
    """Lower case, ASCII minus, no spaces: '1 − cos' and '1-cos' match."""
    return text.lower().replace("−", "-").replace(" ", "")


def _value(t) -> float | None:
    v = t.get("value") if isinstance(t, dict) else t
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def tolerance_lines(tolerances: dict, series: list[dict]) -> list[tuple[str, float]]:
    """(legend label, y) of each tolerance that bounds the quantity these series plot."""
    text = _norm(" ".join([s.get("ylabel", "") for s in series] + [s.get("group", "") for s in series]
                          + [s["name"] for s in series]))
    lines = []
    for name, tol in (tolerances or {}).items():
        v = _value(tol)
        if v is None:
            continue
        own = tol if isinstance(tol, dict) else {}
        if "plot" in own:
            if _norm(str(own["plot"])) in text:
                line = own.get("line", v)
                lines.append((f"tolerance {name} = {v:g}", float(line)))
            continue
        for rule, how, words in TOLERANCE_RULES:
            if rule == name and any(_norm(w) in text for w in words):
                if how == _ONE_MINUS:
                    lines.append((f"tolerance 1 − {name} = {1 - v:.3g}", 1 - v))
                else:
                    lines.append((f"tolerance {name} = {v:g}", v))
    return lines


def _segments(s: dict, log_x: bool, log_y: bool) -> tuple[list[tuple[list[float], list[float]]], int]:
    """Contiguous drawable runs of a series as (xs, ys), and how many points were skipped."""
    runs: list[tuple[list[float], list[float]]] = [([], [])]
    skipped = 0
    for x, y in zip(s.get("x", []), s.get("y", []), strict=False):
        if x is None or y is None or (log_x and x <= 0) or (log_y and y <= 0):
            skipped += 1
            if runs[-1][0]:
                runs.append(([], []))
            continue
        runs[-1][0].append(x)
        runs[-1][1].append(y)
    return [r for r in runs if r[0]], skipped


def figure_csv(series: list[dict]) -> str:
    """The plotted data, one row per point: series, x, y (labels as the header; null as empty)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    first = series[0] if series else {}
    w.writerow(["series", first.get("xlabel") or "x", first.get("ylabel") or "y"])
    for s in series:
        for x, y in zip(s.get("x", []), s.get("y", []), strict=False):
            w.writerow([s["name"], "" if x is None else repr(x), "" if y is None else repr(y)])
    return buf.getvalue()


class FigureMaker:
    """Draws plots with one reusable matplotlib Figure (Agg canvas, no pyplot state)."""

    def __init__(self, width_in: float = 6.4, height_in: float = 3.0):
        import matplotlib  # start-up time: matplotlib, imported only when a figure must really be drawn
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # start-up time: matplotlib
        from matplotlib.figure import Figure  # start-up time: matplotlib

        self._mpl = matplotlib
        self.width, self.height = width_in, height_in
        self.fig = Figure(figsize=(width_in, height_in))
        FigureCanvasAgg(self.fig)
        self._ax = None

    def _blank_axes(self, rect):
        """The one Axes, emptied of the last plot's lines, texts and legend and moved to `rect`: kept between plots
        because making an Axes and its ticks anew is most of a small plot's cost; every property a plot sets
        (scales, limits, ticks, labels, grid) is set again by each plot."""
        if self._ax is None:
            self._ax = self.fig.add_axes(rect)
            return self._ax
        ax = self._ax
        for artist in [*ax.lines, *ax.texts, *self.fig.legends]:
            artist.remove()
        ax.set_axis_on()
        ax.set_position(rect)
        return ax

    def _axes_for(self, series: list[dict], tol: list[tuple[str, float]]):
        log_x = all(s.get("log_x", True) for s in series)
        log_y = all(s.get("log_y", True) for s in series)
        for _ in range(2):  # a log axis that cannot carry 3 ticks becomes linear: collect points again
            drawn = [(s, *_segments(s, log_x, log_y)) for s in series]
            xs = [x for _, runs, _ in drawn for r in runs for x in r[0]]
            ys = [y for _, runs, _ in drawn for r in runs for y in r[1]]
            if not xs:
                return None, None, drawn
            ys_all = ys + [v for _, v in tol if v > 0 or not log_y]
            xa, ya = axis(xs, log_x), axis(ys_all, log_y)
            if xa.log == log_x and ya.log == log_y:
                return xa, ya, drawn
            log_x, log_y = xa.log, ya.log
        return xa, ya, drawn

    def draw(self, series: list[dict], title: str, tolerances: dict | None = None, salt: str = "",
             pdf: bool = True) -> Plot:
        """Render one plot of `series` (with the tolerance lines that apply) to SVG, CSV and (with `pdf`) PDF."""
        with self._mpl.rc_context({**RC, "svg.hashsalt": salt or "ibverify"}):
            return self._draw(series, title, tolerances, salt, pdf)

    def _draw(self, series: list[dict], title: str, tolerances: dict | None, salt: str, pdf: bool = True) -> Plot:
        from matplotlib.ticker import NullLocator  # start-up time: matplotlib

        tol = tolerance_lines(tolerances or {}, series)
        xa, ya, drawn = self._axes_for(series, tol)
        tol = [(label, v) for label, v in tol if ya is not None and (v > 0 or not ya.log)]  # drawable only
        skipped = sum(d[2] for d in drawn)
        names = [s["name"] for s, runs, _ in drawn if runs]
        entries = len(names) + len(tol) if (len(names) > 1 or tol) else 0
        ncols = 1 if any(len(n) > 30 for n in names + [t[0] for t in tol]) else 2
        legend_rows = math.ceil(entries / ncols) if entries else 0
        height = self.height + 0.2 * legend_rows
        fig = self.fig
        fig.set_size_inches(self.width, height)
        bottom_in = 0.5 + 0.2 * legend_rows + (0.1 if legend_rows else 0)
        ax = self._blank_axes((0.95 / self.width, bottom_in / height, 1 - 1.15 / self.width,
                               1 - (bottom_in + 0.25) / height))
        if xa is None:
            ax.set_axis_off()
            logs = any(s.get("log_x", True) or s.get("log_y", True) for s in series)
            ax.text(0.5, 0.5, f"no plottable values ({skipped} missing{' or non-positive' if logs else ''})",
                    ha="center", va="center", transform=ax.transAxes)
        else:
            few = sum(len(r[0]) for _, runs, _ in drawn for r in runs) <= 40 * max(1, len(names))
            k = 0
            for s, runs, _ in drawn:
                bound = s["name"].startswith(THRESHOLD)  # a check's threshold curve: dashed
                color = THRESHOLD_COLOR if bound else PALETTE[k % len(PALETTE)]
                for j, (xs, ys) in enumerate(runs):
                    ax.plot(xs, ys, color=color, lw=1.2 if bound else 1.6, ls="--" if bound else "-",
                            marker=None if bound or not few else "o", ms=2.5,
                            label=s["name"] if j == 0 else None, gid=f"s{k}" if j == 0 else None)
                k += bool(runs)
            for label, v in tol:
                ax.axhline(v, color=TOL_COLOR, lw=1.2, ls="--", label=label, gid="tolerance")
            first = series[0]
            for a, ax_axis, set_scale, set_lim, lab in ((xa, ax.xaxis, ax.set_xscale, ax.set_xlim,
                                                         first.get("xlabel", "")),
                                                        (ya, ax.yaxis, ax.set_yscale, ax.set_ylim,
                                                         first.get("ylabel", ""))):
                set_scale("log" if a.log else "linear")
                set_lim(*_padded(a))
                ax_axis.set_ticks(list(a.ticks), list(a.labels))
                ax_axis.set_minor_locator(NullLocator())
                ax_axis.set_label_text(lab + (" (log)" if a.log else ""))
            ax.grid(True, color="#8884", lw=0.6)
            if entries:
                fig.legend(loc="lower left", bbox_to_anchor=(0.95 / self.width, 0.04 / height), ncols=ncols,
                           frameon=False, fontsize=8, handlelength=2.2, borderaxespad=0)
        svg_buf, pdf_buf = io.StringIO(), io.BytesIO()
        fig.savefig(svg_buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
        if pdf:   # a third of a figure's cost: drawn for the published (full-tier) report only
            fig.savefig(pdf_buf, format="pdf", metadata={"CreationDate": None, "Creator": None, "Producer": None})
        return Plot(title, _inline(svg_buf.getvalue(), title, salt), pdf_buf.getvalue(), figure_csv(series),
                    xa, ya, names, tol, skipped)


@lru_cache(maxsize=1)
def _code_version() -> str:
    """Changes whenever the drawing code or matplotlib changes (part of every figure's cache key)."""
    h = hashlib.sha256(version("matplotlib").encode())
    for f in ("figures.py", "ticks.py"):
        h.update(Path(__file__).with_name(f).read_bytes())
    return h.hexdigest()


def figure_key(series: list[dict], title: str, tolerances: dict, salt: str, pdf: bool = True) -> str:
    """A digest of everything a figure is drawn from: same key, same files."""
    payload = json.dumps([series, title, tolerances, salt] + ([] if pdf else ["no pdf"]), sort_keys=True,
                         default=str)
    return hashlib.sha256((payload + _code_version()).encode()).hexdigest()[:32]


def svg_file(p: Plot, key: str) -> str:
    """The stand-alone .svg written beside the report; its first comment names the key (for reuse)."""
    head = f"<!-- ibverify-figure {key} skipped={p.skipped} log={int(bool(p.any_log))} -->"
    return f'<?xml version="1.0" encoding="utf-8"?>\n{head}\n{p.svg}\n'


def reuse(folder: Path, base: str, key: str, title: str, pdf: bool = True) -> Plot | None:
    """The plot already in `folder` as base.{svg,csv} (and .pdf with `pdf`) if drawn from the same key, else None."""
    try:
        svg = (folder / f"{base}.svg").read_text(encoding="utf-8")
        head, _, rest = svg.partition("-->\n")
        found = re.fullmatch(r'<\?xml[^>]*>\n<!-- ibverify-figure (\w+) skipped=(\d+) log=([01]) ', head)
        if not found or found.group(1) != key:
            return None
        pdf = (folder / f"{base}.pdf").read_bytes() if pdf else b""
        csv_text = (folder / f"{base}.csv").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return Plot(title, rest.rstrip("\n"), pdf, csv_text, None, None, skipped=int(found.group(2)),
                any_log=found.group(3) == "1")


def _padded(a: Axis, frac: float = 0.03) -> tuple[float, float]:
    """The axis limits widened by `frac` of the range on each side, so points on the edge stay visible."""
    if a.log:
        f = (a.hi / a.lo) ** frac
        return a.lo / f, a.hi * f
    d = (a.hi - a.lo) * frac
    return a.lo - d, a.hi + d


def _inline(svg: str, title: str, prefix: str) -> str:
    """matplotlib's SVG document as an element for inline use in HTML, its ids prefixed (unique in a page)."""
    body = svg[svg.index("<svg"):]
    body = re.sub(r"<metadata>.*?</metadata>\s*", "", body, flags=re.S)
    if prefix:
        body = re.sub(r'( id="|url\(#|xlink:href="#)', lambda m: m.group(1) + prefix + "-", body)
    return body.replace("<svg ", f'<svg class="plot" role="img" aria-label="{escape(title)}" ', 1).strip()
