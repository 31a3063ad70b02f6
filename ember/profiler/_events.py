"""Profiler events, their averages, the summary table and the Chrome trace.

A ``FunctionEvent`` is one timed span (an operator call, a ``record_function`` label, a
backward node) with its children; self time is its duration less its children's. Memory records
(bytes allocated or freed by the caching allocator) are attributed to the innermost span open
when they happened; a record outside every span becomes a zero-length ``[memory]`` event, as in
``torch.profiler``. The table's columns, widths and number formats are torch's.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList", "MemoryRecord"]

MAX_NAME_COLUMN_WIDTH = 55
MAX_SHAPES_COLUMN_WIDTH = 80
MAX_STACK_COLUMN_WIDTH = 80


class Interval:
    """A time range in microseconds (``torch.autograd.profiler_util.Interval``)."""

    __slots__ = ("start", "end")

    def __init__(self, start: float, end: float):
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        """``end - start`` in microseconds."""
        return self.end - self.start


class MemoryRecord:
    """One allocator event seen by the profiler: ``nbytes`` > 0 allocated, < 0 freed."""

    __slots__ = ("ts_us", "nbytes", "addr", "total_allocated", "total_reserved", "thread")

    def __init__(self, ts_us: float, nbytes: int, addr: int, total_allocated: int,
                 total_reserved: int, thread: int):
        self.ts_us = ts_us
        self.nbytes = nbytes
        self.addr = addr
        self.total_allocated = total_allocated
        self.total_reserved = total_reserved
        self.thread = thread


class FunctionEvent:
    """One profiled span (``torch.autograd.profiler_util.FunctionEvent``).

    Attributes: ``id``, ``name``, ``thread``, ``time_range`` (microseconds), ``input_shapes``
    (one entry per schema argument: a tensor's shape, ``[]`` otherwise), ``stack`` (innermost
    frame first, ``"file(line): function"``), ``cpu_parent``, ``cpu_children``, ``category``
    (``cpu_op``, ``user_annotation``), ``self_cpu_memory_usage`` (net bytes allocated by
    the allocator while this span was innermost) and ``flops`` (estimated floating-point
    operations of an operator call when profiled ``with_flops``, else 0).
    """

    __slots__ = ("id", "name", "thread", "time_range", "input_shapes", "stack", "category",
                 "cpu_parent", "cpu_children", "self_cpu_memory_usage", "sequence_nr", "flops",
                 "__weakref__")

    def __init__(self, id: int, name: str, thread: int, start_us: float,
                 input_shapes: list | None = None, stack: list | None = None,
                 category: str = "cpu_op", sequence_nr: int = -1):
        self.id = id
        self.name = name
        self.thread = thread
        self.time_range = Interval(start_us, start_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.category = category
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_children: list[FunctionEvent] = []
        self.self_cpu_memory_usage = 0
        self.sequence_nr = sequence_nr
        self.flops = 0

    key = property(lambda self: self.name, doc="The name events are averaged by.")
    count = property(lambda self: 1)
    device_type = property(lambda self: "CPU")
    is_async = property(lambda self: False)

    @property
    def cpu_time_total(self) -> float:
        """Duration in microseconds, children included."""
        return self.time_range.end - self.time_range.start

    @property
    def self_cpu_time_total(self) -> float:
        """Duration less the children's durations (microseconds)."""
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    cpu_time = cpu_time_total

    @property
    def cpu_memory_usage(self) -> int:
        """Net bytes allocated during this span, children included."""
        return self.self_cpu_memory_usage + sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time_total={self.cpu_time_total:.3f}us "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """Events of one key summed (``torch.autograd.profiler_util.FunctionEventAvg``)."""

    def __init__(self, key: str, input_shapes=None, stack=None):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes = input_shapes
        self.stack = stack
        self.node_id = 0
        self.flops = 0

    def add(self, evt: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        """Accumulate one event (or another average) into this one."""
        self.count += evt.count
        self.cpu_time_total += evt.cpu_time_total
        self.self_cpu_time_total += evt.self_cpu_time_total
        self.cpu_memory_usage += evt.cpu_memory_usage
        self.self_cpu_memory_usage += evt.self_cpu_memory_usage
        self.flops += evt.flops
        return self

    @property
    def cpu_time(self) -> float:
        """Average duration of one call (microseconds)."""
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} count={self.count} "
                f"self_cpu_time_total={self.self_cpu_time_total:.3f}us "
                f"cpu_time_total={self.cpu_time_total:.3f}us "
                f"input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events with torch's summaries: ``key_averages``, ``table``, Chrome trace."""

    def __init__(self, events: Iterable = (), *, profile_memory: bool = False,
                 memory: list[MemoryRecord] | None = None, pid: int | None = None,
                 with_flops: bool = False):
        super().__init__(events)
        self.profile_memory = profile_memory
        self.with_flops = with_flops
        self.memory_records = memory if memory is not None else []
        self.pid = os.getpid() if pid is None else pid

    @property
    def self_cpu_time_total(self) -> float:
        """Sum of every event's self time (microseconds)."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """Events summed per name (and input shapes, and the top ``n`` stack frames).

        Keys appear in the order they were first seen, as in torch.
        """
        groups: dict[tuple, FunctionEventAvg] = {}
        for e in self:
            shapes = str(e.input_shapes) if group_by_input_shape else None
            stack = tuple(e.stack[:group_by_stack_n]) if group_by_stack_n > 0 else None
            k = (e.key, shapes, stack)
            avg = groups.get(k)
            if avg is None:
                avg = groups[k] = FunctionEventAvg(
                    e.key, e.input_shapes if group_by_input_shape else None,
                    list(stack) if stack is not None else None)
            avg.add(e)
        return EventList(groups.values(), profile_memory=self.profile_memory, pid=self.pid,
                         with_flops=self.with_flops)

    def total_average(self) -> FunctionEventAvg:
        """Every event summed into one average keyed ``Total``."""
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = MAX_NAME_COLUMN_WIDTH,
              max_shapes_column_width: int = MAX_SHAPES_COLUMN_WIDTH, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        """torch's summary table, rows sorted by ``sort_by`` (descending), at most ``row_limit``.

        Columns: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, then CPU Mem
        and Self CPU Mem when memory was profiled, # of Calls, Input Shapes when the events
        were averaged by them, Total FLOPs (scaled to K/M/G/T/PFLOPs by the smallest non-zero
        count, as torch) when profiled ``with_flops`` and some operator counted FLOPs, and
        Source Location when the events were averaged by stack.
        """
        return build_table(self, sort_by, row_limit, max_name_column_width,
                           max_shapes_column_width, min(max_src_column_width,
                                                        MAX_STACK_COLUMN_WIDTH),
                           header, top_level_events_only)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (JSON; opens in Perfetto and chrome://tracing)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(chrome_trace(self, path), f)


_SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "cpu_memory_usage", "flops",
              "self_cpu_memory_usage", "count")
_DEVICE_SORT_KEYS = ("cuda_time", "cuda_time_total", "self_cuda_time_total", "device_time",
                     "device_time_total", "self_device_time_total", "cuda_memory_usage",
                     "self_cuda_memory_usage", "device_memory_usage",
                     "self_device_memory_usage")


def format_time(us: float) -> str:
    """torch's time format: ``12.345us``, ``1.234ms``, ``1.234s``."""
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3f}s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_memory(nbytes: int) -> str:
    """torch's memory format: ``512 B``, ``1.50 KB``, ``2.00 MB``, ``1.00 GB``."""
    for unit, scale in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} B"


