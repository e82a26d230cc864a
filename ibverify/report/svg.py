"""Inline SVG line plots for evidence series (dicts as in results.json), no dependencies.

Log axes where every series of the plot asks for them; missing (null) and, on log axes,
non-positive values are skipped (the line breaks there) and counted in a note under the plot.
"""

from __future__ import annotations

import math
from html import escape

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
PALETTE = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563")


def group_series(series: list[dict]) -> list[tuple[str, list[dict]]]:
    """Series sharing a non-empty `group` go into one plot; the others get a plot each.
    Exact repeats (same name and values, e.g. a re-run example) are drawn once."""
    groups: dict[str, list[dict]] = {}
    seen: set[str] = set()
    for i, s in enumerate(series):
        key = repr((s.get("group"), s["name"], s.get("x"), s.get("y")))
        if key not in seen:
            seen.add(key)
            groups.setdefault(s.get("group") or f"\0{i}", []).append(s)
    return [(k if not k.startswith("\0") else v[0]["name"], v) for k, v in groups.items()]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if 1e-3 <= abs(v) < 1e4:
        return f"{v:.4g}"
    mant, exp = f"{v:.0e}".split("e")
    if mant.lstrip("-") == "1":  # a decade: 10⁻⁵
        return mant[:-1] + "10" + str(int(exp)).translate(_SUPERSCRIPT)
    return f"{mant}e{int(exp)}"


def _axis(values: list[float], log: bool) -> tuple[float, float, list[tuple[float, str]]]:
    """Domain (in plot coordinates: log10 on log axes) and ticks [(coordinate, label)]."""
    lo, hi = min(values), max(values)
    if log:
        if hi - lo < 1e-12:
            lo, hi = lo - 0.5, hi + 0.5
        elif hi - lo >= 1:
            lo, hi = math.floor(lo), math.ceil(hi)
        else:
            pad = 0.05 * (hi - lo)
            lo, hi = lo - pad, hi + pad
        cands = [(math.log10(m * 10.0**k), m * 10.0**k) for k in range(math.floor(lo) - 1, math.ceil(hi) + 1)
                 for m in (1, 2, 5)]
        ticks = [(c, _fmt(v)) for c, v in cands if lo - 1e-9 <= c <= hi + 1e-9]
        if len(ticks) > 8:
            decades = [(c, t) for c, t in ticks if abs(c - round(c)) < 1e-9]
            step = max(1, math.ceil(len(decades) / 7))
            ticks = decades[::step]
        return lo, hi, ticks
    if hi - lo < 1e-300:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / 5
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    lo, hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
    n = round((hi - lo) / step)
    return lo, hi, [(lo + i * step, _fmt(round(lo + i * step, 12))) for i in range(n + 1)]


def _points(s: dict, log_x: bool, log_y: bool) -> tuple[list[list[tuple[float, float]]], int]:
    """Contiguous drawable segments of a series (in plot coordinates) and the count of skipped points."""
    segments: list[list[tuple[float, float]]] = [[]]
    skipped = 0
    for x, y in zip(s.get("x", []), s.get("y", [])):
        ok = x is not None and y is not None and (not log_x or x > 0) and (not log_y or y > 0)
        if not ok:
            skipped += 1
            if segments[-1]:
                segments.append([])
            continue
        segments[-1].append((math.log10(x) if log_x else x, math.log10(y) if log_y else y))
    return [seg for seg in segments if seg], skipped


