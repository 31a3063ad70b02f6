"""An HTML page of a Chrome trace: time per operator and the memory timeline.

    python -m ember.profiler.report trace.json [-o report.html] [--top 20]

The page is self-contained (inline SVG and CSS, no script, no new dependency). It reads any
Chrome trace with complete (``X``) events and ``[memory]`` instant events, so traces written by
``ember.profiler`` and by ``torch.profiler`` both work. Self time is computed per thread from
how the spans nest.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
from collections import defaultdict

__all__ = ["operator_times", "memory_timeline", "render_html", "write_report",
           "memory_timeline_html"]

_W = 900  # drawing width in pixels


def _load(path: str) -> dict:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    return data if isinstance(data, dict) else {"traceEvents": data}


def operator_times(trace: dict) -> list[tuple[str, int, float, float]]:
    """``(name, calls, self_us, total_us)`` per event name, largest self time first."""
    by_thread: dict = defaultdict(list)
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "X" and "dur" in e:
            by_thread[(e.get("pid"), e.get("tid"))].append(e)
    rows: dict = defaultdict(lambda: [0, 0.0, 0.0])
    for events in by_thread.values():
        events.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack: list = []  # [end, name, child time]
        for e in events:
            ts, dur = float(e["ts"]), float(e["dur"])
            while stack and stack[-1][0] <= ts:
                _close(stack, rows)
            if stack:
                stack[-1][2] += dur
            stack.append([ts + dur, e["name"], 0.0, dur])
        while stack:
            _close(stack, rows)
    out = [(name, r[0], r[1], r[2]) for name, r in rows.items()]
    out.sort(key=lambda r: (-r[2], r[0]))
    return out


def _close(stack: list, rows: dict) -> None:
    _, name, child, dur = stack.pop()
    row = rows[name]
    row[0] += 1
    row[1] += dur - child
    row[2] += dur


def memory_timeline(trace: dict) -> tuple[list[float], list[int]]:
    """Times (microseconds) and total allocated bytes after each ``[memory]`` event."""
    mem = [e for e in trace.get("traceEvents", [])
           if e.get("name") == "[memory]" and "Total Allocated" in e.get("args", {})]
    mem.sort(key=lambda e: float(e["ts"]))
    return [float(e["ts"]) for e in mem], [int(e["args"]["Total Allocated"]) for e in mem]


def _fmt_bytes(n: float) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


def _fmt_us(us: float) -> str:
    return f"{us / 1e3:.3f} ms" if abs(us) >= 1e3 else f"{us:.3f} us"


def _bars_svg(rows: list, top: int) -> str:
    rows = rows[:top]
    if not rows:
        return "<p>No operator events.</p>"
    label_w, bar_h, gap = 330, 18, 6
    biggest = max(r[2] for r in rows) or 1.0
    height = len(rows) * (bar_h + gap) + gap
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" '
             f'role="img" aria-label="self time per operator">']
    for i, (name, calls, self_us, total_us) in enumerate(rows):
        y = gap + i * (bar_h + gap)
        w = max(1.0, (_W - label_w - 170) * self_us / biggest)
        label = html.escape(name if len(name) <= 48 else name[:45] + "...")
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{label}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                     f'fill="#d9652b"><title>{html.escape(name)}: self {_fmt_us(self_us)}, '
                     f'total {_fmt_us(total_us)}, {calls} calls</title></rect>')
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 13}">{_fmt_us(self_us)} '
                     f'({calls}x)</text>')
    parts.append("</svg>")
    return "".join(parts)


def _timeline_svg(times: list[float], sizes: list[int]) -> str:
    if not times:
        return "<p>No memory events (profile with <code>profile_memory=True</code>).</p>"
    left, right, top, bottom, height = 80, 20, 10, 30, 260
    t0, t1 = times[0], max(times[-1], times[0] + 1e-3)
    hi = max(max(sizes), 1)
    sx = (_W - left - right) / (t1 - t0)
    sy = (height - top - bottom) / hi

    def pt(t: float, s: int) -> str:
        return f"{left + (t - t0) * sx:.1f},{height - bottom - s * sy:.1f}"

    pts = [pt(times[0], 0)]
    prev = 0
    for t, s in zip(times, sizes):  # a step line: allocated stays put until the next event
        pts += [pt(t, prev), pt(t, s)]
        prev = s
    pts.append(pt(t1, prev))
    peak_i = max(range(len(sizes)), key=sizes.__getitem__)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" '
             f'role="img" aria-label="allocated memory over time">',
             f'<line x1="{left}" y1="{height - bottom}" x2="{_W - right}" '
             f'y2="{height - bottom}" stroke="#888"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#888"/>',
             f'<polyline fill="none" stroke="#2b6cd9" stroke-width="1.5" '
             f'points="{" ".join(pts)}"/>',
             f'<text x="{left - 6}" y="{top + 10}" text-anchor="end">{_fmt_bytes(hi)}</text>',
             f'<text x="{left - 6}" y="{height - bottom}" text-anchor="end">0</text>',
             f'<text x="{left}" y="{height - 8}">0 ms</text>',
             f'<text x="{_W - right}" y="{height - 8}" text-anchor="end">'
             f'{(t1 - t0) / 1e3:.3f} ms</text>',
             f'<circle cx="{pt(times[peak_i], sizes[peak_i]).split(",")[0]}" '
             f'cy="{pt(times[peak_i], sizes[peak_i]).split(",")[1]}" r="3" fill="#c00">'
             f'<title>peak {_fmt_bytes(sizes[peak_i])}</title></circle>',
             "</svg>"]
    return "".join(parts)


_CSS = ("body{font:14px sans-serif;margin:24px;color:#222}svg text{font:12px monospace}"
        "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right;"
        "font:12px monospace}th{border-bottom:1px solid #888}td:first-child{text-align:left}")


def _table(rows: list, top: int) -> str:
    total_self = sum(r[2] for r in rows) or 1.0
    out = ["<table><tr><th>Name</th><th># of Calls</th><th>Self</th><th>Self %</th>"
           "<th>Total</th></tr>"]
    for name, calls, self_us, total_us in rows[:top]:
        out.append(f"<tr><td>{html.escape(name)}</td><td>{calls}</td><td>{_fmt_us(self_us)}"
                   f"</td><td>{100 * self_us / total_self:.2f}%</td><td>{_fmt_us(total_us)}"
                   f"</td></tr>")
    out.append("</table>")
    return "".join(out)


def memory_timeline_html(times: list[float], sizes: list[int], title: str = "Memory") -> str:
    """A page with just the memory timeline (``profile.export_memory_timeline(".html")``)."""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{_CSS}</style></head><body><h2>Allocated memory (CPU)</h2>"
            f"{_timeline_svg(times, sizes)}</body></html>\n")


def render_html(trace: dict, title: str = "ember profile", top: int = 20) -> str:
    """The report page of a trace: per-operator self time (chart and table), memory."""
    rows = operator_times(trace)
    times, sizes = memory_timeline(trace)
    peak = f" (peak {_fmt_bytes(max(sizes))})" if sizes else ""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"
            f"<h2>Self time per operator (top {top})</h2>{_bars_svg(rows, top)}"
            f"{_table(rows, top)}<h2>Allocated memory (CPU){peak}</h2>"
            f"{_timeline_svg(times, sizes)}</body></html>\n")


def write_report(trace_path: str, out_path: str | None = None, top: int = 20) -> str:
    """Read a Chrome trace and write its HTML report; returns the report's path.

    Example:
        >>> import tempfile, os
        >>> from ember.profiler import profile
        >>> with profile(profile_memory=True) as prof:
        ...     _ = ember.ones(8) * 2
        >>> d = tempfile.mkdtemp(); prof.export_chrome_trace(os.path.join(d, "t.json"))
        >>> open(write_report(os.path.join(d, "t.json"))).read().startswith("<!DOCTYPE html>")
        True
    """
    out_path = out_path or trace_path.removesuffix(".gz").removesuffix(".json") + ".html"
    page = render_html(_load(trace_path), title=trace_path.rsplit("/", 1)[-1], top=top)
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(page)
    return out_path


def main(argv: list[str] | None = None) -> None:
    """``python -m ember.profiler.report trace.json [-o out.html] [--top N]``."""
    parser = argparse.ArgumentParser(prog="python -m ember.profiler.report",
                                     description="HTML report of a Chrome trace")
    parser.add_argument("trace")
    parser.add_argument("-o", "--output", default=None)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    print(write_report(args.trace, args.output, args.top))


if __name__ == "__main__":
    main()
