"""Memory history: recording, ``memory_snapshot()``, and pictures of both.

NOTE [Memory history]
``record_history(True)`` makes the allocator remember, for every block it hands out, the user
source frames (a walk of the Python stack) and the operator being run. The operator comes from
a *context provider*: ``ember.memory`` cannot import the dispatcher, so a higher layer
(``ember.utils.memory_history``) registers hooks that push a dispatch mode noting the current
operator while recording is on; without them the op is None. Trace entries (alloc, free,
segment alloc/free, oom) go into a ring buffer of ``max_entries`` and carry the allocated and
reserved totals after each event, which ``plot_timeline`` draws. Recording costs one attribute
test per allocation while off.
"""

from __future__ import annotations

import html
import sys
from collections import deque

from ember.memory.allocator import ALLOCATORS, CachingAllocator, format_size

__all__ = ["record_history", "set_context_provider", "snapshot", "memory_snapshot",
           "plot_snapshot", "plot_timeline", "register_history_hooks"]

_hooks: list = []  # (on_enable, on_disable) pairs from higher layers
_provider = None


def set_context_provider(fn) -> None:
    """Register ``fn() -> str | None`` giving the operator now running (or None to clear).

    Example:
        >>> from ember.utils.memory_history import current_op  # the provider ember installs
        >>> ember.memory.set_context_provider(lambda: "my_step")
        >>> ember.memory.record_history(device="meta")
        >>> x = ember.empty(4, device="meta")
        >>> blocks = [b for s in ember.memory.memory_snapshot("meta") for b in s["blocks"]]
        >>> any(b.get("op") == "my_step" for b in blocks)
        True
        >>> ember.memory.record_history(False, device="meta")
        >>> ember.memory.set_context_provider(current_op)
    """
    global _provider
    _provider = fn
    for alloc in ALLOCATORS.values():
        if alloc.recording:
            alloc.context_provider = fn


def register_history_hooks(on_enable, on_disable) -> None:
    """Callbacks run when recording turns on / off (``ember.utils.memory_history`` uses them).

    Example:
        >>> import functools
        >>> events = []  # the hooks stay registered: bind the list, not the name
        >>> ember.memory.register_history_hooks(functools.partial(events.append, "on"),
        ...                                     functools.partial(events.append, "off"))
        >>> ember.memory.record_history("state", device="meta")
        >>> ember.memory.record_history(False, device="meta")
        >>> events
        ['on', 'off']
    """
    _hooks.append((on_enable, on_disable))


def record_history(alloc: CachingAllocator, enabled=True, max_entries: int = sys.maxsize,
                   clear_history: bool = False) -> None:
    """Turn recording on (``True``/``"all"``/``"state"``) or off (``False``/``None``)."""
    if enabled not in (True, False, None, "all", "state"):
        raise ValueError(f"record_history: expected enabled to be True, False, 'state', 'all' "
                         f"or None; got {enabled!r}")
    on = enabled not in (False, None)
    if max_entries is None or max_entries <= 0:
        raise ValueError(f"record_history: max_entries must be positive; got {max_entries}")
    with alloc.lock:
        if on:
            if enabled == "state":  # live blocks' stacks only: no trace
                alloc.trace = deque(maxlen=0)
            else:
                old = [] if clear_history else list(alloc.trace)
                alloc.trace = deque(old[-max_entries:], maxlen=max_entries)
            alloc.context_provider = _provider
        elif clear_history:
            alloc.trace.clear()
        was = any(a.recording for a in ALLOCATORS.values())
        alloc.set_recording(on)
        now = any(a.recording for a in ALLOCATORS.values())
    if now != was:
        for on_enable, on_disable in _hooks:
            (on_enable if now else on_disable)()


def _frames(ctx) -> list[dict]:
    if ctx is None:
        return []
    return [{"filename": f, "line": ln, "name": n} for f, ln, n in ctx[1]]


def _segment_dict(alloc: CachingAllocator, seg) -> dict:
    blocks, offset = [], 0
    allocated = requested = active = 0
    b = seg.head
    while b is not None:
        # a freed block awaiting other streams' events (NOTE [Cross-stream frees])
        pending = b.allocated == 3
        state = "active_pending_free" if pending else \
            "active_allocated" if b.allocated else "inactive"
        entry = {"address": seg.addr + offset, "size": b.size,
                 "requested_size": b.requested, "state": state, "frames": _frames(b.ctx)}
        if b.ctx is not None:
            entry["op"] = b.ctx[0]
        blocks.append(entry)
        if b.allocated:
            active += b.size
            requested += b.requested
            if not pending:
                allocated += b.size
        offset += b.size
        b = b.next
    return {"device": alloc.device, "address": seg.addr, "total_size": seg.size,
            "allocated_size": allocated, "active_size": active, "requested_size": requested,
            "stream": getattr(seg, "stream", None) or 0,
            "segment_type": "small" if seg.small else "large",
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": _frames(seg.ctx),
            "blocks": blocks}


def memory_snapshot(alloc: CachingAllocator) -> list[dict]:
    """Every segment (by address) with its blocks: address, size, requested size, state."""
    alloc.flush()
    with alloc.lock:
        return [_segment_dict(alloc, alloc.segments[a]) for a in sorted(alloc.segments)]


def snapshot(alloc: CachingAllocator) -> dict:
    """Segments, recorded trace and allocator settings (``torch.cuda.memory._snapshot``)."""
    with alloc.lock:
        segments = memory_snapshot(alloc)
        trace = [{"action": a, "addr": addr, "size": size, "stream": 0, "time_us": t,
                  "allocated": al, "reserved": rs, "frames": _frames(ctx),
                  **({"op": ctx[0]} if ctx is not None else {})}
                 for a, addr, size, t, al, rs, ctx in alloc.trace]
        settings = alloc.config.as_dict()
    return {"segments": segments, "device_traces": [trace], "allocator_settings": settings}