def plot(series: list[dict], title: str = "", width: int = 640, height: int = 320) -> str:
    """One SVG line plot of `series` with axes, grid, labels and (for several series) a legend."""
    log_x = all(s.get("log_x", True) for s in series)
    log_y = all(s.get("log_y", True) for s in series)
    drawn = [(s, *_points(s, log_x, log_y)) for s in series]
    skipped = sum(d[2] for d in drawn)
    legend_h = 18 * len(series) if len(series) > 1 else 0
    note_h = 16 if skipped else 0
    left, right, top, bottom = 70, 16, 30, 46
    full_h = height + legend_h + note_h
    pw, ph = width - left - right, height - top - bottom
    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {width} {full_h}" '
            f'width="{width}" height="{full_h}" role="img" aria-label="{escape(title)}" '
            f'font-family="system-ui, sans-serif" font-size="12">'),
           f'<text x="{left}" y="18" font-weight="600" font-size="13" fill="currentColor">{escape(title)}</text>']
    xs = [p[0] for _, segs, _ in drawn for seg in segs for p in seg]
    ys = [p[1] for _, segs, _ in drawn for seg in segs for p in seg]
    if not xs:
        out.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="currentColor">'
                   f'no plottable values ({skipped} missing or non-positive)</text></svg>')
        return "".join(out)
    x0, x1, xt = _axis(xs, log_x)
    y0, y1, yt = _axis(ys, log_y)

    def px(v: float) -> float:
        return round(left + (v - x0) / (x1 - x0) * pw, 2)

    def py(v: float) -> float:
        return round(top + ph - (v - y0) / (y1 - y0) * ph, 2)

    out.append('<g stroke="#8884" stroke-width="1">')
    out += [f'<line x1="{px(c)}" x2="{px(c)}" y1="{top}" y2="{top + ph}"/>' for c, _ in xt]
    out += [f'<line x1="{left}" x2="{left + pw}" y1="{py(c)}" y2="{py(c)}"/>' for c, _ in yt]
    out.append(f'</g><rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="currentColor"/>')
    out.append('<g fill="currentColor">')
    out += [f'<text x="{px(c)}" y="{top + ph + 16}" text-anchor="middle">{t}</text>' for c, t in xt]
    out += [f'<text x="{left - 6}" y="{py(c) + 4}" text-anchor="end">{t}</text>' for c, t in yt]
    first = series[0]
    xl = escape(first.get("xlabel", "") + (" (log)" if log_x else ""))
    yl = escape(first.get("ylabel", "") + (" (log)" if log_y else ""))
    out.append(f'<text x="{left + pw / 2}" y="{top + ph + 36}" text-anchor="middle">{xl}</text>')
    out.append(f'<text transform="translate(14 {top + ph / 2}) rotate(-90)" text-anchor="middle">{yl}</text></g>')
    for i, (s, segs, _) in enumerate(drawn):
        color = PALETTE[i % len(PALETTE)]
        out.append(f'<g class="series" data-name="{escape(s["name"])}" stroke="{color}" fill="{color}">'
                   f'<title>{escape(s["name"])}</title>')
        for seg in segs:
            d = " ".join(f"{'M' if j == 0 else 'L'}{px(x)},{py(y)}" for j, (x, y) in enumerate(seg))
            out.append(f'<path d="{d}" fill="none" stroke-width="2"/>')
        if sum(len(seg) for seg in segs) <= 40:
            out += [f'<circle cx="{px(x)}" cy="{py(y)}" r="2.5"/>' for seg in segs for x, y in seg]
        out.append("</g>")
    y = height
    if legend_h:
        for i, s in enumerate(series):
            color = PALETTE[i % len(PALETTE)]
            out.append(f'<rect x="{left}" y="{y + 18 * i - 9}" width="14" height="4" fill="{color}"/>'
                       f'<text x="{left + 20}" y="{y + 18 * i - 3}" fill="currentColor">{escape(s["name"])}</text>')
        y += legend_h
    if skipped:
        out.append(f'<text x="{left}" y="{y + 8}" fill="currentColor" font-style="italic">{skipped} missing'
                   f'{" or non-positive" if log_x or log_y else ""} value(s) not drawn</text>')
    out.append("</svg>")
    return "\n".join(out)


def sparkline(s: dict, width: int = 110, height: int = 26) -> str:
    """A tiny trend line of one series for the index table (log y if the series asks for it)."""
    segs, _ = _points(s, s.get("log_x", True), s.get("log_y", True))
    pts = [p for seg in segs for p in seg]
    if len(pts) < 2:
        return ""
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    (x0, x1), (y0, y1) = (min(xs), max(xs)), (min(ys), max(ys))
    sx = (width - 4) / ((x1 - x0) or 1)
    sy = (height - 4) / ((y1 - y0) or 1)
    d = " ".join(f"{'M' if j == 0 else 'L'}{(x - x0) * sx + 2:.1f},{height - 2 - (y - y0) * sy:.1f}"
                 for seg in segs for j, (x, y) in enumerate(seg))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="spark" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}"><title>{escape(s["name"])}</title>'
            f'<path d="{d}" fill="none" stroke="#2563eb" stroke-width="1.5"/></svg>')