_FLOP_UNITS = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")


def _auto_scale_flops(flops: int) -> tuple[float, str]:
    """The scale and unit torch's table shows FLOPs in: powers of 1000 below ``flops``."""
    k = int(max(0.0, min(math.log10(flops) / 3, len(_FLOP_UNITS) - 1)))
    return 10.0 ** (-3 * k), _FLOP_UNITS[k]


def _percent(part: float, total: float) -> str:
    return f"{part * 100.0 / total:.2f}%" if total else "0.00%"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _sorted_rows(events, sort_by, row_limit, top_level_events_only):
    rows = list(events)
    if top_level_events_only:
        rows = [e for e in rows if getattr(e, "cpu_parent", None) is None]
    if sort_by is not None:
        if sort_by not in _SORT_KEYS and sort_by not in _DEVICE_SORT_KEYS:
            raise ValueError(f"table: unknown sort_by {sort_by!r}; expected one of "
                             f"{list(_SORT_KEYS + _DEVICE_SORT_KEYS)}")
        if sort_by in _SORT_KEYS:
            rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
    if row_limit is not None and row_limit >= 0:
        rows = rows[:row_limit]
    return rows


def build_table(events: EventList, sort_by, row_limit, max_name_width, max_shapes_width,
                max_stack_width, header, top_level_events_only) -> str:
    """The text of ``EventList.table`` (see there)."""
    rows = _sorted_rows(events, sort_by, row_limit, top_level_events_only)
    if not rows:
        return ""
    has_mem = bool(getattr(events, "profile_memory", False))
    has_shapes = any(getattr(e, "input_shapes", None) for e in events)
    has_stack = any(getattr(e, "stack", None) for e in events) and \
        all(isinstance(e, FunctionEventAvg) for e in events)
    name_w = min(max(len(e.key) for e in events) + 4, max_name_width)
    cols: list[tuple[str, int]] = [("Name", name_w)]
    cols += [(h, 12) for h in ("Self CPU %", "Self CPU", "CPU total %", "CPU total",
                               "CPU time avg")]
    if has_mem:
        cols += [("CPU Mem", 12), ("Self CPU Mem", 12)]
    cols.append(("# of Calls", 12))
    if has_shapes:
        w = max(len(str(e.input_shapes)) for e in events if e.input_shapes is not None) + 4
        cols.append(("Input Shapes", min(max(w, len("Input Shapes")), max_shapes_width)))
    raw_flops = [e.flops for e in events if e.flops > 0] \
        if getattr(events, "with_flops", False) else []
    if raw_flops:
        flops_scale, flops_header = _auto_scale_flops(min(raw_flops))
        cols.append((f"Total {flops_header}", 12))
    if has_stack:
        w = max(len(s) for e in events for s in (e.stack or [""])) + 4
        cols.append(("Source Location", min(max(w, len("Source Location")), max_stack_width)))

    line = "".join("-" * w + "  " for _, w in cols)
    out = []
    if header is not None:
        out += ["=" * len(line), header]
    out += [line, "".join(h.rjust(w) + "  " for h, w in cols), line]
    self_total = sum(e.self_cpu_time_total for e in events)
    for e in rows:
        cells = [_clip(e.key, name_w), _percent(e.self_cpu_time_total, self_total),
                 format_time(e.self_cpu_time_total), _percent(e.cpu_time_total, self_total),
                 format_time(e.cpu_time_total), format_time(e.cpu_time_total / max(e.count, 1))]
        if has_mem:
            cells += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
        cells.append(str(e.count))
        if has_shapes:
            cells.append(_clip(str(e.input_shapes), cols[len(cells)][1]))
        if raw_flops:
            cells.append(f"{e.flops * flops_scale:8.3f}" if e.flops > 0 else "--")
        if has_stack:
            cells.append(_clip((e.stack or [""])[0], cols[len(cells)][1]))
        out.append("".join(c.rjust(w) + "  " for c, (_, w) in zip(cells, cols)))
        if has_stack:
            for frame in (e.stack or [])[1:]:
                out.append(" " * (len(line) - cols[-1][1] - 2) + _clip(frame, cols[-1][1])
                           .rjust(cols[-1][1]) + "  ")
    out.append(line)
    out.append(f"Self CPU time total: {format_time(self_total)}")
    return "\n".join(out) + "\n"