# -- pictures --------------------------------------------------------------------------------
_COLORS = {"active_allocated": "#4878cf", "inactive": "#ee854a", "free": "#d0d0d0"}


def _block_kind(block: dict, segment: dict) -> str:
    if block["state"] == "active_allocated":
        return "active_allocated"
    return "free" if len(segment["blocks"]) == 1 else "inactive"


def plot_snapshot(alloc: CachingAllocator, path: str) -> str:
    """Draw each segment as a bar of its blocks: allocated, free inside a split segment
    (inactive split: fragmentation) and wholly free (releasable). SVG, or PNG via matplotlib.
    """
    segments = memory_snapshot(alloc)
    if str(path).lower().endswith(".png"):
        return _snapshot_png(segments, path, alloc.device)
    width, row, left = 900, 26, 170
    height = 60 + row * max(len(segments), 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="monospace" font-size="11">',
           f'<text x="8" y="16">ember {alloc.device} memory: {len(segments)} segments, '
           f'{format_size(sum(s["allocated_size"] for s in segments))} allocated of '
           f'{format_size(sum(s["total_size"] for s in segments))} reserved</text>']
    for i, (kind, label) in enumerate((("active_allocated", "allocated"),
                                       ("inactive", "free, split segment (inactive)"),
                                       ("free", "free, whole segment (releasable)"))):
        x = 8 + i * 290
        out.append(f'<rect x="{x}" y="26" width="12" height="12" fill="{_COLORS[kind]}"/>'
                   f'<text x="{x + 16}" y="36">{label}</text>')
    biggest = max((s["total_size"] for s in segments), default=1)
    span = width - left - 10
    for i, s in enumerate(segments):
        y = 50 + i * row
        out.append(f'<text x="8" y="{y + 15}">{s["segment_type"]:<5} '
                   f'{html.escape(format_size(s["total_size"]))}</text>')
        scale = span / biggest
        for b in s["blocks"]:
            x = left + (b["address"] - s["address"]) * scale
            w = max(b["size"] * scale, 0.5)
            kind = _block_kind(b, s)
            title = f'{b["state"]} {format_size(b["size"])} at {b["address"]:#x}'
            if b.get("op"):
                title += f' by {b["op"]}'
            out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{row - 6}" '
                       f'fill="{_COLORS[kind]}" stroke="white" stroke-width="0.5">'
                       f'<title>{html.escape(title)}</title></rect>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))
    return str(path)


def _matplotlib():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("PNG output needs matplotlib, which is not installed; write an .svg "
                           "file instead") from None
    return plt


def _snapshot_png(segments: list[dict], path: str, device: str) -> str:
    plt = _matplotlib()
    fig, ax = plt.subplots(figsize=(10, 0.4 * max(len(segments), 1) + 1))
    for i, s in enumerate(segments):
        for b in s["blocks"]:
            ax.barh(i, b["size"], left=b["address"] - s["address"],
                    color=_COLORS[_block_kind(b, s)], edgecolor="white")
    ax.set_yticks(range(len(segments)), [format_size(s["total_size"]) for s in segments])
    ax.set_xlabel("offset in segment (bytes)")
    ax.set_title(f"ember {device} memory segments")
    fig.savefig(path)
    plt.close(fig)
    return str(path)


def plot_timeline(alloc: CachingAllocator, path: str) -> str:
    """Draw allocated and reserved bytes over the recorded history (SVG, or PNG)."""
    events = [(t, al, rs) for _, _, _, t, al, rs, _ in alloc.trace]
    if not events:
        raise RuntimeError("plot_timeline: no recorded history; call "
                           "ember.memory.record_history(True) before the code to trace")
    t0 = events[0][0]
    xs = [t - t0 for t, _, _ in events]
    if str(path).lower().endswith(".png"):
        plt = _matplotlib()
        fig, ax = plt.subplots(figsize=(10, 4))
        ax.step(xs, [e[2] for e in events], where="post", label="reserved")
        ax.step(xs, [e[1] for e in events], where="post", label="allocated")
        ax.set_xlabel("time (µs)")
        ax.set_ylabel("bytes")
        ax.legend()
        fig.savefig(path)
        plt.close(fig)
        return str(path)
    width, height, pad = 900, 320, 50
    top = max(max(e[2] for e in events), 1)
    end = max(xs[-1], 1)

    def pts(values):
        p, last = [], None
        for x, v in zip(xs, values):
            px = pad + x / end * (width - 2 * pad)
            py = height - pad - v / top * (height - 2 * pad)
            if last is not None:
                p.append(f"{px:.1f},{last:.1f}")
            p.append(f"{px:.1f},{py:.1f}")
            last = py
        return " ".join(p)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="monospace" font-size="11">',
           f'<text x="8" y="16">ember {alloc.device} memory over {len(events)} events '
           f'({end} µs); peak reserved {html.escape(format_size(top))}</text>',
           f'<polyline fill="none" stroke="#ee854a" stroke-width="1.5" '
           f'points="{pts([e[2] for e in events])}"/>',
           f'<polyline fill="none" stroke="#4878cf" stroke-width="1.5" '
           f'points="{pts([e[1] for e in events])}"/>',
           f'<text x="{width - 200}" y="16" fill="#ee854a">reserved</text>',
           f'<text x="{width - 120}" y="16" fill="#4878cf">allocated</text>',
           "</svg>"]
    with open(path, "w") as f:
        f.write("\n".join(out))
    return str(path)
