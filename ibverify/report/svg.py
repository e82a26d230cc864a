"""Grouping evidence series into plots, and the index table's sparklines (tiny hand-written SVG).

The plots themselves are drawn with matplotlib (`figures.py`). The 110×26 px trend glyph of the index
stays hand-written: it has no axes or text, and drawing 50 of them with matplotlib would add
about 2 s to every report for nothing a reader sees.
"""

from __future__ import annotations

import math
from html import escape


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


def _points(s: dict, log_x: bool, log_y: bool) -> tuple[list[list[tuple[float, float]]], int]:
    """Contiguous drawable segments of a series (in plot coordinates) and the count of skipped points."""
    segments: list[list[tuple[float, float]]] = [[]]
    skipped = 0
    for x, y in zip(s.get("x", []), s.get("y", []), strict=False):
        ok = x is not None and y is not None and (not log_x or x > 0) and (not log_y or y > 0)
        if not ok:
            skipped += 1
            if segments[-1]:
                segments.append([])
            continue
        segments[-1].append((math.log10(x) if log_x else x, math.log10(y) if log_y else y))
    return [seg for seg in segments if seg], skipped


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