def chrome_trace(events: EventList, name: str = "") -> dict:
    """The Chrome trace-event JSON object of ``events`` (complete ``X`` events, memory as
    instant events), the layout torch's ``export_chrome_trace`` writes."""
    pid = events.pid
    threads = sorted({e.thread for e in events if isinstance(e, FunctionEvent)} |
                     {m.thread for m in events.memory_records})
    trace = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
              "args": {"name": "python"}},
             {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0,
              "args": {"labels": "CPU"}}]
    for t in threads:
        trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": t,
                      "args": {"name": f"thread {t} (python)"}})
    for e in events:
        if not isinstance(e, FunctionEvent) or e.name == "[memory]":
            continue
        args: dict = {"External id": e.id}
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        trace.append({"ph": "X", "cat": e.category, "name": e.name, "pid": pid,
                      "tid": e.thread, "ts": round(e.time_range.start, 3),
                      "dur": round(e.cpu_time_total, 3), "args": args})
    for m in events.memory_records:
        trace.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                      "pid": pid, "tid": m.thread, "ts": round(m.ts_us, 3),
                      "args": {"Total Reserved": m.total_reserved,
                               "Total Allocated": m.total_allocated, "Bytes": m.nbytes,
                               "Addr": m.addr, "Device Type": 0, "Device Id": -1}})
    return {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
            "traceEvents": trace, "traceName": name}
